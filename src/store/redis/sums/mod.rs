//! Sum boards in Redis, and the write path the max, min and latest boards share: a
//! [`WriteCall`](write_call::WriteCall) with its budget, sent as summed entries or events
//! (`write.lua`, `write_plain.lua`), once under a token or an idempotency key, with the
//! standing it asks for; batch ingest; member removal; and recompute.
//! [`SumFamily`] is their side of the family seam (`board/family.rs`).

pub(crate) mod budget;
pub(crate) mod changes;
pub(crate) mod hide;
pub(crate) mod ingest;
pub(crate) mod once;
pub(crate) mod recompute;
pub(crate) mod review;
pub(crate) mod standing;
pub(crate) mod write;
pub(crate) mod write_call;

use std::sync::Arc;

use async_trait::async_trait;

use crate::domain::ChangeStamp;
use crate::domain::board::{Board, SlotWrites};
use crate::domain::{Member, RecomputeReport, Removed, Timestamp, WrittenStanding};
use crate::error::Result;
use crate::store::redis::board::family::{Compacted, Family, Swap};
use crate::store::redis::board::lease;
use crate::store::redis::conn::RedisConn;
use crate::store::redis::conn::options::RetireOptions;
use crate::store::redis::contributors;
use crate::store::redis::retire::{SlotPass, chunks, compact, swap};
use crate::store::{Keyed, WriteKey, WriteStatus};
use ingest::Ingest;

/// Sum boards: writes through the group commit ([`Ingest`]), whose budget the once-only
/// paths share; slots subtracted when they leave a window.
#[derive(Clone)]
pub(crate) struct SumFamily {
    pub(crate) ingest: Arc<Ingest>,
}

#[async_trait]
impl Family for SumFamily {
    fn slot_form(&self, board: &Board) -> String {
        let n = board.config.windows().len();
        if board.config.keeps_contributors() {
            return format!("{n} contributors");
        }
        n.to_string()
    }

    /// When it keeps no dense tallies (plain and compact slots alike) and no
    /// contributors.
    fn retires_small(&self, board: &Board) -> bool {
        board.config.ties() != crate::domain::Ties::Dense && !board.config.keeps_contributors()
    }

    async fn write(&self, _conn: &RedisConn, w: SlotWrites<'_>) -> Result<Vec<WriteStatus>> {
        self.ingest.write(w.board, w.now, w.writes).await
    }

    async fn write_once(
        &self,
        conn: &RedisConn,
        w: SlotWrites<'_>,
        token: &str,
    ) -> Result<Option<Vec<WriteStatus>>> {
        once::write_once(conn, w, token).await
    }

    async fn write_keyed(
        &self,
        conn: &RedisConn,
        w: SlotWrites<'_>,
        key: &WriteKey,
    ) -> Result<Keyed> {
        once::write_keyed(conn, self.ingest.budget(), w, key).await
    }

    async fn write_standing(
        &self,
        conn: &RedisConn,
        w: SlotWrites<'_>,
        windows: &[usize],
        key: Option<&WriteKey>,
    ) -> Result<(Keyed, Vec<WrittenStanding>)> {
        let budget = self.ingest.budget();
        standing::write_standing(conn, budget, w, windows, key).await
    }

    async fn remove_member(
        &self,
        conn: &RedisConn,
        board: &Board,
        member: &Member,
        stamp: ChangeStamp,
    ) -> Result<Removed> {
        let mut contributions = 0;
        if board.config.keeps_contributors() {
            contributions = contributors::remove::remove(conn, board, member, stamp).await?;
        }
        let mut removed = write::remove_member(conn, board, member, stamp).await?;
        removed.slot_values += contributions;
        Ok(removed)
    }

    async fn recompute(
        &self,
        conn: &RedisConn,
        board: &Board,
        window: usize,
    ) -> Result<RecomputeReport> {
        board.config.check_recompute()?;
        lease::leased(conn, self, board, window, |token| async move {
            recompute::run(conn, board, window, &token).await
        })
        .await
    }

    /// A sum board's removal is one pass, never left pending: nothing to finish.
    async fn finish_removal(&self, _conn: &RedisConn, _board: &Board, _member: &str) -> Result<()> {
        Ok(())
    }

    async fn swap(
        &self,
        conn: &RedisConn,
        board: &Board,
        slot: i64,
        options: &RetireOptions,
    ) -> Result<Swap> {
        if board.config.keeps_contributors() {
            // Its contributions leave the window first, pair by pair.
            return Ok(Swap::Fallback);
        }
        swap::swap(conn, board, slot, options).await
    }

    async fn retire_slot(
        &self,
        conn: &RedisConn,
        board: &Board,
        pass: SlotPass<'_>,
    ) -> Result<bool> {
        if board.config.keeps_contributors() {
            return contributors::retire::retire_slot(conn, board, pass).await;
        }
        chunks::retire_slot(conn, board, pass).await
    }

    async fn compact_closed(
        &self,
        conn: &RedisConn,
        board: &Board,
        now: Timestamp,
        options: &RetireOptions,
    ) -> Result<Compacted> {
        compact::compact_closed(conn, board, now, options).await
    }
}
