//! Period snapshots: a board's option to keep, at each slot boundary, the top of every
//! window (`"snapshots":{"top":100,"keep":168}`), and what a snapshot holds.
//!
//! A snapshot of window `W` at boundary `B` is taken once retirement for `B` is complete
//! for every window, and only once (the stores refuse a second one for the same or an
//! older boundary). Ranks are computed from the stored scores in rank order, following
//! the board's ties: a top-N prefix holds every higher total, so they are exact.

use serde::{Deserialize, Serialize};

use super::error::Error;
use super::{Entry, Span, Ties};

/// How many leaders each snapshot keeps and how many snapshots per window are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawPolicy", into = "RawPolicy")]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct SnapshotPolicy {
    /// Leaders per snapshot, 1..=1000.
    #[cfg_attr(feature = "server", schema(minimum = 1, maximum = 1000))]
    top: u32,
    /// Snapshots kept per window (older ones are trimmed), 1..=100000.
    #[cfg_attr(feature = "server", schema(minimum = 1, maximum = 100000))]
    keep: u32,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    top: u32,
    keep: u32,
}

impl TryFrom<RawPolicy> for SnapshotPolicy {
    type Error = Error;
    fn try_from(raw: RawPolicy) -> Result<Self, Error> {
        SnapshotPolicy::new(raw.top, raw.keep)
    }
}

impl From<SnapshotPolicy> for RawPolicy {
    fn from(p: SnapshotPolicy) -> Self {
        RawPolicy {
            top: p.top,
            keep: p.keep,
        }
    }
}

impl SnapshotPolicy {
    /// Most leaders a snapshot keeps.
    pub const MAX_TOP: u32 = 1000;
    /// Most snapshots kept per window.
    pub const MAX_KEEP: u32 = 100_000;

    /// Keep the top `top` of every window at each boundary, the newest `keep` of them.
    pub fn new(top: u32, keep: u32) -> Result<Self, Error> {
        if !(1..=Self::MAX_TOP).contains(&top) {
            return Err(Error::InvalidConfig {
                reason: format!("snapshots.top must be 1..={}, not {top}", Self::MAX_TOP),
            });
        }
        if !(1..=Self::MAX_KEEP).contains(&keep) {
            return Err(Error::InvalidConfig {
                reason: format!("snapshots.keep must be 1..={}, not {keep}", Self::MAX_KEEP),
            });
        }
        Ok(SnapshotPolicy { top, keep })
    }

    /// Leaders per snapshot.
    pub fn top(&self) -> u32 {
        self.top
    }

    /// Snapshots kept per window.
    pub fn keep(&self) -> u32 {
        self.keep
    }

    /// The form stored in a board record: `top,keep`.
    pub fn stored(&self) -> String {
        format!("{},{}", self.top, self.keep)
    }

    /// Parses the stored form; `None` when malformed.
    pub fn from_stored(text: &str) -> Option<Self> {
        let (top, keep) = text.split_once(',')?;
        SnapshotPolicy::new(top.parse().ok()?, keep.parse().ok()?).ok()
    }
}

/// One snapshot of one window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Snapshot {
    /// The window.
    pub window: Span,
    /// The slot boundary it was taken at (unix seconds). As every read at that time, the
    /// window held the slots from `boundary − window + slot` on: the `window / slot − 1`
    /// slots before the boundary, and what had been written into the slot starting at
    /// `boundary` by `taken_ms` (so a one-slot window's snapshot is almost empty).
    pub boundary: i64,
    /// When it was taken, unix milliseconds (the taking replica's clock).
    pub taken_ms: i64,
    /// The leaders, in rank order (competition, or dense on a `"ties":"dense"` board).
    pub entries: Vec<Entry>,
}

/// A window's snapshots, newest first. Named `SnapshotPage` in the contract: a schema
/// named as one of its own fields breaks clients generated for Python.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "server", schema(as = SnapshotPage))]
pub struct Snapshots {
    /// The board.
    pub board: super::BoardName,
    /// The window.
    pub window: Span,
    /// The snapshots, newest boundary first.
    pub snapshots: Vec<Snapshot>,
}

/// What one attempt to take a board's snapshots at a boundary did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotPass {
    /// The board takes no snapshots, or the boundary is not one it has lived through.
    Off,
    /// Retirement for the boundary is not complete for every window yet: nothing taken.
    Waiting,
    /// Retirement is complete; `appended` windows got their snapshot from this call (0
    /// when another call, or replica, took them first).
    Done {
        /// Snapshots appended by this call.
        appended: u64,
    },
}

/// Which snapshots to list: boundaries in `[from, to]` (unix seconds), newest first
/// (or oldest first), at most `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotRange {
    /// Oldest boundary listed (inclusive).
    pub from: Option<i64>,
    /// Newest boundary listed (inclusive).
    pub to: Option<i64>,
    /// Most snapshots listed, 1..=[`SnapshotRange::MAX_LIMIT`].
    pub limit: u64,
    /// List the oldest first (and keep the oldest `limit`) instead of the newest.
    pub oldest_first: bool,
}

