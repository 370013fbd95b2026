//! Phase `bigwrite`: writes to a `1h`/`24h` board of 200,000 members in its current slot
//! (filled with pipelined HSET/ZADD), through the library with the default call budget
//! (1 ms) and with the cap off (one call per 1,000-pair batch), and plain `HINCRBY` +
//! `ZINCRBY` per window on keys of the same size, all on the same Redis: the longest
//! write call (`SLOWLOG`), Redis time per event (`INFO commandstats`), and ingest with the
//! cap against without it.

use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use redis::aio::MultiplexedConnection;
use rollboard::{
    BoardConfig, Event, IngestOptions, RedisOptions, RedisStore, Rollboard, Settings, SystemClock,
};

use crate::load;
use crate::report::{Row, rate};
use crate::setup::Redis;
use crate::slowlog;

const MEMBERS: usize = 200_000;

/// Fills a slot hash and two totals sets with `MEMBERS` members holding 1.
async fn fill(conn: &mut MultiplexedConnection, slot: &str, totals: [&str; 2]) {
    for from in (0..MEMBERS).step_by(10_000) {
        let mut pipe = redis::pipe();
        let mut hset = redis::cmd("HSET");
        hset.arg(slot);
        let mut zadds = totals.map(|key| {
            let mut zadd = redis::cmd("ZADD");
            zadd.arg(key);
            zadd
        });
        for i in from..from + 10_000 {
            let member = format!("post:{i}");
            hset.arg(&member).arg(1);
            for zadd in &mut zadds {
                zadd.arg(1).arg(&member);
            }
        }
        pipe.add_command(hset).ignore();
        for zadd in zadds {
            pipe.add_command(zadd).ignore();
        }
        let _: () = pipe.query_async(&mut *conn).await.unwrap();
    }
}

/// A board of `MEMBERS` members in its current slot, made through `boards`.
async fn big_board(boards: &Rollboard, conn: &mut MultiplexedConnection, name: &str) {
    let config = BoardConfig::parse("1h", &["1h", "24h"]).unwrap();
    boards.create_board(name, config).await.unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let slot = now - now % 3600;
    let totals = (
        format!("stats_{{{name}}}"),
        format!("stats_{{{name}}}_86400"),
    );
    fill(
        conn,
        &format!("slot_{{{name}}}_{slot}"),
        [&totals.0, &totals.1],
    )
    .await;
    let _: () = redis::pipe()
        .cmd("ZADD")
        .arg(format!("slots_{{{name}}}"))
        .arg(slot)
        .arg(slot)
        .ignore()
        .cmd("HINCRBY")
        .arg(format!("board_{{{name}}}"))
        .arg("abs_sum")
        .arg(MEMBERS)
        .ignore()
        .query_async(&mut *conn)
        .await
        .unwrap();
}

/// Batches of 1,000 events, uniform over the board's members.
fn batches() -> Arc<Vec<Vec<Event>>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(16);
    Arc::new(
        (0..200)
            .map(|_| {
                (0..1000)
                    .map(|_| Event::new(format!("post:{}", rng.random_range(0..MEMBERS)), 1))
                    .collect()
            })
            .collect(),
    )
}

/// Redis's time in the named commands since the last `CONFIG RESETSTAT`, in µs.
async fn usec(conn: &mut MultiplexedConnection, commands: &[&str]) -> i64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut *conn)
        .await
        .unwrap();
    commands
        .iter()
        .map(|c| {
            info.lines()
                .find_map(|l| l.strip_prefix(&format!("cmdstat_{c}:")))
                .and_then(|l| l.split(',').find_map(|f| f.strip_prefix("usec=")))
                .and_then(|v| v.parse::<i64>().ok())
                .unwrap_or(0)
        })
        .sum()
}

async fn reset_stats(conn: &mut MultiplexedConnection) {
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut *conn)
        .await
        .unwrap();
}

/// What one library run measured.
struct Run {
    per_second: f64,
    us_per_event: f64,
    longest_ms: f64,
}

