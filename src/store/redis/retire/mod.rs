//! Retirement in Redis: subtracting from each window the slots that left it, then
//! compacting the slot that just closed. The paths, cheapest first, one file each:
//!
//! 1. [`small`]: many small boards in few round trips, one `retire_small.lua` call per
//!    board retiring all its windows at once; a board it declines is left to the
//!    window-by-window pass below ([`retire`]).
//! 2. [`swap`]: window 1 of a board whose first window is one slot long retires the
//!    slot that just closed by one swap, when small.
//! 3. [`chunks`]: any board, any window: freeze the window up to its cutoff and
//!    subtract every slot that left it, in bounded chunks.
//! 4. [`compact`]: a complete pass then compacts the slot that just closed, if the
//!    board is compact and the slot big enough: one call more per board.
//!
//! A max, min or latest board takes the window-by-window pass only, its slots retired by
//! [`maxima`] instead of [`chunks`] (a maximum is recomputed, not subtracted) and
//! compacted by [`maxima_compact`]: the pass asks the board's
//! [`Family`](super::board::family::Family) for the swap, each slot and the compaction.
//!
//! Every call of every path is idempotent, so a pass can stop anywhere (crash,
//! `max_chunks`) and any later pass, from this process or another, finishes the job.
//!
//! Compaction converts a slot with `relayout_chunk.lua`, the converter of an online
//! relayout, through [`relayout::chunk`](super::board::relayout::chunk): relayout stands
//! beside retirement, below it, since it changes a board's layout on request and
//! retires nothing. The scripts of these paths are beside them.

pub(crate) mod chunks;
pub(crate) mod compact;
pub(crate) mod maxima;
pub(crate) mod maxima_compact;
mod small;
pub(crate) mod swap;

pub(super) use small::retire_small;

pub(crate) use super::board::family::SlotPass;
use super::board::family::{Family, Swap};
use super::conn::RedisConn;
use super::conn::options::RetireOptions;
use crate::domain::board::Board;
use crate::domain::{RetireReport, Timestamp};
use crate::error::Result;

/// Retires `board` at `now`, window by window, smallest first: each window is frozen
/// up to its cutoff and every slot that left it subtracted (window 1 of a one-slot
/// first window: by swap, when it applies), until done or `options.max_chunks` calls;
/// a complete pass then compacts the slot that just closed (with `options.compact`).
pub(super) async fn retire(
    conn: &RedisConn,
    family: &dyn Family,
    board: &Board,
    now: Timestamp,
    options: RetireOptions,
) -> Result<RetireReport> {
    let windows = board.config.windows();
    let mut report = RetireReport::default();
    let mut budget = options.max_chunks;
    for j in 0..windows.len() {
        let cutoff = board.config.cutoff(j, now);
        loop {
            let slots = chunks::begin(conn, board, j, cutoff).await?;
            if slots.is_empty() {
                break;
            }
            if j == 0 && slots.len() == 1 && budget != Some(0) && swap::applies(board, &options) {
                match family.swap(conn, board, slots[0], &options).await? {
                    Swap::Swapped(swapped) => {
                        budget = budget.map(|b| b - 1);
                        report.absorb(swapped);
                        continue;
                    }
                    Swap::Already => continue,
                    Swap::Fallback => {}
                }
            }
            for slot in slots {
                let pass = SlotPass {
                    window: j,
                    slot,
                    options: &options,
                    budget: &mut budget,
                    report: &mut report,
                };
                let finished = family.retire_slot(conn, board, pass).await?;
                if !finished {
                    return Ok(report);
                }
            }
        }
    }
    report.complete = true;
    if options.compact {
        let compacted = family.compact_closed(conn, board, now, &options).await?;
        report.slots_compacted = compacted.slots;
        report.fields_compacted = compacted.fields;
    }
    Ok(report)
}
