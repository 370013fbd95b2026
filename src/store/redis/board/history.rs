//! A member's history in Redis: its value in every live slot from the largest window's
//! start, through `history.lua`, which sums all stages of its slots in one atomic call,
//! so a value that retirement moves from one stage to the next is counted exactly once.
//! Every call is a read ([`Retry::Idempotent`]).

use redis::Value;

use crate::domain::board::Board;
use crate::domain::{History, Member, Point, Timestamp};
use crate::domain::{WindowState, coverage};
use crate::error::{Error, Result};
use crate::store::redis::conn::reply::{array, int, opt_int, string};
use crate::store::redis::conn::{RedisConn, Retry};

/// Stage keys one `history.lua` call reads at most (about a microsecond each), so every
/// call stays short however many live slots the largest window holds.
const HISTORY_KEYS_PER_CALL: usize = 1024;

/// What `history.lua` answered.
enum HistoryReply {
    /// The member's non-zero points in the range, and the newest live slot.
    Points {
        newest: Option<i64>,
        points: Vec<Point>,
    },
    /// The range holds slots that were not passed: the live slots from its lower bound.
    Slots(Vec<i64>),
}

/// The member's points in every live slot from the largest window's start, in calls of
/// at most [`HISTORY_KEYS_PER_CALL`] stage keys over consecutive ranges of slots; each
/// call sums all stages of its slots atomically, so a value that retirement moves from
/// one stage to the next is counted exactly once.
pub(crate) async fn history(
    conn: &RedisConn,
    board: &Board,
    slot_form: &str,
    now: Timestamp,
    member: &Member,
) -> Result<History> {
    let config = &board.config;
    let largest = config.windows().len() - 1;
    let from = config.window_start(largest, now);
    let per_call = (HISTORY_KEYS_PER_CALL / config.windows().len()).max(1);
    let mut lower = from;
    // Live slots from `lower` on, as last listed: the first `per_call` go in the next call.
    let mut listed: Vec<i64> = Vec::new();
    let mut points = Vec::new();
    let newest = loop {
        let upper = listed.get(per_call).copied();
        let passed = &listed[..listed.len().min(per_call)];
        let range = (lower, upper, passed);
        match history_range(conn, board, slot_form, member, range, per_call + 1).await? {
            HistoryReply::Slots(slots) => listed = slots,
            HistoryReply::Points {
                newest,
                points: found,
            } => {
                points.extend(found);
                let Some(upper) = upper else {
                    break newest;
                };
                listed.drain(..per_call);
                lower = upper;
            }
        }
    };
    Ok(History {
        member: member.to_string(),
        slot: config.slot(),
        from,
        to: coverage(config, largest, now, None, newest, WindowState::default()).1,
        points,
    })
}

/// One `history.lua` call over the slots in `[lower, upper)` (`upper` `None`: no bound).
async fn history_range(
    conn: &RedisConn,
    board: &Board,
    slot_form: &str,
    member: &Member,
    (lower, upper, slots): (i64, Option<i64>, &[i64]),
    listing: usize,
) -> Result<HistoryReply> {
    let mut invocation = conn.scripts().history.key(conn.keys().record(&board.name));
    invocation.key(conn.keys().index(&board.name));
    invocation.key(conn.keys().slot_geometry(&board.name));
    for slot in slots {
        for key in conn.keys().stages(board, *slot) {
            invocation.key(key);
        }
    }
    invocation
        .arg(board.version)
        .arg(lower)
        .arg(upper.map_or_else(|| "+inf".to_owned(), |u| format!("({u}")))
        .arg(member.as_str())
        .arg(slot_form)
        .arg(listing)
        .arg(slots);
    let reply: Value = conn
        .script(&invocation, &board.name, Retry::Idempotent)
        .await?;
    let items = array(reply, "history")?;
    let [kind, newest, rest @ ..] = items.as_slice() else {
        return Err(Error::store("history answered too little"));
    };
    match string(kind, "history reply")?.as_str() {
        "slots" => Ok(HistoryReply::Slots(
            rest.iter().map(|s| int(s, "slot")).collect::<Result<_>>()?,
        )),
        "points" => Ok(HistoryReply::Points {
            newest: opt_int(newest, "newest slot")?,
            points: rest
                .chunks(2)
                .map(|p| match p {
                    [slot, value] => Ok(Point {
                        slot: int(slot, "slot")?,
                        value: int(value, "value")?,
                    }),
                    _ => Err(Error::store("history answered a partial point")),
                })
                .collect::<Result<_>>()?,
        }),
        other => Err(Error::store(format!("history answered {other:?}"))),
    }
}
