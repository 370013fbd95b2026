//! Member data (`data_{<board>}`, a hash: member → compact JSON text): set where the
//! member holds a total in the largest window (`data_set.lua`, one atomic check and set),
//! read and deleted by single-key commands. The scripts that take a member's total in
//! the largest window to 0 delete its data in the same call (`docs/design.md`, "Member
//! data").

use std::collections::HashMap;

use futures_util::future::try_join_all;

use crate::domain::board::Board;
use crate::domain::{Member, MemberData};
use crate::error::Result;
use crate::store::redis::conn::{RedisConn, Retry};

/// Entries one `data_set.lua` call sets at most: each is a ZSCORE and part of one HSET
/// of at most 1 KiB, so a call stays well under a millisecond.
const ENTRIES_PER_CALL: usize = 256;

/// Calls in flight at once (one connection, so they travel together: about one round
/// trip for a write's data).
const CALLS_IN_FLIGHT: usize = 8;

/// Sets each member's data where it holds a total in the largest window; `true` where
/// set. Idempotent: setting the same data twice is setting it once. A member named twice
/// keeps the later data (it is sent once), so the calls, of at most
/// [`ENTRIES_PER_CALL`] distinct members each, may run at once.
pub(crate) async fn set(
    conn: &RedisConn,
    board: &Board,
    entries: &[(Member, MemberData)],
) -> Result<Vec<bool>> {
    // The last entry of each member, in order of first appearance.
    let mut last: HashMap<&str, usize> = HashMap::with_capacity(entries.len());
    let mut distinct: Vec<&str> = Vec::with_capacity(entries.len());
    for (x, (member, _)) in entries.iter().enumerate() {
        if last.insert(member.as_str(), x).is_none() {
            distinct.push(member.as_str());
        }
    }
    let sent: Vec<(Member, MemberData)> =
        distinct.iter().map(|m| entries[last[m]].clone()).collect();
    let mut answers: Vec<Vec<bool>> = Vec::new();
    for group in sent.chunks(ENTRIES_PER_CALL * CALLS_IN_FLIGHT) {
        let mut calls = Vec::new();
        for chunk in group.chunks(ENTRIES_PER_CALL) {
            calls.push(set_chunk(conn, board, chunk));
        }
        answers.extend(try_join_all(calls).await?);
    }
    let set: HashMap<&str, bool> = distinct
        .iter()
        .copied()
        .zip(answers.into_iter().flatten())
        .collect();
    Ok(entries.iter().map(|(m, _)| set[m.as_str()]).collect())
}

async fn set_chunk(
    conn: &RedisConn,
    board: &Board,
    entries: &[(Member, MemberData)],
) -> Result<Vec<bool>> {
    let windows = board.config.windows();
    let mut invocation = conn.scripts().data_set.key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().totals(&board.name, windows, windows.len() - 1))
        .key(conn.keys().data(&board.name))
        .arg(board.version);
    for (member, data) in entries {
        invocation.arg(member.as_str()).arg(data.as_str());
    }
    let set: Vec<i64> = conn
        .script(&invocation, &board.name, Retry::IdempotentWrite)
        .await?;
    Ok(set.into_iter().map(|s| s == 1).collect())
}

/// The data of each of `members`, in order (one HMGET: a read, Idempotent).
pub(crate) async fn get(
    conn: &RedisConn,
    board: &Board,
    members: &[Member],
) -> Result<Vec<Option<MemberData>>> {
    if members.is_empty() {
        return Ok(Vec::new());
    }
    let mut cmd = redis::cmd("HMGET");
    cmd.arg(conn.keys().data(&board.name));
    for member in members {
        cmd.arg(member.as_str());
    }
    let found: Vec<Option<String>> = conn
        .query(&cmd, Some(&board.name), Retry::Idempotent)
        .await?;
    Ok(found
        .into_iter()
        .map(|d| d.map(MemberData::stored))
        .collect())
}

/// Deletes the member's data: whether it had any (HDEL: a replay finds nothing, so
/// Idempotent; its answer may then say `false`).
pub(crate) async fn delete(conn: &RedisConn, board: &Board, member: &Member) -> Result<bool> {
    let deleted: i64 = conn
        .query(
            redis::cmd("HDEL")
                .arg(conn.keys().data(&board.name))
                .arg(member.as_str()),
            Some(&board.name),
            Retry::IdempotentWrite,
        )
        .await?;
    Ok(deleted == 1)
}

/// Fields a `data_sweep.lua` step scans (an HSCAN COUNT): each is a ZMSCORE entry, so a
/// step stays well under a millisecond.
const SWEEP_COUNT: usize = 256;

/// Deletes the data of every member that holds no total in the largest window, in bounded
/// steps (`data_sweep.lua`); the number deleted. Run after a recompute of the largest
/// window: its rebuilt totals may leave out a member whose total was drift.
pub(crate) async fn sweep(conn: &RedisConn, board: &Board) -> Result<u64> {
    let windows = board.config.windows();
    let (mut cursor, mut deleted) = ("0".to_owned(), 0);
    loop {
        let mut step = conn
            .scripts()
            .data_sweep
            .key(conn.keys().record(&board.name));
        step.key(conn.keys().totals(&board.name, windows, windows.len() - 1))
            .key(conn.keys().data(&board.name))
            .arg(board.version)
            .arg(&cursor)
            .arg(SWEEP_COUNT);
        let (next, gone): (String, u64) = conn
            .script(&step, &board.name, Retry::IdempotentWrite)
            .await?;
        deleted += gone;
        if next == "0" {
            return Ok(deleted);
        }
        cursor = next;
    }
}
