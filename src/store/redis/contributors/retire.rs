//! Retiring a slot's contributions from a window (`contrib_retire.lua`), in bounded,
//! idempotent calls, before its member values (`retire/chunks.rs`): a window's ORDER
//! check (the smaller window finished the slot) then covers both.

use redis::Value;

use crate::domain::board::Board;
use crate::error::{Error, Result};
use crate::store::redis::conn::options::RetireOptions;
use crate::store::redis::conn::reply::{array, int, string};
use crate::store::redis::conn::{RedisConn, Retry};
use crate::store::redis::retire::{SlotPass, chunks};

/// Retires the slot of `pass` from its window: its contributions, then its member
/// values. Returns `false` when the pass's budget of calls ran out first.
pub(crate) async fn retire_slot(
    conn: &RedisConn,
    board: &Board,
    pass: SlotPass<'_>,
) -> Result<bool> {
    let mut cursor = "0".to_owned();
    loop {
        if *pass.budget == Some(0) {
            return Ok(false);
        }
        *pass.budget = pass.budget.map(|b| b - 1);
        let at = (pass.window, pass.slot);
        let (next, handled) = chunk(conn, board, at, &cursor, pass.options).await?;
        pass.report.chunks += 1;
        pass.report.fields_subtracted += handled;
        match next {
            Some(next) => cursor = next,
            None => break,
        }
    }
    chunks::retire_slot(conn, board, pass).await
}

async fn chunk(
    conn: &RedisConn,
    board: &Board,
    (window, slot): (usize, i64),
    cursor: &str,
    options: &RetireOptions,
) -> Result<(Option<String>, u64)> {
    let (this, previous) = chunks::window_args(board, window);
    let keys = conn.keys();
    let windows = board.config.windows();
    let mut invocation = conn.scripts().contrib_retire.key(keys.record(&board.name));
    invocation
        .key(keys.totals(&board.name, windows, window))
        .key(keys.stage(&board.name, slot, window))
        .key(keys.data(&board.name))
        .key(keys.index(&board.name));
    if window + 1 < windows.len() {
        invocation.key(keys.stage(&board.name, slot, window + 1));
    }
    invocation
        .arg(board.version)
        .arg(this)
        .arg(previous)
        .arg(slot)
        .arg(cursor)
        .arg(options.chunk_size.max(1))
        .arg(options.chunk_budget.as_micros().max(1) as u64);
    let dense = keys.window_dense(board, window);
    if !dense.is_empty() {
        invocation.key(dense).arg("dense");
    }
    let reply: Value = conn
        .script(&invocation, &board.name, Retry::Idempotent)
        .await?;
    let items = array(reply, "contrib_retire")?;
    let [cursor, handled] = items.as_slice() else {
        return Err(Error::store(format!("contrib_retire answered {items:?}")));
    };
    let cursor = string(cursor, "cursor")?;
    Ok((
        (cursor != "done").then_some(cursor),
        int(handled, "handled")? as u64,
    ))
}
