//! Retirement of many small boards in few round trips: one `retire_small.lua` call per
//! board retires all its windows at once, and the calls of many boards go in one
//! pipeline (on Redis Cluster, one pipeline per hash slot, all at once). A board the
//! script declines (big, behind by more than one boundary, being recomputed, changed) is
//! answered `None`, for the window-by-window pass of [`retire`](super::retire). The
//! script also says whether the board's slot that just closed should be compacted (a
//! compact board's plain slot, big enough); only those boards get compaction calls
//! ([`compact`](super::compact)), after every pipeline, a few boards at a time.
//!
//! Retry class: every call is [`Retry::Idempotent`]: the script changes nothing unless
//! the whole retirement fits, and a second run finds nothing due. `SCRIPT LOAD` (before
//! re-sending only the calls Redis refused with `NOSCRIPT`, which ran nothing: scripts in
//! a pipeline are not reloaded by the client) is idempotent too.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::StreamExt;
use redis::cluster_routing::Slot;
use redis::{Cmd, Value};

use super::compact::{closed_slot, compact_closed, minimum_fields};
use crate::domain::board::Board;
use crate::domain::{RetireReport, Timestamp};
use crate::error::Result;
use crate::store::redis::conn::options::RetireOptions;
use crate::store::redis::conn::reply::{array, int, string};
use crate::store::redis::conn::script_pipeline::run_pipelined;
use crate::store::redis::conn::scripts::RETIRE_SMALL_SOURCE;
use crate::store::redis::conn::{RedisConn, Retry};

/// Calls per pipeline: enough that a round trip carries many boards, few enough that one
/// pipeline's replies stay small and other clients' commands interleave between them.
const BOARDS_PER_PIPELINE: usize = 256;

/// Pipelines (or, on a Cluster, hash slots) in flight at once.
const PIPELINES_IN_FLIGHT: usize = 4;

/// Retires those of `boards` that fit one call each (whose family says so: `takes`);
/// `None` for the others.
pub(crate) async fn retire_small(
    conn: &RedisConn,
    boards: &[Arc<Board>],
    takes: impl Fn(&Board) -> bool,
    now: Timestamp,
    options: RetireOptions,
) -> Result<Vec<Option<RetireReport>>> {
    let mut answers: Vec<Option<RetireReport>> = vec![None; boards.len()];
    // The boards the script can take, and their calls.
    let (fits, calls): (Vec<usize>, Vec<Cmd>) = boards
        .iter()
        .enumerate()
        .filter(|(_, b)| takes(b))
        .map(|(i, b)| (i, call(conn, b, now, &options)))
        .unzip();
    // On a single node, pipelines of consecutive calls; on a Cluster, where a pipeline
    // may not cross hash slots, one per slot.
    let groups: Vec<Vec<usize>> = if conn.is_cluster() {
        let mut by_slot: HashMap<Slot, Vec<usize>> = HashMap::new();
        for (k, &i) in fits.iter().enumerate() {
            let slot = Slot::for_key(conn.keys().record(&boards[i].name));
            by_slot.entry(slot).or_default().push(k);
        }
        by_slot.into_values().collect()
    } else {
        (0..calls.len())
            .collect::<Vec<_>>()
            .chunks(BOARDS_PER_PIPELINE)
            .map(<[usize]>::to_vec)
            .collect()
    };
    let calls = &calls;
    let mut runs = futures_util::stream::iter(groups.into_iter().map(|group| async move {
        let part: Vec<Cmd> = group.iter().map(|&k| calls[k].clone()).collect();
        run_pipelined::<Value>(conn, &RETIRE_SMALL_SOURCE, &part, Retry::Idempotent)
            .await
            .map(|replies| (group, replies))
    }))
    .buffer_unordered(PIPELINES_IN_FLIGHT);
    let mut to_compact = Vec::new();
    while let Some(run) = runs.next().await {
        let (group, replies) = run?;
        for (k, reply) in group.into_iter().zip(replies) {
            // A refusal (STALE: dropped or changed) or a decline leaves the board to the
            // ordinary path, which reloads it and says what happened.
            let answer = reply.ok().and_then(|value| report(value).ok().flatten());
            if let Some((report, compact)) = answer {
                answers[fits[k]] = Some(report);
                if compact && options.compact {
                    to_compact.push(fits[k]);
                }
            }
        }
    }
    let compactions: Vec<_> =
        futures_util::stream::iter(to_compact.into_iter().map(|i| async move {
            let compacted = compact_closed(conn, &boards[i], now, &options).await;
            (i, compacted)
        }))
        .buffer_unordered(PIPELINES_IN_FLIGHT)
        .collect()
        .await;
    for (i, compacted) in compactions {
        match compacted {
            Ok(compacted) => {
                if let Some(report) = answers[i].as_mut() {
                    report.slots_compacted = compacted.slots;
                    report.fields_compacted = compacted.fields;
                }
            }
            // Retired, but the compaction failed: the ordinary path (which finds nothing
            // left to retire) tries it again and says what went wrong.
            Err(_) => answers[i] = None,
        }
    }
    Ok(answers)
}

