//! The seam between a board and its family in Redis: what sum boards and max, min and
//! latest boards do differently (writes, removal, recompute, retiring a slot, compacting
//! the slot that closed). Each family implements [`Family`] once, beside its scripts
//! (`sums/`, `maxima/`); the store picks a board's family once per call, and everything
//! else (reads, history, member data, snapshots, the board's lifecycle) is shared.

use async_trait::async_trait;

use crate::domain::ChangeStamp;
use crate::domain::board::{Board, SlotWrites};
use crate::domain::{Member, RecomputeReport, Removed, RetireReport, Timestamp, WrittenStanding};
use crate::error::Result;
use crate::store::redis::conn::RedisConn;
use crate::store::redis::conn::options::RetireOptions;
use crate::store::{Keyed, WriteKey, WriteStatus};

/// One slot leaving one window, retired within what is left of a pass's budget of
/// calls (`None`: no bound), into the pass's report.
pub(crate) struct SlotPass<'a> {
    pub(crate) window: usize,
    pub(crate) slot: i64,
    pub(crate) options: &'a RetireOptions,
    pub(crate) budget: &'a mut Option<usize>,
    pub(crate) report: &'a mut RetireReport,
}

/// What one compaction of a closed slot did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Compacted {
    /// 1 when the slot was converted (wholly), else 0.
    pub(crate) slots: u64,
    /// Values moved into buckets.
    pub(crate) fields: u64,
}

/// What a swap attempt did (see `retire/swap.rs`).
pub(crate) enum Swap {
    /// Window 1 retired the slot: its counts.
    Swapped(RetireReport),
    /// Another call retired it first (or this call's earlier sending did): nothing done.
    Already,
    /// Nothing done; the slot is to be retired in chunks.
    Fallback,
}

/// What a family does its own way; the `Store` methods of the same names.
#[async_trait]
pub(crate) trait Family: Send + Sync {
    /// How `history.lua` reads a slot of `board` (its ARGV[5]): the stages a slot keeps,
    /// then, on a board keeping one value per slot, `max` or `latest`.
    fn slot_form(&self, board: &Board) -> String;

    /// Whether `retire_small.lua` can retire `board` in one call.
    fn retires_small(&self, board: &Board) -> bool;

    async fn write(&self, conn: &RedisConn, w: SlotWrites<'_>) -> Result<Vec<WriteStatus>>;

    async fn write_once(
        &self,
        conn: &RedisConn,
        w: SlotWrites<'_>,
        token: &str,
    ) -> Result<Option<Vec<WriteStatus>>>;

    async fn write_keyed(
        &self,
        conn: &RedisConn,
        w: SlotWrites<'_>,
        key: &WriteKey,
    ) -> Result<Keyed>;

    async fn write_standing(
        &self,
        conn: &RedisConn,
        w: SlotWrites<'_>,
        windows: &[usize],
        key: Option<&WriteKey>,
    ) -> Result<(Keyed, Vec<WrittenStanding>)>;

    async fn remove_member(
        &self,
        conn: &RedisConn,
        board: &Board,
        member: &Member,
        stamp: ChangeStamp,
    ) -> Result<Removed>;

    /// Rebuilds window `window` under the recompute lease (`lease.rs`).
    async fn recompute(
        &self,
        conn: &RedisConn,
        board: &Board,
        window: usize,
    ) -> Result<RecomputeReport>;

    /// Finishes the removal of `member` a caller left pending (a recompute cannot begin
    /// while one is).
    async fn finish_removal(&self, conn: &RedisConn, board: &Board, member: &str) -> Result<()>;

    /// Retires window 1 of `board` from `slot` in one swap, when the family can
    /// ([`Swap::Fallback`] when it cannot: the slot is then retired by
    /// [`retire_slot`](Self::retire_slot)).
    async fn swap(
        &self,
        conn: &RedisConn,
        board: &Board,
        slot: i64,
        options: &RetireOptions,
    ) -> Result<Swap>;

    /// Retires the slot of `pass` from its window in bounded calls, within its budget of
    /// calls; whether it finished.
    async fn retire_slot(
        &self,
        conn: &RedisConn,
        board: &Board,
        pass: SlotPass<'_>,
    ) -> Result<bool>;

    /// Compacts the slot that closed at the boundary of `now`, when it should be.
    async fn compact_closed(
        &self,
        conn: &RedisConn,
        board: &Board,
        now: Timestamp,
        options: &RetireOptions,
    ) -> Result<Compacted>;
}
