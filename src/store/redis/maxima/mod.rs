//! Max, min and latest boards in Redis: one value per slot and member, kept by their
//! own scripts (`write_max.lua`, `remove_max.lua`, `recompute_max_*.lua`) on the sums'
//! write path and the recompute lease (`board/lease.rs`). Their retirement is in
//! `retire/`; [`MaxFamily`] is their side of the family seam (`board/family.rs`).

pub(crate) mod recompute;
pub(crate) mod remove;
pub(crate) mod write;

use async_trait::async_trait;

use crate::domain::ChangeStamp;
use crate::domain::board::{Board, SlotWrites};
use crate::domain::{Member, RecomputeReport, Removed, Timestamp, WrittenStanding};
use crate::error::Result;
use crate::store::redis::board::family::{Compacted, Family, Swap};
use crate::store::redis::board::lease;
use crate::store::redis::conn::RedisConn;
use crate::store::redis::conn::keys;
use crate::store::redis::conn::options::RetireOptions;
use crate::store::redis::retire::{SlotPass, maxima as retire_max, maxima_compact};
use crate::store::{Keyed, WriteKey, WriteStatus};

/// Max, min and latest boards: one value per slot and member; a slot that leaves a
/// window is recomputed out of it, never subtracted, so there is no swap.
pub(crate) struct MaxFamily;

#[async_trait]
impl Family for MaxFamily {
    fn slot_form(&self, board: &Board) -> String {
        format!("{} {}", board.config.windows().len(), keys::mode(board))
    }

    fn retires_small(&self, _board: &Board) -> bool {
        false
    }

    async fn write(&self, conn: &RedisConn, w: SlotWrites<'_>) -> Result<Vec<WriteStatus>> {
        write::write(conn, w.board, w.now, &w.writes).await
    }

    /// A max board's write is idempotent by itself: applied again, it changes nothing.
    async fn write_once(
        &self,
        conn: &RedisConn,
        w: SlotWrites<'_>,
        _token: &str,
    ) -> Result<Option<Vec<WriteStatus>>> {
        write::write(conn, w.board, w.now, &w.writes)
            .await
            .map(Some)
    }

    async fn write_keyed(
        &self,
        conn: &RedisConn,
        w: SlotWrites<'_>,
        key: &WriteKey,
    ) -> Result<Keyed> {
        write::write_keyed(conn, w.board, w.now, &w.writes, key).await
    }

    async fn write_standing(
        &self,
        conn: &RedisConn,
        w: SlotWrites<'_>,
        windows: &[usize],
        key: Option<&WriteKey>,
    ) -> Result<(Keyed, Vec<WrittenStanding>)> {
        write::write_standing(conn, w.board, w.now, &w.writes, windows, key).await
    }

    async fn remove_member(
        &self,
        conn: &RedisConn,
        board: &Board,
        member: &Member,
        // A max, min or latest board is never watched.
        _stamp: ChangeStamp,
    ) -> Result<Removed> {
        remove::remove_member(conn, board, member).await
    }

    async fn recompute(
        &self,
        conn: &RedisConn,
        board: &Board,
        window: usize,
    ) -> Result<RecomputeReport> {
        lease::leased(conn, self, board, window, |token| async move {
            recompute::run(conn, board, window, &token).await
        })
        .await
    }

    async fn finish_removal(&self, conn: &RedisConn, board: &Board, member: &str) -> Result<()> {
        remove::finish(conn, board, member).await
    }

    async fn swap(
        &self,
        _conn: &RedisConn,
        _board: &Board,
        _slot: i64,
        _options: &RetireOptions,
    ) -> Result<Swap> {
        Ok(Swap::Fallback)
    }

    async fn retire_slot(
        &self,
        conn: &RedisConn,
        board: &Board,
        pass: SlotPass<'_>,
    ) -> Result<bool> {
        retire_max::retire_slot(conn, board, pass).await
    }

    async fn compact_closed(
        &self,
        conn: &RedisConn,
        board: &Board,
        now: Timestamp,
        _options: &RetireOptions,
    ) -> Result<Compacted> {
        maxima_compact::compact_closed(conn, board, now).await
    }
}
