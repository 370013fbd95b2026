//! Changing a board's layout online: `relayout.lua` sets the record's `layout`, which
//! decides the layout of slots created from then on; with `now` (an active relayout),
//! `relayout_chunk.lua` then converts every live slot, one bounded call at a time, while
//! writes, reads and retirement go on (`docs/compact-slots.md`, "Relayout").
//!
//! Relayout stands beside retirement and below it: retirement's compaction of a closed
//! slot (`retire/compact.rs`) is a one-slot relayout to compact, and builds its calls
//! with [`chunk`]; this module imports nothing of retirement.

use redis::Value;

use crate::domain::board::Board;
use crate::domain::{Layout, RelayoutOptions, RelayoutReport};
use crate::error::Result;
use crate::store::redis::conn::reply::{array, int, string};
use crate::store::redis::conn::{RedisConn, Retry};

/// How long a converter call's lease keeps a recompute (or another relayout) out, in
/// milliseconds; every call renews it, and the run ends it.
const LEASE_MS: u64 = 5_000;

pub(crate) async fn relayout(
    conn: &RedisConn,
    board: &Board,
    layout: Layout,
    options: RelayoutOptions,
) -> Result<RelayoutReport> {
    let mut invocation = conn.scripts().relayout.key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().index(&board.name))
        .key(conn.keys().slot_geometry(&board.name))
        .arg(board.version)
        .arg(layout.as_str());
    // Idempotent: it sets a value and counts; sent again, it sets the same value.
    let (live, compact): (u64, u64) = conn
        .script(&invocation, &board.name, Retry::Idempotent)
        .await?;
    let mut report = RelayoutReport {
        layout,
        live_slots: live,
        old_layout_slots: match layout {
            Layout::Compact => live - compact,
            Layout::Plain => compact,
        },
        converted_slots: 0,
        moved_values: 0,
        complete: true,
    };
    if options.now {
        convert(conn, board, layout, options, &mut report).await?;
    }
    Ok(report)
}

/// Converts every live slot to `layout`, slot by slot, until done or `max_calls`.
async fn convert(
    conn: &RedisConn,
    board: &Board,
    layout: Layout,
    options: RelayoutOptions,
    report: &mut RelayoutReport,
) -> Result<()> {
    let token = crate::store::new_version().to_string();
    let budget = u64::try_from(options.chunk_budget.as_micros()).unwrap_or(u64::MAX);
    let slots = super::slot_index::live_slots(conn, &board.name).await?;
    let mut calls = 0;
    let mut unfinished = 0;
    let result = async {
        for (at, slot) in slots.iter().enumerate() {
            let mut cursor = "0".to_owned();
            let mut changed = false;
            loop {
                if options.max_calls.is_some_and(|max| calls >= max) {
                    unfinished = slots.len() - at;
                    return Ok(());
                }
                let mut call = chunk(conn, board, *slot);
                call.arg(layout.as_str())
                    .arg(slot)
                    .arg(&cursor)
                    .arg(budget)
                    .arg(conn.layout().fill)
                    .arg(LEASE_MS)
                    .arg(&token);
                // Idempotent: a call moves what it reads from one form of a stage to the
                // other and deletes it, atomically; sent again after a lost reply, it finds
                // the moved values gone and moves only what is left.
                let reply: Value = conn.script(&call, &board.name, Retry::Idempotent).await?;
                calls += 1;
                let items = array(reply, "relayout_chunk")?;
                let [next, moved, touched] = items.as_slice() else {
                    return Err(crate::error::Error::store(
                        "relayout_chunk answered too little",
                    ));
                };
                report.moved_values += int(moved, "moved")? as u64;
                changed |= int(touched, "changed")? == 1;
                cursor = string(next, "cursor")?;
                if cursor == "done" {
                    break;
                }
            }
            if changed {
                report.converted_slots += 1;
            }
        }
        Ok(())
    }
    .await;
    // End the lease (so a recompute may start at once), whatever happened: Idempotent,
    // it deletes the lease only while this run's token holds it.
    let mut end = chunk(conn, board, 0);
    end.arg(layout.as_str())
        .arg("")
        .arg("0")
        .arg(0)
        .arg(0)
        .arg(0)
        .arg(&token);
    let ended: Result<Value> = conn.script(&end, &board.name, Retry::Idempotent).await;
    result?;
    ended?;
    report.complete = unfinished == 0;
    report.old_layout_slots = unfinished as u64;
    Ok(())
}

/// A `relayout_chunk.lua` invocation for `slot` of `board` with its keys and version.
pub(crate) fn chunk<'a>(
    conn: &'a RedisConn,
    board: &Board,
    slot: i64,
) -> redis::ScriptInvocation<'a> {
    let mut call = conn
        .scripts()
        .relayout_chunk
        .key(conn.keys().record(&board.name));
    call.key(conn.keys().index(&board.name))
        .key(conn.keys().slot_geometry(&board.name));
    for key in conn.keys().stages(board, slot) {
        call.key(key);
    }
    call.arg(board.version);
    call
}
