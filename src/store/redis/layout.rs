//! Which layout new slots get, and how full a compact slot's buckets may grow.
//!
//! A slot's layout is decided by `write.lua` when the slot is created: the board
//! record's `layout` when the board asked for one, else the store's default
//! ([`RedisOptions::default_layout`](super::RedisOptions)), which each write call passes
//! along. Buckets split when they hold `bucket_fill` fields on average, which this
//! module derives from the server's `hash-max-listpack-entries`, so that buckets stay in
//! Redis's compact listpack encoding (`docs/design.md`, "Compact slots").

use super::conn::{RedisConn, Retry};
use crate::board::Board;
use crate::domain::Layout;

/// Fields per bucket on average before a split: half the server's listpack limit (the
/// unsplit buckets of a linear-hashing round hold up to twice the average), at most 64
/// (a listpack is scanned linearly) and at least 8.
pub(super) fn bucket_fill(listpack_entries: u64) -> u64 {
    (listpack_entries / 2).clamp(8, 64)
}

/// What a [`RedisConn`] tells `write.lua` about new slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlotLayout {
    /// The layout of boards that asked for none.
    pub(crate) default: Layout,
    /// See [`bucket_fill`].
    pub(crate) fill: u64,
}

impl SlotLayout {
    /// The listpack limit Redis ships with, used when `CONFIG GET` is not allowed.
    const DEFAULT_LISTPACK_ENTRIES: u64 = 128;

    /// Reads the server's `hash-max-listpack-entries` (a read: Idempotent); a server
    /// that refuses `CONFIG` (managed Redis, an ACL user) is taken to have 128.
    pub(super) async fn read(conn: &RedisConn, default: Layout) -> SlotLayout {
        let mut get = redis::cmd("CONFIG");
        get.arg("GET").arg("hash-max-listpack-entries");
        let entries = conn
            .query::<Vec<String>>(&get, None, Retry::Idempotent)
            .await
            .ok()
            .and_then(|pair| pair.get(1).and_then(|v| v.parse().ok()))
            .unwrap_or(Self::DEFAULT_LISTPACK_ENTRIES);
        SlotLayout {
            default,
            fill: bucket_fill(entries),
        }
    }

    /// `write.lua`'s argument for new slots of `board`: `<layout> <fill>`, the layout
    /// of new slots when its record names none, and the buckets' fill.
    pub(super) fn new_slots(&self, board: &Board) -> String {
        let layout = board.config.layout().unwrap_or(self.default);
        format!("{} {}", layout.as_str(), self.fill)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_stay_well_inside_the_listpack_limit() {
        assert_eq!(bucket_fill(128), 64);
        assert_eq!(bucket_fill(512), 64);
        assert_eq!(bucket_fill(100), 50);
        assert_eq!(bucket_fill(4), 8);
    }
}
