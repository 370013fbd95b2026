//! `Idempotency-Key` on `POST /v1/boards/{b}/events`: a retry with the same key and body
//! is applied once and answered with the same status and body; the key with another body
//! is 422 `idempotency_key_reused`; a write answered 503 is retried safely.

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use rollboard::service::ServiceConfig;
use rollboard::{RedisOptions, RedisStore};
use serde_json::json;

use crate::proxy::{Fault, FaultProxy, Request};
use crate::support::{
    START, TestRedis, clock, pairs, rejected_codes, spawn_app, spawn_app_on, top_pairs,
};

#[tokio::test]
async fn a_retried_post_with_the_same_key_is_applied_once_and_answered_alike() {
    let app = spawn_app().await;
    let b = app.board("1h", &["1h", "3h"]).await;
    app.at(3600 + 60);
    let batch = json!({"events": [
        {"member": "a", "delta": 2},
        {"member": "d", "delta": 0},
        {"member": "b", "at": START + 10},
        {"member": "c", "at": START - 4 * 3600},
    ]})
    .to_string();
    let first = app
        .post_keyed(&format!("/v1/boards/{b}/events"), &batch, Some("batch-1"))
        .await;
    assert_eq!(first.status, StatusCode::OK, "{:?}", first.body);
    assert_eq!(first.body["accepted"], 2);
    let codes: Vec<(u64, &str)> = rejected_codes(&first.body);
    assert_eq!(codes, [(1, "invalid_delta"), (3, "too_late")]);
    app.at(3600 + 600);
    let again = app
        .post_keyed(&format!("/v1/boards/{b}/events"), &batch, Some("batch-1"))
        .await;
    assert_eq!((again.status, &again.body), (first.status, &first.body));
    assert_eq!(
        top_pairs(&app, &b, "3h").await,
        pairs(&[("a", 2), ("b", 1)])
    );

    // A single event, applied, then rejected: each retry answers the same.
    let single = json!({"member": "a", "delta": 5}).to_string();
    for _ in 0..2 {
        let reply = app
            .post_keyed(&format!("/v1/boards/{b}/events"), &single, Some("one-1"))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        assert_eq!(reply.body, json!({"accepted": 1}));
    }
    let late = json!({"member": "z", "at": START - 4 * 3600}).to_string();
    let first = app
        .post_keyed(&format!("/v1/boards/{b}/events"), &late, Some("late-1"))
        .await;
    assert_eq!(first.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(first.code(), "too_late");
    app.at(3600 + 900);
    let again = app
        .post_keyed(&format!("/v1/boards/{b}/events"), &late, Some("late-1"))
        .await;
    assert_eq!((again.status, &again.body), (first.status, &first.body));
    assert_eq!(
        top_pairs(&app, &b, "3h").await,
        pairs(&[("a", 7), ("b", 1)])
    );
}

#[tokio::test]
async fn a_key_reused_for_another_body_or_malformed_is_refused() {
    let app = spawn_app().await;
    let b = app.board("1h", &["1h"]).await;
    let one = json!({"member": "a"}).to_string();
    assert_eq!(
        app.post_keyed(&format!("/v1/boards/{b}/events"), &one, Some("k"))
            .await
            .status,
        StatusCode::OK
    );
    let other = json!({"member": "b"}).to_string();
    let reused = app
        .post_keyed(&format!("/v1/boards/{b}/events"), &other, Some("k"))
        .await;
    assert_eq!(reused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(reused.code(), "idempotency_key_reused");
    // A batch holding the same event is another body too.
    let batch = json!({"events": [{"member": "a"}]}).to_string();
    assert_eq!(
        app.post_keyed(&format!("/v1/boards/{b}/events"), &batch, Some("k"))
            .await
            .code(),
        "idempotency_key_reused"
    );
    let bad = app
        .post_keyed(&format!("/v1/boards/{b}/events"), &one, Some("has space"))
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad.code(), "invalid_idempotency_key");
    assert_eq!(top_pairs(&app, &b, "1h").await, pairs(&[("a", 1)]));
}

/// A `write.lua` call of `board`: the only script with the index, the log and totals.
fn write_call(board: &str) -> impl Fn(&Request) -> bool + Send + Sync + 'static {
    let (index, log, totals) = (
        format!("slots_{{{board}}}"),
        format!("rebuild_log_{{{board}}}"),
        format!("stats_{{{board}}}"),
    );
    move |r| r.is_script_with_key(&index) && r.has_arg(&log) && r.has_arg(&totals)
}

#[tokio::test]
async fn a_write_answered_503_is_retried_with_its_key_and_counted_once() {
    let redis = Arc::new(TestRedis::start().await);
    let proxy = FaultProxy::start(&redis.url).await;
    let options = RedisOptions {
        response_timeout: Duration::from_millis(600),
        ..RedisOptions::default()
    };
    let store = Arc::new(
        RedisStore::connect_with(&proxy.url(), options)
            .await
            .unwrap(),
    );
    let config = ServiceConfig {
        max_clock_skew: None,
        ..ServiceConfig::default()
    };
    let app = spawn_app_on(store, redis, clock(), config).await;
    let b = app.board("1h", &["1h"]).await;
    let batch = json!({"events": [{"member": "a", "delta": 3}, {"member": "b"}]}).to_string();
    proxy.arm(Fault::Cut, 1, write_call(&b));
    let lost = app
        .post_keyed(&format!("/v1/boards/{b}/events"), &batch, Some("w-1"))
        .await;
    assert_eq!(
        lost.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{:?}",
        lost.body
    );
    assert_eq!(lost.code(), "store_unavailable");
    assert_eq!(proxy.fired(), 1);
    // Redis applied it; the retry says so without applying it again.
    let retried = app
        .post_keyed(&format!("/v1/boards/{b}/events"), &batch, Some("w-1"))
        .await;
    assert_eq!(retried.status, StatusCode::OK, "{:?}", retried.body);
    assert_eq!(retried.body, json!({"accepted": 2, "rejected": []}));
    assert_eq!(
        top_pairs(&app, &b, "1h").await,
        pairs(&[("a", 3), ("b", 1)])
    );
}
