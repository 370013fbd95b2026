//! Phase `maxboard`: a 200,000-member `1h`/`24h` max board beside a sum board of the
//! same shape (plain slots both), on the same Redis, in one run:
//!
//! - **Ingest** through the library (8 batches of 1,000 in flight, uniform over the
//!   members; values below each member's best, deltas of 1) against one ceiling for
//!   both, an event being one slot field and two totals: `1 / (1/HSET + 2/ZADD)` of
//!   `redis-benchmark -P 64 -c 50` over 200,000 members, as the other phases' ceilings.
//!   Target: the max board's ratio at least 0.8× the sum board's.
//! - **Retirement** of a slot in which every member holds its window's value (200,000
//!   members, each at its best in the slot that leaves the 1-hour window; a quarter of
//!   them also wrote a lower value in the next slot, so they fall back to it, the rest
//!   leave): members re-evaluated per second against the `ZADD` ceiling
//!   (`redis-benchmark -P 64 -c 50` over 200,000 members, as the other phases'
//!   ceilings), and the longest retirement call (`SLOWLOG`); the sum board's
//!   retirement of the same slot beside it. Targets: at least 0.25× the ceiling, no
//!   call over 2 ms.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rollboard::{Aggregate, BoardConfig, Event, Layout, ManualClock, Rollboard, Settings};
use rollboard::{RetireOptions, Timestamp};

use crate::load;
use crate::report::{Row, rate};
use crate::setup::Redis;
use crate::slowlog;

const MEMBERS: usize = 200_000;

/// The members' values in the slot that leaves: each member's best.
fn best(i: usize) -> i64 {
    1_000_000 + i as i64
}

/// Batches of 1,000 events uniform over the members: values for a max board (below
/// every member's best, so the board's totals hold their size), deltas for a sum board.
fn batches(values: bool) -> Arc<Vec<Vec<Event>>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(31);
    Arc::new(
        (0..200)
            .map(|_| {
                (0..1000)
                    .map(|_| {
                        let member = format!("m:{}", rng.random_range(0..MEMBERS));
                        if values {
                            Event::value(member, rng.random_range(0..1_000_000))
                        } else {
                            Event::new(member, 1)
                        }
                    })
                    .collect()
            })
            .collect(),
    )
}

/// A plain board of `MEMBERS` members on `boards`: each at its best in the current slot,
/// a quarter also lower in the next slot (written once the clock is there).
async fn fill(boards: &Rollboard, clock: &ManualClock, board: &str, aggregate: Aggregate) {
    let config = BoardConfig::parse("1h", &["1h", "24h"])
        .unwrap()
        .with_aggregate(aggregate)
        .with_layout(Some(Layout::Plain));
    boards.create_board(board, config).await.unwrap();
    let event = |i: usize, value: i64| {
        let member = format!("m:{i}");
        match aggregate {
            Aggregate::Sum => Event::new(member, value),
            _ => Event::value(member, value),
        }
    };
    let first: Vec<Event> = (0..MEMBERS).map(|i| event(i, best(i))).collect();
    load::write_all(boards, board, &first, 8).await;
    clock.advance_secs(3600);
    let second: Vec<Event> = (0..MEMBERS).step_by(4).map(|i| event(i, 7)).collect();
    load::write_all(boards, board, &second, 8).await;
}

/// `redis-benchmark -P 64 -c 50` over 200,000 random members (as the other phases'
/// ceilings) of `HSET` and of `ZADD`, per second each.
fn ceilings(redis: &Redis) -> (f64, f64) {
    let options = ["-P", "64", "-c", "50", "-r", "200000", "-n", "1000000"];
    let hset = ["HSET", "ceil:hash", "m:__rand_int__", "__rand_int__"];
    let zadd = ["ZADD", "ceil:zset", "__rand_int__", "m:__rand_int__"];
    let run = |command: &[&str]| crate::setup::redis_benchmark(redis, &options, command);
    let (hset, zadd) = (run(&hset), run(&zadd));
    let client = redis::Client::open(redis.url.as_str()).unwrap();
    let mut c = client.get_connection().unwrap();
    let _: i64 = redis::cmd("UNLINK")
        .arg("ceil:hash")
        .arg("ceil:zset")
        .query(&mut c)
        .unwrap();
    (hset, zadd)
}

/// What one board measured.
struct Measured {
    ingest: f64,
    evaluated: u64,
    retire_seconds: f64,
    longest_ms: f64,
    calls: usize,
}

