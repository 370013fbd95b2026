//! Per-board metric series are capped (`metrics_board_series`): the first boards get a
//! `board` label of their own, every other board counts under `board="(other)"`.

use std::sync::Arc;
use std::time::Duration;

use rollboard::Settings;
use rollboard::service::ServiceConfig;
use serde_json::json;

use crate::scheduler::wait_retired;
use crate::support::{TestApp, TestRedis, clock, spawn_app_with};

/// The value of the series named exactly `series` in `text`.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// Posts `members` (one point each) and one event with a zero delta (rejected).
async fn post(app: &TestApp, board: &str, members: &[&str]) {
    let mut events: Vec<_> = members.iter().map(|m| json!({"member": m})).collect();
    events.push(json!({"member": "zero", "delta": 0}));
    let reply = app
        .post(
            &format!("/v1/boards/{board}/events"),
            json!({ "events": events }),
        )
        .await;
    assert_eq!(reply.body["accepted"], members.len());
}

/// Polls `/metrics` until `series` reads `expected` (the retirer records its passes in
/// the background), and returns the text.
async fn wait_for(app: &TestApp, series: &str, expected: f64) -> String {
    for _ in 0..100 {
        let text = app.get_text("/metrics").await;
        if value(&text, series) == Some(expected) {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{series} did not reach {expected} within 5 s");
}

#[tokio::test]
async fn metric_series_go_to_the_first_boards_and_the_rest_count_as_other() {
    let config = ServiceConfig {
        settings: Settings {
            metrics_board_series: 2,
            ..Settings::default()
        },
        ..ServiceConfig::default()
    };
    let app = spawn_app_with(Arc::new(TestRedis::start().await), clock(), config).await;
    // Each board is written (and so seen by the metrics) before the next one exists.
    let first = app.board("1m", &["1m"]).await;
    post(&app, &first, &["a", "b"]).await;
    let second = app.board("1m", &["1m"]).await;
    post(&app, &second, &["a"]).await;
    let third = app.board("1m", &["1m"]).await;
    post(&app, &third, &["a", "b", "c"]).await;

    let text = app.get_text("/metrics").await;
    let accepted = |b: &str| {
        value(
            &text,
            &format!("rollboard_events_accepted_total{{board=\"{b}\"}}"),
        )
    };
    let rejected = |b: &str| {
        value(
            &text,
            &format!("rollboard_events_rejected_total{{board=\"{b}\",reason=\"invalid_delta\"}}"),
        )
    };
    assert_eq!(accepted(&first), Some(2.0));
    assert_eq!(accepted(&second), Some(1.0));
    assert_eq!(accepted("(other)"), Some(3.0));
    assert_eq!(rejected(&first), Some(1.0));
    assert_eq!(rejected(&second), Some(1.0));
    assert_eq!(rejected("(other)"), Some(1.0));
    assert!(
        !text.contains(&third),
        "the third board has series:\n{text}"
    );

    // Retirement: the third board's fields and members count under (other) too, and its
    // window's lag is that of (other).
    app.at(120);
    for b in [&first, &second, &third] {
        wait_retired(&app, b).await;
    }
    for (b, members) in [(&first, 2.0), (&second, 1.0)] {
        let own = format!("rollboard_members_zeroed_total{{board=\"{b}\"}}");
        wait_for(&app, &own, members).await;
    }
    let text = wait_for(
        &app,
        "rollboard_members_zeroed_total{board=\"(other)\"}",
        3.0,
    )
    .await;
    let zeroed = |b: &str| {
        value(
            &text,
            &format!("rollboard_members_zeroed_total{{board=\"{b}\"}}"),
        )
    };
    let fields = |b: &str| {
        value(
            &text,
            &format!("rollboard_retired_fields_total{{board=\"{b}\"}}"),
        )
    };
    let lag = |b: &str| {
        value(
            &text,
            &format!("rollboard_retirement_lag_seconds{{board=\"{b}\",window=\"1m\"}}"),
        )
    };
    assert_eq!(zeroed(&first), Some(2.0));
    assert_eq!(fields(&first), Some(2.0));
    assert_eq!(fields(&second), Some(1.0));
    assert_eq!(fields("(other)"), Some(3.0));
    assert_eq!(lag("(other)"), Some(0.0));
    assert_eq!(lag(&second), Some(0.0));
    assert!(
        !text.contains(&third),
        "the third board has series:\n{text}"
    );
}
