//! The review gate on Redis (`lua/review.lua`; docs/design.md, "Review gate"): setting
//! it (`review_set.lua`), a moderator's decision (`review_decide.lua`), the members it
//! holds (`read_hidden.lua`), and the stream of the members it held with the review
//! webhook's cursor (`board_{b}:held`, `cursor_delivered.lua`).

use crate::domain::Timestamp;
use crate::domain::board::{Board, WindowAt};
use crate::domain::{Decision, HeldEvent, HeldMember, Member};
use crate::error::Result;
use crate::store::redis::conn::{RedisConn, Retry};
use crate::store::redis::sums::hide::{number, read_hidden};

/// Sets, changes or clears the board's review gate (`review_set.lua`).
pub(crate) async fn set_review(conn: &RedisConn, board: &Board, review: Option<u32>) -> Result<()> {
    let mut invocation = conn
        .scripts()
        .review_set
        .key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().all_totals(&board.name, board.config.windows()))
        .arg(board.version)
        .arg(review.map(|k| k.to_string()).unwrap_or_default());
    // Idempotent: sent again, it lets go and holds the same members.
    let _: i64 = conn
        .script(&invocation, &board.name, Retry::IdempotentWrite)
        .await?;
    Ok(())
}

/// A moderator's decision on `member` (`review_decide.lua`): whether it changed anything.
pub(crate) async fn decide(
    conn: &RedisConn,
    board: &Board,
    member: &Member,
    decision: Decision,
    now: Timestamp,
) -> Result<bool> {
    let mut invocation = conn
        .scripts()
        .review_decide
        .key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().all_totals(&board.name, board.config.windows()))
        .arg(super::changes::stamped_version(board, now, None))
        .arg(decision.as_str())
        .arg(member.as_str());
    // Idempotent: a replay finds the decision made and changes nothing.
    let n: i64 = conn
        .script(&invocation, &board.name, Retry::IdempotentWrite)
        .await?;
    Ok(n == 1)
}

/// The members the board's review gate holds, with their totals and would-be ranks in
/// `at`'s window (one `read_hidden.lua` call), in ranked order.
pub(crate) async fn held_members(conn: &RedisConn, at: WindowAt<'_>) -> Result<Vec<HeldMember>> {
    let invocation = read_hidden(conn, at, "held");
    let flat: Vec<(String, String, String)> = conn.read_script(&invocation, &at.board.name).await?;
    let mut held = Vec::with_capacity(flat.len());
    for (member, total, rank) in flat {
        held.push(HeldMember {
            member,
            score: number(total)?,
            rank: number(rank)?.map(|r| r as u64),
        });
    }
    Ok(crate::store::ranked_held(held))
}

/// Up to `limit` members the board's gate held after the event `after` (from the oldest
/// kept when `None`), oldest first (`XRANGE` of `board_{b}:held`).
pub(crate) async fn held_events(
    conn: &RedisConn,
    board: &Board,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<HeldEvent>> {
    let mut cmd = redis::cmd("XRANGE");
    cmd.arg(format!("{}:held", conn.keys().record(&board.name)))
        .arg(after.map_or("-".to_owned(), |id| format!("({id}")))
        .arg("+")
        .arg("COUNT")
        .arg(limit);
    let entries: Vec<(String, Vec<String>)> = conn
        .query(&cmd, Some(&board.name), Retry::Idempotent)
        .await?;
    entries
        .into_iter()
        .map(|(id, fields)| {
            let member = fields.get(1).cloned().unwrap_or_default();
            HeldEvent::new(board.name.to_string(), id, member)
        })
        .collect()
}

/// The review webhook's cursor of the board (`cursor_delivered.lua` on
/// `board_{b}:held_sent`), first moved up to `delivered` when given.
pub(crate) async fn held_cursor(
    conn: &RedisConn,
    board: &Board,
    delivered: Option<&str>,
) -> Result<Option<String>> {
    cursor(conn, board, "held_sent", delivered).await
}

/// A webhook's cursor of a board's stream, `board_{b}:<name>` (`cursor_delivered.lua`),
/// first moved up to `delivered` when given.
pub(crate) async fn cursor(
    conn: &RedisConn,
    board: &Board,
    name: &str,
    delivered: Option<&str>,
) -> Result<Option<String>> {
    let record = conn.keys().record(&board.name);
    let mut invocation = conn.scripts().cursor_delivered.key(&record);
    invocation.key(format!("{record}:{name}"));
    invocation.arg(board.version).arg(delivered.unwrap_or(""));
    // Idempotent: the cursor never moves back.
    let cursor: Option<String> = conn
        .script(&invocation, &board.name, Retry::IdempotentWrite)
        .await?;
    Ok(cursor)
}
