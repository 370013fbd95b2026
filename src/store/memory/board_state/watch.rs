//! The watched tops of a board in memory (docs/design.md, "Rank changes"), the model of
//! Redis's `lua/watch.lua`: after every change, each watched window's first N members
//! are compared with those last recorded, and the difference is appended to the
//! board's changes.

use std::collections::BTreeMap;

use super::MemBoard;
use crate::domain::{Change, ChangeCause, Span, TopList, diff_top, parse_log_id, rank_prefix};
use crate::error::{Error, Result};
use crate::store::memory::stream::{Id, Stream, advance, id_text};

/// Each watched window's top as last recorded, and the changes.
#[derive(Debug, Default)]
pub(super) struct Watching {
    /// Per watched window: its first N members as last recorded.
    tops: BTreeMap<Span, TopList>,
    /// The changes, capped by the board's `changes` option (as Redis's
    /// `board_{b}:changes`).
    log: Stream<Change, { usize::MAX }>,
    /// The newest change the changes webhook delivered.
    cursor: Option<Id>,
}

impl MemBoard {
    /// Records the changes of each watched top since the last call, caused by `cause`
    /// at `at` (unix ms; `None`: the board's latest time). A window no longer watched
    /// is recorded as watched to its top 0 (every member leaves), then forgotten.
    pub(super) fn record_changes(&mut self, cause: ChangeCause, at: Option<i64>) {
        let config = &self.board.config;
        let mut watched: Vec<(Span, usize)> = config
            .watch()
            .iter()
            .map(|w| (w.window(), w.top() as usize))
            .collect();
        let gone = self
            .watching
            .tops
            .keys()
            .filter(|w| !watched.iter().any(|(v, _)| v == *w));
        let gone: Vec<Span> = gone.copied().collect();
        watched.extend(gone.iter().map(|w| (*w, 0)));
        let now = self.review.now_ms();
        let at = at.unwrap_or(now as i64);
        let kept = config.changes_kept().unwrap_or_default();
        let mut recorded = false;
        for (window, n) in watched {
            let Some(j) = config.window_index(window) else {
                continue;
            };
            let Some(totals) = self.totals.get(j) else {
                continue;
            };
            let leaders = totals.ranked_entries().take(n);
            let top: TopList = rank_prefix(
                leaders.map(|(s, m)| (m.to_owned(), s)).collect(),
                config.ties(),
            );
            let old = self.watching.tops.remove(&window).unwrap_or_default();
            let changes = diff_top(
                &old,
                &top,
                |m| totals.get(m).unwrap_or(0),
                (window, cause, at),
            );
            recorded |= !changes.is_empty();
            for change in changes {
                let id = |id| Change {
                    id: id_text(id),
                    ..change
                };
                self.watching.log.push(at.max(0) as u64, id);
            }
            if n > 0 {
                self.watching.tops.insert(window, top);
            }
        }
        // As on Redis, trimmed when changes are recorded.
        if recorded {
            self.watching.log.keep_newest(kept.keep() as usize);
            let expired = now.saturating_sub(kept.keep_for().seconds() * 1000);
            self.watching.log.trim_before(expired);
        }
    }

    /// The changes webhook's cursor, first moved up to `delivered` when given.
    pub fn changes_cursor(&mut self, delivered: Option<&str>) -> Option<String> {
        advance(&mut self.watching.cursor, delivered)
    }

    /// Up to `limit` changes after `after` (from the oldest kept when `None`); with
    /// `newest_first`, the newest before `after` (from the newest), newest first.
    pub fn changes(
        &self,
        after: Option<&str>,
        limit: usize,
        newest_first: bool,
    ) -> Result<Vec<Change>> {
        let after = after.map(parse_log_id).transpose()?;
        let log = self.watching.log.iter();
        if newest_first {
            let changes = log.rev().filter(|(id, _)| after.is_none_or(|a| *id < a));
            return Ok(changes.take(limit).map(|(_, c)| c.clone()).collect());
        }
        if let Some(id) = after
            && self.watching.log.dropped_after(id)
        {
            return Err(Error::ChangesTrimmed {
                board: self.board.name.to_string(),
                after: id_text(id),
            });
        }
        let changes = log.filter(|(id, _)| after.is_none_or(|a| *id > a));
        Ok(changes.take(limit).map(|(_, c)| c.clone()).collect())
    }
}
