//! The router is a library function: a forum mounts it under a prefix next to its own
//! routes, and everything (API, errors, dashboard) works there.

use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use rollboard::http::{HttpOptions, router};
use rollboard::{MemoryStore, Rollboard};
use serde_json::{Value, json};

#[tokio::test]
async fn the_router_works_under_a_prefix() {
    let boards = Rollboard::new(Arc::new(MemoryStore::new()));
    let app = Router::new()
        .route("/", get(|| async { "forum home" }))
        .nest("/rank", router(boards, HttpOptions::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let client = reqwest::Client::new();

    assert_eq!(
        client
            .get(format!("{url}/"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
        "forum home"
    );
    let created = client
        .put(format!("{url}/rank/v1/boards/hot"))
        .json(&json!({"slot": "1h", "windows": ["1h"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    client
        .post(format!("{url}/rank/v1/boards/hot/events"))
        .json(&json!({"member": "post:1", "delta": 2}))
        .send()
        .await
        .unwrap();
    let top: Value = client
        .get(format!("{url}/rank/v1/boards/hot/top"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        top["entries"],
        json!([{"rank": 1, "member": "post:1", "score": 2}])
    );
    let missing = client
        .get(format!("{url}/rank/v1/boards/nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["error"]["code"], "board_not_found");
    let doc: Value = client
        .get(format!("{url}/rank/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["servers"][0]["url"], "/rank");
    let dashboard = client.get(format!("{url}/rank")).send().await.unwrap();
    assert_eq!(dashboard.status(), 200);
    assert!(
        dashboard
            .text()
            .await
            .unwrap()
            .contains("<title>rollboard</title>")
    );
}
