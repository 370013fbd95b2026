//! Two service instances on one Redis: writes land on both while their schedulers
//! retire the same board; the totals stay exactly the window's events.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rollboard::service::ServiceConfig;
use rollboard::{BoardConfig, Clock};
use serde_json::{Value, json};

use crate::support::{TestRedis, clock, spawn_app_with, unique};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_retiring_the_same_board_stay_exact() {
    let redis = Arc::new(TestRedis::start().await);
    let clock = clock();
    let apps = Arc::new([
        spawn_app_with(redis.clone(), clock.clone(), ServiceConfig::default()).await,
        spawn_app_with(redis.clone(), clock.clone(), ServiceConfig::default()).await,
    ]);
    let board = unique("rep");
    let config = BoardConfig::parse("10s", &["20s", "60s"]).unwrap();
    apps[0]
        .put(
            &format!("/v1/boards/{board}"),
            json!({"slot": "10s", "windows": ["20s", "60s"]}),
        )
        .await;
    // Each instance tracks boards created through it; one created elsewhere is found by
    // the periodic sweep (a minute by default, too slow for this test).
    apps[1]
        .put(
            &format!("/v1/boards/{board}"),
            json!({"slot": "10s", "windows": ["20s", "60s"]}),
        )
        .await;

    let accepted: Arc<Mutex<Vec<(i64, String, i64)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..4u64 {
        let (apps, board, clock, accepted, config) = (
            apps.clone(),
            board.clone(),
            clock.clone(),
            accepted.clone(),
            config.clone(),
        );
        let stop = stop.clone();
        writers.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(w);
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                let now = clock.now().unix_seconds();
                let events: Vec<(String, i64, i64)> = (0..20)
                    .map(|_| {
                        (
                            format!("m{}", rng.random_range(0..40)),
                            rng.random_range(1..4),
                            now - rng.random_range(0..70),
                        )
                    })
                    .collect();
                let body: Vec<Value> = events
                    .iter()
                    .map(|(m, d, at)| json!({"member": m, "delta": d, "at": at}))
                    .collect();
                let reply = apps[(n % 2) as usize]
                    .post(
                        &format!("/v1/boards/{board}/events"),
                        json!({"events": body}),
                    )
                    .await;
                assert_eq!(reply.status, reqwest::StatusCode::OK, "{:?}", reply.body);
                let rejected: Vec<u64> = reply.body["rejected"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["index"].as_u64().unwrap())
                    .collect();
                let mut accepted = accepted.lock().unwrap();
                for (i, (m, d, at)) in events.into_iter().enumerate() {
                    if !rejected.contains(&(i as u64)) {
                        let slot =
                            config.slot_start(rollboard::Timestamp::from_unix_seconds(at).unwrap());
                        accepted.push((slot, m, d));
                    }
                }
                n += 1;
            }
        }));
    }
    // About 200 simulated seconds in 4 real seconds: both schedulers see several slot
    // boundaries and retire concurrently with the writes.
    for _ in 0..80 {
        clock.advance_secs(2);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.await.unwrap();
    }
    let retired_during_writes = apps[0].get(&format!("/v1/boards/{board}")).await.body["windows"]
        [1]["retired_through"]
        .as_i64()
        .unwrap();
    assert!(
        retired_during_writes > crate::support::START,
        "the schedulers retired while writes went on"
    );

    // No more writes; give the schedulers a tick at the final time, then check exactness.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let now = clock.now();
    let accepted = accepted.lock().unwrap().clone();
    assert!(
        accepted.len() > 1_000,
        "only {} events accepted",
        accepted.len()
    );
    for (j, window) in ["20s", "1m"].iter().enumerate() {
        let cutoff = config.cutoff(j, now);
        let mut oracle: BTreeMap<String, i64> = BTreeMap::new();
        for (slot, m, d) in &accepted {
            if *slot > cutoff {
                *oracle.entry(m.clone()).or_default() += d;
            }
        }
        for app in apps.iter() {
            let top = app
                .get(&format!(
                    "/v1/boards/{board}/top?window={window}&limit=1000"
                ))
                .await;
            assert_eq!(
                top.body["from"],
                config.window_start(j, now),
                "window {window} retired up to now"
            );
            let got: BTreeMap<String, i64> = top.body["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    (
                        e["member"].as_str().unwrap().to_owned(),
                        e["score"].as_i64().unwrap(),
                    )
                })
                .collect();
            assert_eq!(got, oracle, "window {window}");
        }
    }
}
