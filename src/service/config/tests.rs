//! The service configuration's rules: file values, overrides, Redis targets, errors.

use std::path::PathBuf;

use super::*;
use crate::{Layout, ReplicaAcks};

fn parse(text: &str) -> ConfigFile {
    toml::from_str(text).unwrap()
}

#[test]
fn file_values_apply_and_overrides_win() {
    let file = parse(
        r#"
            bind = "127.0.0.1:9000"
            redis_url = "redis://file/"
            max_batch = 50
            max_future_skew = "2m"
            sweep_every = 30
            max_clock_skew = "2s"
            [[boards]]
            name = "hot"
            slot = "1h"
            windows = ["1h", "24h"]
            [[boards]]
            name = "liked"
            slot = "1h"
            windows = ["26h"]
            legacy = "likes"
            "#,
    );
    let overrides = Overrides {
        redis_url: Some("redis://env/".into()),
        ..Overrides::default()
    };
    let skew_from_env = Overrides {
        max_clock_skew: Some(Span::parse("9s").unwrap()),
        ..Overrides::default()
    };
    let c = ServiceConfig::resolve(parse("max_clock_skew = \"2s\""), skew_from_env).unwrap();
    assert_eq!(c.max_clock_skew, Some(Duration::from_secs(9)));
    let c = ServiceConfig::resolve(ConfigFile::default(), Overrides::default()).unwrap();
    assert_eq!(c.max_clock_skew, Some(Duration::from_secs(5)));
    let c = ServiceConfig::resolve(file, overrides).unwrap();
    assert_eq!(c.bind.port(), 9000);
    assert_eq!(c.redis_url.as_deref(), Some("redis://env/"));
    assert_eq!(c.settings.max_batch, 50);
    assert_eq!(c.settings.max_future_skew.seconds(), 120);
    assert_eq!(c.sweep_every, Duration::from_secs(30));
    assert_eq!(c.max_clock_skew, Some(Duration::from_secs(2)));
    assert_eq!(c.boards[0].0, "hot");
    assert_eq!(c.boards[0].1.windows().len(), 2);
    assert_eq!(c.legacy, [("liked".to_owned(), "likes".to_owned())]);
}

