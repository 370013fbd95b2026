//! The long-window phase: a board of 1 h slots with windows [1h, 180d], so 4,320 live
//! slots, holding a few of its 2,000 members in every slot (events written at times
//! spread over the last 180 days). Its 180d totals are drifted and rebuilt with no
//! writer (the reference), drifted again, then rebuilt while 4 writers keep adding to
//! its members for the whole recompute, in the current slot and in old ones (each a
//! batch of 50 events every 20 ms). A member written into a stage hash while that hash
//! is being scanned is folded afresh over all 4,320 slots, so one member's fold spans
//! several script calls. Reports the time beside the time without writers (target
//! ≤ 2×), the script calls,
//! the recompute's longest call and its calls over 2 ms (`SLOWLOG`, logging every call
//! over 1 ms; target none over 2 ms), and whether the totals end
//! equal to the oracle (initial events + acknowledged writes).
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

/// Live slots of the 180d window (1 h each).
const SLOTS: i64 = 180 * 24;
const MEMBERS: usize = 2000;
/// Members written in every slot.
const PER_SLOT: usize = 5;
const BOARD: &str = "bench-longwindow";
const TOTALS: &str = "stats_{bench-longwindow}_15552000";
const HOUR_MS: i64 = 3_600_000;

fn member(i: usize) -> String {
    format!("post:{i}")
}

pub async fn longwindow(redis: &crate::setup::Redis) -> Vec<Row> {
    let redis_url = redis.url.as_str();
    let now = Timestamp::now_utc();
    // The clock stands still: no slot leaves the window and none is created meanwhile.
    let clock = ManualClock::new(now);
    let store = crate::setup::store(redis_url).await;
    let boards = Rollboard::with(store, Arc::new(clock), Settings::default());
    let window = Span::parse("180d").unwrap();
    boards
        .create(BOARD, BoardConfig::parse("1h", &["1h", "180d"]).unwrap())
        .await
        .unwrap();
    // Slot k (0 = the current one) holds members (k * PER_SLOT + j) % MEMBERS.
    let mut expected = vec![0i64; MEMBERS];
    let initial: Vec<Event> = (0..SLOTS)
        .flat_map(|k| (0..PER_SLOT).map(move |j| (k, j)))
        .map(|(k, j)| {
            let m = (k as usize * PER_SLOT + j) % MEMBERS;
            let delta = ((k + j as i64) % 5) + 1;
            expected[m] += delta;
            Event::new(member(m), delta).at(now.plus_millis(-k * HOUR_MS))
        })
        .collect();
    for batch in initial.chunks(1000) {
        let outcome = boards.windowed(BOARD).incr_batch(batch).await.unwrap();
        assert_eq!(outcome.accepted, batch.len());
    }

    let mut conn = redis::Client::open(redis_url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    // The reference: the same recompute with no writer.
    crate::recompute::drift(&mut conn, TOTALS, &member(0), &member(1)).await;
    let off_cpu = redis.keep_off_its_cpu();
    let started = Instant::now();
    let quiet = boards
        .windowed(BOARD)
        .recompute(Some(window))
        .await
        .unwrap();
    let quiet_elapsed = started.elapsed();
    drop(off_cpu);
    crate::recompute::drift(&mut conn, TOTALS, &member(0), &member(1)).await;
    let off_cpu = redis.keep_off_its_cpu();
    slowlog::reset_over(&mut conn, 1000).await;

    // Each writer's batch: half its events now, half in a random live slot.
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4u64)
        .map(|w| {
            let (boards, stop) = (boards.clone(), stop.clone());
            tokio::spawn(async move {
                let mut rng = rand::rngs::StdRng::seed_from_u64(100 + w);
                let (mut acknowledged, mut old) = (Vec::new(), 0usize);
                let mut tick = tokio::time::interval(Duration::from_millis(20));
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                while !stop.load(Ordering::Relaxed) {
                    let ids: Vec<usize> = (0..50).map(|_| rng.random_range(0..MEMBERS)).collect();
                    let events: Vec<Event> = ids
                        .iter()
                        .enumerate()
                        .map(|(i, &m)| {
                            let k = if i % 2 == 0 {
                                0
                            } else {
                                rng.random_range(1..SLOTS)
                            };
                            Event::new(member(m), 1).at(now.plus_millis(-k * HOUR_MS))
                        })
                        .collect();
                    let outcome = boards.windowed(BOARD).incr_batch(&events).await.unwrap();
                    assert_eq!(outcome.accepted, events.len());
                    acknowledged.extend(ids);
                    old += events.len() / 2;
                    tick.tick().await;
                }
                (acknowledged, old)
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let report = boards
        .windowed(BOARD)
        .recompute(Some(window))
        .await
        .unwrap();
    let elapsed = started.elapsed();
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.store(true, Ordering::Relaxed);
    let (mut writes, mut old_writes) = (0, 0);
    for writer in writers {
        let (acknowledged, old) = writer.await.unwrap();
        for m in acknowledged {
            expected[m] += 1;
            writes += 1;
        }
        old_writes += old;
    }
    let slow = slowlog::slow_calls(&mut conn).await;
    let slow = slowlog::split_recompute(&slow);
    let own_over_2ms = over(&slow.own, 2000);
    let longest = slow.own.iter().map(|c| c.micros).max();
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
                "recompute of a drifted 180d window of 1h slots, {} slots x {PER_SLOT} of {} members, 4 writers on for all of it",
                thousands(SLOTS as f64),
                thousands(MEMBERS as f64)
            ),
            measured: format!("{:.2} s", elapsed.as_secs_f64()),
            reference: format!(
                "no writer {:.2} s ({} calls); with: {} script calls, {} members refolded",
                quiet_elapsed.as_secs_f64(),
                quiet.calls,
                report.calls,
                report.members_folded
            ),
            ratio: Some(elapsed.as_secs_f64() / quiet_elapsed.as_secs_f64()),
            target: Some((
                "<= 2x no writer".into(),
                elapsed.as_secs_f64() <= 2.0 * quiet_elapsed.as_secs_f64(),
            )),
        },
        Row {
            figure: "  longest recompute call (SLOWLOG, logging calls over 1 ms)".into(),
            measured: longest.map_or("< 1 ms".into(), |us| {
                format!("{:.2} ms", us as f64 / 1000.0)
            }),
            reference: format!("{} calls over 1 ms", slow.own.len()),
            ratio: None,
            target: None,
        },
        Row {
            figure: "  recompute calls over 2 ms (SLOWLOG)".into(),
            measured: slowlog::describe(own_over_2ms.iter().copied()),
            reference: format!(
                "stalls: {} small commands over 1 ms; writers' calls over 2 ms: {}",
                slow.stalls,
                slowlog::describe(over(&slow.writers, 2000))
            ),
            ratio: None,
            target: Some(("none".into(), own_over_2ms.is_empty())),
        },
        Row {
            figure: "  events written meanwhile".into(),
            measured: rate(writes as f64 / elapsed.as_secs_f64(), "events/s"),
            reference: format!(
                "{} events, {} in old slots",
                thousands(writes as f64),
                thousands(old_writes as f64)
            ),
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

/// The calls among `calls` longer than `micros`.
fn over<'a>(calls: &[&'a slowlog::SlowCall], micros: i64) -> Vec<&'a slowlog::SlowCall> {
    calls
        .iter()
        .copied()
        .filter(|c| c.micros > micros)
        .collect()
}
