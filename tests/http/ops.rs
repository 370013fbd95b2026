//! Health, readiness, metrics and the OpenAPI document.

use std::collections::BTreeSet;

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::support::spawn_app;

#[tokio::test]
async fn health_and_readiness_name_the_store() {
    let app = spawn_app().await;
    let health = app.get("/healthz").await;
    assert_eq!(
        (health.status, health.body.clone()),
        (StatusCode::OK, json!({"status": "ok", "store": "redis"}))
    );
    let ready = app.get("/readyz").await;
    assert_eq!(
        (ready.status, ready.body.clone()),
        (StatusCode::OK, json!({"status": "ready", "store": "redis"}))
    );
}

#[tokio::test]
async fn the_openapi_document_lists_exactly_the_routes() {
    let app = spawn_app().await;
    let doc = app.get("/openapi.json").await;
    assert_eq!(doc.status, StatusCode::OK);
    let mut operations = BTreeSet::new();
    for (path, item) in doc.body["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            operations.insert(format!("{} {path}", method.to_uppercase()));
        }
    }
    let expected: BTreeSet<String> = [
        "GET /v1/boards",
        "PUT /v1/boards/{board}",
        "GET /v1/boards/{board}",
        "DELETE /v1/boards/{board}",
        "POST /v1/boards/{board}/events",
        "POST /v1/events",
        "GET /v1/members/{member}",
        "POST /v1/members/{member}/hide",
        "POST /v1/members/{member}/show",
        "GET /v1/moderation/hidden",
        "GET /v1/moderation/log",
        "GET /v1/contributors/{by}",
        "GET /v1/boards/{board}/members/{member}/contributors",
        "POST /v1/contributors/{by}/retract",
        "GET /v1/contributors/{by}/retract",
        "POST /v1/contributors/{by}/quarantine",
        "POST /v1/contributors/{by}/release",
        "POST /v1/boards/{board}/recompute",
        "POST /v1/boards/{board}/relayout",
        "POST /v1/boards/{board}/reshard",
        "GET /v1/boards/{board}/top",
        "GET /v1/boards/{board}/ranks",
        "POST /v1/boards/{board}/ranks",
        "GET /v1/boards/{board}/members/{member}",
        "DELETE /v1/boards/{board}/members/{member}",
        "POST /v1/boards/{board}/members/{member}/hide",
        "POST /v1/boards/{board}/members/{member}/show",
        "GET /v1/boards/{board}/hidden",
        "POST /v1/boards/{board}/pins",
        "GET /v1/boards/{board}/pins",
        "DELETE /v1/boards/{board}/pins/{member}",
        "GET /v1/boards/{board}/review",
        "POST /v1/boards/{board}/review",
        "GET /v1/boards/{board}/changes",
        "GET /v1/boards/{board}/members/{member}/around",
        "GET /v1/boards/{board}/members/{member}/history",
        "PUT /v1/boards/{board}/members/{member}/data",
        "GET /v1/boards/{board}/members/{member}/data",
        "DELETE /v1/boards/{board}/members/{member}/data",
        "POST /v1/boards/{board}/members/remove",
        "POST /v1/boards/{board}/trim",
        "GET /v1/boards/{board}/score_at",
        "GET /v1/boards/{board}/snapshots",
        "POST /v1/rates/{key}/hits",
        "POST /v1/rates",
        "GET /v1/rates/{key}",
        "DELETE /v1/rates/{key}",
        "POST /v1/rates/{key}/check",
        "GET /v1/counters",
        "POST /v1/counters/{name}",
        "PUT /v1/counters/{name}",
        "GET /v1/counters/{name}",
        "DELETE /v1/counters/{name}",
        "POST /v1/stats/{context}/{kind}",
        "GET /v1/stats/{context}/{kind}",
        "GET /v1/stats/slowest",
        "GET /v1/dashboard",
        "GET /v1/dashboard/boards",
        "GET /v1/dashboard/member",
        "GET /healthz",
        "GET /readyz",
        "GET /metrics",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(operations, expected);

    // Every documented operation is routed: filled in, it never answers "no such route"
    // nor "method not allowed".
    for op in &operations {
        let (method, path) = op.split_once(' ').unwrap();
        let path = path
            .replace("{board}", "no-such-board")
            .replace("{member}", "m")
            .replace("{name}", "no-such-counter")
            .replace("{context}", "no-such-context")
            .replace("{kind}", "K")
            .replace("{by}", "user:1");
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let reply = app.request(method, &path, Some(json!({})), None).await;
        assert!(
            reply.code() != "not_found" && reply.status != StatusCode::METHOD_NOT_ALLOWED,
            "{op} is documented but not routed: {:?}",
            reply.body
        );
    }
    let schemas = doc.body["components"]["schemas"].as_object().unwrap();
    for name in [
        "TopPage",
        "Entry",
        "BoardStatus",
        "ErrorBody",
        "EventsResponse",
        "ConfigBody",
        "Ranks",
        "MemberRank",
        "RanksBody",
    ] {
        assert!(schemas.contains_key(name), "schema {name} missing");
    }
    let schemes = &doc.body["components"]["securitySchemes"];
    let names: Vec<&String> = schemes.as_object().unwrap().keys().collect();
    assert_eq!(names, ["adminToken", "readToken", "writeToken"]);
    for name in ["adminToken", "readToken", "writeToken"] {
        assert_eq!(
            (
                schemes[name]["type"].clone(),
                schemes[name]["scheme"].clone()
            ),
            (json!("http"), json!("bearer")),
            "{name}"
        );
    }
}

#[tokio::test]
async fn metrics_count_events_and_time_requests() {
    let app = spawn_app().await;
    let b = app.board("1h", &["1h"]).await;
    app.post(
        &format!("/v1/boards/{b}/events"),
        json!({"events": [{"member": "a"}, {"member": "b"}, {"member": "c", "delta": 0}]}),
    )
    .await;
    app.post(
        &format!("/v1/boards/{b}/events"),
        json!({"member": "d", "at": 1}),
    )
    .await;
    app.get(&format!("/v1/boards/{b}/top")).await;

    let text = app.get_text("/metrics").await;
    let value = |series: &str| -> Option<f64> {
        text.lines()
            .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    };
    assert_eq!(
        value(&format!("rollboard_events_accepted_total{{board=\"{b}\"}}")),
        Some(2.0)
    );
    assert_eq!(
        value(&format!(
            "rollboard_events_rejected_total{{board=\"{b}\",reason=\"invalid_delta\"}}"
        )),
        Some(1.0)
    );
    assert_eq!(
        value(&format!(
            "rollboard_events_rejected_total{{board=\"{b}\",reason=\"too_late\"}}"
        )),
        Some(1.0)
    );
    assert!(
        text.contains("rollboard_http_request_duration_seconds_count{method=\"GET\",route=\"/v1/boards/{board}/top\",status=\"200\"}"),
        "no latency histogram for the top route:\n{text}"
    );
    // An unknown board name does not become a series.
    app.post("/v1/boards/ghost-board/events", json!({"member": "a"}))
        .await;
    let text = app
        .client
        .get(format!("{}/metrics", app.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!text.contains("ghost-board"));
}
