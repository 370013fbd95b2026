//! Shutdown: on SIGTERM the real binary stops accepting, finishes the requests in flight,
//! exits 0 within the grace period, and every acknowledged event is in Redis.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rollboard::Rollboard;
use serde_json::{Value, json};

use crate::support::{TestRedis, spawn_app, unique};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_finishes_requests_in_flight_and_loses_no_acknowledged_event() {
    let redis = TestRedis::start().await;
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rollboard"))
        .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
        .env("REDIS_URL", &redis.url)
        .env_remove("ROLLBOARD_WRITE_TOKEN")
        .env_remove("ROLLBOARD_ADMIN_TOKEN")
        .env_remove("ROLLBOARD_BIND")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start rollboard serve");
    let client = reqwest::Client::new();
    let mut up = false;
    for _ in 0..500 {
        if client.get(format!("{url}/readyz")).send().await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(up, "rollboard serve did not come up");
    let board = unique("term");
    let created = client
        .put(format!("{url}/v1/boards/{board}"))
        .json(&json!({"slot": "1h", "windows": ["1h"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);

    let acknowledged = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(AtomicUsize::new(0));
    let mut writers = Vec::new();
    for w in 0..4 {
        let (client, url, board, acknowledged, answered) = (
            client.clone(),
            url.clone(),
            board.clone(),
            acknowledged.clone(),
            answered.clone(),
        );
        writers.push(tokio::spawn(async move {
            for round in 0.. {
                let events: Vec<Value> = (0..500)
                    .map(|i| json!({"member": format!("m{}", (w * 7 + round + i) % 50)}))
                    .collect();
                match client
                    .post(format!("{url}/v1/boards/{board}/events"))
                    .json(&json!({"events": events}))
                    .send()
                    .await
                {
                    Ok(r) if r.status() == 200 => {
                        let body: Value = r.json().await.unwrap();
                        assert_eq!(body["rejected"], json!([]));
                        answered.fetch_add(1, Ordering::SeqCst);
                        acknowledged.fetch_add(
                            body["accepted"].as_u64().unwrap() as usize,
                            Ordering::SeqCst,
                        );
                    }
                    Ok(r) => panic!("unexpected status {} during shutdown", r.status()),
                    Err(_) => return, // the listener is closed: the service is stopping
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        acknowledged.load(Ordering::SeqCst) > 0,
        "writes were flowing before the signal"
    );
    let signalled = Instant::now();
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    for w in writers {
        w.await.unwrap();
    }
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "exit status {status}");
    assert!(
        signalled.elapsed() < Duration::from_secs(10),
        "stopped within the grace period"
    );

    let boards = Rollboard::redis(&redis.url).await.unwrap();
    let page = boards.windowed(&board).top(None, 0, 1000).await.unwrap();
    let total: i64 = page.entries.iter().map(|e| e.score).sum();
    assert_eq!(
        total as usize,
        acknowledged.load(Ordering::SeqCst),
        "every acknowledged event is counted once"
    );

    // The access times the service held at the signal were written before it exited:
    // every request answered is counted, plus at most the one each writer had cut.
    let stats = boards
        .stats()
        .read("/v1/boards/{board}/events", "AccessTime")
        .await
        .unwrap();
    let counted = stats.current.map_or(0, |h| h.count) + stats.previous.map_or(0, |h| h.count);
    let answered = answered.load(Ordering::SeqCst) as u64;
    assert!(
        (answered..=answered + 4).contains(&counted),
        "{answered} requests answered, {counted} access times recorded"
    );
}

#[tokio::test]
async fn an_in_process_service_stops_cleanly_when_signalled() {
    let app = spawn_app().await;
    let b = app.board("1h", &["1h"]).await;
    let events: Vec<Value> = (0..10_000)
        .map(|i| json!({"member": format!("m{}", i % 100)}))
        .collect();
    let (client, url) = (app.client.clone(), app.url.clone());
    let in_flight = tokio::spawn(async move {
        client
            .post(format!("{url}/v1/boards/{b}/events"))
            .json(&json!({"events": events}))
            .send()
            .await
    });
    tokio::time::sleep(Duration::from_millis(5)).await;
    let stopped = tokio::time::timeout(Duration::from_secs(10), app.stop()).await;
    assert!(matches!(stopped, Ok(Ok(()))), "{stopped:?}");
    // The request either completed in full or never reached the server.
    if let Ok(response) = in_flight.await.unwrap() {
        assert_eq!(response.status(), 200);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["accepted"], 10_000);
    }
}
