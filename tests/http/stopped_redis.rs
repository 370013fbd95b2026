//! Redis stopped (SIGSTOP) for a few seconds under the service: requests answer 503
//! `store_unavailable` within the configured timeouts, `/readyz` goes red, and when
//! Redis resumes (SIGCONT) `/readyz` goes green and writes go through with nothing
//! restarted.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use rollboard::service::ServiceConfig;
use serde_json::json;

use crate::cluster::send;
use crate::support::{Served, TestRedis, clock, unique};

/// The pid of the test's Redis (`INFO server`).
async fn redis_pid(redis: &TestRedis) -> String {
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .unwrap()
        .trim()
        .to_owned()
}

fn signal(pid: &str, signal: &str) {
    let sent = std::process::Command::new("kill")
        .args([signal, pid])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {signal} {pid}");
}

#[tokio::test]
async fn a_stopped_redis_is_503_within_the_timeouts_then_everything_resumes() {
    let redis = TestRedis::spawn().await;
    let pid = redis_pid(&redis).await;
    let mut config = ServiceConfig {
        redis_url: Some(redis.url.clone()),
        max_clock_skew: None,
        ..ServiceConfig::default()
    };
    config.redis.response_timeout = Duration::from_millis(300);
    let served = Served::start(config, &clock()).await;
    let base = served.base.clone();
    let client = reqwest::Client::new();
    let call = |method, path: &str, body| send(&client, method, format!("{base}{path}"), body);
    let name = unique("stop");
    let (status, _) = call(
        Method::PUT,
        &format!("/v1/boards/{name}"),
        Some(json!({"slot": "1h", "windows": ["1h"]})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let event = json!({"member": "a", "delta": 2});
    let path = format!("/v1/boards/{name}/events");
    let (status, _) = call(Method::POST, &path, Some(event.clone())).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(call(Method::GET, "/readyz", None).await.0, StatusCode::OK);

    signal(&pid, "-STOP");
    // A write waits one response timeout, a read two (it is sent once more); well
    // within a second either way, far from the 30 s request timeout.
    for (method, path, body) in [
        (Method::POST, path.clone(), Some(event.clone())),
        (Method::GET, format!("/v1/boards/{name}/top"), None),
        (Method::GET, "/readyz".to_owned(), None),
    ] {
        let started = Instant::now();
        let (status, body) = call(method, &path, body).await;
        let took = started.elapsed();
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::SERVICE_UNAVAILABLE, Some("store_unavailable")),
            "{path}: {body}"
        );
        assert!(took < Duration::from_millis(1500), "{path} took {took:?}");
    }
    signal(&pid, "-CONT");

    let mut ready = false;
    for _ in 0..100 {
        if call(Method::GET, "/readyz", None).await.0 == StatusCode::OK {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ready, "/readyz green again within 5 s of SIGCONT");
    let (status, _) = call(Method::POST, &path, Some(event)).await;
    assert_eq!(status, StatusCode::OK);
    // The write sent while Redis was stopped ran when it resumed (its reply was lost,
    // so it answered 503): 2 + 2 + 2.
    let (_, top) = call(Method::GET, &format!("/v1/boards/{name}/top"), None).await;
    assert_eq!(
        top["entries"],
        json!([{"rank": 1, "member": "a", "score": 6}])
    );
    served.stop().await;
}
