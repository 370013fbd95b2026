//! [`ShardMoves`]: what a store gives a reshard of a sharded board (`sharded/reshard.rs`)
//! beside its boards: the shard count and the count it changes to on shard 0's record,
//! the set of members moved off a shard (which that shard's writes then refuse, so a
//! member is written on one shard only), and every member a shard holds a value of.
//! Reached through [`Store::shard_moves`](super::Store::shard_moves); the stores of
//! boards (memory, Redis) have it, the wrappers above them use theirs.

use async_trait::async_trait;

use crate::board::Board;
use crate::domain::Member;
use crate::error::Result;

/// A store's part in a reshard. All methods check the board's version, as every board
/// call does.
#[async_trait]
pub trait ShardMoves: Send + Sync {
    /// Sets the board's shard count and the count a reshard changes it to (`None`: no
    /// reshard runs) under a new version: every cached copy reloads. The board as
    /// stored now.
    async fn set_shards(
        &self,
        board: &Board,
        shards: u32,
        resharding: Option<u32>,
    ) -> Result<Board>;

    /// Marks `members` as moved off this board (a shard): from now on its writes and
    /// member data refuse a call holding one ([`Error::MembersMoved`]). Idempotent.
    ///
    /// [`Error::MembersMoved`]: crate::Error::MembersMoved
    async fn mark_moved(&self, board: &Board, members: &[Member]) -> Result<()>;

    /// Whether each of `members` is marked moved off this board.
    async fn moved(&self, board: &Board, members: &[Member]) -> Result<Vec<bool>>;

    /// Forgets the members marked moved off this board.
    async fn clear_moved(&self, board: &Board) -> Result<()>;

    /// Every member holding a value in a live slot of the board (whatever its totals:
    /// values that cancel out included), each once, in no order.
    async fn slot_members(&self, board: &Board) -> Result<Vec<Member>>;
}
