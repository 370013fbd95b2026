//! The errors an operator meets first, each one line naming what to fix: an empty Redis
//! setting, a connection that fails (refused, not Redis, not a Redis URL, no TLS on the
//! port), a listen address that is a host name, a config file with a wrong value; and
//! the batch commands reading the Redis settings of `serve`'s config file.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::test_redis::{TestRedis, unique};

/// Runs `rollboard ARGS` with only `env` of the variables it reads.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    command(args, env).output().expect("run rollboard")
}

fn command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rollboard"));
    command.args(args);
    for var in [
        "REDIS_URL",
        "REDIS_CLUSTER_URLS",
        "REDIS_TLS_CA",
        "ROLLBOARD_STORE",
        "ROLLBOARD_BIND",
        "ROLLBOARD_WRITE_TOKEN",
        "ROLLBOARD_ADMIN_TOKEN",
        "ROLLBOARD_REDIS_CONNECTION_TIMEOUT",
        "ROLLBOARD_REDIS_RESPONSE_TIMEOUT",
        "ROLLBOARD_KEY_PREFIX",
        "ROLLBOARD_DEFAULT_BOARD",
        "RUST_LOG",
    ] {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    command
}

/// Its stderr, which must be exactly one line, and that it failed.
fn one_line_failure(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "succeeded: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err.trim_end().to_owned()
}

fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(unique("rollboard-errors"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn an_empty_redis_setting_stops_serve_instead_of_using_the_memory_store() {
    let serve = ["serve", "--bind", "127.0.0.1:0"];
    assert_eq!(
        one_line_failure(&run(&serve, &[("REDIS_URL", "")])),
        "rollboard: REDIS_URL is set but empty: set it to redis://host:port/ or unset it to \
         use the in-process memory store"
    );
    assert_eq!(
        one_line_failure(&run(&serve, &[("REDIS_CLUSTER_URLS", "")])),
        "rollboard: REDIS_CLUSTER_URLS is set but empty: set it to \
         redis://host:port,redis://host:port or unset it to use the in-process memory store"
    );
    let config = temp_file("rollboard.toml", "redis_url = \"\"\n");
    assert_eq!(
        one_line_failure(&run(&["serve", "--config", config.to_str().unwrap()], &[])),
        "rollboard: redis_url in the config file is set but empty: set it to \
         \"redis://host:port/\" or unset it to use the in-process memory store"
    );
    assert_eq!(
        one_line_failure(&run(&serve, &[("ROLLBOARD_STORE", "redis")])),
        "rollboard: the Redis store is chosen (--store, ROLLBOARD_STORE, store) but no Redis \
         URL is set: set REDIS_URL (redis_url) or REDIS_CLUSTER_URLS (redis_cluster)"
    );
}

/// The first log line of `serve` that names the store.
fn store_log_line(env: &[(&str, &str)]) -> String {
    let mut child = command(&["serve", "--bind", "127.0.0.1:0"], env)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = lines
        .map_while(Result::ok)
        .find(|l| l.contains("store: ") || l.contains("rollboard: "))
        .unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    line
}

#[tokio::test]
async fn serve_logs_the_store_it_runs_on_in_one_info_line() {
    let line = store_log_line(&[("ROLLBOARD_STORE", "memory"), ("REDIS_URL", "")]);
    assert!(
        line.contains(
            " INFO rollboard::service::serve: store: embedded memory (chosen): boards live only \
             as long as this process store=\"memory\""
        ),
        "{line}"
    );
    let redis = TestRedis::start().await;
    let line = store_log_line(&[("REDIS_URL", &redis.url), ("ROLLBOARD_KEY_PREFIX", "app1:")]);
    let url = rollboard_redact(&redis.url);
    assert!(
        line.contains(&format!(
            " INFO rollboard::service::serve: store: Redis store=\"redis\" redis={url} \
             key_prefix=\"app1:\""
        )),
        "{line}"
    );
}

/// The URL as logs show it: without user and password.
fn rollboard_redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***@{}", &url[..scheme], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

/// A port that answers like an HTTP server, whatever it is sent.
fn http_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    port
}

#[tokio::test]
async fn connection_errors_name_the_url_and_what_to_fix() {
    let top = ["top", "x"];
    let refused = one_line_failure(&run(
        &top,
        &[("REDIS_URL", "redis://app:secret@127.0.0.1:1/")],
    ));
    assert!(
        refused.starts_with(
            "rollboard: store unavailable: cannot connect to Redis at \
             redis://***@127.0.0.1:1/: "
        ),
        "{refused}"
    );
    assert!(!refused.contains("secret"), "{refused}");

    let url = format!("redis://127.0.0.1:{}/", http_port());
    assert_eq!(
        one_line_failure(&run(&top, &[("REDIS_URL", &url)])),
        format!(
            "rollboard: store unavailable: {url} is not a Redis server (it answered something \
             else): check the host and port"
        )
    );

    for url in ["http://127.0.0.1:6379/", "127.0.0.1:6379"] {
        assert_eq!(
            one_line_failure(&run(&top, &[("REDIS_URL", url)])),
            format!(
                "rollboard: invalid Redis URL {url:?}: expected \
                 redis://[user:password@]host[:port][/db] or rediss://… (TLS)"
            )
        );
    }
}

/// Usage errors (clap's) are one line, as every other error, with exit code 2 and the
/// usage when clap has it; `--help` still prints to stdout and succeeds.
#[test]
fn usage_errors_are_one_line_with_the_usage() {
    let bind = run(&["serve", "--bind", "localhost:8080"], &[]);
    assert_eq!(bind.status.code(), Some(2));
    assert_eq!(
        one_line_failure(&bind),
        "rollboard: invalid value 'localhost:8080' for '--bind <BIND>': invalid listen address \
         \"localhost:8080\": give an IP address and a port, e.g. 127.0.0.1:8080 (host names \
         such as localhost are not resolved)"
    );
    for (args, message) in [
        (
            &["top"][..],
            "rollboard: the following required arguments were not provided: <BOARD>; usage: \
             rollboard top <BOARD>",
        ),
        (
            &["top", "--nope", "b"],
            "rollboard: unexpected argument '--nope' found; usage: rollboard top [OPTIONS] \
             <BOARD>",
        ),
        (
            &["frobnicate"],
            "rollboard: unrecognized subcommand 'frobnicate'; usage: rollboard <COMMAND>",
        ),
    ] {
        let out = run(args, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(one_line_failure(&out), message, "{args:?}");
    }
    let help = run(&["top", "--help"], &[]);
    assert!(help.status.success() && help.stderr.is_empty());
    assert!(String::from_utf8_lossy(&help.stdout).starts_with("Print a board's top N"));
}

#[tokio::test]
async fn rediss_to_a_plain_redis_fails_within_the_connection_timeout() {
    let redis = TestRedis::start().await;
    let tls = redis.url.replacen("redis://", "rediss://", 1);
    let started = Instant::now();
    let out = run(
        &["top", "x", "--redis-connection-timeout", "500ms"],
        &[("REDIS_URL", &tls)],
    );
    assert_eq!(
        one_line_failure(&out),
        format!(
            "rollboard: store unavailable: the TLS handshake with Redis at {} did not finish \
             within 500ms: the port takes connections but does not answer TLS; if it serves \
             plain Redis, use redis:// instead of rediss://",
            rollboard_redact(&tls)
        )
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn config_file_errors_name_the_line_column_and_key() {
    let config = temp_file(
        "rollboard.toml",
        "bind = \"127.0.0.1:0\"\n\nmax_batch = \"lots\"\n",
    );
    let path = config.to_str().unwrap();
    assert_eq!(
        one_line_failure(&run(&["serve", "--config", path], &[])),
        format!("rollboard: {path}:3:13: max_batch: expected an integer, found string \"lots\"")
    );
    std::fs::write(
        &config,
        "[[boards]]\nname = \"x\"\nslot = \"1h\nwindows = [\"1h\"]\n",
    )
    .unwrap();
    let syntax = one_line_failure(&run(&["retire", "--config", path], &[]));
    assert!(
        syntax.starts_with(&format!("rollboard: {path}:3:")),
        "{syntax}"
    );
}

#[test]
fn a_key_prefix_with_a_brace_is_refused_wherever_it_is_set() {
    let env = [("ROLLBOARD_KEY_PREFIX", "app{1}:")];
    assert_eq!(
        one_line_failure(&run(&["serve", "--bind", "127.0.0.1:0"], &env)),
        "rollboard: invalid value 'app{1}:' for '--key-prefix <PREFIX>': invalid key_prefix \
         \"app{1}:\": leave out `{` and `}`: each board's keys carry the board's own hash tag \
         (such as \"app1:\")"
    );
    let config = temp_file("rollboard.toml", "key_prefix = \"app 1\"\n");
    let path = config.to_str().unwrap();
    assert_eq!(
        one_line_failure(&run(&["retire", "--config", path], &[])),
        format!(
            "rollboard: {path}:1:14: key_prefix: invalid key_prefix \"app 1\": ' ' is not \
             printable ASCII without spaces (such as \"app1:\")"
        )
    );
}

#[test]
fn a_default_board_that_is_no_board_config_stops_serve() {
    let serve = ["serve", "--bind", "127.0.0.1:0"];
    let env = [("ROLLBOARD_DEFAULT_BOARD", r#"{"slot":"1h"}"#)];
    assert_eq!(
        one_line_failure(&run(&serve, &env)),
        "rollboard: default_board: invalid board config: a windowed board needs `windows`"
    );
    let env = [(
        "ROLLBOARD_DEFAULT_BOARD",
        r#"{"slot":"1h","windows":["1h"],"size":3}"#,
    )];
    let refused = one_line_failure(&run(&serve, &env));
    assert!(
        refused.starts_with(
            "rollboard: invalid value '{\"slot\":\"1h\",\"windows\":[\"1h\"],\"size\":3}' for \
             '--default-board <JSON>': not a board config (unknown field `size`"
        ),
        "{refused}"
    );
}

#[tokio::test]
async fn batch_commands_read_the_redis_settings_of_the_config_file() {
    let redis = TestRedis::start().await;
    // A public bind without tokens in the file: a batch job listens nowhere, so that
    // is no refusal here.
    let config = temp_file(
        "rollboard.toml",
        &format!(
            "bind = \"0.0.0.0:8080\"\nredis_url = \"{}\"\nredis_connection_timeout = \"1s\"\n",
            redis.url
        ),
    );
    let path = config.to_str().unwrap();
    let out = run(&["retire", "--config", path], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("retired: "),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        one_line_failure(&run(&["top", "nope", "--config", path], &[])),
        "rollboard: board \"nope\" does not exist"
    );
    // The environment overrides the file, as for serve.
    let out = run(
        &["top", "nope", "--config", path],
        &[("REDIS_URL", "redis://127.0.0.1:1/")],
    );
    assert!(one_line_failure(&out).starts_with(
        "rollboard: store unavailable: cannot connect to Redis at redis://127.0.0.1:1/"
    ));
}

/// A Redis that listens with TLS only, presenting a self-signed certificate (a CA
/// certificate: `openssl req -x509` marks it `CA:TRUE`), killed on drop.
#[cfg(feature = "tls")]
struct SelfSignedRedis {
    server: std::process::Child,
    port: u16,
    cert: std::path::PathBuf,
}

#[cfg(feature = "tls")]
impl SelfSignedRedis {
    fn start() -> SelfSignedRedis {
        let dir = std::env::temp_dir().join(unique("rollboard-self-signed"));
        std::fs::create_dir_all(&dir).unwrap();
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        let made = Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            ])
            .args([
                "-subj",
                "/CN=127.0.0.1",
                "-addext",
                "subjectAltName=IP:127.0.0.1",
            ])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stderr(Stdio::null())
            .status()
            .expect("run openssl");
        assert!(made.success());
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = Command::new("redis-server")
            .args([
                "--port",
                "0",
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--tls-port", &port.to_string(), "--tls-auth-clients", "no"])
            .arg("--tls-cert-file")
            .arg(&cert)
            .arg("--tls-key-file")
            .arg(&key)
            .arg("--tls-ca-cert-file")
            .arg(&cert)
            .stdout(Stdio::null())
            .spawn()
            .expect("run redis-server");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        SelfSignedRedis { server, port, cert }
    }
}

#[cfg(feature = "tls")]
impl Drop for SelfSignedRedis {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

#[cfg(feature = "tls")]
#[test]
fn a_self_signed_certificate_given_as_its_own_ca_is_explained() {
    let redis = SelfSignedRedis::start();
    let url = format!("rediss://127.0.0.1:{}/", redis.port);
    let out = run(
        &["top", "x"],
        &[
            ("REDIS_URL", &url),
            ("REDIS_TLS_CA", redis.cert.to_str().unwrap()),
        ],
    );
    assert_eq!(
        one_line_failure(&out),
        format!(
            "rollboard: store unavailable: the TLS certificate of Redis at {url} does not verify \
             (CaUsedAsEndEntity): Redis presents a CA certificate as its own (a self-signed \
             certificate given as its own CA, for instance), which TLS refuses: make a CA, sign \
             a server certificate for Redis's host with it (openssl req -x509 for the CA, then \
             openssl x509 -req -CA …), give Redis that certificate (tls-cert-file) and \
             rollboard the CA (REDIS_TLS_CA)"
        )
    );
}
