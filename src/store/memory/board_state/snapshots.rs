//! A board's period snapshots in memory: taken at a slot boundary once retirement through
//! it is complete, kept per window up to the policy's count, and their delivery cursor
//! (as `snapshot_take.lua`, `snapshot_append.lua` and `snapshot_delivered.lua`).

use super::MemBoard;
use crate::domain::PageQuery;
use crate::domain::{Entry, Snapshot, SnapshotPass, SnapshotRange, Timestamp};

impl MemBoard {
    /// Takes every window's snapshot at the boundary `slot_start(now)` once retirement
    /// through it is complete (as `snapshot_take.lua`).
    pub fn take_snapshots(&mut self, now: Timestamp) -> SnapshotPass {
        let Some(policy) = self.board.config.snapshots() else {
            return SnapshotPass::Off;
        };
        let n = self.windows();
        if (0..n).any(|j| self.retired[j] < self.board.config.cutoff(j, now)) {
            return SnapshotPass::Waiting;
        }
        let boundary = self.board.config.slot_start(now);
        let top = u64::from(policy.top());
        let tops: Vec<Option<Vec<Entry>>> = (0..n)
            .map(|j| {
                (!self.has_snapshot(j, boundary))
                    .then(|| self.top(j, now, PageQuery::top(0, top)).entries)
            })
            .collect();
        self.append_snapshots(now, tops)
    }

    /// Appends `tops[j]`, when given, as window `j`'s snapshot at the boundary
    /// `slot_start(now)` unless it holds that or a newer one (as `snapshot_append.lua`).
    pub fn append_snapshots(
        &mut self,
        now: Timestamp,
        tops: Vec<Option<Vec<Entry>>>,
    ) -> SnapshotPass {
        let Some(policy) = self.board.config.snapshots() else {
            return SnapshotPass::Off;
        };
        let boundary = self.board.config.slot_start(now);
        let mut appended = 0;
        for (j, entries) in tops.into_iter().enumerate() {
            let Some(entries) = entries.filter(|_| !self.has_snapshot(j, boundary)) else {
                continue;
            };
            let kept = &mut self.snapshots[j];
            kept.push_back(Snapshot {
                window: self.board.config.windows()[j],
                boundary,
                taken_ms: now.unix_millis(),
                entries,
            });
            while kept.len() > policy.keep() as usize {
                kept.pop_front();
            }
            appended += 1;
        }
        SnapshotPass::Done { appended }
    }

    /// Whether window `window` holds a snapshot at `boundary` or a newer one.
    fn has_snapshot(&self, window: usize, boundary: i64) -> bool {
        self.snapshots[window]
            .back()
            .is_some_and(|last| last.boundary >= boundary)
    }

    /// Window `window`'s snapshots in `range`, newest first.
    pub fn snapshots(&self, window: usize, range: SnapshotRange) -> Vec<Snapshot> {
        let inside = |s: &&Snapshot| {
            range.from.is_none_or(|f| s.boundary >= f) && range.to.is_none_or(|t| s.boundary <= t)
        };
        let kept = self.snapshots[window].iter();
        let listed: Vec<&Snapshot> = if range.oldest_first {
            kept.filter(inside).take(range.limit as usize).collect()
        } else {
            kept.rev()
                .filter(inside)
                .take(range.limit as usize)
                .collect()
        };
        listed.into_iter().cloned().collect()
    }

    /// Window `window`'s delivery cursor.
    pub fn snapshot_cursor(&mut self, window: usize, delivered: Option<i64>) -> Option<i64> {
        let cursor = &mut self.snapshot_cursors[window];
        if let Some(boundary) = delivered {
            *cursor = Some(cursor.map_or(boundary, |c| c.max(boundary)));
        }
        *cursor
    }
}