async fn run(redis: &Redis, call_budget: Duration, board: &str, phase: Duration) -> Run {
    let store = RedisStore::connect_with(
        &redis.url,
        RedisOptions {
            ingest: IngestOptions {
                call_budget,
                ..IngestOptions::default()
            },
            ..RedisOptions::default()
        },
    )
    .await
    .unwrap();
    let boards = Rollboard::with(Arc::new(store), Arc::new(SystemClock), Settings::default());
    let mut conn = redis::Client::open(redis.url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    big_board(&boards, &mut conn, board).await;
    // Calls over 0.5 ms are logged; the longest of them is the figure.
    slowlog::reset_over(&mut conn, 500).await;
    reset_stats(&mut conn).await;
    let off_cpu = redis.keep_off_its_cpu();
    let load = load::library_batches(boards, board, batches(), 8, phase).await;
    drop(off_cpu);
    let script_us = usec(&mut conn, &["evalsha", "eval"]).await;
    let slow = slowlog::slow_calls(&mut conn).await;
    let longest = slow
        .iter()
        .filter(|c| c.args.first().is_some_and(|a| a.starts_with("EVAL")))
        .map(|c| c.micros)
        .max()
        .unwrap_or(0);
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(10_000)
        .query_async(&mut conn)
        .await
        .unwrap();
    Run {
        per_second: load.per_second(),
        us_per_event: script_us as f64 / load.done.max(1) as f64,
        longest_ms: longest as f64 / 1000.0,
    }
}

/// Plain `HINCRBY` + `ZINCRBY` on each window, per event, on keys of the same size:
/// Redis's µs per event.
async fn plain(redis: &Redis) -> f64 {
    let mut conn = redis::Client::open(redis.url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let (slot, day, hour) = ("plain_{p}_slot", "plain_{p}_24h", "plain_{p}_1h");
    fill(&mut conn, slot, [hour, day]).await;
    slowlog::settle(&mut conn).await;
    reset_stats(&mut conn).await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(61);
    let events = 200_000;
    for _ in 0..events / 1000 {
        let mut pipe = redis::pipe();
        for _ in 0..1000 {
            let member = format!("post:{}", rng.random_range(0..MEMBERS));
            pipe.cmd("HINCRBY").arg(slot).arg(&member).arg(1).ignore();
            pipe.cmd("ZINCRBY").arg(hour).arg(1).arg(&member).ignore();
            pipe.cmd("ZINCRBY").arg(day).arg(1).arg(&member).ignore();
        }
        let _: () = pipe.query_async(&mut conn).await.unwrap();
    }
    let us = usec(&mut conn, &["hincrby", "zincrby"]).await;
    let _: () = redis::cmd("UNLINK")
        .arg(slot)
        .arg(hour)
        .arg(day)
        .query_async(&mut conn)
        .await
        .unwrap();
    us as f64 / events as f64
}

pub async fn bigwrite(redis: &Redis, phase: Duration) -> Vec<Row> {
    let plain_us = plain(redis).await;
    let capped = run(redis, Duration::from_millis(1), "bench-bigwrite", phase).await;
    // The cap off: a budget no call reaches, so a batch is one call as before.
    let off = run(
        redis,
        Duration::from_secs(3600),
        "bench-bigwrite-off",
        phase,
    )
    .await;
    let redis_ratio = plain_us / capped.us_per_event;
    let ingest_ratio = capped.per_second / off.per_second;
    vec![
        Row {
            figure: "big board (200k members, 1h/24h): longest write call, budget 1 ms".into(),
            measured: longest(capped.longest_ms),
            reference: format!("cap off {}", longest(off.longest_ms)),
            ratio: None,
            target: Some(("<= 2 ms".into(), capped.longest_ms <= 2.0)),
        },
        Row {
            figure: "  Redis time per event (commandstats), budget 1 ms".into(),
            measured: format!("{:.2} us", capped.us_per_event),
            reference: format!(
                "HINCRBY + 2 ZINCRBY {plain_us:.2} us (cap off {:.2} us)",
                off.us_per_event
            ),
            ratio: Some(redis_ratio),
            target: Some((">= 0.9".into(), redis_ratio >= 0.9)),
        },
        Row {
            figure: "  library ingest, batches of 1000 (8 tasks), budget 1 ms".into(),
            measured: rate(capped.per_second, "ev/s"),
            reference: format!("cap off {}", rate(off.per_second, "ev/s")),
            ratio: Some(ingest_ratio),
            target: Some((">= 0.9".into(), ingest_ratio >= 0.9)),
        },
    ]
}

fn longest(ms: f64) -> String {
    if ms == 0.0 {
        "< 0.5 ms".into()
    } else {
        format!("{ms:.2} ms")
    }
}
