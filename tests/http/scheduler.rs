//! The scheduler inside the service: a catch-up at start-up, and retirement at slot
//! boundaries of boards created over HTTP. The clock is manual; moving it wakes the
//! scheduler's retirer, whose passes run in the background, so these tests poll for
//! up to a few seconds.

use std::sync::Arc;
use std::time::Duration;

use rollboard::service::ServiceConfig;
use rollboard::{BoardConfig, Rollboard, Settings};
use serde_json::json;

use crate::support::{START, TestApp, TestRedis, clock, spawn_app, spawn_app_with, unique};

/// Polls the board's description until every window's lag is zero.
pub async fn wait_retired(app: &TestApp, board: &str) -> serde_json::Value {
    for _ in 0..100 {
        let status = app.get(&format!("/v1/boards/{board}")).await.body;
        if status["windows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["lag_seconds"] == 0)
        {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("board {board} was not retired within 5 s");
}

#[tokio::test]
async fn the_service_catches_up_after_downtime() {
    let redis = Arc::new(TestRedis::start().await);
    let clock = clock();
    // Written while "no service ran"; then three hours pass.
    let offline = Rollboard::with(
        redis.store().await,
        Arc::new(clock.clone()),
        Settings::default(),
    );
    let board = unique("catch");
    offline
        .create(&board, BoardConfig::parse("1h", &["1h", "2h"]).unwrap())
        .await
        .unwrap();
    offline.windowed(&board).incr("a", 5, None).await.unwrap();
    clock.advance_secs(3 * 3600);

    let app = spawn_app_with(redis, clock, ServiceConfig::default()).await;
    let status = wait_retired(&app, &board).await;
    assert_eq!(status["live_slots"], 0);
    let top = app.get(&format!("/v1/boards/{board}/top?window=2h")).await;
    assert_eq!(top.body["entries"], json!([]));
    assert_eq!(top.body["from"], START + 2 * 3600);
}

#[tokio::test]
async fn boards_created_over_http_are_retired_at_the_next_boundary() {
    let app = spawn_app().await;
    let b = app.board("1m", &["1m", "3m"]).await;
    app.post(
        &format!("/v1/boards/{b}/events"),
        json!({"member": "a", "delta": 2}),
    )
    .await;
    app.at(60);
    app.post(&format!("/v1/boards/{b}/events"), json!({"member": "b"}))
        .await;
    let status = wait_retired(&app, &b).await;
    assert_eq!(status["windows"][0]["retired_through"], START);
    let top = app.get(&format!("/v1/boards/{b}/top")).await;
    assert_eq!(
        top.body["entries"],
        json!([{"rank": 1, "member": "b", "score": 1}])
    );
    let wide = app.get(&format!("/v1/boards/{b}/top?window=3m")).await;
    assert_eq!(
        wide.body["entries"][0],
        json!({"rank": 1, "member": "a", "score": 2})
    );
}
