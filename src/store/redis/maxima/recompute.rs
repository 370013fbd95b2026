//! Recompute of a max, min or latest board in Redis (after `recompute_begin.lua`, whose
//! lease and state it shares with the sums' recompute): every live slot's hash is read
//! in `HSCAN` steps by `recompute_max_scan.lua`, two in flight, each merged into the
//! build's records and window; then `recompute_max_swap.lua` renames the build over the
//! window, the records and, on a dense board, the tallies. Writes merge into the build
//! meanwhile, and retirement waits (docs/design.md, "Recompute of max, min and latest
//! boards").

use redis::Value;

use crate::domain::RecomputeReport;
use crate::domain::board::Board;
use crate::error::Result;
use crate::store::redis::board::lease::{LEASE_MS, scan_in_lanes, scan_step};
use crate::store::redis::conn::keys;
use crate::store::redis::conn::{RedisConn, Retry};

/// Members a scan step reads (`HSCAN` `COUNT`): about a millisecond of Redis time, as a
/// retirement step of these boards (`retire/maxima.rs`).
const MEMBERS_PER_CALL: usize = 128;

/// Rebuilds window `window` of the max, min or latest board `board`, and its records,
/// from the live slots, under the lease `token`.
pub(crate) async fn run(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    token: &str,
) -> Result<RecomputeReport> {
    let mut report = RecomputeReport::of(board.config.windows()[window]);
    let slots = crate::store::redis::board::slot_index::live_slots(conn, &board.name).await?;
    scan_in_lanes(&mut report, slots, |slot| {
        let (conn, board, token) = (conn.clone(), board.clone(), token.to_owned());
        async move { scan(&conn, &board, window, &token, slot).await }
    })
    .await?;
    swap(conn, board, window, token).await?;
    report.calls += 1;
    Ok(report)
}

/// Scans slot `slot`'s hash to its end: the calls made and the members read.
async fn scan(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    token: &str,
    slot: i64,
) -> Result<(u64, u64)> {
    let name = &board.name;
    let (mut calls, mut members) = (0, 0);
    let mut cursor = "0".to_owned();
    loop {
        let mut step = conn
            .scripts()
            .recompute_max_scan
            .key(conn.keys().record(name));
        step.key(conn.keys().stage(name, slot, 0))
            .key(conn.keys().rebuild_records(name))
            .key(conn.keys().rebuild(name))
            .key(conn.keys().slot_geometry(name))
            .key(conn.keys().build_dense(board))
            .arg(board.version)
            .arg(token)
            .arg(LEASE_MS)
            .arg(slot)
            .arg(&cursor)
            .arg(MEMBERS_PER_CALL)
            .arg(board.config.windows()[window].seconds())
            .arg(keys::mode(board));
        // Idempotent: a step merges maxima, so one sent again changes nothing.
        let reply: Value = conn.script(&step, name, Retry::Idempotent).await?;
        let (next, counted) = scan_step(reply, "recompute_max_scan")?;
        calls += 1;
        members += counted;
        cursor = next;
        if cursor == "0" {
            return Ok((calls, members));
        }
    }
}

/// Renames the build over the window, the records and (dense) the tallies.
async fn swap(conn: &RedisConn, board: &Board, window: usize, token: &str) -> Result<()> {
    let name = &board.name;
    let mut call = conn
        .scripts()
        .recompute_max_swap
        .key(conn.keys().record(name));
    call.key(conn.keys().rebuild(name))
        .key(conn.keys().totals(name, board.config.windows(), window))
        .key(conn.keys().rebuild_records(name))
        .key(conn.keys().records(board))
        .key(conn.keys().window_dense(board, window))
        .key(conn.keys().build_dense(board))
        .arg(board.version)
        .arg(token)
        .arg(board.config.windows()[window].seconds());
    let _: String = conn.script(&call, name, Retry::Never).await?;
    Ok(())
}
