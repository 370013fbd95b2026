//! Phase `changes`: rank changes delivered over Server-Sent Events to 100 consumers. A
//! `1h`/`24h` board watching the top 10 of both windows takes single likes from 4 writers
//! to its 40 leading members (most likes move someone), while 100 connections follow
//! `GET …/changes` with `Accept: text/event-stream` from the newest id at the start. The
//! figure: change events delivered per second over all consumers, against every
//! consumer receiving every change recorded meanwhile (the ratio is the share delivered
//! within 5 s of the writes stopping: 1.0 when none is missing; issue 50).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rollboard::{BoardConfig, Event, Rollboard, Watch};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::load;
use crate::report::{Row, rate, thousands};
use crate::setup::Redis;

const BOARD: &str = "bench-changes";
const CONSUMERS: usize = 100;
const WRITERS: usize = 4;
const LEADERS: u64 = 40;

pub async fn changes(redis: &Redis, url: &str, phase: Duration) -> Vec<Row> {
    let boards = Rollboard::new(crate::setup::store(&redis.url).await);
    let top = |w: &str| Watch::new(w.parse().unwrap(), 10).unwrap();
    let config = BoardConfig::parse("1h", &["1h", "24h"]).unwrap();
    let config = config.with_watch(vec![top("1h"), top("24h")]).unwrap();
    boards.create(BOARD, config).await.unwrap();
    let events: Vec<Event> = (0..1000)
        .map(|i| Event::new(format!("post:{i}"), 1000 - i))
        .collect();
    load::write_all(&boards, BOARD, &events, 1).await;
    let b = boards.windowed(BOARD);
    let start_id = b.recent_changes(None, 1).await.unwrap().changes[0]
        .id
        .clone();

    let host = url.trim_start_matches("http://").to_owned();
    let stop = Arc::new(AtomicBool::new(false));
    let received = Arc::new(AtomicU64::new(0));
    let mut consumers = Vec::new();
    for _ in 0..CONSUMERS {
        let (host, stop, received, after) = (
            host.clone(),
            stop.clone(),
            received.clone(),
            start_id.clone(),
        );
        consumers.push(tokio::spawn(async move {
            follow(&host, &after, &stop, &received).await
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let writers = load::run_loops(WRITERS, phase, {
        let boards = boards.clone();
        move |c, round| {
            let boards = boards.clone();
            async move {
                let i = (c as u64 * 7919 + round as u64 * 104_729) % LEADERS;
                let delta = if round % 5 == 4 { -3 } else { 5 };
                boards
                    .windowed(BOARD)
                    .incr(&format!("post:{i}"), delta, None)
                    .await
                    .unwrap();
                1
            }
        }
    })
    .await;
    let mut recorded = 0u64;
    let mut after = Some(start_id);
    loop {
        let page = b.changes(after.as_deref(), 1000).await.unwrap().changes;
        recorded += page.len() as u64;
        match page.last() {
            Some(last) => after = Some(last.id.clone()),
            None => break,
        }
    }
    let expected = recorded * CONSUMERS as u64;
    let deadline = Instant::now() + Duration::from_secs(5);
    while received.load(Ordering::SeqCst) < expected && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    for c in consumers {
        c.abort();
    }
    let delivered = received.load(Ordering::SeqCst);
    let share = delivered as f64 / expected.max(1) as f64;
    vec![Row {
        figure: format!(
            "changes over SSE to {CONSUMERS} consumers ({} likes from {WRITERS} writers, \
             {} changes recorded, all delivered in {:.1} s)",
            thousands(writers.done as f64),
            thousands(recorded as f64),
            elapsed.as_secs_f64()
        ),
        measured: rate(delivered as f64 / elapsed.as_secs_f64(), "events/s"),
        reference: format!("{} events expected", thousands(expected as f64)),
        ratio: Some(share),
        target: Some(("= 1.0".into(), delivered == expected)),
    }]
}

/// Follows the board's changes after `after` over SSE, adding each change event it
/// reads to `received` until `stop`.
async fn follow(host: &str, after: &str, stop: &AtomicBool, received: &AtomicU64) {
    let mut stream = TcpStream::connect(host)
        .await
        .expect("connect to the service");
    let request = format!(
        "GET /v1/boards/{BOARD}/changes?after={after} HTTP/1.1\r\nHost: {host}\r\n\
         Accept: text/event-stream\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    const MARK: &[u8] = b"event: change\n";
    let (mut buffer, mut kept) = (vec![0u8; 64 * 1024], Vec::new());
    while !stop.load(Ordering::SeqCst) {
        let n = stream.read(&mut buffer).await.unwrap();
        if n == 0 {
            return;
        }
        // A mark may straddle two reads: what follows the last whole line is kept.
        kept.extend_from_slice(&buffer[..n]);
        let found = kept.windows(MARK.len()).filter(|w| *w == MARK).count();
        received.fetch_add(found as u64, Ordering::SeqCst);
        let cut = kept.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
        kept.drain(..cut);
    }
}
