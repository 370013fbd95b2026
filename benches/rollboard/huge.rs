//! The `huge` phase: one event near 2^53 (and its negation) must not slow a board's later
//! batches. Two two-window (1 h, 24 h) boards get the same library batches of 1000
//! Zipf-skewed events; one of them also got the huge pair first. They are loaded in
//! alternating slices, so drift in the machine's speed hits both alike, and the ratio of
//! their rates is printed (target ≥ 0.9), beside the ratio of the Redis time their
//! script calls took per event (`INFO commandstats`), which the load on the other
//! processes of a shared machine sways much less.

use std::sync::Arc;
use std::time::Duration;

use crate::load::{self, Spread};
use crate::report::{Row, rate};
use rollboard::{BoardConfig, Event, MAX_ABS, Rollboard};

/// Alternating slices per board.
const SLICES: u32 = 8;

/// Calls of `EVALSHA` Redis has served, and the microseconds they took.
async fn evalsha_stats(conn: &mut redis::aio::MultiplexedConnection) -> (u64, u64) {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .unwrap();
    let line = info
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:"))
        .unwrap_or("calls=0,usec=0");
    let field = |name: &str| {
        line.split(',')
            .find_map(|kv| kv.strip_prefix(name))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("calls="), field("usec="))
}

/// Runs the phase on boards `<prefix>-plain` and `<prefix>-huge` (created here); returns
/// its rows and the events acknowledged per board.
pub async fn huge_delta(
    boards: &Rollboard,
    redis_url: &str,
    prefix: &str,
    phase: Duration,
) -> (Vec<Row>, Vec<(String, u64)>) {
    let mut conn = redis::Client::open(redis_url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let plain = format!("{prefix}-plain");
    let huge = format!("{prefix}-huge");
    let batches: Arc<Vec<Vec<Event>>> = Arc::new(
        (0..200)
            .map(|b| {
                load::member_ids(Spread::Zipf, 1000, 7000 + b)
                    .into_iter()
                    .map(|m| Event::new(format!("post:{m}"), 1))
                    .collect()
            })
            .collect(),
    );
    let mut done = vec![(plain.clone(), 0), (huge.clone(), 0)];
    for board in [&plain, &huge] {
        boards
            .create(board, BoardConfig::parse("1h", &["1h", "24h"]).unwrap())
            .await
            .unwrap();
    }
    boards
        .windowed(&huge)
        .incr("huge", MAX_ABS, None)
        .await
        .unwrap();
    boards
        .windowed(&huge)
        .incr("huge", -MAX_ABS, None)
        .await
        .unwrap();
    let slice = phase / SLICES;
    let (mut seconds, mut events, mut usec) = ([0.0; 2], [0u64; 2], [0u64; 2]);
    for _ in 0..SLICES {
        for (i, board) in [&plain, &huge].into_iter().enumerate() {
            let (_, usec_before) = evalsha_stats(&mut conn).await;
            let load =
                load::library_batches(boards.clone(), board, batches.clone(), 8, slice).await;
            let (_, usec_after) = evalsha_stats(&mut conn).await;
            seconds[i] += load.elapsed.as_secs_f64();
            events[i] += load.done;
            usec[i] += usec_after - usec_before;
            done[i].1 += load.done;
        }
    }
    let (before, after) = (events[0] as f64 / seconds[0], events[1] as f64 / seconds[1]);
    let ratio = after / before;
    // Redis time per event: the board without the huge pair over the board with it.
    let per_event = |i: usize| usec[i] as f64 / events[i] as f64;
    let redis_ratio = per_event(0) / per_event(1);
    let rows = vec![
        Row {
            figure: "library batches after one ±2^53 event, Zipf, 1h+24h".into(),
            measured: rate(after, "ev/s"),
            reference: format!("same load, board without it {}", rate(before, "ev/s")),
            ratio: Some(ratio),
            target: Some(("≥ 0.9".into(), ratio >= 0.9)),
        },
        Row {
            figure: "  their Redis script time per event".into(),
            measured: format!("{:.2} µs", per_event(1)),
            reference: format!("board without it {:.2} µs", per_event(0)),
            ratio: Some(redis_ratio),
            target: Some(("≥ 0.9".into(), redis_ratio >= 0.9)),
        },
    ];
    (rows, done)
}
