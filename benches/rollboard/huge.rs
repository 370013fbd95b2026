//! The `huge` phase: one event near 2^53 (and its negation) must not slow a board's later
//! batches. Library batches of 1000 Zipf-skewed events on a two-window (1 h, 24 h) board,
//! measured before and after the huge pair, the ratio printed (target ≥ 0.9).

use std::sync::Arc;
use std::time::Duration;

use crate::load::{self, Spread};
use crate::report::{Row, rate};
use rollboard::{BoardConfig, Event, MAX_ABS, Rollboard};

/// Runs the phase on `board` (created here); returns its rows and the events acknowledged.
pub async fn huge_delta(boards: &Rollboard, board: &str, phase: Duration) -> (Vec<Row>, u64) {
    boards
        .create_board(board, BoardConfig::parse("1h", &["1h", "24h"]).unwrap())
        .await
        .unwrap();
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
    let before = load::library_batches(boards.clone(), board, batches.clone(), 8, phase).await;
    boards.incr(board, "huge", MAX_ABS, None).await.unwrap();
    boards.incr(board, "huge", -MAX_ABS, None).await.unwrap();
    let after = load::library_batches(boards.clone(), board, batches, 8, phase).await;
    let ratio = after.per_second() / before.per_second();
    let rows = vec![Row {
        figure: "library batches after one ±2^53 event, Zipf, 1h+24h".into(),
        measured: rate(after.per_second(), "ev/s"),
        reference: format!("before it {}", rate(before.per_second(), "ev/s")),
        ratio: Some(ratio),
        target: Some(("≥ 0.9× before".into(), ratio >= 0.9)),
    }];
    (rows, before.done + after.done)
}
