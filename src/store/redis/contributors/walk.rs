//! A walk of one contributor's hash on one board (`contrib_retract.lua`,
//! `contrib_hold.lua`): calls of at most [`CALL_BUDGET`] (less when the retirer's chunk
//! budget is), each applied whole, from cursor 0 until the script answers `done`.

use std::time::Duration;

use redis::{Script, Value};

use crate::domain::board::Board;
use crate::domain::{ChangeStamp, Contributor};
use crate::error::{Error, Result};
use crate::store::redis::conn::options::RetireOptions;
use crate::store::redis::conn::reply::{array, int, string};
use crate::store::redis::conn::{RedisConn, Retry};
use crate::store::redis::sums::changes::stamped_version;

/// What one call may run before it stops at its next step: a step (an HSCAN of 20 and
/// what it finds) may run on past it, so a call stays well under 2 ms.
const CALL_BUDGET: Duration = Duration::from_millis(1);

/// Runs `script` over `by`'s hash on `board` to the end: KEYS the board record, the slot
/// index, every window's totals, the dense keys and the member data; ARGV the version
/// (stamped), `by`, the prefix of the board's slot keys, `args`, the cursor, the call's
/// budget and the windows. Returns the sums of the counts
/// each call answers after its cursor.
pub(super) async fn walk<const N: usize>(
    conn: &RedisConn,
    script: &Script,
    board: &Board,
    (by, args): (&Contributor, &[String]),
    stamp: ChangeStamp,
    options: &RetireOptions,
) -> Result<[u64; N]> {
    let keys = conn.keys();
    let windows = board.config.windows();
    let mut cursor = "0".to_owned();
    let mut sums = [0; N];
    loop {
        let mut invocation = script.key(keys.record(&board.name));
        invocation
            .key(keys.index(&board.name))
            .key(keys.all_totals(&board.name, windows))
            .key(keys.all_dense(board))
            .key(keys.data(&board.name))
            .arg(stamped_version(board, stamp.now, Some(stamp.cause)))
            .arg(by.as_str())
            .arg(keys.slot_prefix(&board.name))
            .arg(args)
            .arg(&cursor)
            .arg(options.chunk_budget.min(CALL_BUDGET).as_micros().max(1) as u64)
            .arg(windows.iter().map(|w| w.seconds()).collect::<Vec<_>>());
        // Idempotent: a call sent again finds what it handled gone or moved.
        let reply: Value = conn
            .script(&invocation, &board.name, Retry::Idempotent)
            .await?;
        let items = array(reply, "a contributor's walk")?;
        let Some((next, counts)) = items.split_first().filter(|(_, c)| c.len() == N) else {
            return Err(Error::store(format!(
                "a contributor's walk answered {items:?}"
            )));
        };
        for (sum, count) in sums.iter_mut().zip(counts) {
            *sum += int(count, "count")? as u64;
        }
        cursor = string(next, "cursor")?;
        if cursor == "done" {
            return Ok(sums);
        }
    }
}
