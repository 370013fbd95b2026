//! Member removal on a max, min or latest board in Redis, through `remove_max.lua`: a
//! begin deletes the member's record and window values at once and notes the removal in
//! the board record; clean steps then delete its values from the live slots, oldest
//! first, in batches. A removal left pending (its caller died) is finished by the next
//! removal or recompute of the board (docs/design.md, "Removing a member from a max, min
//! or latest board").

use redis::Value;

use crate::domain::board::Board;
use crate::domain::{Member, Removed};
use crate::error::{Error, Result};
use crate::store::redis::conn::reply::{array, int, string};
use crate::store::redis::conn::{RedisConn, Retry};

/// Slot hashes one clean step visits: an `HDEL` each.
const SLOTS_PER_CALL: usize = 256;
/// Pending removals of other members a removal finishes before giving up (busy).
const ATTEMPTS: usize = 4;

/// Removes `member` from the max, min or latest board `board`.
pub(crate) async fn remove_member(
    conn: &RedisConn,
    board: &Board,
    member: &Member,
) -> Result<Removed> {
    for _ in 0..ATTEMPTS {
        match begin(conn, board, member.as_str()).await? {
            Begun::Own(next) => {
                let slot_values = clean(conn, board, member.as_str(), next).await?;
                return Ok(Removed { slot_values });
            }
            Begun::Pending(other, next) => {
                clean(conn, board, &other, next).await?;
            }
        }
    }
    Err(Error::BoardBusy(board.name.to_string()))
}

/// Finishes the pending removal of `member` (a recompute found it).
pub(crate) async fn finish(conn: &RedisConn, board: &Board, member: &str) -> Result<()> {
    if let Begun::Own(next) = begin(conn, board, member).await? {
        clean(conn, board, member, next).await?;
    }
    Ok(())
}

enum Begun {
    /// This member's removal began (or was pending): clean from this slot on.
    Own(String),
    /// Another member's removal is pending: that member, and where its clean is.
    Pending(String, String),
}

async fn begin(conn: &RedisConn, board: &Board, member: &str) -> Result<Begun> {
    let name = &board.name;
    let windows = board.config.windows();
    let mut call = conn.scripts().remove_max.key(conn.keys().record(name));
    call.key(conn.keys().records(board))
        .key(conn.keys().data(name))
        .key(conn.keys().all_totals(name, windows))
        .key(conn.keys().all_dense(board))
        .arg(board.version)
        .arg("begin")
        .arg(member)
        .arg(windows.len());
    // Idempotent: sent again, it finds its own removal pending and answers where it is.
    let reply: Value = conn.script(&call, name, Retry::IdempotentWrite).await?;
    let items = array(reply, "remove_max begin")?;
    match items.as_slice() {
        [state, next] if string(state, "state")? == "begun" => {
            Ok(Begun::Own(string(next, "next")?))
        }
        [_, other, next] => Ok(Begun::Pending(
            string(other, "member")?,
            string(next, "next")?,
        )),
        _ => Err(Error::store(format!("remove_max answered {items:?}"))),
    }
}

/// Deletes `member`'s values from the live slots from `next` on: the values deleted.
async fn clean(conn: &RedisConn, board: &Board, member: &str, mut next: String) -> Result<u64> {
    let name = &board.name;
    let mut deleted = 0;
    loop {
        let from: i64 = next
            .parse()
            .map_err(|_| Error::store(format!("remove_max named slot {next:?}")))?;
        let slots: Vec<i64> = crate::store::redis::board::slot_index::live_slots(conn, name)
            .await?
            .into_iter()
            .filter(|s| *s >= from)
            .collect();
        // No live slot left still takes one step, the one that ends the removal.
        let batches: Vec<&[i64]> = if slots.is_empty() {
            vec![&[]]
        } else {
            slots.chunks(SLOTS_PER_CALL).collect()
        };
        let mut moved = None;
        for (b, batch) in batches.iter().enumerate() {
            let after = batches
                .get(b + 1)
                .map_or("end".to_owned(), |next| next[0].to_string());
            let mut call = conn.scripts().remove_max.key(conn.keys().record(name));
            call.key(conn.keys().slot_geometry(name));
            for slot in *batch {
                call.key(conn.keys().stage(name, *slot, 0));
            }
            call.arg(board.version)
                .arg("clean")
                .arg(member)
                .arg(&next)
                .arg(&after)
                .arg(*batch);
            // Idempotent: a step names where it expects the removal; sent again after it
            // ran, it finds the removal moved on and answers where.
            let reply: Value = conn.script(&call, name, Retry::IdempotentWrite).await?;
            let items = array(reply, "remove_max clean")?;
            match items.as_slice() {
                [state, n] if string(state, "state")? == "ok" => {
                    deleted += int(n, "deleted")? as u64;
                    next = after;
                }
                [state, at] if string(state, "state")? == "at" => {
                    moved = Some(string(at, "next")?);
                    break;
                }
                _ => return Ok(deleted),
            }
        }
        match moved {
            Some(at) => next = at,
            None => return Ok(deleted),
        }
    }
}
