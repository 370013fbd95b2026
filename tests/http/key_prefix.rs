//! `key_prefix` (`ROLLBOARD_KEY_PREFIX`): with `app1:`, every key the service writes,
//! for boards of every family, their records and snapshots, counters, stats, rates, a
//! keyed write and member data, starts with `app1:`, on one Redis and on a Redis Cluster
//! (each of their own, so that every key seen is the service's).

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use rollboard::service::{ConfigFile, Overrides, ServiceConfig};
use rollboard::{KeyPrefix, Timestamp};
use serde_json::{Value, json};

use crate::support::{START, Served, TestRedis, clock};
use crate::test_cluster::TestCluster;

/// Runs the service over `redis_url` or `redis_cluster` with the prefix `app1:` (given
/// as `ROLLBOARD_KEY_PREFIX` is, an override), and has it write every kind of key.
async fn write_everything(redis_url: Option<String>, redis_cluster: Option<Vec<String>>) {
    let overrides = Overrides {
        redis_url,
        redis_cluster,
        key_prefix: Some(KeyPrefix::parse("app1:").unwrap()),
        ..Overrides::default()
    };
    let config = ServiceConfig {
        max_clock_skew: None,
        ..ServiceConfig::resolve(ConfigFile::default(), overrides).unwrap()
    };
    let clock = clock();
    let served = Served::start(config, &clock).await;
    let base = served.base.clone();
    let client = reqwest::Client::new();
    let call = async |method: Method, path: &str, body: Value| -> (StatusCode, Value) {
        let response = client
            .request(method, format!("{base}{path}"))
            .header("idempotency-key", format!("k-{path}"))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    };

    // Each board, and whether its events carry a `value` (max, latest) or a `delta`.
    let boards = [
        (
            "sums",
            "delta",
            json!({"slot": "1m", "windows": ["1m", "3m"], "ties": "dense",
                                 "snapshots": {"top": 2, "keep": 3}}),
        ),
        (
            "peaks",
            "value",
            json!({"slot": "1m", "windows": ["3m"], "aggregate": "max"}),
        ),
        (
            "newest",
            "value",
            json!({"slot": "1m", "windows": ["3m"], "aggregate": "latest"}),
        ),
        (
            "sharded",
            "delta",
            json!({"slot": "1m", "windows": ["1m"], "shards": 2}),
        ),
        (
            "hot",
            "delta",
            json!({"kind": "trending", "half_life": "1h"}),
        ),
    ];
    for (name, field, config) in &boards {
        let (status, body) = call(Method::PUT, &format!("/v1/boards/{name}"), config.clone()).await;
        assert_eq!(status, StatusCode::CREATED, "{name}: {body}");
        let mut events =
            json!({"events": [{"member": "a", *field: 2}, {"member": "b", *field: 1}]});
        if *name != "hot" {
            // Member data (a trending board keeps none).
            events["events"][0]["data"] = json!({"title": "A"});
        }
        let (status, body) = call(Method::POST, &format!("/v1/boards/{name}/events"), events).await;
        assert_eq!(
            (status, &body["accepted"]),
            (StatusCode::OK, &json!(2)),
            "{name}: {body}"
        );
    }
    let writes = [
        ("/v1/counters/views", json!({"count": 3})),
        ("/v1/stats/home/AccessTime", json!({"value": 1.5})),
        ("/v1/rates/user-7/hits", json!({"count": 2})),
    ];
    for (path, body) in writes {
        let (status, reply) = call(Method::POST, path, body).await;
        assert_eq!(status, StatusCode::OK, "{path}: {reply}");
    }
    // The next minute: the scheduler retires the first slot and takes the snapshot.
    clock.set(Timestamp::from_unix_seconds(START + 60).unwrap());
    let mut retired = Value::Null;
    for _ in 0..200 {
        retired = call(Method::GET, "/v1/boards/sums", Value::Null).await.1;
        if retired["windows"][0]["retired_through"] == json!(START) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(retired["windows"][0]["retired_through"], json!(START));
    let (_, top) = call(Method::GET, "/v1/boards/sums/top?window=3m", Value::Null).await;
    assert_eq!(top["entries"][0]["member"], "a");
    served.stop().await;
}

/// Every key of the Redis at `port` (`redis-cli --scan`).
fn keys_at(port: u16) -> BTreeSet<String> {
    let out = std::process::Command::new("redis-cli")
        .args(["-p", &port.to_string(), "--scan"])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Every key starts with `app1:`, and the keys of each kind are among them.
fn assert_all_prefixed(keys: &BTreeSet<String>) {
    let strays: Vec<&String> = keys.iter().filter(|k| !k.starts_with("app1:")).collect();
    assert!(strays.is_empty(), "keys without the prefix: {strays:?}");
    for want in [
        "app1:rollboard:boards",
        "app1:board_{sums}",
        "app1:stats_{sums}_180",
        "app1:dense_{sums}_180",
        "app1:snap_{sums}_60",
        "app1:data_{sums}",
        "app1:peaks_{peaks}",
        "app1:newest_{newest}",
        "app1:trend_{hot}",
        "app1:rollboard:counters",
        "app1:counter_{views}",
        "app1:stat_kinds",
        "app1:slowest_{AccessTime}",
        "app1:stat_{home}_AccessTime",
    ] {
        assert!(keys.contains(want), "{want} is missing from {keys:?}");
    }
    let kinds = |head: &str| keys.iter().filter(|k| k.starts_with(head)).count();
    assert!(kinds("app1:idem_{") >= 5, "keyed writes: {keys:?}");
    assert!(kinds("app1:rate_{") == 1, "rates: {keys:?}");
    assert!(
        kinds("app1:board_{sharded#") == 1,
        "the shards' records: {keys:?}"
    );
}

#[tokio::test]
async fn every_key_starts_with_the_prefix_on_one_redis() {
    let redis = TestRedis::spawn().await;
    write_everything(Some(redis.url.clone()), None).await;
    let port: u16 = redis
        .url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_all_prefixed(&keys_at(port));
}

#[tokio::test]
async fn every_key_starts_with_the_prefix_on_a_cluster() {
    let cluster = TestCluster::start(3);
    write_everything(None, Some(cluster.urls.clone())).await;
    let per_node: Vec<BTreeSet<String>> = cluster.ports.iter().map(|&p| keys_at(p)).collect();
    assert!(
        per_node.iter().filter(|keys| !keys.is_empty()).count() >= 2,
        "the keys spread over the masters: {per_node:?}"
    );
    assert_all_prefixed(&per_node.into_iter().flatten().collect());
}
