//! What an operator reads: `/metrics` is complete (every family described, the alert
//! counters there from the start, the build, the process, fine latency buckets), the new
//! counters count, and CORS is opt-in.

use std::collections::BTreeSet;
use std::sync::Arc;

use reqwest::{Method, StatusCode};
use rollboard::service::ServiceConfig;
use serde_json::json;

use crate::support::{TestRedis, clock, spawn_app, spawn_app_with};

/// The names of the families declared by `# HELP` and by `# TYPE` lines.
fn declared(text: &str, prefix: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .filter_map(|rest| rest.split(' ').next())
        .map(String::from)
        .collect()
}

/// The value of the sample `series` (exactly: name and labels as rendered).
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[tokio::test]
async fn every_family_is_described_and_alert_counters_exist_from_the_start() {
    let app = spawn_app().await;
    // A request first, so the latency histogram has a series.
    app.get("/v1/boards").await;
    let text = app.get_text("/metrics").await;
    let helped = declared(&text, "# HELP ");
    let typed = declared(&text, "# TYPE ");
    assert_eq!(helped, typed, "families without HELP or TYPE:\n{text}");
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let name = line.split(['{', ' ']).next().unwrap();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|f| typed.contains(*f)))
            .unwrap_or(name);
        assert!(typed.contains(family), "{name} has no # TYPE:\n{text}");
    }
    // Present from the start (other tests of this process may have counted some of
    // them already; a fresh process shows them at 0, see docs/operations.md).
    for series in [
        "rollboard_store_full_total",
        "rollboard_connection_cap_reached_total",
        "rollboard_compacted_slots_total",
        "rollboard_compacted_fields_total",
        "rollboard_trending_events_total",
        "rollboard_counters_increments_total",
        "rollboard_stats_records_total",
        "rollboard_store_errors_total{kind=\"store_unavailable\"}",
        "rollboard_store_errors_total{kind=\"store_full\"}",
        "rollboard_store_errors_total{kind=\"store_error\"}",
        "rollboard_rate_checks_total{outcome=\"allowed\"}",
        "rollboard_rate_checks_total{outcome=\"denied\"}",
        "rollboard_snapshot_webhook_total{outcome=\"delivered\"}",
        "rollboard_snapshot_webhook_total{outcome=\"failed\"}",
    ] {
        assert!(value(&text, series).is_some(), "{series} missing:\n{text}");
    }
    let build = format!(
        "rollboard_build_info{{version=\"{}\"}}",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(value(&text, &build), Some(1.0), "{text}");
    for family in [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_start_time_seconds",
    ] {
        assert!(typed.contains(family), "{family} missing:\n{text}");
    }
    assert!(
        text.lines().any(
            |l| l.starts_with("rollboard_http_request_duration_seconds_bucket{")
                && l.contains("le=\"0.00005\"")
        ),
        "no 50 µs bucket:\n{text}"
    );
}

