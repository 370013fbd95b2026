//! `min_replica_acks` over HTTP: on a Redis without the replica asked for, a write is
//! applied but answered 503 `write_uncertain`, saying what to do; its retry under the
//! same `Idempotency-Key` is answered alike and counts once.

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use rollboard::service::ServiceConfig;
use rollboard::{BoardConfig, RedisOptions, ReplicaAcks, Rollboard, Settings};
use serde_json::json;

use crate::support::{TestRedis, clock, spawn_app_on, top_pairs, unique};

#[tokio::test]
async fn a_write_no_replica_confirms_is_503_write_uncertain_and_its_keyed_retry_counts_once() {
    let redis = Arc::new(TestRedis::spawn().await);
    let (board, clock) = (unique("acks"), clock());
    // Created without the option (with it, the creation would be uncertain too).
    Rollboard::with(
        redis.store().await,
        Arc::new(clock.clone()),
        Settings::default(),
    )
    .create(&board, BoardConfig::parse("1h", &["1h"]).unwrap())
    .await
    .unwrap();
    let options = RedisOptions {
        replica_acks: ReplicaAcks {
            min: 1,
            timeout: Duration::from_millis(50),
        },
        ..RedisOptions::default()
    };
    let store = redis.store_with(options).await;
    let app = spawn_app_on(store, redis.clone(), clock, ServiceConfig::default()).await;
    let body = json!({"events": [{"member": "a", "delta": 5}]}).to_string();
    let path = format!("/v1/boards/{board}/events");
    for attempt in 0..2 {
        let reply = app.post_keyed(&path, &body, Some("k-1")).await;
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE, "{attempt}");
        assert_eq!(reply.code(), "write_uncertain");
        assert_eq!(
            reply.body["error"]["message"],
            "write uncertain: Redis applied it, but only 0 of the 1 replicas asked for \
             (min_replica_acks) confirmed it within 50 ms, so a failover could still lose \
             it; send it again with the same Idempotency-Key to have it counted once \
             (without a key it may count twice)"
        );
    }
    assert_eq!(top_pairs(&app, &board, "1h").await, [("a".into(), 5)]);
}
