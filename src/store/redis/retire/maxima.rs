//! Retirement of a max board (a min board too: its values are stored negated), one
//! `retire_max.lua` call per HSCAN step of the slot: each member of the slot gets its
//! window value from its peak list, so only the members the slot held are touched and
//! each call is idempotent (docs/design.md, "Max and min boards"). The slots of a
//! window are listed and the window frozen by `retire_begin.lua`, as for sums.

use redis::Value;

use super::chunks::window_args;
use crate::board::Board;
use crate::domain::RetireReport;
use crate::error::{Error, Result};
use crate::store::redis::conn::{RedisConn, Retry};
use crate::store::redis::keys;
use crate::store::redis::options::RetireOptions;
use crate::store::redis::reply::{array, int, string};

/// Most members per HSCAN step (fewer when the options' `chunk_size` says): ~4 commands
/// a member (the peak list read, the window's ZADD or ZREM, the list's trim on the
/// largest window), ~1 ms of Redis time a call. A small slot (a listpack) is read whole
/// by one step whatever the count.
const MEMBERS_PER_CALL: usize = 200;

/// Retires `slot` from window `window` of the max board `board`. Returns `false` when
/// `budget` ran out first.
pub(super) async fn retire_slot(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    slot: i64,
    options: &RetireOptions,
    budget: &mut Option<usize>,
    report: &mut RetireReport,
) -> Result<bool> {
    let (this, previous) = window_args(board, window);
    let name = &board.name;
    let largest = window + 1 == board.config.windows().len();
    let mut cursor = "0".to_owned();
    loop {
        if *budget == Some(0) {
            return Ok(false);
        }
        *budget = budget.map(|b| b - 1);
        let mut invocation = conn.scripts().retire_max.key(keys::record(name));
        invocation
            .key(keys::index(name))
            .key(keys::totals(name, board.config.windows(), window))
            .key(keys::stage(name, slot, 0))
            .key(keys::peaks(name))
            .key(keys::data(name))
            .arg(board.version)
            .arg(this)
            .arg(&previous)
            .arg(slot)
            .arg(&cursor)
            .arg(options.chunk_size.clamp(1, MEMBERS_PER_CALL))
            .arg(if largest { "1" } else { "" });
        let reply: Value = conn.script(&invocation, name, Retry::Idempotent).await?;
        let reply = array(reply, "retire_max")?;
        if reply.len() != 3 {
            return Err(Error::store(format!("retire_max answered {reply:?}")));
        }
        report.chunks += 1;
        report.fields_subtracted += int(&reply[1], "members re-evaluated")? as u64;
        report.members_zeroed += int(&reply[2], "members that left")? as u64;
        cursor = string(&reply[0], "cursor")?;
        if cursor == "done" {
            report.slots_retired += 1;
            return Ok(true);
        }
    }
}
