//! Removing a member's contributions (`contrib_remove.lua`), slot batch by slot batch,
//! before `remove_member.lua` removes its member values.

use crate::domain::ChangeStamp;
use crate::domain::Member;
use crate::domain::board::Board;
use crate::error::Result;
use crate::store::redis::board::slot_index::live_slots;
use crate::store::redis::conn::{RedisConn, Retry};
use crate::store::redis::sums::changes::stamped_version;

/// Slots per `contrib_remove.lua` call.
const SLOTS_PER_CALL: usize = 16;

/// Removes `member`'s contributions from every live slot and window of `board`: how
/// many pair values it deleted.
pub(crate) async fn remove(
    conn: &RedisConn,
    board: &Board,
    member: &Member,
    stamp: ChangeStamp,
) -> Result<u64> {
    let slots = live_slots(conn, &board.name).await?;
    let windows = board.config.windows();
    let keys = conn.keys();
    let mut removed = 0;
    for batch in slots.chunks(SLOTS_PER_CALL) {
        let mut invocation = conn.scripts().contrib_remove.key(keys.record(&board.name));
        invocation
            .key(keys.index(&board.name))
            .key(keys.all_totals(&board.name, windows));
        for s in batch {
            invocation.key(keys.stages(board, *s).collect::<Vec<_>>());
        }
        invocation.key(keys.all_dense(board));
        invocation.key(keys.data(&board.name));
        invocation
            .arg(stamped_version(board, stamp.now, Some(stamp.cause)))
            .arg(member.as_str())
            .arg(batch.len())
            .arg(windows.iter().map(|w| w.seconds()).collect::<Vec<_>>())
            .arg(batch);
        // Idempotent: a batch sent again finds the pairs it deleted gone.
        let n: u64 = conn
            .script(&invocation, &board.name, Retry::Idempotent)
            .await?;
        removed += n;
    }
    Ok(removed)
}
