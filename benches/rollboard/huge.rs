//! The `huge` phase: one event near 2^53 (and its negation) must not slow a board's later
//! batches. Two two-window (1 h, 24 h) boards get the same library batches of 1000
//! Zipf-skewed events; one of them also got the huge pair first. They are loaded in
//! alternating slices, so drift in the machine's speed hits both alike, and the ratio of
//! their rates is printed (target ≥ 0.9).

use std::sync::Arc;
use std::time::Duration;

use crate::load::{self, Spread};
use crate::report::{Row, rate};
use rollboard::{BoardConfig, Event, MAX_ABS, Rollboard};

/// Alternating slices per board.
const SLICES: u32 = 4;

/// Runs the phase on boards `<prefix>-plain` and `<prefix>-huge` (created here); returns
/// its rows and the events acknowledged per board.
pub async fn huge_delta(
    boards: &Rollboard,
    prefix: &str,
    phase: Duration,
) -> (Vec<Row>, Vec<(String, u64)>) {
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
            .create_board(board, BoardConfig::parse("1h", &["1h", "24h"]).unwrap())
            .await
            .unwrap();
    }
    boards.incr(&huge, "huge", MAX_ABS, None).await.unwrap();
    boards.incr(&huge, "huge", -MAX_ABS, None).await.unwrap();
    let slice = phase / SLICES;
    let (mut seconds, mut events) = ([0.0; 2], [0u64; 2]);
    for _ in 0..SLICES {
        for (i, board) in [&plain, &huge].into_iter().enumerate() {
            let load =
                load::library_batches(boards.clone(), board, batches.clone(), 8, slice).await;
            seconds[i] += load.elapsed.as_secs_f64();
            events[i] += load.done;
            done[i].1 += load.done;
        }
    }
    let (before, after) = (events[0] as f64 / seconds[0], events[1] as f64 / seconds[1]);
    let ratio = after / before;
    let rows = vec![Row {
        figure: "library batches after one ±2^53 event, Zipf, 1h+24h".into(),
        measured: rate(after, "ev/s"),
        reference: format!("same load, board without it {}", rate(before, "ev/s")),
        ratio: Some(ratio),
        target: Some(("≥ 0.9".into(), ratio >= 0.9)),
    }];
    (rows, done)
}
