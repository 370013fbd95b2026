//! Which layout new slots get, and how full a compact slot's buckets may grow.
//!
//! A slot's layout is decided by `write.lua` when the slot is created: the board
//! record's `layout` when the board asked for one, else the store's default
//! (`RedisOptions::default_layout`), which each write call passes
//! along. Buckets split when they hold `bucket_fill` fields on average, which this
//! module derives from the server's `hash-max-listpack-entries`, so that buckets stay in
//! Redis's compact listpack encoding (`docs/compact-slots.md`, "Compact slots").
//!
//! The connection reads that limit once, at connect, and knows nothing of layouts; this
//! module adds [`RedisConn::layout`], which derives the [`SlotLayout`] from it.

use crate::domain::Layout;
use crate::domain::board::Board;
use crate::store::redis::conn::RedisConn;

/// Fields per bucket on average before a split: half the server's listpack limit (the
/// unsplit buckets of a linear-hashing round hold up to twice the average), at most 64
/// (a listpack is scanned linearly) and at least 1. A server that keeps no hash as a
/// listpack (a limit of 0) gets 64: buckets are hashtables there anyway, so fewer keys.
pub(crate) fn bucket_fill(listpack_entries: u64) -> u64 {
    match listpack_entries {
        0 => 64,
        n => (n / 2).clamp(1, 64),
    }
}

/// What a [`RedisConn`] tells `write.lua` about new slots ([`RedisConn::layout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlotLayout {
    /// The layout of boards that asked for none.
    pub(crate) default: Layout,
    /// See [`bucket_fill`].
    pub(crate) fill: u64,
}

impl RedisConn {
    /// What this connection tells `write.lua` about new slots: the store's default
    /// layout, and the buckets' fill for the server's listpack limit (both known since
    /// connect).
    pub(crate) fn layout(&self) -> SlotLayout {
        SlotLayout {
            default: self.default_layout(),
            fill: bucket_fill(self.listpack_entries()),
        }
    }
}

impl SlotLayout {
    /// Whether new slots of `board` are compact (unless its record says otherwise).
    pub(crate) fn compact(&self, board: &Board) -> bool {
        board.config.layout().unwrap_or(self.default) == Layout::Compact
    }

    /// `write.lua`'s argument for new slots of `board`: `<layout> <fill> <hashed>`, the
    /// layout of new slots when its record names none, the buckets' fill, and `1` when
    /// the call carries every entry's member hash (`hashed`: see [`member_hash`], packed
    /// in one argument), which the client sends for boards whose new slots are compact
    /// when the call has a slot older than the open one (the open slot is written
    /// plain), so the script need not compute it.
    pub(crate) fn new_slots(&self, board: &Board, hashed: bool) -> String {
        let compact = self.compact(board);
        let layout = if compact {
            Layout::Compact
        } else {
            Layout::Plain
        };
        format!("{} {} {}", layout.as_str(), self.fill, u8::from(hashed))
    }
}

/// A member's hash, as the scripts' `member_hash` computes it: the first 32 bits of its
/// SHA-1, big-endian.
pub(crate) fn member_hash(member: &str) -> u32 {
    let digest = sha1_smol::Sha1::from(member).digest().bytes();
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_hashes_are_the_first_32_bits_of_sha1() {
        // SHA-1("post:42") = 3cd0b2b6…, as `redis.sha1hex` answers.
        let hex = sha1_smol::Sha1::from("post:42").digest().to_string();
        let expected = u32::from_str_radix(&hex[..8], 16).unwrap();
        assert_eq!(member_hash("post:42"), expected);
        assert_eq!(member_hash(""), 0xda39_a3ee);
    }

    #[test]
    fn buckets_stay_well_inside_the_listpack_limit() {
        assert_eq!(bucket_fill(128), 64);
        assert_eq!(bucket_fill(512), 64);
        assert_eq!(bucket_fill(100), 50);
        assert_eq!(bucket_fill(16), 8);
        assert_eq!(bucket_fill(2), 1);
        assert_eq!(bucket_fill(0), 64);
    }
}
