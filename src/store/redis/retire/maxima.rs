//! Retirement of a max board (a min board too: its values are stored negated), one
//! `retire_max.lua` call per HSCAN step of the slot: each member of the slot gets its
//! window value from its peak list, so only the members the slot held are touched and
//! each call is idempotent (docs/design.md, "Max and min boards"). The slots of a
//! window are listed and the window frozen by `retire_begin.lua`, as for sums.
//!
//! Each call goes on from where the last one left off (the scan's cursor is kept in the
//! board record), so two calls are kept in flight (`chunks::in_lanes`): while Redis
//! runs one, the next is on its way, and a pass that stopped, or another retirer, goes
//! on from there.

use redis::Value;

use super::SlotPass;
use super::chunks::{Chunk, in_lanes, window_args};
use crate::domain::board::Board;
use crate::error::{Error, Result};
use crate::store::redis::conn::keys;
use crate::store::redis::conn::reply::{array, int, string};
use crate::store::redis::conn::{RedisConn, Retry};

/// Most members per HSCAN step (fewer when the options' `chunk_size` says): a step reads
/// their peak lists with one HMGET and writes the window with one ZADD and one ZREM,
/// ~5 µs of Redis time a member, ~1 ms a call. A small slot (a listpack) is read whole
/// by one step whatever the count.
const MEMBERS_PER_CALL: usize = 128;

/// Retires the slot of `pass` from its window of the max board `board`. Returns `false`
/// when the pass's budget ran out first.
pub(crate) async fn retire_slot(
    conn: &RedisConn,
    board: &Board,
    pass: SlotPass<'_>,
) -> Result<bool> {
    let (window, slot) = (pass.window, pass.slot);
    let count = pass.options.chunk_size.clamp(1, MEMBERS_PER_CALL);
    // Each call goes on from the cursor kept in the board record.
    in_lanes(pass.budget, pass.report, |_| {
        let (conn, board) = (conn.clone(), board.clone());
        async move { step(&conn, &board, window, slot, count).await }
    })
    .await
}

/// One `retire_max.lua` call: the next step of the slot's scan.
async fn step(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    slot: i64,
    count: usize,
) -> Result<Chunk> {
    let (this, previous) = window_args(board, window);
    let name = &board.name;
    let largest = window + 1 == board.config.windows().len();
    let mut invocation = conn.scripts().retire_max.key(conn.keys().record(name));
    invocation
        .key(conn.keys().index(name))
        .key(conn.keys().totals(name, board.config.windows(), window))
        .key(conn.keys().stage(name, slot, 0))
        .key(conn.keys().records(board))
        .key(conn.keys().data(name))
        .key(conn.keys().slot_geometry(name))
        .key(conn.keys().window_dense(board, window))
        .arg(board.version)
        .arg(this)
        .arg(&previous)
        .arg(slot)
        .arg(count)
        .arg(if largest { "1" } else { "" })
        .arg(keys::mode(board));
    let reply: Value = conn.script(&invocation, name, Retry::Idempotent).await?;
    let reply = array(reply, "retire_max")?;
    if reply.len() != 3 {
        return Err(Error::store(format!("retire_max answered {reply:?}")));
    }
    let done = string(&reply[0], "state")? == "done";
    Ok(Chunk {
        cursor: (!done).then(String::new),
        subtracted: int(&reply[1], "members re-evaluated")? as u64,
        zeroed: int(&reply[2], "members that left")? as u64,
    })
}
