//! [`ShardMoves`]: what a store gives a sharded board beside its boards: how many members
//! rank ahead of a probe on one shard (`sharded/ranking.rs` sums them), and for a reshard
//! (`sharded/reshard.rs`) the shard count and the state of a reshard on shard 0's record,
//! and per shard the members marked moved off it (writers route by it), the moves under way
//! (each member's stash, so a move cut short is finished, not redone), and every member the
//! shard holds a value of; and each shard's part in a review gate across the shards.
//! Reached through
//! [`Store::shard_moves`](super::Store::shard_moves); the stores of boards (memory, Redis)
//! have it, the wrappers above them use theirs.

use async_trait::async_trait;

use crate::domain::board::WindowAt;
use crate::domain::board::{Board, Resharding};
use crate::domain::{Ahead, AheadProbe, GateBar, Member};
use crate::error::Result;

/// A store's part in sharded boards: the counts their ranks are summed from, and a
/// reshard's records. The methods that change something check the board's version, as
/// every board call does.
#[async_trait]
pub(crate) trait ShardMoves: Send + Sync {
    /// For each of `probes`, how many of window `window`'s ranked members are ranked
    /// ahead of it: those with a strictly higher total and, when the probe names a
    /// member, those with the same total and a member before it in the tie order (member
    /// ascending). A probe's member need not be on the board. One atomic read, O(log N)
    /// per probe. A sharded board's ranks are sums of these counts over its shards.
    async fn count_ahead(&self, at: WindowAt<'_>, probes: &[AheadProbe]) -> Result<Ahead>;

    /// Sets the board's shard count and its reshard's state under a new version (every
    /// cached copy reloads: calls made with the old one are refused). The board as
    /// stored now.
    async fn set_shards(
        &self,
        board: &Board,
        shards: u32,
        resharding: Option<Resharding>,
    ) -> Result<Board>;

    /// Marks `members` as moved off this board (a shard). Idempotent.
    async fn mark_moved(&self, board: &Board, members: &[Member]) -> Result<()>;

    /// Whether each of `members` is marked moved off this board.
    async fn moved(&self, board: &Board, members: &[Member]) -> Result<Vec<bool>>;

    /// Forgets the members marked moved off this board, and its stashes.
    async fn clear_moved(&self, board: &Board) -> Result<()>;

    /// Stashes `stash` as what `member` takes from this board, unless a stash of it is
    /// kept already: the stash kept.
    async fn stash(&self, board: &Board, member: &Member, stash: &str) -> Result<String>;

    /// The stashes kept on this board, by member.
    async fn stashed(&self, board: &Board) -> Result<Vec<(Member, String)>>;

    /// Drops `member`'s stash (its move is done).
    async fn unstash(&self, board: &Board, member: &Member) -> Result<()>;

    /// Forgets `tokens` of writes applied once (`Store::write_once`): writes no move
    /// will send again (its stash is dropped).
    async fn forget_tokens(&self, board: &Board, tokens: &[String]) -> Result<()>;

    /// Takes or renews the lease of the reshard of this board (shard 0) for `holder`
    /// until `until_ms`: false when another holder's lease runs past `now_ms`.
    async fn lease(&self, board: &Board, holder: &str, now_ms: i64, until_ms: i64) -> Result<bool>;

    /// Every member holding a value in a live slot of the board (whatever its totals:
    /// values that cancel out included), each once, in no order.
    async fn slot_members(&self, board: &Board) -> Result<Vec<Member>>;

    /// The next number of a sharded board's review gate across its shards (kept by
    /// shard 0, `board`; docs/design.md, "A review gate on a sharded board"): a
    /// publication of bars read after another's takes a higher one.
    async fn gate_epoch(&self, board: &Board) -> Result<u64>;

    /// The shard's part in its board's review gate across the shards: per window, its
    /// top `k` allowed public members (and every one tied with the K-th) as (total,
    /// member), in no order.
    async fn gate_top(&self, board: &Board, k: u32) -> Result<Vec<Vec<(i64, String)>>>;

    /// Publishes to the shard the bars across the shards (one per window) numbered
    /// `epoch`, unless it has taken a higher number's, then applies its gate: it holds
    /// what ranks at or over the higher of its own bar and that one.
    async fn publish_bars(&self, board: &Board, epoch: u64, bars: &[Option<GateBar>])
    -> Result<()>;

    /// The members the shard's review gate allowed.
    async fn allowed(&self, board: &Board) -> Result<Vec<Member>>;

    /// Puts `members` among those the shard's gate allowed (`allowed`), or takes them
    /// out, applying no gate: a reshard moves the marks with their members.
    async fn set_allowed(&self, board: &Board, members: &[Member], allowed: bool) -> Result<()>;
}
