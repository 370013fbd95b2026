//! Redis's memory as the service shows it: writes to a full Redis answer 507
//! `store_full` (counted in a metric) and `/readyz` fails with the same code; an
//! evicting `maxmemory-policy` fails `/readyz` unless `accept_eviction`.

use std::sync::Arc;

use reqwest::StatusCode;
use rollboard::Settings;
use rollboard::service::ServiceConfig;
use serde_json::{Value, json};

use crate::support::{TestRedis, clock, spawn_app_with};

#[tokio::test]
async fn writes_to_a_full_redis_answer_507_store_full_and_readyz_says_so() {
    let redis = Arc::new(TestRedis::spawn().await);
    let app = spawn_app_with(redis.clone(), clock(), ServiceConfig::default()).await;
    let b = app.board("1h", &["1h", "24h"]).await;
    let path = format!("/v1/boards/{b}/events");
    assert_eq!(
        app.post(&path, json!({"member": "seed"})).await.status,
        StatusCode::OK
    );

    let limit = redis.used_memory().await + 1024 * 1024;
    redis.config_set("maxmemory", &limit.to_string()).await;
    let padding = "p".repeat(200);
    let mut refused = None;
    for batch in 0..200 {
        let events: Vec<Value> = (0..500)
            .map(|i| json!({"member": format!("{padding}-{batch}-{i}")}))
            .collect();
        let reply = app.post(&path, json!({"events": events})).await;
        if reply.status != StatusCode::OK {
            refused = Some(reply);
            break;
        }
    }
    let reply = refused.expect("1 MiB fills up before 100 000 events");
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::INSUFFICIENT_STORAGE, "store_full")
    );
    assert_eq!(
        reply.body["error"]["message"],
        "Redis is full: it refused the write at its memory limit (maxmemory, with the \
         noeviction policy), so nothing of it was applied; free memory or raise maxmemory \
         (see docs/operations.md, \"Which Redis\") [command not allowed when used memory > \
         'maxmemory']"
    );
    let metrics = app.get_text("/metrics").await;
    assert!(
        metrics.lines().any(|l| l == "rollboard_store_full_total 1"),
        "{metrics}"
    );

    // Redis refused the write while over its limit, but `used_memory` counts client
    // buffers too (this test's own connections' among them), which come and go by tens
    // of KB: readiness is judged against a limit the memory in use is surely over.
    let limit = redis.used_memory().await - 512 * 1024;
    redis.config_set("maxmemory", &limit.to_string()).await;
    let ready = app.get("/readyz").await;
    assert_eq!(
        (ready.status, ready.code()),
        (StatusCode::SERVICE_UNAVAILABLE, "store_full")
    );
    let message = ready.body["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("Redis is full ("), "{message}");
    assert!(
        message.ends_with(&format!(
            " of {limit} bytes of maxmemory used): it refuses writes; free memory or raise maxmemory"
        )),
        "{message}"
    );

    redis.config_set("maxmemory", "0").await;
    assert_eq!(app.get("/readyz").await.status, StatusCode::OK);
    assert_eq!(
        app.post(&path, json!({"member": "late"})).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn readyz_fails_on_an_evicting_policy_unless_accepted() {
    let redis = Arc::new(TestRedis::spawn().await);
    redis.config_set("maxmemory-policy", "allkeys-lru").await;
    let strict = spawn_app_with(redis.clone(), clock(), ServiceConfig::default()).await;
    let ready = strict.get("/readyz").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        ready.body,
        json!({"error": {
            "code": "eviction_policy",
            "message": "Redis's maxmemory-policy is allkeys-lru: at its memory limit it may \
                        evict a slot hash or a totals set, and totals are no longer exact; set \
                        maxmemory-policy noeviction (or accept_eviction = true to accept it)",
        }})
    );

    let config = ServiceConfig {
        settings: Settings {
            accept_eviction: true,
            ..Settings::default()
        },
        ..ServiceConfig::default()
    };
    let accepting = spawn_app_with(redis.clone(), clock(), config).await;
    let ready = accepting.get("/readyz").await;
    assert_eq!(
        (ready.status, ready.body),
        (StatusCode::OK, json!({"status": "ready", "store": "redis"}))
    );
}
