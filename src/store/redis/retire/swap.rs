//! Window 1 of a board whose first window is one slot long (`W1 = L`, the commonest
//! forum board: `1h`/`24h` with `1h` slots) retires the slot that just closed by a swap
//! (`retire_swap.lua`, `docs/design.md` "Retirement", "Window 1 of one slot: swap"):
//! its totals are rebuilt from the newer slots' first stage (the open slot, written for
//! a few seconds since the boundary) and the closed slot's first stage moves to the
//! second by one `RENAME`. Its cost follows the newer slots' size, not the closed
//! slot's. The script checks, changing nothing, that the swap is exact and small, and
//! answers `fallback` otherwise: the chunked path ([`chunks`](super::chunks)) then
//! retires the slot.
//!
//! Retry classes: the `ZRANGEBYSCORE` listing the newer slots is a read
//! ([`Retry::Idempotent`]); `retire_swap.lua` is [`Retry::Idempotent`] too: it is one
//! atomic call that ends by setting `done:<W1>` to the slot, so a call sent again after
//! its reply was lost (or a second retirer's) finds the slot retired and answers
//! `already`, changing nothing.

use redis::Value;

use crate::domain::RetireReport;
use crate::domain::board::Board;
use crate::error::{Error, Result};
use crate::store::redis::board::family::Swap;
use crate::store::redis::conn::options::RetireOptions;
use crate::store::redis::conn::reply::{array, int, string};
use crate::store::redis::conn::{RedisConn, Retry};

/// Newer slots the swap takes at most (the open slot and a few future ones within the
/// clock skew): a board with more falls back to chunks.
const MAX_NEWER: isize = 16;

/// Whether window 1 of `board` may retire by swap at all: its first window is one slot
/// long and the options allow it.
pub(super) fn applies(board: &Board, options: &RetireOptions) -> bool {
    options.swap_fields > 0 && board.config.windows()[0] == board.config.slot()
}

/// Tries to retire `slot` from window 1 of `board` by swap.
pub(crate) async fn swap(
    conn: &RedisConn,
    board: &Board,
    slot: i64,
    options: &RetireOptions,
) -> Result<Swap> {
    let name = &board.name;
    let windows = board.config.windows();
    let index = conn.keys().index(name);
    let newer: Vec<i64> = conn
        .query(
            redis::cmd("ZRANGEBYSCORE")
                .arg(&index)
                .arg(format!("({slot}"))
                .arg("+inf")
                .arg("LIMIT")
                .arg(0)
                .arg(MAX_NEWER + 1),
            Some(name),
            Retry::Idempotent,
        )
        .await?;
    if newer.len() > MAX_NEWER as usize {
        return Ok(Swap::Fallback);
    }
    let mut invocation = conn.scripts().retire_swap.key(conn.keys().record(name));
    invocation
        .key(index)
        .key(conn.keys().slot_geometry(name))
        .key(conn.keys().totals(name, windows, 0))
        .key(conn.keys().stage(name, slot, 0))
        .key(conn.keys().stage(name, slot, 1));
    for &t in &newer {
        invocation.key(conn.keys().stage(name, t, 0));
    }
    let dense = conn.keys().window_dense(board, 0);
    for key in &dense {
        invocation.key(key);
    }
    invocation.key(conn.keys().data(name));
    invocation
        .arg(board.version)
        .arg(windows[0].seconds())
        .arg(slot)
        .arg(options.swap_fields)
        .arg(if windows.len() == 1 { "last" } else { "" })
        .arg(if dense.is_empty() { "" } else { "dense" })
        .arg(newer.len());
    for &t in &newer {
        invocation.arg(t);
    }
    let reply: Value = conn.script(&invocation, name, Retry::Idempotent).await?;
    let items = array(reply, "retire_swap")?;
    let Some(first) = items.first() else {
        return Err(Error::store("retire_swap answered nothing"));
    };
    match string(first, "retire_swap")?.as_str() {
        "swapped" if items.len() == 5 => Ok(Swap::Swapped(RetireReport {
            slots_retired: 1,
            fields_subtracted: int(&items[1], "retired")? as u64,
            members_zeroed: int(&items[2], "zeroed")? as u64,
            chunks: 1,
            slots_swapped: 1,
            ..RetireReport::default()
        })),
        "already" => Ok(Swap::Already),
        "fallback" => Ok(Swap::Fallback),
        _ => Err(Error::store(format!("retire_swap answered {items:?}"))),
    }
}
