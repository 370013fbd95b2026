//! The sample configuration of `deploy/` starts as written: `rollboard serve --config
//! deploy/rollboard.toml` against a real Redis (REDIS_URL) becomes ready and creates the
//! boards the sample declares, with exactly their configs.

use std::process::{Command, Stdio};
use std::time::Duration;

use rollboard::service::{Overrides, ServiceConfig};
use serde_json::{Value, json};

use crate::test_redis::TestRedis;

const SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/rollboard.toml");

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn serve_starts_on_the_deploy_sample_config_and_creates_its_boards() {
    // As written (no environment at all) the file resolves: loopback, no token needed,
    // the memory store.
    let as_written = ServiceConfig::load(Some(SAMPLE.as_ref()), Overrides::default()).unwrap();
    assert_eq!(as_written.bind.to_string(), "127.0.0.1:8080");
    assert_eq!(as_written.redis_url, None);
    assert!(as_written.redis_cluster.is_empty());

    // A Redis of this test's own: the sample's board names are fixed, and another test's
    // board of the same name on a shared REDIS_URL would conflict.
    let redis = TestRedis::spawn().await;
    // The sample binds 127.0.0.1:8080, which another process may hold: `--bind` (which
    // overrides the file's `bind`) moves it to a free port; the file is used unchanged.
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rollboard"))
        .args(["serve", "--config", SAMPLE, "--bind"])
        .arg(format!("127.0.0.1:{port}"))
        .env("REDIS_URL", &redis.url)
        .env_remove("REDIS_CLUSTER_URLS")
        .env_remove("ROLLBOARD_BIND")
        .env_remove("ROLLBOARD_WRITE_TOKEN")
        .env_remove("ROLLBOARD_ADMIN_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start rollboard serve");
    let client = reqwest::Client::new();
    // Up to 30 s: start-up is slow on a loaded machine.
    let mut ready = None;
    for _ in 0..1200 {
        if let Ok(r) = client.get(format!("{url}/readyz")).send().await
            && r.status() == 200
        {
            ready = Some(r.json::<Value>().await.unwrap());
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let get = |board: &'static str| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let r = client
                .get(format!("{url}/v1/boards/{board}"))
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let hot = get("hot-posts").await;
    let posters = get("top-posters").await;
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let exit = child.wait().unwrap();

    assert_eq!(
        ready,
        Some(json!({"status": "ready", "store": "redis"})),
        "/readyz never answered 200"
    );
    assert_eq!(hot.0, 200, "{}", hot.1);
    assert_eq!(hot.1["kind"], "windowed");
    assert_eq!(hot.1["name"], "hot-posts");
    assert_eq!(
        hot.1["config"],
        json!({"slot": "1h", "windows": ["1h", "1d"], "offset": 0, "ties": "competition"})
    );
    assert_eq!(posters.0, 200, "{}", posters.1);
    assert_eq!(posters.1["name"], "top-posters");
    // offset = -7200 in the file: a day's slots start at 22:00 UTC, that is 79200 s
    // into the day.
    assert_eq!(
        posters.1["config"],
        json!({"slot": "1d", "windows": ["7d"], "offset": 79200, "ties": "competition"})
    );
    assert!(exit.success(), "serve exited with {exit} on SIGTERM");
}

/// The settings the sample config names, set or commented out (`# name = …`).
fn sample_settings() -> Vec<String> {
    std::fs::read_to_string(SAMPLE)
        .unwrap()
        .lines()
        .filter_map(|line| {
            let line = line.trim_start_matches('#').trim_start();
            let (name, _) = line.split_once(" = ")?;
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c == '_')
                .then(|| name.to_owned())
        })
        .collect()
}

#[test]
fn the_compose_file_runs_the_image_beside_redis_with_the_samples_settings() {
    use yaml_rust2::{Yaml, YamlLoader};
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/compose.yaml"))
        .unwrap();
    let documents = YamlLoader::load_from_str(&text).expect("compose.yaml parses");
    let services = &documents[0]["services"];
    let strings = |y: &Yaml| -> Vec<String> {
        y.as_vec()
            .unwrap_or_else(|| panic!("a list: {y:?}"))
            .iter()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect()
    };

    // Redis keeps every write on disk (AOF) and every key (noeviction), and says when
    // it is up.
    let redis = &services["redis"];
    let command = strings(&redis["command"]).join(" ");
    assert!(command.contains("--appendonly yes"), "{command}");
    assert!(
        command.contains("--maxmemory-policy noeviction"),
        "{command}"
    );
    assert_eq!(
        strings(&redis["healthcheck"]["test"]),
        ["CMD", "redis-cli", "ping"]
    );

    // rollboard: the repository's image, after Redis is healthy, on the port the image
    // listens on, with the sample config where the image reads it.
    let service = &services["rollboard"];
    assert_eq!(
        service["build"]["dockerfile"].as_str(),
        Some("deploy/Containerfile")
    );
    assert_eq!(
        service["depends_on"]["redis"]["condition"].as_str(),
        Some("service_healthy")
    );
    let containerfile =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/Containerfile"))
            .unwrap();
    assert!(containerfile.contains("ENV ROLLBOARD_BIND=0.0.0.0:8080"));
    assert_eq!(strings(&service["ports"]), ["8080:8080"]);
    assert!(
        containerfile.contains(r#"CMD ["serve", "--config", "/etc/rollboard/rollboard.toml"]"#)
    );
    assert_eq!(
        strings(&service["volumes"]),
        ["./rollboard.toml:/etc/rollboard/rollboard.toml:ro"]
    );
    let probe = strings(&service["healthcheck"]["test"]).join(" ");
    assert!(probe.ends_with("http://127.0.0.1:8080/readyz"), "{probe}");

    // Its environment: Redis by its service name, and settings the sample names too
    // (each ROLLBOARD_X is the sample's `x`), the three tokens and the key prefix among them.
    let environment = service["environment"].as_hash().unwrap();
    let names: Vec<&str> = environment.keys().map(|k| k.as_str().unwrap()).collect();
    assert_eq!(
        environment[&Yaml::from_str("REDIS_URL")].as_str(),
        Some("redis://redis:6379/")
    );
    let settings = sample_settings();
    for name in &names {
        let setting = name
            .strip_prefix("ROLLBOARD_")
            .unwrap_or(name)
            .to_lowercase();
        assert!(
            settings.contains(&setting),
            "{name} in compose.yaml, but the sample config has no {setting}: {settings:?}"
        );
    }
    for token in [
        "ROLLBOARD_READ_TOKEN",
        "ROLLBOARD_WRITE_TOKEN",
        "ROLLBOARD_ADMIN_TOKEN",
        "ROLLBOARD_KEY_PREFIX",
    ] {
        assert!(names.contains(&token), "{token} missing: {names:?}");
    }
}