impl SnapshotRange {
    /// Most snapshots one read lists.
    pub const MAX_LIMIT: u64 = 1000;
    /// Snapshots listed when no limit is given.
    pub const DEFAULT_LIMIT: u64 = 24;

    /// Checks the bounds: `from <= to`, `1 <= limit <= MAX_LIMIT`.
    pub fn new(from: Option<i64>, to: Option<i64>, limit: Option<u64>) -> Result<Self, Error> {
        let invalid = |reason: String| Err(Error::InvalidQuery { reason });
        let limit = limit.unwrap_or(Self::DEFAULT_LIMIT);
        if !(1..=Self::MAX_LIMIT).contains(&limit) {
            return invalid(format!(
                "limit must be 1..={}, not {limit}",
                Self::MAX_LIMIT
            ));
        }
        if let (Some(f), Some(t)) = (from, to)
            && f > t
        {
            return invalid(format!("from ({f}) is after to ({t})"));
        }
        for t in [from, to].into_iter().flatten() {
            if !(0..=253_402_300_799).contains(&t) {
                return invalid(format!("{t} is not a unix time between 1970 and 9999"));
            }
        }
        Ok(SnapshotRange {
            from,
            to,
            limit,
            oldest_first: false,
        })
    }

    /// The same range, listed oldest first.
    pub fn oldest_first(self) -> Self {
        SnapshotRange {
            oldest_first: true,
            ..self
        }
    }
}

/// Ranks `(member, score)` pairs given highest first (a ranking's prefix), by `ties`.
pub fn rank_prefix(pairs: Vec<(String, i64)>, ties: Ties) -> Vec<Entry> {
    rank_run(pairs, 0, ties)
}

/// Ranks `(member, score)` pairs given highest first, the first at 0-based ranking
/// position `first`, where a tie group starts (dense ranks: `first` is 0).
pub(crate) fn rank_run(pairs: Vec<(String, i64)>, first: u64, ties: Ties) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::with_capacity(pairs.len());
    for (i, (member, score)) in pairs.into_iter().enumerate() {
        let position = first + i as u64;
        let rank = match entries.last() {
            _ if ties == Ties::Position => position + 1,
            Some(prev) if prev.score == score => prev.rank,
            Some(prev) if ties == Ties::Dense => prev.rank + 1,
            _ => position + 1,
        };
        entries.push(Entry {
            rank,
            member,
            score,
            data: None,
            pinned: false,
            movement: None,
        });
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, i64)]) -> Vec<(String, i64)> {
        items.iter().map(|(m, s)| (m.to_string(), *s)).collect()
    }

    fn ranks(entries: &[Entry]) -> Vec<u64> {
        entries.iter().map(|e| e.rank).collect()
    }

    #[test]
    fn a_prefix_ranks_by_the_boards_ties() {
        let p = pairs(&[("a", 5), ("b", 5), ("c", 3), ("d", 1), ("e", 1)]);
        assert_eq!(
            ranks(&rank_prefix(p.clone(), Ties::Competition)),
            [1, 1, 3, 4, 4]
        );
        assert_eq!(ranks(&rank_prefix(p.clone(), Ties::Dense)), [1, 1, 2, 3, 3]);
        assert_eq!(ranks(&rank_prefix(p, Ties::Position)), [1, 2, 3, 4, 5]);
        assert!(rank_prefix(Vec::new(), Ties::Dense).is_empty());
    }

    #[test]
    fn the_policy_is_bounded_and_round_trips() {
        let p: SnapshotPolicy = serde_json::from_str(r#"{"top":100,"keep":168}"#).unwrap();
        assert_eq!((p.top(), p.keep()), (100, 168));
        assert_eq!(p.stored(), "100,168");
        assert_eq!(SnapshotPolicy::from_stored("100,168"), Some(p));
        assert_eq!(SnapshotPolicy::from_stored("0,1"), None);
        for bad in [
            r#"{"top":0,"keep":1}"#,
            r#"{"top":1001,"keep":1}"#,
            r#"{"top":1,"keep":0}"#,
            r#"{"top":1,"keep":100001}"#,
        ] {
            let err = serde_json::from_str::<SnapshotPolicy>(bad).unwrap_err();
            assert!(err.to_string().contains("snapshots."), "{bad}: {err}");
        }
        assert!(serde_json::from_str::<SnapshotPolicy>(r#"{"top":1}"#).is_err());
    }

    #[test]
    fn a_range_is_checked() {
        assert_eq!(
            SnapshotRange::new(None, None, None).unwrap().limit,
            SnapshotRange::DEFAULT_LIMIT
        );
        let err = SnapshotRange::new(Some(10), Some(5), None).unwrap_err();
        assert_eq!(err.code(), "invalid_query");
        assert_eq!(err.to_string(), "invalid query: from (10) is after to (5)");
        for limit in [0, 1001] {
            assert_eq!(
                SnapshotRange::new(None, None, Some(limit))
                    .unwrap_err()
                    .code(),
                "invalid_query"
            );
        }
        assert!(SnapshotRange::new(Some(-1), None, None).is_err());
    }
}
