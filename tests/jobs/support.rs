//! Shared helpers of the job tests: a Redis, a clock, boards, and the oracle.

use std::collections::BTreeMap;
use std::sync::Arc;

use rollboard::{BoardConfig, ManualClock, Rollboard, Settings, Timestamp};

pub use crate::test_redis::TestRedis;

/// 2023-11-14T22:00:00Z: a whole hour.
pub const START: i64 = 1_700_000_000 - 1_700_000_000 % 3600;

pub fn ts(seconds: i64) -> Timestamp {
    Timestamp::from_unix_seconds(seconds).unwrap()
}

/// A Rollboard on `redis` with a manual clock at `START`.
pub async fn boards(redis: &TestRedis) -> (Rollboard, ManualClock) {
    let clock = ManualClock::new(ts(START));
    let boards = Rollboard::with(
        redis.store().await,
        Arc::new(clock.clone()),
        Settings::default(),
    );
    (boards, clock)
}

/// Creates a uniquely named board.
pub async fn board(boards: &Rollboard, slot: &str, windows: &[&str]) -> String {
    let name = unique("j");
    boards
        .create(&name, BoardConfig::parse(slot, windows).unwrap())
        .await
        .unwrap();
    name
}

pub use crate::test_redis::unique;

/// The full ranking of a window as `member -> score`.
pub async fn ranking(boards: &Rollboard, board: &str, window: &str) -> BTreeMap<String, i64> {
    let mut all = BTreeMap::new();
    let mut offset = 0;
    loop {
        let page = boards
            .windowed(board)
            .top(Some(window.parse().unwrap()), offset, 1000)
            .await
            .unwrap();
        let n = page.entries.len() as u64;
        all.extend(page.entries.into_iter().map(|e| (e.member, e.score)));
        if n < 1000 {
            return all;
        }
        offset += n;
    }
}

/// Positive totals of the events whose slot is after `cutoff`.
pub fn oracle(events: &[(i64, String, i64)], cutoff: i64) -> BTreeMap<String, i64> {
    let mut totals = BTreeMap::new();
    for (slot, member, delta) in events {
        if *slot > cutoff {
            *totals.entry(member.clone()).or_insert(0) += delta;
        }
    }
    totals.retain(|_, v| *v > 0);
    totals
}
