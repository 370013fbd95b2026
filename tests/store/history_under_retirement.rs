//! `history` under concurrent retirement: readers on their own connections read the
//! members' histories in a loop while a retirer with one-field chunks moves their values
//! from stage to stage, and every read must equal the oracle exactly (no point doubled
//! or missed while a value is between stages).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rollboard::{BoardConfig, Clock, Event, RetireOptions, Timestamp};

use crate::support::{START, TestRedis, clock, ts, unique, with_clock};

/// Long member names make the old two-pipeline read span several of Redis's reads, so
/// other clients' commands could run between its HGETs.
fn member(i: usize) -> String {
    format!("m{i}-{}", "x".repeat(200))
}

const MEMBERS: usize = 3;

/// Every event written, as (slot, member, delta).
type Events = Vec<(i64, String, i64)>;

/// The oracle's history of `member` at `now`: its non-zero value per slot, from the
/// largest window's start.
fn expected(
    config: &BoardConfig,
    events: &Events,
    member: &str,
    now: Timestamp,
) -> Vec<(i64, i64)> {
    let largest = config.windows().len() - 1;
    let from = config.window_start(largest, now);
    let mut points = BTreeMap::new();
    for (slot, m, delta) in events {
        if m == member && *slot >= from {
            *points.entry(*slot).or_insert(0) += delta;
        }
    }
    points.into_iter().filter(|(_, v)| *v != 0).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn history_reads_stay_exact_while_retirement_moves_values() {
    // A server of its own: the listpack limit is server-wide.
    let redis = TestRedis::spawn().await;
    redis.use_hashtables().await;
    let clock = clock();
    let writer = with_clock(redis.store().await, &clock);
    let config = BoardConfig::parse("1m", &["1m", "10m", "1h", "5h"]).unwrap();
    let board = unique("h");
    // Five hours before START, a slot of events a minute, nothing retired meanwhile:
    // every value sits in its slot's stage 0, to be moved stage by stage as the clock
    // jumps. Up to 289 live slots of 4 stages: a history is read in two ranges of calls.
    let t0 = START - 5 * 3600;
    clock.set(ts(t0));
    writer.create(&board, config.clone()).await.unwrap();
    let mut oracle: Events = Vec::new();
    for minute in 0..300i64 {
        clock.set(ts(t0 + minute * 60 + 30));
        let events: Vec<Event> = (0..MEMBERS)
            .map(|i| {
                let delta = if (minute + i as i64) % 7 == 3 {
                    -2
                } else {
                    1 + (minute * 5 + i as i64) % 9
                };
                oracle.push((t0 + minute * 60, member(i), delta));
                Event::new(member(i), delta)
            })
            .collect();
        let outcome = writer.windowed(&board).incr_batch(&events).await.unwrap();
        assert_eq!(outcome.accepted, MEMBERS);
    }
    let oracle = Arc::new(oracle);

    let readers: Vec<_> = {
        let mut r = Vec::new();
        for _ in 0..3 {
            r.push(with_clock(redis.store().await, &clock));
        }
        r
    };
    let mut total_reads = 0;
    // Slots each window has retired through (none yet).
    let mut retired = vec![i64::MIN; config.windows().len()];
    // Each jump makes windows retire many slots at once.
    for (jump, minutes) in [310, 330, 420, 590].into_iter().enumerate() {
        clock.set(ts(t0 + minutes * 60));
        let now = clock.now();
        let stop = Arc::new(AtomicBool::new(false));
        let tasks: Vec<_> = readers
            .iter()
            .enumerate()
            .map(|(r, rb)| {
                let (rb, board, config, oracle, stop) = (
                    rb.clone(),
                    board.clone(),
                    config.clone(),
                    oracle.clone(),
                    stop.clone(),
                );
                tokio::spawn(async move {
                    let mut reads = 0;
                    while !stop.load(Ordering::SeqCst) || reads == 0 {
                        let m = member((r + reads) % MEMBERS);
                        let history = rb.windowed(&board).history(&m).await.unwrap();
                        let got: Vec<(i64, i64)> =
                            history.points.iter().map(|p| (p.slot, p.value)).collect();
                        assert_eq!(
                            got,
                            expected(&config, &oracle, &m, now),
                            "jump {jump}, read {reads} of reader {r}"
                        );
                        reads += 1;
                    }
                    reads
                })
            })
            .collect();
        let options = RetireOptions {
            chunk_size: 1,
            max_chunks: None,
            ..Default::default()
        };
        let report = writer.windowed(&board).retire(Some(options)).await.unwrap();
        stop.store(true, Ordering::SeqCst);
        assert!(report.complete);
        // Every window moved (or, the largest, deleted) each member's value in each slot
        // that left it: the values really moved while the readers read.
        let mut moved = 0;
        for (j, through) in retired.iter_mut().enumerate() {
            let cutoff = config.cutoff(j, now);
            moved += oracle
                .iter()
                .filter(|(slot, _, _)| *through < *slot && *slot <= cutoff)
                .count();
            *through = cutoff;
        }
        assert_eq!(report.fields_subtracted as usize, moved, "jump {jump}");
        for task in tasks {
            total_reads += task.await.unwrap();
        }
    }
    eprintln!("{total_reads} history reads during retirement");
    // The last jump retired the oldest slots from every window: they left the history.
    let now = clock.now();
    let history = readers[0]
        .windowed(&board)
        .history(&member(0))
        .await
        .unwrap();
    assert_eq!(history.from, t0 + 291 * 60);
    let got: Vec<(i64, i64)> = history.points.iter().map(|p| (p.slot, p.value)).collect();
    assert_eq!(got, expected(&config, &oracle, &member(0), now));
    assert_eq!(got.len(), 9, "{got:?}");
}
