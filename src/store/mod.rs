//! The storage abstraction: one [`Store`] trait, two implementations that pass one
//! conformance suite. [`RedisStore`] is production; [`MemoryStore`] is the embedded
//! default and the reference model the Redis store is checked against.
//!
//! Stores receive validated input (the [`Rollboard`](crate::Rollboard) facade parses
//! names, members, deltas and times) and implement the data model of `docs/design.md`:
//! per slot a cascade of *stage* values, per window a totals set, a *watermark* (newest
//! slot frozen out of the window) and a *retired-through* mark (newest slot fully
//! subtracted).

mod boards;
mod counters;
mod keyed;
mod memory;
mod moderation;
pub(crate) mod rates;
mod redis;
mod server;
mod shard_moves;
pub(crate) mod sharded;
mod stats;
pub(crate) mod trending;
mod write_status;

pub use boards::Store;
pub(crate) use boards::new_version;
pub use counters::{CounterCleaned, CounterInfo, CounterStore, Incremented};
pub use keyed::{Keyed, Recorded, WriteKey};
pub use stats::{StatRecord, StatsStore};

pub use memory::MemoryStore;
pub use moderation::ModerationStore;
pub use rates::{RateHit, RateStore};
#[cfg(feature = "server")]
pub(crate) use redis::glob_escape;
pub use redis::{
    IngestOptions, InvalidKeyPrefix, KeyPrefix, RedisOptions, RedisStore, ReplicaAcks,
    RetireOptions,
};
#[cfg(feature = "server")]
pub(crate) use redis::{RedisConn, Retry, check_url, is_rollboard_name, redact};
pub use server::ServerStore;
pub(crate) use shard_moves::ShardMoves;
pub use trending::{TrendKeyed, TrendingStore};
pub use write_status::WriteStatus;

use crate::domain::HeldMember;
pub use crate::domain::SlotWrite;

/// Hidden members in the order both stores list them: those holding a total first,
/// highest first, then those holding none; ties by member ascending.
pub(crate) fn ranked_held(mut members: Vec<HeldMember>) -> Vec<HeldMember> {
    members.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.member.cmp(&b.member)));
    members
}

/// Hidden members (member, total) in ranking order: highest total first, equal totals
/// by member, members holding none last.
pub(crate) fn ranked_hidden(mut members: Vec<(String, Option<i64>)>) -> Vec<(String, Option<i64>)> {
    members.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    members
}
