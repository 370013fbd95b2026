//! Retirement of many small boards in few round trips: one `retire_small.lua` call
//! retires up to [`BOARDS_PER_CALL`] boards, all windows of each, and the calls go in
//! pipelines (on Redis Cluster a call's boards share a hash slot, and there is one
//! pipeline per slot, all at once). A board the script declines (big, behind by more than
//! one boundary, being recomputed, changed) is answered `None`, for the window-by-window
//! pass of [`retire`](super::retire); one the call's bound left for later goes in the next
//! round of calls. The script also says whether the board's slot that just closed should
//! be compacted (a compact board's plain slot, big enough); only those boards get
//! compaction calls ([`compact`](super::compact)), after every pipeline, a few boards at a
//! time.
//!
//! Retry class: every call is [`Retry::Idempotent`]: the script changes a board only when
//! its whole retirement fits, and a second run finds nothing due. `SCRIPT LOAD` (before
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
use crate::store::redis::conn::reply::{int, string};
use crate::store::redis::conn::script_pipeline::run_pipelined;
use crate::store::redis::conn::scripts::RETIRE_SMALL_SOURCE;
use crate::store::redis::conn::{RedisConn, Retry};

/// Boards per call: each call's fixed cost (the command, the script's own definitions)
/// is shared by this many, and the call stays short (the script's bound, and ~24 µs of
/// Redis a small board).
const BOARDS_PER_CALL: usize = 32;

/// Calls per pipeline: enough that a round trip carries many boards, few enough that one
/// pipeline's replies stay small and other clients' commands interleave between them.
const CALLS_PER_PIPELINE: usize = 8;

/// Pipelines (or, on a Cluster, hash slots) in flight at once.
const PIPELINES_IN_FLIGHT: usize = 4;