#[test]
fn a_cluster_comes_from_the_file_or_the_environment_but_not_with_a_url() {
    let file = parse(r#"redis_cluster = ["redis://a:7000", "redis://b:7000"]"#);
    let c = ServiceConfig::resolve(file, Overrides::default()).unwrap();
    assert_eq!(c.redis_cluster, ["redis://a:7000", "redis://b:7000"]);
    assert_eq!(c.redis_url, None);
    let env = Overrides {
        redis_cluster: Some(vec!["redis://c:7000".into(), " ".into()]),
        ..Overrides::default()
    };
    let file = parse(r#"redis_cluster = ["redis://a:7000"]"#);
    let c = ServiceConfig::resolve(file, env).unwrap();
    assert_eq!(c.redis_cluster, ["redis://c:7000"]);
    let both = Overrides {
        redis_url: Some("redis://single/".into()),
        ..Overrides::default()
    };
    let file = parse(r#"redis_cluster = ["redis://a:7000"]"#);
    let err = ServiceConfig::resolve(file, both).unwrap_err();
    assert!(err.0.contains("set only one"), "{err}");
}

#[test]
fn redis_connection_settings_come_from_the_file_and_the_environment() {
    let file = || {
        parse(
            r#"
                redis_tls_ca = "/etc/ca.pem"
                redis_connection_timeout = "500ms"
                redis_response_timeout = 3
                accept_eviction = true
                default_layout = "plain"
                "#,
        )
    };
    let c = ServiceConfig::resolve(file(), Overrides::default()).unwrap();
    assert_eq!(c.redis.tls_ca, Some(PathBuf::from("/etc/ca.pem")));
    assert_eq!(c.redis.connection_timeout, Duration::from_millis(500));
    assert_eq!(c.redis.response_timeout, Duration::from_secs(3));
    assert!(c.settings.accept_eviction);
    assert_eq!(c.redis.default_layout, Layout::Plain);
    assert_eq!(
        ServiceConfig::resolve(ConfigFile::default(), Overrides::default())
            .unwrap()
            .redis
            .default_layout,
        Layout::Compact
    );
    let env = Overrides {
        default_layout: Some(Layout::Compact),
        redis_tls_ca: Some("/run/ca.pem".into()),
        redis_response_timeout: Some("150ms".parse().unwrap()),
        accept_eviction: Some(false),
        ..Overrides::default()
    };
    let c = ServiceConfig::resolve(file(), env).unwrap();
    assert_eq!(c.redis.tls_ca, Some(PathBuf::from("/run/ca.pem")));
    assert_eq!(c.redis.connection_timeout, Duration::from_millis(500));
    assert_eq!(c.redis.response_timeout, Duration::from_millis(150));
    assert_eq!(c.redis.default_layout, Layout::Compact);
    assert!(!c.settings.accept_eviction);
    let c = ServiceConfig::resolve(ConfigFile::default(), Overrides::default()).unwrap();
    assert_eq!(c.redis, RedisOptions::default());
    assert!(!c.settings.accept_eviction);
    let err = toml::from_str::<ConfigFile>("redis_response_timeout = \"0ms\"").unwrap_err();
    assert_eq!(
        err.message(),
        "invalid timeout \"0ms\": it must be between 1ms and 1h"
    );
}

#[test]
fn replica_acks_come_from_the_file_and_the_environment_and_must_fit_the_response_timeout() {
    let file = parse(
        "min_replica_acks = 1\nreplica_ack_timeout = \"500ms\"\nredis_url = \"redis://r:6379/\"",
    );
    let c = ServiceConfig::resolve(file.clone(), Overrides::default()).unwrap();
    assert_eq!(
        c.redis.replica_acks,
        ReplicaAcks {
            min: 1,
            timeout: Duration::from_millis(500)
        }
    );
    let env = Overrides {
        min_replica_acks: Some(2),
        ..Overrides::default()
    };
    let c = ServiceConfig::resolve(file.clone(), env).unwrap();
    assert_eq!(c.redis.replica_acks.min, 2);
    assert_eq!(c.redis.replica_acks.timeout, Duration::from_millis(500));
    let too_long = Overrides {
        redis_response_timeout: Some("500ms".parse().unwrap()),
        ..Overrides::default()
    };
    let err = ServiceConfig::resolve(file, too_long).unwrap_err();
    assert_eq!(
        err.0,
        "replica_ack_timeout (500 ms) must be shorter than redis_response_timeout (500 ms), \
         which bounds a write and its wait for replicas together"
    );
    let c = ServiceConfig::resolve(ConfigFile::default(), Overrides::default()).unwrap();
    assert_eq!(c.redis.replica_acks.min, 0);
    let err = ServiceConfig::resolve(parse("min_replica_acks = 1"), Overrides::default());
    assert_eq!(
        err.unwrap_err().0,
        "min_replica_acks needs Redis (REDIS_URL or REDIS_CLUSTER_URLS): the memory store \
         has no replicas to wait for"
    );
}

#[test]
fn bad_files_are_explained() {
    assert!(toml::from_str::<ConfigFile>("bnd = \"x\"").is_err());
    let err = ServiceConfig::resolve(
        parse("[[boards]]\nname = \"x\"\nslot = \"1h\"\nwindows = [\"90m\"]"),
        Overrides::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "board \"x\": invalid board config: window 90m is not a multiple of the slot length 1h"
    );
}

#[test]
fn an_empty_redis_setting_is_an_error_not_the_memory_store() {
    let env = |url: Option<&str>, cluster: Option<Vec<&str>>, store| Overrides {
        redis_url: url.map(str::to_owned),
        redis_cluster: cluster.map(|c| c.into_iter().map(str::to_owned).collect()),
        store,
        ..Overrides::default()
    };
    let err = |file: &str, overrides| {
        ServiceConfig::resolve(parse(file), overrides)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err("", env(Some(""), None, None)),
        "REDIS_URL is set but empty: set it to redis://host:port/ or unset it to use the \
             in-process memory store"
    );
    assert_eq!(
        err("redis_url = \"redis://file/\"", env(Some(" "), None, None)),
        "REDIS_URL is set but empty: set it to redis://host:port/ or unset it to use the \
             in-process memory store"
    );
    assert_eq!(
        err("redis_url = \"\"", Overrides::default()),
        "redis_url in the config file is set but empty: set it to \"redis://host:port/\" or \
             unset it to use the in-process memory store"
    );
    assert_eq!(
        err("", env(None, Some(vec![""]), None)),
        "REDIS_CLUSTER_URLS is set but empty: set it to redis://host:port,redis://host:port \
             or unset it to use the in-process memory store"
    );
    assert!(
        err("redis_cluster = []", Overrides::default())
            .starts_with("redis_cluster in the config file is set but empty")
    );
    // The memory store chosen explicitly: an empty variable agrees with it, a URL not.
    let memory =
        ServiceConfig::resolve(parse("store = \"memory\""), env(Some(""), None, None)).unwrap();
    assert_eq!(memory.store, Some(StoreKind::Memory));
    assert_eq!(memory.redis_url, None);
    assert_eq!(
        err(
            "redis_url = \"redis://file/\"",
            env(None, None, Some(StoreKind::Memory))
        ),
        "the memory store is chosen (--store, ROLLBOARD_STORE, store) but a Redis URL is \
             set too (REDIS_URL, REDIS_CLUSTER_URLS, redis_url, redis_cluster): unset one"
    );
    assert_eq!(
        err("store = \"redis\"", Overrides::default()),
        "the Redis store is chosen (--store, ROLLBOARD_STORE, store) but no Redis URL is \
             set: set REDIS_URL (redis_url) or REDIS_CLUSTER_URLS (redis_cluster)"
    );
    // Nothing set at all: the memory store, as before.
    let default = ServiceConfig::resolve(ConfigFile::default(), Overrides::default()).unwrap();
    assert_eq!((default.store, default.redis_url), (None, None));
    assert_eq!(
        err("", env(Some("http://127.0.0.1:6379/"), None, None)),
        "invalid Redis URL \"http://127.0.0.1:6379/\": expected \
             redis://[user:password@]host[:port][/db] or rediss://… (TLS)"
    );
}

#[test]
fn file_errors_name_the_line_the_column_and_the_key() {
    let dir = std::env::temp_dir().join(format!("rollboard-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rollboard.toml");
    let load = |text: &str| {
        std::fs::write(&path, text).unwrap();
        let err = ServiceConfig::load(Some(&path), Overrides::default()).unwrap_err();
        let shown = err.to_string();
        shown
            .strip_prefix(&format!("{}:", path.display()))
            .unwrap_or(&shown)
            .to_owned()
    };
    assert_eq!(
        load("bind = \"127.0.0.1:8080\"\n\nmax_batch = \"lots\"\n"),
        "3:13: max_batch: expected an integer, found string \"lots\""
    );
    assert_eq!(
        load("accept_eviction = \"yes\"\n"),
        "1:19: accept_eviction: expected true or false, found string \"yes\""
    );
    assert_eq!(
        load("max_batch = [1,\n"),
        "1:16: max_batch: unclosed array, expected `]`"
    );
    assert_eq!(
        load("bind = \"localhost:8080\"\n"),
        "1:8: bind: invalid listen address \"localhost:8080\": give an IP address and a \
             port, e.g. 127.0.0.1:8080 (host names such as localhost are not resolved)"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_listen_address_is_an_ip_address_and_a_port() {
    assert_eq!(parse_bind("127.0.0.1:9000").unwrap().port(), 9000);
    assert_eq!(
        parse_bind("localhost:8080").unwrap_err(),
        "invalid listen address \"localhost:8080\": give an IP address and a port, e.g. \
             127.0.0.1:8080 (host names such as localhost are not resolved)"
    );
}

#[test]
fn an_empty_token_variable_never_removes_the_files_token() {
    let file = || parse("write_token = \"w-file\"\nadmin_token = \"a-file\"");
    let empty = Overrides {
        write_token: Some(String::new()),
        admin_token: Some(String::new()),
        ..Overrides::default()
    };
    let c = ServiceConfig::resolve(file(), empty.clone()).unwrap();
    assert_eq!(c.tokens.write.as_deref(), Some("w-file"));
    assert_eq!(c.tokens.admin.as_deref(), Some("a-file"));
    // Without a file token an empty variable is no token, as when it is unset: a
    // public bind is then refused.
    let public = Overrides {
        bind: Some("0.0.0.0:8080".parse().unwrap()),
        ..empty
    };
    let err = ServiceConfig::resolve(ConfigFile::default(), public).unwrap_err();
    assert!(err.to_string().starts_with("refusing to listen"), "{err}");
    // A non-empty variable wins over the file.
    let set = Overrides {
        write_token: Some("w-env".into()),
        ..Overrides::default()
    };
    let c = ServiceConfig::resolve(file(), set).unwrap();
    assert_eq!(c.tokens.write.as_deref(), Some("w-env"));
    assert_eq!(c.tokens.admin.as_deref(), Some("a-file"));
}

#[test]
fn connection_limits_and_idempotency_ttl_come_from_file_and_environment() {
    let c = ServiceConfig::resolve(ConfigFile::default(), Overrides::default()).unwrap();
    assert_eq!(c.connections, ConnectionLimits::default());
    assert_eq!(c.connections.header_read_timeout, Duration::from_secs(10));
    assert_eq!(c.settings.idempotency_ttl.seconds(), 86_400);
    let file = parse(
        "idempotency_ttl = \"1h\"\nheader_read_timeout = \"3s\"\n\
             keep_alive_timeout = \"2s\"\nmax_connections = 7",
    );
    let env = Overrides {
        keep_alive_timeout: Some(Span::parse("4s").unwrap()),
        ..Overrides::default()
    };
    let c = ServiceConfig::resolve(file, env).unwrap();
    assert_eq!(c.settings.idempotency_ttl.seconds(), 3600);
    assert_eq!(c.settings.metrics_board_series, 1_000);
    assert_eq!(
        c.connections,
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(3),
            keep_alive_timeout: Duration::from_secs(4),
            max_connections: 7,
        }
    );
    let err =
        ServiceConfig::resolve(parse("max_connections = 0"), Overrides::default()).unwrap_err();
    assert!(err.to_string().contains("max_connections"), "{err}");
}

#[test]
fn metrics_board_series_comes_from_the_file_or_the_environment() {
    let c = ServiceConfig::resolve(parse("metrics_board_series = 0"), Overrides::default());
    assert_eq!(c.unwrap().settings.metrics_board_series, 0);
    let env = Overrides {
        metrics_board_series: Some(50),
        ..Overrides::default()
    };
    let c = ServiceConfig::resolve(parse("metrics_board_series = 7"), env).unwrap();
    assert_eq!(c.settings.metrics_board_series, 50);
}

#[test]
fn max_staleness_ms_comes_from_the_file_or_the_environment_up_to_a_minute() {
    let c = ServiceConfig::resolve(parse(""), Overrides::default()).unwrap();
    assert_eq!(c.settings.max_staleness_ms, 0);
    let c = ServiceConfig::resolve(parse("max_staleness_ms = 250"), Overrides::default());
    assert_eq!(c.unwrap().settings.max_staleness_ms, 250);
    let env = Overrides {
        max_staleness_ms: Some(60_000),
        ..Overrides::default()
    };
    let c = ServiceConfig::resolve(parse("max_staleness_ms = 250"), env).unwrap();
    assert_eq!(c.settings.max_staleness_ms, 60_000);
    let err = ServiceConfig::resolve(parse("max_staleness_ms = 60001"), Overrides::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "max_staleness_ms must be 0 to 60000 (a minute), got 60001"
    );
}

#[test]
fn a_public_bind_needs_a_token_or_insecure() {
    let public = Overrides {
        bind: Some("0.0.0.0:8080".parse().unwrap()),
        ..Overrides::default()
    };
    let err = ServiceConfig::resolve(ConfigFile::default(), public.clone()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("refusing to listen on 0.0.0.0:8080")
    );
    let with_token = Overrides {
        write_token: Some("t".into()),
        ..public.clone()
    };
    assert!(ServiceConfig::resolve(ConfigFile::default(), with_token).is_ok());
    let insecure = Overrides {
        insecure: true,
        ..public
    };
    assert!(ServiceConfig::resolve(ConfigFile::default(), insecure).is_ok());
}

#[test]
fn logs_and_cors_come_from_the_file_or_the_environment() {
    let c = ServiceConfig::resolve(ConfigFile::default(), Overrides::default()).unwrap();
    assert_eq!(
        (c.log_format, c.access_log, c.cors_origins.len()),
        (LogFormat::Text, false, 0)
    );
    let file = || {
        parse(
            "log_format = \"json\"\naccess_log = true\n\
                 cors_origins = [\"https://a.example\", \" \"]",
        )
    };
    let c = ServiceConfig::resolve(file(), Overrides::default()).unwrap();
    assert_eq!((c.log_format, c.access_log), (LogFormat::Json, true));
    assert_eq!(c.cors_origins, ["https://a.example"]);
    let env = Overrides {
        log_format: Some("text".parse().unwrap()),
        access_log: Some(false),
        cors_origins: Some(vec!["*".into()]),
        ..Overrides::default()
    };
    let c = ServiceConfig::resolve(file(), env).unwrap();
    assert_eq!((c.log_format, c.access_log), (LogFormat::Text, false));
    assert_eq!(c.cors_origins, ["*"]);
    assert!("xml".parse::<LogFormat>().is_err());
    let bad = Overrides {
        cors_origins: Some(vec!["https://a\nb".into()]),
        ..Overrides::default()
    };
    let err = ServiceConfig::resolve(ConfigFile::default(), bad).unwrap_err();
    assert!(err.0.contains("cors_origins"), "{err}");
}

#[test]
fn the_snapshot_webhook_comes_from_the_file_or_the_environment() {
    let file = || parse(r#"snapshot_webhook = "http://10.0.0.5:9000/hook""#);
    let c = ServiceConfig::resolve(file(), Overrides::default()).unwrap();
    let url = c.snapshot_webhook.map(|w| w.url.to_string());
    assert_eq!(url.as_deref(), Some("http://10.0.0.5:9000/hook"));
    let env = Overrides {
        snapshot_webhook: Some("http://receiver/snap".into()),
        ..Overrides::default()
    };
    let c = ServiceConfig::resolve(file(), env).unwrap();
    let url = c.snapshot_webhook.map(|w| w.url.to_string());
    assert_eq!(url.as_deref(), Some("http://receiver/snap"));
    let c = ServiceConfig::resolve(ConfigFile::default(), Overrides::default()).unwrap();
    assert_eq!(c.snapshot_webhook, None);
    let ftp = Overrides {
        snapshot_webhook: Some("ftp://receiver/snap".into()),
        ..Overrides::default()
    };
    let err = ServiceConfig::resolve(ConfigFile::default(), ftp).unwrap_err();
    assert_eq!(
        err.0,
        "snapshot_webhook \"ftp://receiver/snap\" must be an http:// or https:// URL with a host"
    );
}

#[cfg(feature = "tls")]
#[test]
fn an_https_webhook_takes_the_webhook_ca_of_the_file_or_the_environment() {
    let file = || {
        parse(
            r#"changes_webhook = "https://hooks.example/moves"
webhook_ca = "/etc/rollboard/hooks-ca.pem""#,
        )
    };
    let c = ServiceConfig::resolve(file(), Overrides::default()).unwrap();
    let changes = c.changes_webhook.unwrap();
    assert_eq!(changes.url.to_string(), "https://hooks.example/moves");
    assert_eq!(
        changes.ca.as_deref(),
        Some(Path::new("/etc/rollboard/hooks-ca.pem"))
    );
    let env = Overrides {
        webhook_ca: Some("/run/hooks-ca.pem".into()),
        ..Overrides::default()
    };
    let c = ServiceConfig::resolve(file(), env).unwrap();
    let ca = c.changes_webhook.and_then(|w| w.ca);
    assert_eq!(ca.as_deref(), Some(Path::new("/run/hooks-ca.pem")));
}
