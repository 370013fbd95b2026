//! The HTTP service on a Redis Cluster (three masters), chosen the way an operator does
//! (`redis_cluster` in the configuration, through `service::open_store`): create boards,
//! post events, read the top, retire at the slot boundary, drop.

use std::time::Duration;

use reqwest::StatusCode;
use rollboard::Timestamp;
use rollboard::service::ServiceConfig;
use serde_json::{Value, json};

use crate::support::{START, Served, clock, unique};
use crate::test_cluster::TestCluster;

/// A JSON request: status and body.
pub(crate) async fn send(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = client.request(method, url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn boards_are_created_written_read_retired_and_dropped_on_a_cluster() {
    let cluster = TestCluster::shared();
    let config = ServiceConfig {
        redis_cluster: cluster.urls.clone(),
        max_clock_skew: None,
        ..ServiceConfig::default()
    };
    let clock = clock();
    let served = Served::start(config, &clock).await;
    let base = served.base.clone();
    let client = reqwest::Client::new();
    let call = |method, path: &str, body| send(&client, method, format!("{base}{path}"), body);
    use reqwest::Method;

    let (status, body) = call(Method::GET, "/readyz", None).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::OK,
            json!({"status": "ready", "store": "redis-cluster"})
        )
    );
    // Several boards, spread over the masters by their names' hash slots (the store
    // suite checks the spread itself).
    let names: Vec<String> = (0..6).map(|i| unique(&format!("hc{i}-"))).collect();
    for (i, name) in names.iter().enumerate() {
        let (status, _) = call(
            Method::PUT,
            &format!("/v1/boards/{name}"),
            Some(json!({"slot": "1m", "windows": ["1m", "3m"]})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED);
        let (status, body) = call(
            Method::POST,
            &format!("/v1/boards/{name}/events"),
            Some(json!({"events": [
                {"member": "a", "delta": i + 1}, {"member": "b", "delta": 10},
                {"member": "a", "delta": 1}
            ]})),
        )
        .await;
        assert_eq!((status, &body["accepted"]), (StatusCode::OK, &json!(3)));
    }
    for (i, name) in names.iter().enumerate() {
        let (status, top) = call(Method::GET, &format!("/v1/boards/{name}/top"), None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            top["entries"],
            json!([
                {"rank": 1, "member": "b", "score": 10},
                {"rank": 2, "member": "a", "score": i + 2}
            ])
        );
    }
    // The next minute: the scheduler retires the first slot out of the 1m window.
    clock.set(Timestamp::from_unix_seconds(START + 60).unwrap());
    let first = &names[0];
    let (_, body) = call(
        Method::POST,
        &format!("/v1/boards/{first}/events"),
        Some(json!({"member": "c", "delta": 4})),
    )
    .await;
    assert_eq!(body["accepted"], 1);
    let mut retired = false;
    for _ in 0..100 {
        let (_, status) = call(Method::GET, &format!("/v1/boards/{first}"), None).await;
        if status["windows"][0]["retired_through"] == json!(START) {
            retired = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(retired, "the first slot was not retired within 5 s");
    let (_, minute) = call(Method::GET, &format!("/v1/boards/{first}/top"), None).await;
    assert_eq!(
        minute["entries"],
        json!([{"rank": 1, "member": "c", "score": 4}])
    );
    let (_, wide) = call(
        Method::GET,
        &format!("/v1/boards/{first}/top?window=3m"),
        None,
    )
    .await;
    assert_eq!(
        wide["entries"],
        json!([
            {"rank": 1, "member": "b", "score": 10},
            {"rank": 2, "member": "c", "score": 4},
            {"rank": 3, "member": "a", "score": 2}
        ])
    );

    for name in &names {
        let (status, _) = call(Method::DELETE, &format!("/v1/boards/{name}"), None).await;
        assert!(status.is_success(), "drop {name}: {status}");
        let (status, _) = call(Method::GET, &format!("/v1/boards/{name}/top"), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    served.stop().await;
}
