//! A sharded board's period snapshots: taken once per boundary for the whole board, when
//! every shard is retired through it, from the board's merged tops; kept in shard 0's
//! streams (the board's own), where they are listed and their delivery cursors kept.

use futures_util::future::try_join_all;

use super::view::Sharded;
use crate::domain::PageQuery;
use crate::domain::{SnapshotPass, SnapshotRange, Timestamp};
use crate::error::Result;

/// The newest snapshot of a window.
const NEWEST: SnapshotRange = SnapshotRange {
    from: None,
    to: None,
    limit: 1,
    oldest_first: false,
};

impl Sharded<'_> {
    /// Takes the board's snapshots at the boundary `slot_start(now)` as a board of one
    /// shard does ([`Store::take_snapshots`](crate::store::Store::take_snapshots)): once
    /// every window of every shard is retired through it, each window's merged top is
    /// appended to its snapshots once, however many callers race.
    pub(super) async fn take_snapshots(&self, now: Timestamp) -> Result<SnapshotPass> {
        let board = self.board();
        let config = &board.config;
        let Some(policy) = config.snapshots() else {
            return Ok(SnapshotPass::Off);
        };
        let boundary = config.slot_start(now);
        let newest = (0..config.windows().len()).map(|j| self.store.snapshots(board, j, NEWEST));
        let due: Vec<bool> = try_join_all(newest)
            .await?
            .iter()
            .map(|kept| kept.first().is_none_or(|s| s.boundary < boundary))
            .collect();
        if !due.contains(&true) {
            return Ok(SnapshotPass::Done { appended: 0 });
        }
        // The shards' state joined: each window retired through the least of theirs,
        // building when any shard's is.
        let windows = self.describe(now).await?.windows;
        let cutoff = |j| config.cutoff(j, now);
        if (windows.iter().enumerate()).any(|(j, w)| w.retired_through < cutoff(j)) {
            return Ok(SnapshotPass::Waiting);
        }
        let top = u64::from(policy.top());
        let tops = windows
            .iter()
            .zip(due)
            .enumerate()
            .map(|(j, (w, due))| async move {
                if !due || w.building {
                    return Ok(None);
                }
                let page = self.in_window(j, now);
                let leaders = page.top(PageQuery::top(0, top)).await?;
                Ok(Some(leaders.entries))
            });
        let tops = try_join_all(tops).await?;
        let appended = self.store.take_snapshots(board, now, Some(&tops)).await;
        self.lift(appended)
    }
}
