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
