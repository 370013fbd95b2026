//! `/v1/stats`: recording, reading with a percent-encoded context, the slowest list fed
//! by the service's own `AccessTimeLayer`, a layer that never fails a request, and the
//! layer's values held in the process: every one counted once, in its own hour, written
//! within a second or at a stats read.

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::routing::get;
use reqwest::StatusCode;
use rollboard::http::AccessTimeLayer;
use rollboard::{MemoryStore, Rollboard, Settings};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support::{START, TestRedis, clock, spawn_app, unique};

#[tokio::test]
async fn values_are_recorded_and_read_under_a_percent_encoded_context() {
    let app = spawn_app().await;
    let id = unique("");
    let context = format!("/v1/counters/{{name}}{id}");
    let path = format!("/v1/stats/%2Fv1%2Fcounters%2F%7Bname%7D{id}/Latency");
    for value in [0.25, 0.75] {
        let reply = app.post(&path, json!({"value": value})).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        assert_eq!(
            reply.body,
            json!({"context": context, "kind": "Latency", "value": value})
        );
    }
    let got = app.get(&path).await;
    assert_eq!(got.status, StatusCode::OK);
    let current = &got.body["current"];
    assert_eq!(got.body["context"], json!(context));
    assert_eq!(got.body["previous"], Value::Null);
    assert_eq!(
        (
            &current["hour"],
            &current["count"],
            &current["sum"],
            &current["min"],
            &current["max"],
            &current["mean"]
        ),
        (
            &json!(START),
            &json!(2),
            &json!(1.0),
            &json!(0.25),
            &json!(0.75),
            &json!(0.5)
        )
    );
    let stddev = current["stddev"].as_f64().unwrap();
    assert!((stddev - 0.125f64.sqrt()).abs() < 1e-12, "{stddev}");
    for p in ["p50", "p95", "p99"] {
        assert!(current[p].as_f64().unwrap() >= 0.245, "{p}");
    }

    let missing = app
        .get(&format!("/v1/stats/{}/Latency", unique("none")))
        .await;
    assert_eq!(
        (missing.status, missing.code()),
        (StatusCode::NOT_FOUND, "stats_not_found")
    );
    let bad = app.post(&path, json!({"value": "slow"})).await;
    assert_eq!(
        (bad.status, bad.code()),
        (StatusCode::BAD_REQUEST, "bad_request")
    );
    let kind = app.post("/v1/stats/x/a%20b", json!({"value": 1})).await;
    assert_eq!(kind.status, StatusCode::UNPROCESSABLE_ENTITY);
    let limit = app.get("/v1/stats/slowest?limit=1000").await;
    assert_eq!(limit.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn the_service_records_its_own_routes_by_template() {
    let app = spawn_app().await;
    let c = unique("hits");
    assert_eq!(
        app.post(&format!("/v1/counters/{c}"), json!({}))
            .await
            .status,
        StatusCode::OK
    );
    let _ = app.get(&format!("/v1/counters/{c}")).await;
    // Records run in the background: poll for them.
    for _ in 0..100 {
        let slowest = app
            .get("/v1/stats/slowest?kind=AccessTime&limit=100")
            .await
            .body;
        let contexts: Vec<&str> = slowest["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["context"].as_str().unwrap())
            .collect();
        if contexts.contains(&"/v1/counters/{name}") {
            assert_eq!(slowest["kind"], "AccessTime");
            assert!(!contexts.iter().any(|c| c.contains("hits")), "{contexts:?}");
            let stats = app
                .get("/v1/stats/%2Fv1%2Fcounters%2F%7Bname%7D/AccessTime")
                .await
                .body;
            assert!(stats["current"]["count"].as_u64().unwrap() >= 1);
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the route template was never recorded");
}

#[tokio::test]
async fn the_layer_never_fails_a_request_when_the_store_is_down() {
    let redis = TestRedis::spawn().await;
    let boards = Rollboard::new(redis.store().await);
    redis.kill();
    let app = Router::new()
        .route("/items/{id}", get(|| async { "ok" }))
        .route_layer(AccessTimeLayer::new(boards));
    for _ in 0..3 {
        let request = axum::http::Request::get("/items/7")
            .body(Body::empty())
            .unwrap();
        let response = app.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
}

#[tokio::test]
async fn records_dropped_while_the_store_is_down_are_counted_exactly_by_route() {
    let metrics = rollboard::metrics::install_prometheus();
    let redis = TestRedis::spawn().await;
    let boards = Rollboard::new(redis.store().await);
    redis.kill();
    // A route of its own, so other tests' drops (same process) never touch its series.
    let route = format!("/{}/{{id}}", unique("dropped"));
    let app = Router::new()
        .route(&route, get(|| async { "ok" }))
        .route_layer(AccessTimeLayer::new(boards));
    let path = route.replace("{id}", "7");
    for _ in 0..5 {
        let request = axum::http::Request::get(&path).body(Body::empty()).unwrap();
        let response = app.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    let series = format!("rollboard_access_time_dropped_total{{route=\"{route}\"}}");
    let dropped = || {
        metrics
            .render()
            .lines()
            .find_map(|l| l.strip_prefix(&series)?.trim().parse::<u64>().ok())
    };
    for _ in 0..300 {
        if dropped() == Some(5) {
            tokio::task::yield_now().await;
            assert_eq!(dropped(), Some(5));
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("dropped records counted: {:?}", dropped());
}

#[tokio::test]
async fn a_mounted_app_is_recorded_under_its_full_route_template() {
    let boards = Rollboard::memory();
    let app = Router::new()
        .route("/items/{id}", get(|| async { "ok" }))
        .route_layer(AccessTimeLayer::new(boards.clone()));
    let request = axum::http::Request::get("/items/7")
        .body(Body::empty())
        .unwrap();
    assert_eq!(app.oneshot(request).await.unwrap().status(), StatusCode::OK);
    for _ in 0..100 {
        if let Ok(stats) = boards.stats().read("/items/{id}", "AccessTime").await {
            assert_eq!(stats.current.unwrap().count, 1);
            assert!(boards.stats().read("/items/7", "AccessTime").await.is_err());
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never recorded");
}

#[tokio::test]
async fn openapi_documents_the_stats_routes() {
    let app = spawn_app().await;
    let doc = app.get("/openapi.json").await.body;
    assert!(doc["paths"]["/v1/stats/{context}/{kind}"]["post"].is_object());
    assert!(doc["paths"]["/v1/stats/{context}/{kind}"]["get"].is_object());
    assert!(doc["paths"]["/v1/stats/slowest"]["get"].is_object());
}

/// A route recorded by an [`AccessTimeLayer`] into `boards`.
fn recorded_route(boards: &Rollboard) -> Router {
    Router::new()
        .route("/items/{id}", get(|| async { "ok" }))
        .route_layer(AccessTimeLayer::new(boards.clone()))
}

async fn request(app: &Router, path: &str) {
    let request = axum::http::Request::get(path).body(Body::empty()).unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn every_request_is_counted_once_and_a_stats_read_of_the_process_sees_it_at_once() {
    let boards = Rollboard::memory();
    let app = recorded_route(&boards);
    for i in 0..25 {
        request(&app, &format!("/items/{i}")).await;
    }
    // No wait: the read writes what the process holds first.
    let stats = boards
        .stats()
        .read("/items/{id}", "AccessTime")
        .await
        .unwrap();
    assert_eq!(stats.current.unwrap().count, 25);
    let slowest = boards.stats().slowest("AccessTime", 10).await.unwrap();
    assert_eq!(slowest.len(), 1);
    assert_eq!(slowest[0].context, "/items/{id}");
    for i in 0..4 {
        request(&app, &format!("/items/{i}")).await;
    }
    let stats = boards
        .stats()
        .read("/items/{id}", "AccessTime")
        .await
        .unwrap();
    assert_eq!(stats.current.unwrap().count, 29);
}

#[tokio::test]
async fn values_held_across_an_hour_boundary_count_in_the_hour_they_were_recorded_in() {
    let clock = clock();
    let boards = Rollboard::with(
        std::sync::Arc::new(MemoryStore::new()),
        std::sync::Arc::new(clock.clone()),
        Settings::default(),
    );
    let app = recorded_route(&boards);
    clock.advance_secs(3599);
    for i in 0..3 {
        request(&app, &format!("/items/{i}")).await;
    }
    clock.advance_secs(2);
    for i in 0..2 {
        request(&app, &format!("/items/{i}")).await;
    }
    let stats = boards
        .stats()
        .read("/items/{id}", "AccessTime")
        .await
        .unwrap();
    let (current, previous) = (stats.current.unwrap(), stats.previous.unwrap());
    assert_eq!((previous.hour, previous.count), (START, 3));
    assert_eq!((current.hour, current.count), (START + 3600, 2));
}

#[tokio::test]
async fn held_values_reach_the_store_within_a_second_without_any_read() {
    let redis = TestRedis::start().await;
    let recorder = Rollboard::new(redis.store().await);
    // Another process on the same Redis: its reads cannot write the recorder's values.
    let reader = Rollboard::new(redis.store().await);
    let route = format!("/{}/{{id}}", unique("held"));
    let app = Router::new()
        .route(&route, get(|| async { "ok" }))
        .route_layer(AccessTimeLayer::new(recorder.clone()));
    for i in 0..7 {
        request(&app, &route.replace("{id}", &i.to_string())).await;
    }
    for _ in 0..60 {
        if let Ok(stats) = reader.stats().read(&route, "AccessTime").await {
            let count =
                stats.current.map_or(0, |h| h.count) + stats.previous.map_or(0, |h| h.count);
            assert_eq!(count, 7, "all seven values are written in one flush");
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the held values were not written within 3 s");
}
