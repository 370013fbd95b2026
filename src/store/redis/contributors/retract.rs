//! Taking back a contributor's contributions to one board (`contrib_retract.lua`), in
//! calls of at most [`CALL_BUDGET`] (less when the retirer's chunk budget is), each
//! applied whole, until its index is walked.

use std::time::Duration;

use redis::Value;

use crate::domain::board::Board;
use crate::domain::{ChangeStamp, Contributor, Retracted};
use crate::error::{Error, Result};
use crate::store::redis::conn::options::RetireOptions;
use crate::store::redis::conn::reply::{array, int, string};
use crate::store::redis::conn::{RedisConn, Retry};
use crate::store::redis::sums::changes::stamped_version;

/// What one call may run before it stops at its next step: a step (an HSCAN of 20 and
/// what it finds) may run on past it, so a call stays well under 2 ms.
pub(super) const CALL_BUDGET: Duration = Duration::from_millis(1);

/// Takes back `by`'s contributions to `board` in the slots from `from` on (all when
/// `None`): what it took back.
pub(crate) async fn retract(
    conn: &RedisConn,
    board: &Board,
    by: &Contributor,
    from: Option<i64>,
    stamp: ChangeStamp,
    options: &RetireOptions,
) -> Result<Retracted> {
    let keys = conn.keys();
    let windows = board.config.windows();
    let mut cursor = "0".to_owned();
    let mut retracted = Retracted::default();
    loop {
        let mut invocation = conn.scripts().contrib_retract.key(keys.record(&board.name));
        invocation
            .key(keys.all_totals(&board.name, windows))
            .key(keys.all_dense(board))
            .key(keys.data(&board.name))
            .arg(stamped_version(board, stamp.now, Some(stamp.cause)))
            .arg(by.as_str())
            .arg(from.map(|s| s.to_string()).unwrap_or_default())
            .arg(keys.slot_prefix(&board.name))
            .arg(&cursor)
            .arg(options.chunk_budget.min(CALL_BUDGET).as_micros().max(1) as u64)
            .arg(windows.iter().map(|w| w.seconds()).collect::<Vec<_>>());
        // Idempotent: a call sent again finds the fields it handled gone.
        let reply: Value = conn
            .script(&invocation, &board.name, Retry::Idempotent)
            .await?;
        let items = array(reply, "contrib_retract")?;
        let [next, pairs, events] = items.as_slice() else {
            return Err(Error::store(format!("contrib_retract answered {items:?}")));
        };
        retracted.add(Retracted {
            contributions: int(pairs, "pairs")? as u64,
            events: int(events, "events")? as u64,
        });
        cursor = string(next, "cursor")?;
        if cursor == "done" {
            return Ok(retracted);
        }
    }
}
