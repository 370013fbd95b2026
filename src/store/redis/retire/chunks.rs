//! The chunked path of retirement, the one that works for any board: freeze a window
//! up to its cutoff and list the slots it still has to subtract (`retire_begin.lua`),
//! then subtract each slot from the window, one bounded chunk per `retire_chunk.lua`
//! call, two calls of a slot in flight at once. Every call is idempotent, so a pass can
//! stop anywhere (crash, `max_chunks`) and any later pass, from this process or
//! another, finishes the job.
//!
//! The script finds out itself whether a slot is plain or compact (its geometry); the
//! cursor it answers is opaque here (an HSCAN cursor, or a bucket index on a compact
//! slot), and `"0"` starts either.

use redis::Value;

use super::SlotPass;
use crate::domain::RetireReport;
use crate::domain::board::Board;
use crate::error::{Error, Result};
use crate::store::redis::conn::options::RetireOptions;
use crate::store::redis::conn::reply::{array, int, string};
use crate::store::redis::conn::{RedisConn, Retry};

/// Slots listed per `retire_begin.lua` call.
const SLOTS_PER_LISTING: usize = 256;

/// Calls of one slot in flight at once: while Redis runs one, the next is already on
/// its way, so Redis does not idle for a round trip between calls. A call that starts
/// from an older cursor only skips what the other call did.
const LANES: usize = 2;

/// What one call retiring a slot from a window did.
pub(super) struct Chunk {
    /// Where the next call goes on (`None` when the slot is finished for this window).
    pub(super) cursor: Option<String>,
    /// Values subtracted (or, on a max board, members re-evaluated).
    pub(super) subtracted: u64,
    /// Members that left the window.
    pub(super) zeroed: u64,
}

/// Retires the slot of `pass` from its window of a sum board. Returns `false` when the
/// pass's budget ran out first.
pub(crate) async fn retire_slot(
    conn: &RedisConn,
    board: &Board,
    pass: SlotPass<'_>,
) -> Result<bool> {
    let (window, slot, options) = (pass.window, pass.slot, *pass.options);
    in_lanes(pass.budget, pass.report, |cursor| {
        let (conn, board) = (conn.clone(), board.clone());
        async move { chunk(&conn, &board, window, slot, &cursor, &options).await }
    })
    .await
}

/// Retires a slot by calls of `call` (given the cursor to go on from, `"0"` first),
/// [`LANES`] in flight, each counted in `budget`, adding what they did to `report`.
/// Returns `false` when `budget` ran out first.
pub(super) async fn in_lanes<F, Fut>(
    budget: &mut Option<usize>,
    report: &mut RetireReport,
    call: F,
) -> Result<bool>
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<Chunk>> + Send + 'static,
{
    let mut calls = tokio::task::JoinSet::new();
    let mut start = |calls: &mut tokio::task::JoinSet<Result<Chunk>>, cursor: String| {
        if *budget == Some(0) {
            return;
        }
        *budget = budget.map(|b| b - 1);
        calls.spawn(call(cursor));
    };
    for _ in 0..LANES {
        start(&mut calls, "0".to_owned());
    }
    let mut finished = false;
    while let Some(joined) = calls.join_next().await {
        let chunk = joined.map_err(|e| Error::store(format!("retirement task failed: {e}")))??;
        report.chunks += 1;
        report.fields_subtracted += chunk.subtracted;
        report.members_zeroed += chunk.zeroed;
        match chunk.cursor {
            None if !finished => {
                finished = true;
                report.slots_retired += 1;
            }
            Some(cursor) if !finished => start(&mut calls, cursor),
            _ => {}
        }
    }
    Ok(finished)
}

/// The window name fields the scripts need: this window and the next smaller one.
pub(crate) fn window_args(board: &Board, window: usize) -> (u64, String) {
    let windows = board.config.windows();
    let previous = match window {
        0 => String::new(),
        j => windows[j - 1].seconds().to_string(),
    };
    (windows[window].seconds(), previous)
}

/// Freezes `window` up to `cutoff` and lists slots it still has to subtract.
pub(super) async fn begin(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    cutoff: i64,
) -> Result<Vec<i64>> {
    let (this, previous) = window_args(board, window);
    let mut invocation = conn
        .scripts()
        .retire_begin
        .key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().index(&board.name))
        .arg(board.version)
        .arg(this)
        .arg(previous)
        .arg(cutoff)
        .arg(SLOTS_PER_LISTING);
    let reply: Value = conn
        .script(&invocation, &board.name, Retry::Idempotent)
        .await?;
    let items = array(reply, "retire_begin")?;
    items.iter().skip(1).map(|v| int(v, "slot")).collect()
}

/// A compact slot's bucket over this many times the buckets' fill (only late writes grow
/// one that far) is retired by HSCAN steps rather than read whole, so each call stays
/// within its budget.
const OVERSIZED_BUCKET: u64 = 4;

async fn chunk(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    slot: i64,
    cursor: &str,
    options: &RetireOptions,
) -> Result<Chunk> {
    let (this, previous) = window_args(board, window);
    let last = window + 1 == board.config.windows().len();
    let mut invocation = conn
        .scripts()
        .retire_chunk
        .key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().index(&board.name))
        .key(
            conn.keys()
                .totals(&board.name, board.config.windows(), window),
        )
        .key(conn.keys().stage(&board.name, slot, window))
        .key(conn.keys().slot_geometry(&board.name))
        .key(conn.keys().data(&board.name));
    if !last {
        invocation.key(conn.keys().stage(&board.name, slot, window + 1));
    }
    invocation
        .arg(board.version)
        .arg(this)
        .arg(previous)
        .arg(slot)
        .arg(cursor)
        .arg(options.chunk_size.max(1))
        .arg(options.chunk_budget.as_micros().max(1) as u64)
        .arg(OVERSIZED_BUCKET * conn.layout().fill);
    let dense = conn.keys().window_dense(board, window);
    if !dense.is_empty() {
        invocation.key(dense).arg("dense");
    }
    let reply: Value = conn
        .script(&invocation, &board.name, Retry::Idempotent)
        .await?;
    let items = array(reply, "retire_chunk")?;
    let [cursor, subtracted, zeroed] = items.as_slice() else {
        return Err(Error::store(format!("retire_chunk answered {items:?}")));
    };
    let cursor = string(cursor, "cursor")?;
    Ok(Chunk {
        cursor: (cursor != "done").then_some(cursor),
        subtracted: int(subtracted, "subtracted")? as u64,
        zeroed: int(zeroed, "zeroed")? as u64,
    })
}