/// The board's `retire_small.lua` call (`EVALSHA`): its candidate slots are those that
/// crossed a window's cutoff at the boundary of `now`.
fn call(conn: &RedisConn, board: &Board, now: Timestamp, options: &RetireOptions) -> Cmd {
    let windows = board.config.windows();
    let cutoffs: Vec<i64> = (0..windows.len())
        .map(|j| board.config.cutoff(j, now))
        .collect();
    let mut candidates = cutoffs.clone();
    candidates.sort_unstable();
    candidates.dedup();
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(conn.scripts().retire_small.get_hash())
        .arg(4 + windows.len() * (2 + candidates.len()))
        .arg(conn.keys().record(&board.name))
        .arg(conn.keys().index(&board.name))
        .arg(conn.keys().slot_geometry(&board.name));
    for j in 0..windows.len() {
        cmd.arg(conn.keys().totals(&board.name, windows, j));
    }
    for &slot in &candidates {
        for j in 0..windows.len() {
            cmd.arg(conn.keys().stage(&board.name, slot, j));
        }
    }
    let closed = closed_slot(board, now);
    for j in 0..windows.len() {
        cmd.arg(conn.keys().stage(&board.name, closed, j));
    }
    cmd.arg(conn.keys().data(&board.name));
    cmd.arg(board.version)
        .arg(windows.len())
        .arg(candidates.len())
        .arg(options.chunk_size.max(1));
    for w in windows {
        cmd.arg(w.seconds());
    }
    cmd.arg(&cutoffs).arg(&candidates).arg(closed);
    // '' asks nothing about compaction.
    if options.compact {
        cmd.arg(minimum_fields(conn));
    } else {
        cmd.arg("");
    }
    cmd.arg(conn.layout().default.as_str());
    cmd
}

/// The script's answer: a report and whether to compact the slot that just closed (an
/// absent fifth field is no), or `None` when it declined.
fn report(reply: Value) -> Result<Option<(RetireReport, bool)>> {
    let items = array(reply, "retire_small")?;
    if items.len() < 4 || string(&items[0], "outcome")? != "done" {
        return Ok(None);
    }
    let compact = match items.get(4) {
        Some(flag) => int(flag, "compact")? == 1,
        None => false,
    };
    let report = RetireReport {
        slots_retired: int(&items[1], "retired")? as u64,
        fields_subtracted: int(&items[2], "subtracted")? as u64,
        members_zeroed: int(&items[3], "zeroed")? as u64,
        chunks: 1,
        complete: true,
        slots_compacted: 0,
        fields_compacted: 0,
        slots_swapped: 0,
    };
    Ok(Some((report, compact)))
}
