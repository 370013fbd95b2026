//! Prints the Redis memory taken per live (slot, member) entry, for a board of 100,000
//! members x 24 hourly slots (2.4 million entries), measured with `INFO memory`.
//!
//! `cargo run --release --example redis_memory` starts its own `redis-server` on a free
//! port; set `REDIS_URL` to measure another Redis (the board is dropped at the end), and
//! `LAYOUT=compact` for a board of compact slots (plain by default).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rollboard::{
    BoardConfig, Event, Layout, ManualClock, RedisStore, Rollboard, Settings, Timestamp,
};

const MEMBERS: usize = 100_000;
const SLOTS: i64 = 24;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (url, _server) = match std::env::var("REDIS_URL") {
        Ok(url) => (url, None),
        Err(_) => {
            let server = redis_test::server::RedisServer::new();
            let redis::ConnectionAddr::Tcp(host, port) = server.client_addr().clone() else {
                unreachable!("redis-test listens on TCP by default")
            };
            (format!("redis://{host}:{port}/"), Some(server))
        }
    };
    let client = redis::Client::open(url.as_str())?;
    let mut raw = loop {
        match client.get_multiplexed_async_connection().await {
            Ok(c) => break c,
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };

    let start = 1_700_000_000 - 1_700_000_000 % 3600;
    let clock = ManualClock::new(Timestamp::from_unix_seconds(start)?);
    let store = Arc::new(RedisStore::connect(&url).await?);
    let boards = Rollboard::with(store, Arc::new(clock.clone()), Settings::default());
    let board = format!("memprobe-{}", std::process::id());

    let layout: Layout = std::env::var("LAYOUT")
        .unwrap_or_else(|_| "plain".into())
        .parse()?;
    let before = used_memory(&mut raw).await?;
    let script_us_before = script_usec(&mut raw).await?;
    boards
        .create(
            &board,
            BoardConfig::parse("1h", &["24h"])?.with_layout(Some(layout)),
        )
        .await?;
    let began = Instant::now();
    for slot in 0..SLOTS {
        clock.set(Timestamp::from_unix_seconds(start + slot * 3600)?);
        let events: Vec<Event> = (0..MEMBERS)
            .map(|m| Event::new(format!("post:{m}"), 1))
            .collect();
        for batch in events.chunks(10_000) {
            let outcome = boards.windowed(&board).incr_batch(batch).await?;
            assert!(
                outcome.rejected.is_empty(),
                "{:?}",
                outcome.rejected.first()
            );
        }
    }
    let elapsed = began.elapsed();
    let after = used_memory(&mut raw).await?;
    let script_us = script_usec(&mut raw).await? - script_us_before;
    // A plain slot is one hash; a compact one its buckets (their count from the geometry).
    let slot_key = format!("slot_{{{board}}}_{start}");
    let geometry: Option<String> = redis::cmd("HGET")
        .arg(format!("slotgeo_{{{board}}}"))
        .arg(start)
        .query_async(&mut raw)
        .await?;
    let keys: Vec<String> = match &geometry {
        None => vec![slot_key],
        Some(text) => {
            let parts: Vec<u64> = text.split(' ').map(|p| p.parse().unwrap_or(0)).collect();
            (0..(1u64 << parts[0]) + parts[1])
                .map(|i| format!("{slot_key}:{i}"))
                .collect()
        }
    };
    let mut one_slot = 0i64;
    for key in &keys {
        let usage: Option<i64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(key)
            .arg("SAMPLES")
            .arg(0)
            .query_async(&mut raw)
            .await?;
        one_slot += usage.unwrap_or(0);
    }
    let totals: i64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(format!("stats_{{{board}}}"))
        .arg("SAMPLES")
        .arg(0)
        .query_async(&mut raw)
        .await?;

    let entries = MEMBERS as f64 * SLOTS as f64;
    println!(
        "{} board of {MEMBERS} members x {SLOTS} slots ({entries} live entries) written in {elapsed:.1?}",
        layout.as_str()
    );
    println!(
        "  Redis script time per event: {:.2} µs",
        script_us as f64 / entries
    );
    println!("used_memory grew by {} bytes", after - before);
    println!(
        "  per live (slot, member) entry, totals included: {:.1} bytes",
        (after - before) as f64 / entries
    );
    println!(
        "  one slot ({} hashes): {one_slot} bytes, {:.1} bytes per member",
        keys.len(),
        one_slot as f64 / MEMBERS as f64
    );
    println!(
        "  totals zset:   {totals} bytes, {:.1} bytes per member",
        totals as f64 / MEMBERS as f64
    );
    boards.drop_board(&board).await?;
    Ok(())
}

/// Microseconds Redis spent in `EVALSHA` so far (`INFO commandstats`).
async fn script_usec(conn: &mut redis::aio::MultiplexedConnection) -> redis::RedisResult<i64> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await?;
    Ok(info
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:"))
        .and_then(|l| l.split(',').find_map(|f| f.strip_prefix("usec=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0))
}

async fn used_memory(conn: &mut redis::aio::MultiplexedConnection) -> redis::RedisResult<i64> {
    let info: String = redis::cmd("INFO").arg("memory").query_async(conn).await?;
    Ok(info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0))
}