async fn measure(redis: &Redis, aggregate: Aggregate, phase: Duration) -> Measured {
    let store = crate::setup::store(&redis.url).await;
    let now = Timestamp::now_utc().unix_seconds();
    let clock = ManualClock::new(Timestamp::from_unix_seconds(now - now % 3600 + 60).unwrap());
    let boards = Rollboard::with(store, Arc::new(clock.clone()), Settings::default());
    let mut conn = redis::Client::open(redis.url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let board = format!("bench-{}board", aggregate.as_str());
    fill(&boards, &clock, &board, aggregate).await;
    slowlog::settle(&mut conn).await;
    let off_cpu = redis.keep_off_its_cpu();
    let values = aggregate != Aggregate::Sum;
    let load = load::library_batches(boards.clone(), &board, batches(values), 8, phase).await;
    drop(off_cpu);
    // The first slot leaves the 1-hour window: retired alone, every call logged.
    clock.advance_secs(1800);
    slowlog::reset_over(&mut conn, 0).await;
    let options = RetireOptions {
        compact: false,
        ..RetireOptions::default()
    };
    let started = Instant::now();
    let report = boards.retire_with(&board, options).await.unwrap();
    let retire_seconds = started.elapsed().as_secs_f64();
    let slow = slowlog::slow_calls(&mut conn).await;
    let retirement: Vec<i64> = slow
        .iter()
        .filter(|c| c.is_retirement())
        .map(|c| c.micros)
        .collect();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(10_000)
        .query_async(&mut conn)
        .await
        .unwrap();
    boards.drop_board(&board).await.unwrap();
    slowlog::settle(&mut conn).await;
    Measured {
        ingest: load.per_second(),
        evaluated: report.fields_subtracted,
        retire_seconds,
        longest_ms: retirement.iter().copied().max().unwrap_or(0) as f64 / 1000.0,
        calls: retirement.len(),
    }
}

pub async fn maxboard(redis: &Redis, phase: Duration) -> Vec<Row> {
    let mut conn = redis::Client::open(redis.url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let (hset, zadd) = ceilings(redis);
    slowlog::settle(&mut conn).await;
    // An event of either board writes one slot field and two totals.
    let ceiling = 1.0 / (1.0 / hset + 2.0 / zadd);
    let sum = measure(redis, Aggregate::Sum, phase).await;
    let max = measure(redis, Aggregate::Max, phase).await;
    let (sum_ratio, max_ratio) = (sum.ingest / ceiling, max.ingest / ceiling);
    let relative = max_ratio / sum_ratio;
    let per_second = |m: &Measured| m.evaluated as f64 / m.retire_seconds;
    let retire_ratio = per_second(&max) / zadd;
    vec![
        Row {
            figure: "max board (200k members, 1h/24h): library batches of 1000".into(),
            measured: rate(max.ingest, "ev/s"),
            reference: format!("HSET + 2 ZADD {}", rate(ceiling, "ev/s")),
            ratio: Some(max_ratio),
            target: None,
        },
        Row {
            figure: "  sum board, the same batches of deltas".into(),
            measured: rate(sum.ingest, "ev/s"),
            reference: format!("HSET + 2 ZADD {}", rate(ceiling, "ev/s")),
            ratio: Some(sum_ratio),
            target: None,
        },
        Row {
            figure: "  max board's ratio against the sum board's".into(),
            measured: format!("{max_ratio:.2} / {sum_ratio:.2}"),
            reference: String::new(),
            ratio: Some(relative),
            target: Some((">= 0.8".into(), relative >= 0.8)),
        },
        Row {
            figure: "  retirement of a slot of 200k bests from 1h: members/s".into(),
            measured: format!(
                "{} ({} in {:.2} s)",
                rate(per_second(&max), "/s"),
                max.evaluated,
                max.retire_seconds
            ),
            reference: format!("ZADD {}", rate(zadd, "/s")),
            ratio: Some(retire_ratio),
            target: Some((">= 0.25".into(), retire_ratio >= 0.25)),
        },
        Row {
            figure: "  longest retirement call; calls".into(),
            measured: format!("{:.2} ms; {}", max.longest_ms, max.calls),
            reference: format!(
                "sum board {:.2} ms; {}; {} in {:.2} s",
                sum.longest_ms,
                sum.calls,
                rate(per_second(&sum), "/s"),
                sum.retire_seconds
            ),
            ratio: None,
            target: Some(("<= 2 ms".into(), max.longest_ms <= 2.0)),
        },
    ]
}
