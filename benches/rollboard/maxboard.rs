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
//! - **Compact slots**: the same max board with compact slots and a `2h` first window
//!   (so the slot of the bests has closed, not left, when the retirer converts it into
//!   buckets): the conversion (fields a second, longest call), then the retirement of the
//!   converted slot from `2h` (members a second, longest call: the same targets).

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

/// A board of `MEMBERS` members on `boards`: each at its best in the current slot, a
/// quarter also lower in the next slot (written once the clock is there). Plain, `1h`/
/// `24h`; or (`compact`) compact, `2h`/`24h`, its first slot converted by the retirer
/// once closed: that conversion, measured.
async fn fill(
    boards: &Rollboard,
    clock: &ManualClock,
    conn: &mut redis::aio::MultiplexedConnection,
    board: &str,
    aggregate: Aggregate,
    compact: bool,
) -> Option<Timed> {
    let (first_window, layout) = if compact {
        ("2h", Layout::Compact)
    } else {
        ("1h", Layout::Plain)
    };
    let config = BoardConfig::parse("1h", &[first_window, "24h"])
        .unwrap()
        .with_aggregate(aggregate)
        .with_layout(Some(layout));
    boards.create(board, config).await.unwrap();
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
    let converted = if compact {
        slowlog::settle(conn).await;
        Some(timed(conn, || boards.windowed(board).retire(None)).await)
    } else {
        None
    };
    let second: Vec<Event> = (0..MEMBERS).step_by(4).map(|i| event(i, 7)).collect();
    load::write_all(boards, board, &second, 8).await;
    converted
}

/// A retirement pass (or a conversion) timed: its report's count (members re-evaluated,
/// or fields converted), its seconds, and its longest call (`SLOWLOG`).
struct Timed {
    count: u64,
    seconds: f64,
    longest_ms: f64,
    calls: usize,
}

async fn timed<F, Fut>(conn: &mut redis::aio::MultiplexedConnection, pass: F) -> Timed
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = rollboard::Result<rollboard::RetireReport>>,
{
    slowlog::reset_over(conn, 0).await;
    let started = Instant::now();
    let report = pass().await.unwrap();
    let seconds = started.elapsed().as_secs_f64();
    let slow = slowlog::slow_calls(conn).await;
    let calls: Vec<i64> = slow
        .iter()
        .filter(|c| c.is_retirement())
        .map(|c| c.micros)
        .collect();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(10_000)
        .query_async(&mut *conn)
        .await
        .unwrap();
    Timed {
        count: report.fields_subtracted + report.fields_compacted,
        seconds,
        longest_ms: calls.iter().copied().max().unwrap_or(0) as f64 / 1000.0,
        calls: calls.len(),
    }
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

/// What one board measured: ingest, the retirement of the slot of the bests, and on a
/// compact board that slot's conversion.
struct Measured {
    ingest: f64,
    retired: Timed,
    converted: Option<Timed>,
}

async fn measure(redis: &Redis, aggregate: Aggregate, compact: bool, phase: Duration) -> Measured {
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
    let converted = fill(&boards, &clock, &mut conn, &board, aggregate, compact).await;
    slowlog::settle(&mut conn).await;
    let off_cpu = redis.keep_off_its_cpu();
    let values = aggregate != Aggregate::Sum;
    let load = load::library_batches(boards.clone(), &board, batches(values), 8, phase).await;
    drop(off_cpu);
    // The first slot leaves the first window (`1h`, or `2h` on the compact board):
    // retired alone, every call logged.
    clock.advance_secs(if compact { 5400 } else { 1800 });
    let options = RetireOptions {
        compact: false,
        ..RetireOptions::default()
    };
    let retired = timed(&mut conn, || boards.windowed(&board).retire(Some(options))).await;
    boards.drop_board(&board).await.unwrap();
    slowlog::settle(&mut conn).await;
    Measured {
        ingest: load.per_second(),
        retired,
        converted,
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
    let sum = measure(redis, Aggregate::Sum, false, phase).await;
    let max = measure(redis, Aggregate::Max, false, phase).await;
    let compact = measure(redis, Aggregate::Max, true, phase).await;
    let (sum_ratio, max_ratio) = (sum.ingest / ceiling, max.ingest / ceiling);
    let relative = max_ratio / sum_ratio;
    let per_second = |t: &Timed| t.count as f64 / t.seconds;
    let retire_ratio = |t: &Timed| per_second(t) / zadd;
    let converted = compact
        .converted
        .as_ref()
        .expect("a compact board converts");
    let retirement = |figure: &str, t: &Timed| Row {
        figure: figure.into(),
        measured: format!(
            "{} ({} in {:.2} s)",
            rate(per_second(t), "/s"),
            t.count,
            t.seconds
        ),
        reference: format!("ZADD {}", rate(zadd, "/s")),
        ratio: Some(retire_ratio(t)),
        target: Some((">= 0.25".into(), retire_ratio(t) >= 0.25)),
    };
    let longest = |figure: &str, t: &Timed, reference: String| Row {
        figure: figure.into(),
        measured: format!("{:.2} ms; {}", t.longest_ms, t.calls),
        reference,
        ratio: None,
        target: Some(("<= 2 ms".into(), t.longest_ms <= 2.0)),
    };
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
        retirement(
            "  retirement of a slot of 200k bests from 1h: members/s",
            &max.retired,
        ),
        longest(
            "  longest retirement call; calls",
            &max.retired,
            format!(
                "sum board {:.2} ms; {}; {} in {:.2} s",
                sum.retired.longest_ms,
                sum.retired.calls,
                rate(per_second(&sum.retired), "/s"),
                sum.retired.seconds
            ),
        ),
        Row {
            figure: "compact max board (2h/24h): the closed slot into buckets: fields/s".into(),
            measured: format!(
                "{} ({} in {:.2} s)",
                rate(per_second(converted), "/s"),
                converted.count,
                converted.seconds
            ),
            reference: String::new(),
            ratio: None,
            target: None,
        },
        longest("  longest conversion call; calls", converted, String::new()),
        retirement(
            "  retirement of the converted slot from 2h: members/s",
            &compact.retired,
        ),
        longest(
            "  longest retirement call; calls",
            &compact.retired,
            String::new(),
        ),
    ]
}
