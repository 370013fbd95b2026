//! The topreads phase: top-10 reads of a 100,000-member `1h`/`24h` board over HTTP at 64
//! connections, exact (bound 0) and cached (`max_staleness_ms=1000`), beside the
//! `ZREVRANGE key 0 9 WITHSCORES` ceiling on the same totals, same Redis, same
//! concurrency (`redis-benchmark -c 64 -P 1`), measured in the same run right before;
//! then the top-10 p99 of 8 reader connections while 8 connections ingest batches of
//! 1,000 events to the same board as fast as they can, exact and cached.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rollboard::{BoardConfig, Event, Rollboard};

use crate::load::{self, Load, Spread};
use crate::raw_http;
use crate::report::{Row, rate, thousands};
use crate::setup::Redis;

const BOARD: &str = "bench-hot";
const MEMBERS: usize = 100_000;
const CONNECTIONS: usize = 64;

/// Runs the phase. Its board is left out of the final exactness check: an hour boundary
/// passing during the run retires its `1h` window.
pub async fn hot_reads(redis: &Redis, url: &str, phase: Duration) -> Vec<Row> {
    let boards = Rollboard::new(crate::setup::store(&redis.url).await);
    boards
        .create(BOARD, BoardConfig::parse("1h", &["1h", "24h"]).unwrap())
        .await
        .unwrap();
    eprintln!("  writing {} members …", thousands(MEMBERS as f64));
    let events: Vec<Event> = (0..MEMBERS)
        .map(|i| Event::new(format!("post:{i}"), 1 + (i * 7919 % 5000) as i64))
        .collect();
    for batch in events.chunks(10_000) {
        boards.windowed(BOARD).incr_batch(batch).await.unwrap();
    }

    let exact = format!("/v1/boards/{BOARD}/top?window=24h&limit=10");
    let cached = format!("{exact}&max_staleness_ms=1000");
    // Warm: the service loads the board once.
    top_readers(url, &exact, 1, Duration::from_millis(200)).await;

    eprintln!("  ZREVRANGE ceiling at {CONNECTIONS} connections …");
    let ceiling = zrevrange_ceiling(redis, phase);
    eprintln!("  top-10 exact, then cached …");
    let mut uncached = top_readers(url, &exact, CONNECTIONS, phase).await;
    let mut hits = top_readers(url, &cached, CONNECTIONS, phase).await;

    let mut rows = Vec::new();
    for (load, what, target) in [
        (&mut uncached, "exact (bound 0)", 0.5),
        (&mut hits, "cached (max_staleness_ms=1000)", 1.0),
    ] {
        let ratio = load.per_second() / ceiling;
        rows.push(Row {
            figure: format!("top-10 reads, {what}, 100k-member board, {CONNECTIONS} connections"),
            measured: format!(
                "{}, p99 {}",
                rate(load.per_second(), "reads/s"),
                ms(load.percentile(99.0))
            ),
            reference: format!("ZREVRANGE 0 9 WITHSCORES {}", rate(ceiling, "/s")),
            ratio: Some(ratio),
            target: Some((format!("≥ {target}x"), ratio >= target)),
        });
    }

    for (path, what) in [(&exact, "exact"), (&cached, "cached")] {
        eprintln!("  top-10 {what} during ingest …");
        let bodies = Arc::new(load::batch_bodies(Spread::Uniform, 200, 1000));
        let stop = Arc::new(AtomicBool::new(false));
        let readers = tokio::spawn({
            let (url, path, stop) = (url.to_owned(), path.clone(), stop.clone());
            async move { top_readers_until(&url, &path, 8, stop).await }
        });
        let ingest = load::http_batches(url, BOARD, bodies, 8, phase).await;
        stop.store(true, Ordering::SeqCst);
        let mut reads = readers.await.unwrap();
        let p99 = reads.percentile(99.0);
        rows.push(Row {
            figure: format!("top-10 p99, {what}, during batch ingest (8 + 8 connections)"),
            measured: format!("p99 {}, {}", ms(p99), rate(reads.per_second(), "reads/s")),
            reference: format!("ingest meanwhile {}", rate(ingest.per_second(), "ev/s")),
            ratio: None,
            target: Some(("p99 ≤ 5 ms".into(), p99 <= Duration::from_millis(5))),
        });
    }
    rows
}

/// `ZREVRANGE` of the board's 24h totals, top 10 with scores, from `CONNECTIONS`
/// connections without pipelining: ops/s.
fn zrevrange_ceiling(redis: &Redis, phase: Duration) -> f64 {
    let key = format!("stats_{{{BOARD}}}_86400");
    let requests = (80_000 * phase.as_secs().max(1)).to_string();
    let connections = CONNECTIONS.to_string();
    crate::setup::redis_benchmark(
        redis,
        &["-c", &connections, "-P", "1", "-n", &requests],
        &["ZREVRANGE", &key, "0", "9", "WITHSCORES"],
    )
}

/// `connections` loops sending GET `path` for `duration`, each as fast as it can.
async fn top_readers(url: &str, path: &str, connections: usize, duration: Duration) -> Load {
    let stop = Arc::new(AtomicBool::new(false));
    let readers = tokio::spawn({
        let (url, path, stop) = (url.to_owned(), path.to_owned(), stop.clone());
        async move { top_readers_until(&url, &path, connections, stop).await }
    });
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::SeqCst);
    readers.await.unwrap()
}

/// `connections` loops sending GET `path` until `stop` is set; every answer is a 200
/// with ten entries.
async fn top_readers_until(
    url: &str,
    path: &str,
    connections: usize,
    stop: Arc<AtomicBool>,
) -> Load {
    let host = url.trim_start_matches("http://").to_owned();
    let request = raw_http::request("GET", &host, path, b"");
    let start = Instant::now();
    let handles: Vec<_> = (0..connections)
        .map(|_| {
            let (host, request, stop) = (host.clone(), request.clone(), stop.clone());
            tokio::spawn(async move {
                let mut connection = raw_http::Connection::open(&host).await;
                let mut load = Load::default();
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    let (status, body) = connection.send(&request).await;
                    load.latencies.push(t.elapsed());
                    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
                    load.done += 1;
                }
                load
            })
        })
        .collect();
    let mut total = Load::default();
    for h in handles {
        let load = h.await.unwrap();
        total.done += load.done;
        total.latencies.extend(load.latencies);
    }
    total.elapsed = start.elapsed();
    total
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}
