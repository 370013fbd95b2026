//! One clock: the service compares its clock with Redis `TIME`; the skew is a metric,
//! and `/readyz` fails above `max_clock_skew` (default 5 s). One test only: the metric
//! is process-wide, and the other tests of this binary leave the clock unchecked.

use std::sync::Arc;

use reqwest::StatusCode;
use rollboard::service::ServiceConfig;
use rollboard::{ManualClock, Timestamp};
use serde_json::json;

use crate::support::{TestApp, TestRedis, spawn_app_checking_clock};

/// Redis's clock, unix milliseconds.
async fn redis_millis(redis: &TestRedis) -> i64 {
    let (seconds, micros): (i64, i64) = redis::cmd("TIME")
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
    seconds * 1000 + micros / 1000
}

/// The value of `rollboard_clock_skew_seconds` at `/metrics`.
async fn skew_metric(app: &TestApp) -> f64 {
    let text = app.get_text("/metrics").await;
    text.lines()
        .find_map(|line| line.strip_prefix("rollboard_clock_skew_seconds "))
        .unwrap_or_else(|| panic!("no skew metric in:\n{text}"))
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_clock_30_s_ahead_of_redis_fails_readiness_and_shows_in_the_metric() {
    let redis = Arc::new(TestRedis::start().await);
    let ahead = Timestamp::from_unix_millis(redis_millis(&redis).await + 30_000).unwrap();
    let clock = ManualClock::new(ahead);
    let app =
        spawn_app_checking_clock(redis.clone(), clock.clone(), ServiceConfig::default()).await;

    let ready = app.get("/readyz").await;
    assert_eq!(
        (ready.status, ready.code()),
        (StatusCode::SERVICE_UNAVAILABLE, "clock_skew")
    );
    let message = ready.body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("this process's clock is +29.") && message.contains("5 s allowed"),
        "{message}"
    );
    // The manual clock stands still while Redis's runs on: a little under 30 s.
    let skew = skew_metric(&app).await;
    assert!((29.0..=30.0).contains(&skew), "skew {skew}");

    // In sync again: ready, and the metric follows.
    clock.set(Timestamp::from_unix_millis(redis_millis(&redis).await).unwrap());
    let ready = app.get("/readyz").await;
    assert_eq!(
        (ready.status, ready.body),
        (StatusCode::OK, json!({"status": "ready", "store": "redis"}))
    );
    let skew = skew_metric(&app).await;
    assert!((-1.0..=0.0).contains(&skew), "skew {skew}");
}
