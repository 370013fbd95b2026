//! Member data (`data_{<board>}`, a hash: member → compact JSON text): set where the
//! member holds a total in the largest window (`data_set.lua`, one atomic check and set),
//! read and deleted by single-key commands. The scripts that take a member's total in
//! the largest window to 0 delete its data in the same call (`docs/design.md`, "Member
//! data").

use super::conn::{RedisConn, Retry};
use super::keys;
use crate::board::Board;
use crate::domain::{Member, MemberData};
use crate::error::Result;

/// Entries one `data_set.lua` call sets at most: each is a ZSCORE and part of one HSET
/// of at most 1 KiB, so a call stays well under a millisecond.
const ENTRIES_PER_CALL: usize = 256;

/// Sets each member's data where it holds a total in the largest window; `true` where
/// set. Idempotent: setting the same data twice is setting it once. In calls of at most
/// [`ENTRIES_PER_CALL`] entries, in order (so a member named twice keeps the later).
pub(super) async fn set(
    conn: &RedisConn,
    board: &Board,
    entries: &[(Member, MemberData)],
) -> Result<Vec<bool>> {
    let mut answers = Vec::with_capacity(entries.len());
    for chunk in entries.chunks(ENTRIES_PER_CALL) {
        answers.extend(set_chunk(conn, board, chunk).await?);
    }
    Ok(answers)
}

async fn set_chunk(
    conn: &RedisConn,
    board: &Board,
    entries: &[(Member, MemberData)],
) -> Result<Vec<bool>> {
    let windows = board.config.windows();
    let mut invocation = conn.scripts().data_set.key(keys::record(&board.name));
    invocation
        .key(keys::totals(&board.name, windows, windows.len() - 1))
        .key(keys::data(&board.name))
        .arg(board.version);
    for (member, data) in entries {
        invocation.arg(member.as_str()).arg(data.as_str());
    }
    let set: Vec<i64> = conn
        .script(&invocation, &board.name, Retry::Idempotent)
        .await?;
    Ok(set.into_iter().map(|s| s == 1).collect())
}

/// The data of each of `members`, in order (one HMGET: a read, Idempotent).
pub(super) async fn get(
    conn: &RedisConn,
    board: &Board,
    members: &[Member],
) -> Result<Vec<Option<MemberData>>> {
    if members.is_empty() {
        return Ok(Vec::new());
    }
    let mut cmd = redis::cmd("HMGET");
    cmd.arg(keys::data(&board.name));
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
pub(super) async fn delete(conn: &RedisConn, board: &Board, member: &Member) -> Result<bool> {
    let deleted: i64 = conn
        .query(
            redis::cmd("HDEL")
                .arg(keys::data(&board.name))
                .arg(member.as_str()),
            Some(&board.name),
            Retry::Idempotent,
        )
        .await?;
    Ok(deleted == 1)
}
