//! Recompute in Redis: `recompute_begin.lua`, then a bounded scan of every live stage
//! value the window counts (`recompute_scan.lua`), then a fold of the members writes
//! touched meanwhile (`recompute_fold.lua`), then an O(1) swap (`recompute_swap.lua`).
//! A max, min or latest board's scan and swap are in `maxima/recompute.rs`, under the
//! same lease (`board/lease.rs`). Every call is bounded.

use redis::Value;

use crate::domain::RecomputeReport;
use crate::domain::board::Board;
use crate::error::{Error, Result};
use crate::store::redis::board::lease::{LEASE_MS, scan_in_lanes, scan_step};
use crate::store::redis::board::slot_index;
use crate::store::redis::conn::reply::{array, int, string};
use crate::store::redis::conn::{RedisConn, Retry};

/// Most fields a scan call adds, and its time budget.
const SCAN_FIELDS: usize = 1000;
const SCAN_BUDGET_US: u64 = 1500;
/// Stage values a fold call reads at most per member (live slots passed x stages), and
/// its time budget: on a long window one member's fold spans calls.
const FOLD_READS: usize = 1000;
const FOLD_BUDGET_US: u64 = 1500;

/// Rebuilds window `window` of the sum board `board` under the lease `token` (see the
/// module header).
pub(crate) async fn run(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    token: &str,
) -> Result<RecomputeReport> {
    let mut report = RecomputeReport::of(board.config.windows()[window]);
    // Scan: every stage the window counts, of every live slot (a compact slot's stage is
    // scanned bucket by bucket, by the same calls).
    let mut hashes = Vec::new();
    for slot in slot_index::live_slots(conn, &board.name).await? {
        for stage in 0..=window {
            hashes.push((slot, conn.keys().stage(&board.name, slot, stage)));
        }
    }
    scan_in_lanes(&mut report, hashes, |(slot, hash)| {
        let (conn, board, token) = (conn.clone(), board.clone(), token.to_owned());
        async move { scan(&conn, &board, &token, slot, &hash).await }
    })
    .await?;
    // Fold the log, then swap. One fold call at a time: a member's fold may span calls,
    // and each call goes on from where the last one left it.
    let mut slots = slot_index::live_slots(conn, &board.name).await?;
    let mut at = Position::default();
    loop {
        match fold(conn, board, window, token, &slots, &at).await? {
            Folded::SlotsChanged => slots = slot_index::live_slots(conn, &board.name).await?,
            Folded::At(position) => at = position,
            Folded::Left {
                left,
                folded,
                position,
            } => {
                report.calls += 1;
                report.members_folded += folded;
                at = position;
                if left == 0 && at.member.is_empty() && swap(conn, board, window, token).await? {
                    report.calls += 1;
                    return Ok(report);
                }
            }
        }
    }
}

/// Scans one stage of slot `slot` (its hash, or its buckets on a compact slot) to its
/// end: returns the calls made and the fields added.
async fn scan(
    conn: &RedisConn,
    board: &Board,
    token: &str,
    slot: i64,
    hash: &str,
) -> Result<(u64, u64)> {
    let (mut calls, mut fields) = (0, 0);
    let mut cursor = "0".to_owned();
    loop {
        let mut scan = conn
            .scripts()
            .recompute_scan
            .key(conn.keys().record(&board.name));
        scan.key(conn.keys().rebuild(&board.name))
            .key(hash)
            .key(conn.keys().rebuild_scan(&board.name))
            .key(conn.keys().slot_geometry(&board.name))
            .key(conn.keys().build_dense(board))
            .arg(board.version)
            .arg(token)
            .arg(LEASE_MS)
            .arg(&cursor)
            .arg(SCAN_FIELDS)
            .arg(SCAN_BUDGET_US)
            .arg(slot);
        // Idempotent: the script checks `cursor` against the one it recorded, so a call
        // sent again after its reply was lost adds nothing (see recompute_scan.lua).
        let reply: Value = conn.script(&scan, &board.name, Retry::Idempotent).await?;
        let (next, added) = scan_step(reply, "recompute_scan")?;
        calls += 1;
        fields += added;
        cursor = next;
        if cursor == "done" {
            return Ok((calls, fields));
        }
    }
}