#[tokio::test]
async fn counters_stats_rate_checks_and_trending_writes_are_counted() {
    let app = spawn_app().await;
    let before = app.get_text("/metrics").await;
    let read = |text: &str, series: &str| value(text, series).unwrap_or(0.0);

    assert_eq!(
        app.post("/v1/counters/obs-signups", json!({"count": 3}))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        app.post("/v1/stats/obs-context/Latency", json!({"value": 0.5}))
            .await
            .status,
        StatusCode::OK
    );
    let key = crate::support::unique("obs-key");
    let check = json!({"limit": 1, "last": "1m"});
    let first = app
        .post(&format!("/v1/rates/{key}/check"), check.clone())
        .await;
    assert_eq!(first.body["allowed"], json!(true), "{:?}", first.body);
    let second = app.post(&format!("/v1/rates/{key}/check"), check).await;
    assert_eq!(second.body["allowed"], json!(false), "{:?}", second.body);
    let trending = crate::support::unique("obs-trend");
    let created = app
        .put(
            &format!("/v1/boards/{trending}"),
            json!({"kind": "trending", "half_life": "6h"}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    let events = json!({"events": [{"member": "a"}, {"member": "b"}]});
    let written = app
        .post(&format!("/v1/boards/{trending}/events"), events)
        .await;
    assert_eq!(written.body["accepted"], json!(2), "{:?}", written.body);
    let windowed = app.board("1h", &["1h"]).await;
    app.post(
        &format!("/v1/boards/{windowed}/events"),
        json!({"member": "a"}),
    )
    .await;

    let after = app.get_text("/metrics").await;
    // Other tests of this process count too: each grew by at least this test's share.
    for (series, grew) in [
        ("rollboard_counters_increments_total", 1.0),
        ("rollboard_stats_records_total", 1.0),
        ("rollboard_rate_checks_total{outcome=\"allowed\"}", 1.0),
        ("rollboard_rate_checks_total{outcome=\"denied\"}", 1.0),
        ("rollboard_trending_events_total", 2.0),
    ] {
        assert!(
            read(&after, series) - read(&before, series) >= grew,
            "{series}: {} then {}",
            read(&before, series),
            read(&after, series)
        );
    }
}

const ORIGIN: &str = "https://forum.example";

async fn preflight(app: &crate::support::TestApp, origin: &str) -> reqwest::Response {
    app.client
        .request(Method::OPTIONS, format!("{}/v1/boards/x/events", app.url))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "content-type,authorization,idempotency-key",
        )
        .send()
        .await
        .unwrap()
}

async fn get_top(app: &crate::support::TestApp, board: &str, origin: &str) -> reqwest::Response {
    app.client
        .get(format!("{}/v1/boards/{board}/top", app.url))
        .header("origin", origin)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn cors_answers_the_configured_origins_only() {
    let redis = Arc::new(TestRedis::start().await);
    let config = ServiceConfig {
        cors_origins: vec![ORIGIN.into()],
        ..ServiceConfig::default()
    };
    let app = spawn_app_with(redis, clock(), config).await;
    let board = app.board("1h", &["1h"]).await;

    let ok = preflight(&app, ORIGIN).await;
    assert!(
        matches!(ok.status(), StatusCode::OK | StatusCode::NO_CONTENT),
        "{}",
        ok.status()
    );
    let headers = ok.headers();
    assert_eq!(headers["access-control-allow-origin"], ORIGIN);
    let methods = headers["access-control-allow-methods"].to_str().unwrap();
    for method in ["GET", "POST", "PUT", "DELETE", "OPTIONS"] {
        assert!(methods.contains(method), "{methods}");
    }
    let allowed = headers["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_lowercase();
    for header in ["content-type", "authorization", "idempotency-key"] {
        assert!(allowed.contains(header), "{allowed}");
    }

    let top = get_top(&app, &board, ORIGIN).await;
    assert_eq!(top.status(), StatusCode::OK);
    assert_eq!(top.headers()["access-control-allow-origin"], ORIGIN);

    let elsewhere = get_top(&app, &board, "https://evil.example").await;
    assert_eq!(elsewhere.status(), StatusCode::OK);
    assert!(
        !elsewhere
            .headers()
            .contains_key("access-control-allow-origin")
    );
    let other_preflight = preflight(&app, "https://evil.example").await;
    assert!(
        !other_preflight
            .headers()
            .contains_key("access-control-allow-origin")
    );
}

#[tokio::test]
async fn any_origin_with_a_star() {
    let redis = Arc::new(TestRedis::start().await);
    let config = ServiceConfig {
        cors_origins: vec!["*".into()],
        ..ServiceConfig::default()
    };
    let app = spawn_app_with(redis, clock(), config).await;
    let board = app.board("1h", &["1h"]).await;
    let top = get_top(&app, &board, "https://anyone.example").await;
    assert_eq!(top.headers()["access-control-allow-origin"], "*");
}

#[tokio::test]
async fn without_cors_origins_there_are_no_cors_headers() {
    let app = spawn_app().await;
    let board = app.board("1h", &["1h"]).await;
    let answer = preflight(&app, ORIGIN).await;
    // As before CORS existed: no OPTIONS route.
    assert_eq!(answer.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert!(!answer.headers().contains_key("access-control-allow-origin"));
    let top = get_top(&app, &board, ORIGIN).await;
    assert_eq!(top.status(), StatusCode::OK);
    assert!(!top.headers().contains_key("access-control-allow-origin"));
}

#[tokio::test]
async fn with_a_read_token_preflights_pass_and_refusals_carry_cors_headers() {
    let redis = Arc::new(TestRedis::start().await);
    let mut config = ServiceConfig {
        cors_origins: vec![ORIGIN.into()],
        ..ServiceConfig::default()
    };
    config.tokens.read = Some("r".into());
    let app = spawn_app_with(redis, clock(), config).await;
    // No board needed: the refusal comes first.
    let board = "cors-guarded";
    // A browser's preflight carries no token: CORS answers it.
    let ok = preflight(&app, ORIGIN).await;
    assert!(ok.status().is_success(), "{}", ok.status());
    assert_eq!(ok.headers()["access-control-allow-origin"], ORIGIN);
    // The read without a token is refused, in a way the page can read.
    let refused = get_top(&app, board, ORIGIN).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(refused.headers()["access-control-allow-origin"], ORIGIN);
    assert_eq!(refused.headers()["www-authenticate"], "Bearer");
}
