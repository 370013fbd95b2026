//! Quarantining a contributor on one board, or releasing it (`contrib_hold.lua`): its
//! flag first, then its window sums moved between counted and held fields in calls of at
//! most [`CALL_BUDGET`](super::retract::CALL_BUDGET), each applied whole.

use redis::Value;

use crate::domain::board::Board;
use crate::domain::{ChangeStamp, Contributor};
use crate::error::{Error, Result};
use crate::store::redis::conn::options::RetireOptions;
use crate::store::redis::conn::reply::{array, int, string};
use crate::store::redis::conn::{RedisConn, Retry};
use crate::store::redis::sums::changes::stamped_version;

use super::retract::CALL_BUDGET;

/// Holds (`quarantined`) or releases `by` on `board`: how many window sums it moved.
pub(crate) async fn quarantine(
    conn: &RedisConn,
    board: &Board,
    by: &Contributor,
    quarantined: bool,
    stamp: ChangeStamp,
    options: &RetireOptions,
) -> Result<u64> {
    let keys = conn.keys();
    let windows = board.config.windows();
    let mut cursor = "0".to_owned();
    let mut moved = 0;
    loop {
        let mut invocation = conn.scripts().contrib_hold.key(keys.record(&board.name));
        invocation
            .key(keys.all_totals(&board.name, windows))
            .key(keys.all_dense(board))
            .key(keys.data(&board.name))
            .arg(stamped_version(board, stamp.now, Some(stamp.cause)))
            .arg(by.as_str())
            .arg(if quarantined { "q" } else { "r" })
            .arg(&cursor)
            .arg(options.chunk_budget.min(CALL_BUDGET).as_micros().max(1) as u64)
            .arg(windows.iter().map(|w| w.seconds()).collect::<Vec<_>>());
        // Idempotent: a call sent again finds the sums it moved moved.
        let reply: Value = conn
            .script(&invocation, &board.name, Retry::Idempotent)
            .await?;
        let items = array(reply, "contrib_hold")?;
        let [next, count] = items.as_slice() else {
            return Err(Error::store(format!("contrib_hold answered {items:?}")));
        };
        moved += int(count, "moved")? as u64;
        cursor = string(next, "cursor")?;
        if cursor == "done" {
            return Ok(moved);
        }
    }
}