/// Where the fold is: the member being folded and the last slot summed for it (both
/// empty when no member is half folded).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Position {
    member: String,
    slot: String,
}

enum Folded {
    /// The live slots changed: list them again.
    SlotsChanged,
    /// The fold is elsewhere than the caller thought (a lost reply's call ran).
    At(Position),
    Left {
        left: u64,
        folded: u64,
        position: Position,
    },
}

/// One `recompute_fold.lua` call: the next live slots after `at`, at most `FOLD_READS`
/// stage values per member.
async fn fold(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    token: &str,
    slots: &[i64],
    at: &Position,
) -> Result<Folded> {
    let stages = window + 1;
    let after: Option<i64> = if at.slot.is_empty() {
        None
    } else {
        Some(
            at.slot
                .parse()
                .map_err(|_| Error::store(format!("recompute_fold named slot {:?}", at.slot)))?,
        )
    };
    let per_call = (FOLD_READS / stages).max(1);
    let passed: Vec<i64> = slots
        .iter()
        .copied()
        .filter(|s| after.is_none_or(|a| *s > a))
        .take(per_call)
        .collect();
    let mut call = conn
        .scripts()
        .recompute_fold
        .key(conn.keys().record(&board.name));
    call.key(conn.keys().rebuild(&board.name))
        .key(conn.keys().rebuild_log(&board.name))
        .key(conn.keys().index(&board.name))
        .key(conn.keys().slot_geometry(&board.name));
    for slot in &passed {
        for stage in 0..stages {
            call.key(conn.keys().stage(&board.name, *slot, stage));
        }
    }
    call.key(conn.keys().build_dense(board));
    call.arg(board.version)
        .arg(token)
        .arg(LEASE_MS)
        .arg(stages)
        .arg(&at.member)
        .arg(&at.slot)
        .arg(passed.len())
        .arg(&passed)
        .arg(FOLD_BUDGET_US);
    // Idempotent: the script checks `at` against where the fold is, so a call sent again
    // after its reply was lost does nothing twice (see recompute_fold.lua).
    let reply: Value = conn.script(&call, &board.name, Retry::Idempotent).await?;
    let items = array(reply, "recompute_fold")?;
    let position = |member: &Value, slot: &Value| -> Result<Position> {
        Ok(Position {
            member: string(member, "member")?,
            slot: string(slot, "slot")?,
        })
    };
    match items.as_slice() {
        [Value::BulkString(b)] if b.as_slice() == b"slots" => Ok(Folded::SlotsChanged),
        [Value::BulkString(b), member, slot] if b.as_slice() == b"at" => {
            Ok(Folded::At(position(member, slot)?))
        }
        [left, folded, member, slot] => Ok(Folded::Left {
            left: int(left, "left")? as u64,
            folded: int(folded, "folded")? as u64,
            position: position(member, slot)?,
        }),
        _ => Err(Error::store(format!("recompute_fold answered {items:?}"))),
    }
}

/// Swaps the build in when the log is empty; `false` when more must be folded first.
async fn swap(conn: &RedisConn, board: &Board, window: usize, token: &str) -> Result<bool> {
    let windows = board.config.windows();
    let mut call = conn
        .scripts()
        .recompute_swap
        .key(conn.keys().record(&board.name));
    call.key(conn.keys().rebuild(&board.name))
        .key(conn.keys().rebuild_log(&board.name))
        .key(conn.keys().totals(&board.name, windows, window))
        .key(conn.keys().rebuild_scan(&board.name))
        .key(conn.keys().window_dense(board, window))
        .key(conn.keys().build_dense(board))
        .arg(board.version)
        .arg(token)
        .arg(windows[window].seconds());
    let reply: Value = conn.script(&call, &board.name, Retry::Never).await?;
    let items = array(reply, "recompute_swap")?;
    Ok(matches!(items.first(), Some(Value::BulkString(b)) if b.as_slice() == b"done"))
}