/// Retires those of `boards` the script can take (whose family says so: `takes`) and
/// does; `None` for the others.
pub(crate) async fn retire_small(
    conn: &RedisConn,
    boards: &[Arc<Board>],
    takes: impl Fn(&Board) -> bool,
    now: Timestamp,
    options: RetireOptions,
) -> Result<Vec<Option<RetireReport>>> {
    let mut answers: Vec<Option<RetireReport>> = vec![None; boards.len()];
    let mut pending: Vec<usize> = (0..boards.len()).filter(|&i| takes(&boards[i])).collect();
    let mut to_compact = Vec::new();
    while !pending.is_empty() {
        let mut later = Vec::new();
        let mut runs =
            futures_util::stream::iter(pipelines(conn, boards, &pending).into_iter().map(
                |calls| async move {
                    let cmds: Vec<Cmd> = calls
                        .iter()
                        .map(|call| call_of(conn, boards, call, now, &options))
                        .collect();
                    run_pipelined::<Value>(conn, &RETIRE_SMALL_SOURCE, &cmds, Retry::Idempotent)
                        .await
                        .map(|replies| (calls, replies))
                },
            ))
            .buffer_unordered(PIPELINES_IN_FLIGHT);
        while let Some(run) = runs.next().await {
            let (calls, replies) = run?;
            for (call, reply) in calls.into_iter().zip(replies) {
                // A failed call leaves its boards to the ordinary path, which reloads each
                // and says what happened.
                let Ok(Value::Array(items)) = reply else {
                    continue;
                };
                for (i, values) in call.into_iter().zip(items.chunks(ANSWER_VALUES)) {
                    match answer(values) {
                        Answer::Done(report, compact) => {
                            answers[i] = Some(report);
                            if compact && options.compact {
                                to_compact.push(i);
                            }
                        }
                        Answer::Later => later.push(i),
                        Answer::Declined => {}
                    }
                }
            }
        }
        pending = later;
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

/// The calls of `pending` (board indices), grouped into pipelines: on a single node,
/// consecutive boards; on a Cluster, where a call's keys and a pipeline may not cross hash
/// slots, the boards of one slot.
fn pipelines(conn: &RedisConn, boards: &[Arc<Board>], pending: &[usize]) -> Vec<Vec<Vec<usize>>> {
    let groups: Vec<Vec<usize>> = if conn.is_cluster() {
        let mut by_slot: HashMap<Slot, Vec<usize>> = HashMap::new();
        for &i in pending {
            let slot = Slot::for_key(conn.keys().record(&boards[i].name));
            by_slot.entry(slot).or_default().push(i);
        }
        by_slot.into_values().collect()
    } else {
        vec![pending.to_vec()]
    };
    groups
        .iter()
        .flat_map(|group| {
            let calls: Vec<Vec<usize>> = group
                .chunks(BOARDS_PER_CALL)
                .map(<[usize]>::to_vec)
                .collect();
            calls
                .chunks(CALLS_PER_PIPELINE)
                .map(<[Vec<usize>]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The `retire_small.lua` call (`EVALSHA`) of the boards `call` (indices into `boards`).
fn call_of(
    conn: &RedisConn,
    boards: &[Arc<Board>],
    call: &[usize],
    now: Timestamp,
    options: &RetireOptions,
) -> Cmd {
    let parts: Vec<(Vec<String>, Vec<String>)> = call
        .iter()
        .map(|&i| board_part(conn, &boards[i], now, options))
        .collect();
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(conn.scripts().retire_small.get_hash())
        .arg(parts.iter().map(|(keys, _)| keys.len()).sum::<usize>());
    for (keys, _) in &parts {
        cmd.arg(keys);
    }
    cmd.arg(parts.len());
    // A board whose arguments, its version aside, are those of the board before it sends
    // its version only, the others '*' and all of them (see the script's header).
    let mut shared: Option<&[String]> = None;
    for (_, args) in &parts {
        match shared {
            Some(before) if before[1..] == args[1..] => cmd.arg(&args[0]),
            _ => {
                shared = Some(args);
                cmd.arg("*").arg(args)
            }
        };
    }
    cmd
}

/// A board's keys and arguments in a `retire_small.lua` call: its candidate slots are
/// those that crossed a window's cutoff at the boundary of `now`.
fn board_part(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    options: &RetireOptions,
) -> (Vec<String>, Vec<String>) {
    let (name, windows) = (&board.name, board.config.windows());
    let cutoffs: Vec<i64> = (0..windows.len())
        .map(|j| board.config.cutoff(j, now))
        .collect();
    let mut candidates = cutoffs.clone();
    candidates.sort_unstable();
    candidates.dedup();
    let closed = closed_slot(board, now);
    let keys = conn.keys();
    let mut list = vec![
        keys.record(name),
        keys.index(name),
        keys.slot_geometry(name),
    ];
    list.extend((0..windows.len()).map(|j| keys.totals(name, windows, j)));
    // The closed slot's stages, unless it is a candidate (its stages are named already).
    let closed_stages = (!candidates.contains(&closed)).then_some(&closed);
    for &slot in candidates.iter().chain(closed_stages) {
        list.extend((0..windows.len()).map(|j| keys.stage(name, slot, j)));
    }
    list.push(keys.data(name));
    let mut args = vec![
        board.version.to_string(),
        windows.len().to_string(),
        candidates.len().to_string(),
        options.chunk_size.max(1).to_string(),
    ];
    args.extend(windows.iter().map(|w| w.seconds().to_string()));
    args.extend(
        cutoffs
            .iter()
            .chain(&candidates)
            .chain([&closed])
            .map(i64::to_string),
    );
    // '' asks nothing about compaction.
    args.push(match options.compact {
        true => minimum_fields(conn).to_string(),
        false => String::new(),
    });
    args.push(conn.layout().default.as_str().to_owned());
    (list, args)
}

/// A board's answer in a call.
enum Answer {
    /// Retired: its report, and whether to compact the slot that just closed.
    Done(RetireReport, bool),
    /// Left by the call's bound for the next call.
    Later,
    /// Declined (or answered wrongly): the ordinary path takes it.
    Declined,
}

/// How many values a board's answer is, in a call's flat reply (see the script's header).
const ANSWER_VALUES: usize = 5;

/// A board's answer, its values in the call's reply.
fn answer(values: &[Value]) -> Answer {
    report(values).ok().flatten().unwrap_or(Answer::Declined)
}

/// [`answer`], `None` (or an error) for a decline or a reply of another shape.
fn report(items: &[Value]) -> Result<Option<Answer>> {
    if items.len() != ANSWER_VALUES {
        return Ok(None);
    }
    let words = |at: usize| string(&items[at], "outcome").ok();
    match (words(0).as_deref(), words(1).as_deref()) {
        (Some("fallback"), Some("later")) => return Ok(Some(Answer::Later)),
        (Some("done"), _) => {}
        _ => return Ok(None),
    }
    let compact = int(&items[4], "compact")? == 1;
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
    Ok(Some(Answer::Done(report, compact)))
}
