//! The recompute phase: a board of 200,000 members × 4 hourly slots, its 4 h totals
//! drifted on purpose, rebuilt while 4 writers keep adding to its members (each a batch
//! of 100 events every 20 ms, up to 20,000 events/s). Reports the time, the script calls,
//! the recompute's calls over 2 ms (`SLOWLOG`) apart from the writers' batches, and
//! whether the totals end equal to the oracle (initial events + acknowledged writes).
//! The phase keeps this process (writers and recompute) off Redis's CPU, see
//! [`crate::setup::OffRedisCpu`].

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rollboard::{BoardConfig, Event, ManualClock, Rollboard, Settings, Span, Timestamp};

use crate::report::{Row, rate, thousands};
use crate::slowlog;

const MEMBERS: usize = 200_000;
const SLOTS: i64 = 4;
const BOARD: &str = "bench-recompute";
const TOTALS: &str = "stats_{bench-recompute}_14400";

fn member(i: usize) -> String {
    format!("post:{i}")
}

/// Drifts the totals set `totals` as a bug or a hand edit would: `edited`'s total set to
/// 999,999, `lost` removed, and a `ghost` member that no slot holds.
pub async fn drift(
    conn: &mut redis::aio::MultiplexedConnection,
    totals: &str,
    edited: &str,
    lost: &str,
) {
    let _: () = redis::pipe()
        .cmd("ZADD")
        .arg(totals)
        .arg(999_999)
        .arg(edited)
        .ignore()
        .cmd("ZREM")
        .arg(totals)
        .arg(lost)
        .ignore()
        .cmd("ZADD")
        .arg(totals)
        .arg(5)
        .arg("ghost")
        .ignore()
        .query_async(conn)
        .await
        .unwrap();
}

pub async fn recompute(redis: &crate::setup::Redis) -> Vec<Row> {
    let redis_url = redis.url.as_str();
    let now = Timestamp::now_utc();
    let clock = ManualClock::new(now.plus_millis(-(SLOTS - 1) * 3_600_000));
    let store = crate::setup::store(redis_url).await;
    let boards = Rollboard::with(store, Arc::new(clock.clone()), Settings::default());
    let four_hours = Span::parse("4h").unwrap();
    boards
        .create(BOARD, BoardConfig::parse("1h", &["1h", "4h"]).unwrap())
        .await
        .unwrap();
    let mut expected = vec![0i64; MEMBERS];
    for slot in 0..SLOTS {
        let ids: Vec<usize> = (0..MEMBERS).collect();
        for chunk in ids.chunks(10_000) {
            let events: Vec<Event> = chunk
                .iter()
                .map(|&m| {
                    let delta = ((m as i64 * 7 + slot) % 5) + 1;
                    expected[m] += delta;
                    Event::new(member(m), delta)
                })
                .collect();
            boards.windowed(BOARD).incr_batch(&events).await.unwrap();
        }
        if slot + 1 < SLOTS {
            clock.advance_secs(3600);
        }
    }
    boards.windowed(BOARD).retire(None).await.unwrap();

    let mut conn = redis::Client::open(redis_url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    crate::recompute::drift(&mut conn, TOTALS, &member(0), &member(1)).await;
    let off_cpu = redis.keep_off_its_cpu();
    slowlog::reset(&mut conn).await;

    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4u64)
        .map(|w| {
            let (boards, stop) = (boards.clone(), stop.clone());
            tokio::spawn(async move {
                let mut rng = rand::rngs::StdRng::seed_from_u64(w);
                let mut acknowledged: Vec<usize> = Vec::new();
                let mut tick = tokio::time::interval(Duration::from_millis(20));
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                while !stop.load(Ordering::Relaxed) {
                    let ids: Vec<usize> = (0..100).map(|_| rng.random_range(0..MEMBERS)).collect();
                    let events: Vec<Event> =
                        ids.iter().map(|&m| Event::new(member(m), 1)).collect();
                    let outcome = boards.windowed(BOARD).incr_batch(&events).await.unwrap();
                    assert_eq!(outcome.accepted, events.len());
                    acknowledged.extend(ids);
                    tick.tick().await;
                }
                acknowledged
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let report = boards
        .windowed(BOARD)
        .recompute(Some(four_hours))
        .await
        .unwrap();
    let elapsed = started.elapsed();
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.store(true, Ordering::Relaxed);
    let mut writes = 0;
    for writer in writers {
        for m in writer.await.unwrap() {
            expected[m] += 1;
            writes += 1;
        }
    }
    let slow = slowlog::slow_calls(&mut conn).await;
    let slow = slowlog::split_recompute(&slow);
    drop(off_cpu);
    let stored: Vec<(String, i64)> = redis::cmd("ZRANGE")
        .arg(TOTALS)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut conn)
        .await
        .unwrap();
    let stored: HashMap<String, i64> = stored.into_iter().collect();
    let exact = stored.len() == MEMBERS
        && expected
            .iter()
            .enumerate()
            .all(|(m, total)| stored.get(&member(m)) == Some(total));
    boards.drop_board(BOARD).await.unwrap();

    vec![
        Row {
            figure: format!(
                "recompute of a drifted 4h window, {} members x {SLOTS} slots, 4 writers on",
                thousands(MEMBERS as f64)
            ),
            measured: format!(
                "{:.1} s, {}",
                elapsed.as_secs_f64(),
                rate(
                    report.fields_scanned as f64 / elapsed.as_secs_f64(),
                    "values/s"
                )
            ),
            reference: format!(
                "{} script calls, {} members refolded",
                report.calls, report.members_folded
            ),
            ratio: None,
            target: None,
        },
        Row {
            figure: "  recompute calls over 2 ms (SLOWLOG)".into(),
            measured: slowlog::describe(slow.own.iter().copied()),
            reference: format!(
                "stalls: {} small commands; writers' calls: {}",
                slow.stalls,
                slowlog::describe(slow.writers.iter().copied())
            ),
            ratio: None,
            target: Some(("none".into(), slow.own.is_empty())),
        },
        Row {
            figure: "  events written meanwhile".into(),
            measured: rate(writes as f64 / elapsed.as_secs_f64(), "events/s"),
            reference: format!("{} events", thousands(writes as f64)),
            ratio: None,
            target: None,
        },
        Row {
            figure: "  totals equal the oracle afterwards (initial events + writes)".into(),
            measured: if exact {
                "exact".into()
            } else {
                "DIFFERENT".into()
            },
            reference: format!("{} members", thousands(MEMBERS as f64)),
            ratio: None,
            target: Some(("exact".into(), exact)),
        },
    ]
}
