//! Compaction of the slot that just closed, by the retirer: `write.lua` creates a compact
//! board's open slot plain (a hashtable takes writes cheaper than buckets), and after
//! retiring the board at a boundary the retirer converts that slot to buckets with
//! `relayout_chunk.lua`, in bounded calls, while writes go on (`docs/design.md`, "Compact
//! slots"). A slot too small to gain (under two buckets' fill, one listpack already), a
//! plain board, or a slot with a geometry is left as it is, by the first call itself,
//! which then takes no lease: a board with nothing to compact costs that one call on the
//! chunked path, and none on the small path (`retire_small.lua` answers whether to call).
//!
//! Retry class: every call is [`Retry::Idempotent`], as an active relayout's: a call
//! moves what it reads from a stage's plain hash to its buckets and deletes it, in one
//! atomic call, so sent again after a lost reply it finds the moved values gone; the
//! call ending the lease deletes it only while this run's token holds it.

use redis::Value;

use super::conn::{RedisConn, Retry};
use super::refusal::Refusal;
use super::reply::{array, int, string};
use crate::board::Board;
use crate::domain::{Layout, RetireOptions, Timestamp};
use crate::error::{Error, Result};

/// The converter's lease, as an active relayout's: every call renews it, the run ends it.
const LEASE_MS: u64 = 5_000;

/// What one compaction did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Compacted {
    /// 1 when the slot was converted (wholly), else 0.
    pub(super) slots: u64,
    /// Values moved into buckets.
    pub(super) fields: u64,
}

/// The slot of `board` that closed at the boundary of `now`.
pub(super) fn closed_slot(board: &Board, now: Timestamp) -> i64 {
    board.config.slot_start(now) - board.config.slot().secs_i64()
}

/// The fewest fields a closed slot's largest stage must hold to be compacted: as many
/// as give a geometry of two buckets (`sized_geometry`); fewer are one listpack anyway.
pub(super) fn minimum_fields(conn: &RedisConn) -> u64 {
    2 * conn.layout().fill
}

/// Compacts the slot of `board` that closed at the boundary of `now`, if it is a compact
/// board's plain slot big enough to gain. A user relayout or a recompute holding the
/// board's lease, or a board changed meanwhile, leaves it as it is (plain, or part
/// converted: exact either way), silently.
pub(super) async fn compact_closed(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    options: &RetireOptions,
) -> Result<Compacted> {
    let slot = closed_slot(board, now);
    let token = crate::store::new_version().to_string();
    let budget = u64::try_from(options.chunk_budget.as_micros())
        .unwrap_or(u64::MAX)
        .max(1);
    let mut done = Compacted::default();
    let mut cursor = "0".to_owned();
    let mut leased = false;
    let result: Result<()> = async {
        loop {
            let mut call = super::relayout::chunk(conn, board, slot);
            call.arg(Layout::Compact.as_str())
                .arg(slot)
                .arg(&cursor)
                .arg(budget)
                .arg(conn.layout().fill)
                .arg(LEASE_MS)
                .arg(&token)
                .arg(minimum_fields(conn))
                .arg(conn.layout().default.as_str());
            let reply: Value = match conn
                .script_or_refusal(&call, &board.name, Retry::Idempotent)
                .await?
            {
                Ok(reply) => reply,
                Err(Refusal::Relayout | Refusal::Recomputing | Refusal::Stale) => return Ok(()),
                Err(refusal) => return Err(refusal.into_error(Some(&board.name))),
            };
            let items = array(reply, "relayout_chunk")?;
            let [next, moved, changed] = items.as_slice() else {
                return Err(Error::Store("relayout_chunk answered too little".into()));
            };
            let next = string(next, "cursor")?;
            let changed = int(changed, "changed")? == 1;
            done.fields += int(moved, "moved")? as u64;
            // A first call that changed nothing and is done took no lease.
            leased |= changed || next != "done";
            if next == "done" {
                if changed || done.fields > 0 {
                    done.slots = 1;
                }
                return Ok(());
            }
            cursor = next;
        }
    }
    .await;
    if leased {
        let mut end = super::relayout::chunk(conn, board, 0);
        end.arg(Layout::Compact.as_str())
            .arg("")
            .arg("0")
            .arg(0)
            .arg(0)
            .arg(0)
            .arg(&token);
        // Ends this run's lease only (Idempotent, see the module header); a board
        // dropped or changed meanwhile has no lease of ours left.
        let ended = conn
            .script_or_refusal::<Value>(&end, &board.name, Retry::Idempotent)
            .await;
        result?;
        let _refused = ended?;
    } else {
        result?;
    }
    Ok(done)
}
