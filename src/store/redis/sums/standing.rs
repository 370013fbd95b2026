//! Writes that answer their standing (`Store::write_standing`): one `write.lua` call with
//! no budget, outside group commit (as once-only writes are), that reads each written
//! member's total and rank in the windows asked before applying anything and after
//! (`write.lua`'s Standing), so no other write comes between the two reads and the write.
//! Ordinary writes never carry the standing words and pay nothing for them.

use redis::Value;

use super::budget::Budget;
use super::once;
use super::write::{StandingReply, apply_standing};
use super::write_call::{Answer, Key, Unguarded, WriteCall, Writes};
use crate::domain::board::{Board, SlotWrites};
use crate::domain::{WindowStanding, WrittenStanding};
use crate::error::{Error, Result};
use crate::store::redis::conn::RedisConn;
use crate::store::redis::conn::reply::{int, opt_int};
use crate::store::{Keyed, SlotWrite, WriteKey};

/// Applies `writes` in one call answering the standing of each distinct member in
/// `windows` (see `Store::write_standing`). Under a key whose record the call finds
/// (a replay), the write goes the keyed way (`once::write_keyed`, which follows the
/// records) and answers no standing.
pub(crate) async fn write_standing(
    conn: &RedisConn,
    budget: &Budget,
    w: SlotWrites<'_>,
    windows: &[usize],
    key: Option<&WriteKey>,
) -> Result<(Keyed, Vec<WrittenStanding>)> {
    let SlotWrites { board, now, writes } = w;
    let all = Writes::of(&writes);
    let members = distinct_members(&writes);
    let (statuses, reply) = match key {
        None => {
            let call = WriteCall {
                board,
                now,
                guard: Unguarded,
                budget: None,
                standing: Some(windows),
            };
            match apply_standing(conn, &call, &all).await? {
                Answer::Did(did) => did,
                Answer::Found(never) => match never {},
            }
        }
        Some(key) => {
            // The first call of a keyed write is recorded under the key itself (a
            // standing write is one call: at most 100 events, within one span).
            let call = WriteCall {
                board,
                now,
                guard: Key(key),
                budget: None,
                standing: Some(windows),
            };
            match apply_standing(conn, &call, &all).await? {
                Answer::Did(did) => did,
                Answer::Found(_) => {
                    let keyed =
                        once::write_keyed(conn, budget, board.writing(now, writes), key).await?;
                    return Ok((keyed, Vec::new()));
                }
            }
        }
    };
    if statuses.len() != writes.len() {
        return Err(Error::store(format!(
            "write.lua applied {} of {} events of a standing write, which has no budget",
            statuses.len(),
            writes.len()
        )));
    }
    let standings = standings(board, &members, windows, reply)?;
    Ok((Keyed::Applied(statuses), standings))
}

/// The distinct members of `writes`, in order of first appearance (as `write.lua` reads
/// them from its entries).
pub(crate) fn distinct_members(writes: &[SlotWrite]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    writes
        .iter()
        .filter(|w| seen.insert(w.member.as_str()))
        .map(|w| w.member.to_string())
        .collect()
}

/// The standing part of the reply, per member and window.
pub(crate) fn standings(
    board: &Board,
    members: &[String],
    windows: &[usize],
    reply: StandingReply,
) -> Result<Vec<WrittenStanding>> {
    let values = reply.unwrap_or_default();
    if values.len() != 4 * members.len() * windows.len() {
        return Err(Error::store(format!(
            "write.lua answered {} standing values for {} members in {} windows",
            values.len(),
            members.len(),
            windows.len()
        )));
    }
    let rank =
        |v: &Value| -> Result<Option<u64>> { Ok(opt_int(v, "rank")?.map(|r| r.unsigned_abs())) };
    let mut quads = values.chunks(4);
    members
        .iter()
        .map(|member| {
            let windows = windows
                .iter()
                .map(|j| {
                    let q = quads.next().expect("counted above");
                    Ok(WindowStanding {
                        window: board.config.windows()[*j],
                        score_before: Some(int(&q[0], "score")?),
                        rank_before: rank(&q[1])?,
                        score: int(&q[2], "score")?,
                        rank: rank(&q[3])?,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(WrittenStanding {
                member: member.clone(),
                windows,
            })
        })
        .collect()
}
