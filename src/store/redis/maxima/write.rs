//! Writes to a max board (a min board is one of negated values: the library negates
//! them) or a latest board, through `write_max.lua`: each caller's events combined per
//! (slot, member) by their highest value (a latest board: their newest event), in calls
//! of at most [`PAIRS_PER_CALL`] pairs. Every step of the script keeps a maximum, so a
//! call applied twice leaves what it left once: calls are sent again after a lost
//! reply, and a write under a job's token is simply applied. A write under an idempotency key
//! records each of its calls under its own name with the call's now and too-late slots,
//! so a retry applies only the calls not recorded and answers what the first one did
//! (docs/design.md, "Max and min boards", "Latest boards").

use std::collections::{HashMap, HashSet};

use redis::Value;

use crate::domain::board::Board;
use crate::domain::{Timestamp, WrittenStanding};
use crate::error::{Error, Result};
use crate::store::redis::conn::keys;
use crate::store::redis::conn::reply::{array, int, string};
use crate::store::redis::conn::{RedisConn, Retry};
use crate::store::redis::sums::standing::{distinct_members, standings};
use crate::store::redis::sums::write::{Slots, StandingReply, push_slot_args, standing_words};
use crate::store::{Keyed, Recorded, SlotWrite, WriteKey, WriteStatus};

/// Distinct (slot, member) pairs per `write_max.lua` call: the script reads and writes
/// them in bulk, a few µs of Redis time a pair, so a call stays near a millisecond.
const PAIRS_PER_CALL: usize = 256;

/// One (slot, member) pair of a call: its value, and its time (unix ms).
type Pair<'a> = (i64, &'a str, i64, i64);

/// Applies `writes` to the max or latest board `board` at `now`: one status per write,
/// in order.
pub(crate) async fn write(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    writes: &[SlotWrite],
) -> Result<Vec<WriteStatus>> {
    let combined = Combined::of(board, writes);
    let mut too_late = HashSet::new();
    for chunk in combined.order.chunks(PAIRS_PER_CALL) {
        let late = match call(conn, board, now, &combined.pairs(chunk), None, None)
            .await?
            .0
        {
            Reply::Late(late) => late,
            other => return Err(Error::store(format!("write_max answered {other:?}"))),
        };
        too_late.extend(chunk.iter().filter(|(slot, _)| late.contains(slot)));
    }
    Ok(statuses(writes, &too_late))
}

/// Applies `writes` once for `key` (see `Store::write_keyed`): each call recorded under
/// its own name (`<key>`, `<key>\x1f<n>` for the n-th), so a retry applies the calls
/// not recorded and answers the others from their records.
pub(crate) async fn write_keyed(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    writes: &[SlotWrite],
    key: &WriteKey,
) -> Result<Keyed> {
    let combined = Combined::of(board, writes);
    // Even a write with no events makes one call, so that it is recorded.
    let chunks: Vec<&[(i64, &str)]> = if combined.order.is_empty() {
        vec![&[]]
    } else {
        combined.order.chunks(PAIRS_PER_CALL).collect()
    };
    let (mut too_late, mut applied) = (HashSet::new(), false);
    for (n, chunk) in chunks.into_iter().enumerate() {
        let name = if n == 0 {
            key.name.clone()
        } else {
            format!("{}\u{1f}{n}", key.name)
        };
        let guard = (key, name.as_str());
        let pairs = combined.pairs(chunk);
        let late = match call(conn, board, now, &pairs, Some(guard), None).await?.0 {
            Reply::Applied(late) => {
                applied = true;
                late
            }
            Reply::Recorded(late) => late,
            Reply::Found(first) => {
                return Ok(Keyed::Replayed {
                    now: first,
                    recorded: Recorded::TooLateSlots(Vec::new()),
                });
            }
            Reply::Reused => return Ok(Keyed::Reused),
            Reply::Late(_) => return Err(Error::store("write_max answered unkeyed")),
        };
        too_late.extend(chunk.iter().filter(|(slot, _)| late.contains(slot)));
    }
    let statuses = statuses(writes, &too_late);
    if applied {
        return Ok(Keyed::Applied(statuses));
    }
    Ok(Keyed::Replayed {
        now,
        recorded: Recorded::Statuses(statuses),
    })
}

/// Applies `writes` in one call answering the standing of each distinct member in
/// `windows` (see `Store::write_standing`; a standing write is at most 100 events, so
/// one call). Under a key the call finds recorded (a replay), the write goes the keyed
/// way and answers no standing.
pub(crate) async fn write_standing(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    writes: &[SlotWrite],
    windows: &[usize],
    key: Option<&WriteKey>,
) -> Result<(Keyed, Vec<WrittenStanding>)> {
    let combined = Combined::of(board, writes);
    if combined.order.len() > PAIRS_PER_CALL {
        return Err(Error::store(format!(
            "a standing write of {} pairs is more than one call",
            combined.order.len()
        )));
    }
    let pairs = combined.pairs(&combined.order);
    let guard = key.map(|key| (key, key.name.as_str()));
    let (reply, standing) = call(conn, board, now, &pairs, guard, Some(windows)).await?;
    let late = match reply {
        Reply::Late(late) | Reply::Applied(late) => late,
        _ => {
            let key = key.expect("only a keyed call answers otherwise");
            return Ok((
                write_keyed(conn, board, now, writes, key).await?,
                Vec::new(),
            ));
        }
    };
    let too_late = combined
        .order
        .iter()
        .filter(|(slot, _)| late.contains(slot))
        .copied()
        .collect();
    let members = distinct_members(writes);
    let standings = standings(board, &members, windows, standing)?;
    Ok((Keyed::Applied(statuses(writes, &too_late)), standings))
}

/// A caller's events combined per (slot, member): the event kept of each pair (the
/// highest value, or on a latest board the newest), pairs in order of first appearance.
struct Combined<'a> {
    kept: HashMap<(i64, &'a str), &'a SlotWrite>,
    order: Vec<(i64, &'a str)>,
}

impl<'a> Combined<'a> {
    fn of(board: &Board, writes: &'a [SlotWrite]) -> Self {
        let latest = board.config.aggregate().latest();
        let rank = |w: &SlotWrite| {
            if latest {
                (w.at, w.delta)
            } else {
                (w.delta, w.at)
            }
        };
        let mut kept: HashMap<(i64, &str), &SlotWrite> = HashMap::new();
        let mut order = Vec::new();
        for w in writes {
            kept.entry((w.slot, w.member.as_str()))
                .and_modify(|k| {
                    if rank(w) > rank(k) {
                        *k = w;
                    }
                })
                .or_insert_with(|| {
                    order.push((w.slot, w.member.as_str()));
                    w
                });
        }
        Combined { kept, order }
    }

    fn pairs(&self, chunk: &[(i64, &'a str)]) -> Vec<Pair<'a>> {
        chunk
            .iter()
            .map(|&(slot, member)| {
                let w = self.kept[&(slot, member)];
                (slot, member, w.delta, w.at)
            })
            .collect()
    }
}

/// Each write's status: too late when its (slot, member) pair was.
fn statuses(writes: &[SlotWrite], too_late: &HashSet<(i64, &str)>) -> Vec<WriteStatus> {
    writes
        .iter()
        .map(|w| {
            if too_late.contains(&(w.slot, w.member.as_str())) {
                WriteStatus::TooLate
            } else {
                WriteStatus::Applied
            }
        })
        .collect()
}

/// What a `write_max.lua` call answered.
#[derive(Debug)]
enum Reply {
    /// Unkeyed: applied, these slots too late.
    Late(Vec<i64>),
    /// Keyed, applied and recorded now: these slots too late.
    Applied(Vec<i64>),
    /// Keyed, recorded by an earlier call at the same now: these slots were too late.
    Recorded(Vec<i64>),
    /// Keyed, recorded by an earlier call at another now: admit the events again at it.
    Found(Timestamp),
    /// The key records another write.
    Reused,
}

/// One `write_max.lua` call of `pairs`, under `guard` (the write's key and this call's
/// record name) when keyed, answering the standing in `standing`'s windows when asked
/// (the standing part of the reply, when the call applied its pairs).
async fn call(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    pairs: &[Pair<'_>],
    guard: Option<(&WriteKey, &str)>,
    standing: Option<&[usize]>,
) -> Result<(Reply, StandingReply)> {
    let name = &board.name;
    let windows = board.config.windows();
    let slots = Slots::of(pairs.iter().map(|(slot, ..)| *slot));
    let mut invocation = conn.scripts().write_max.key(conn.keys().record(name));
    invocation
        .key(conn.keys().index(name))
        .key(conn.keys().records(board));
    invocation
        .key(conn.keys().rebuild_records(name))
        .key(conn.keys().rebuild(name));
    invocation.key(match guard {
        Some((_, call_name)) => conn.keys().idempotency(board, call_name),
        None => conn.keys().record(name),
    });
    invocation.key(conn.keys().slot_geometry(name));
    invocation.key(conn.keys().all_totals(name, windows));
    for s in &slots.starts {
        invocation.key(conn.keys().stage(name, *s, 0));
    }
    invocation.key(conn.keys().all_dense(board));
    let mut mode = keys::mode(board).to_owned();
    if let Some((key, _)) = guard {
        let (now_ms, ttl_ms) = (now.unix_millis(), key.ttl.seconds() as i64 * 1000);
        let deadline = now_ms + ttl_ms;
        mode.push_str(&format!(
            " key:{}:{now_ms}:{deadline}:{ttl_ms}",
            key.fingerprint
        ));
    }
    if let Some(windows) = standing {
        let words = standing_words(board, windows);
        mode.push_str(&format!(" standing:{}", words.trim().replace(' ', ":")));
    }
    invocation
        .arg(board.version)
        .arg(windows.len())
        .arg(slots.starts.len())
        .arg(mode);
    push_slot_args(&mut invocation, board, now, &slots);
    let latest = board.config.aggregate().latest();
    for (slot, member, value, at) in pairs {
        invocation.arg(slots.numbers[slot]).arg(*member).arg(*value);
        if latest {
            invocation.arg(*at);
        }
    }
    // Idempotent: sent again, a call merges the same maxima (a keyed one finds its record).
    let reply: Value = conn
        .script(&invocation, name, Retry::IdempotentWrite)
        .await?;
    let mut items = array(reply, "write_max")?;
    // A call that applied its pairs ends with its standing, when asked.
    let applied = match (guard, items.first()) {
        (None, _) => true,
        (Some(_), Some(tag)) => string(tag, "state")? == "applied",
        (Some(_), None) => false,
    };
    let standing = match (standing, applied) {
        (Some(_), true) => match items.pop() {
            Some(Value::Array(flat)) => Some(flat),
            other => {
                return Err(Error::store(format!(
                    "write_max answered {other:?} for a standing"
                )));
            }
        },
        _ => None,
    };
    let numbers =
        |items: &[Value]| -> Result<Vec<i64>> { items.iter().map(|v| int(v, "slot")).collect() };
    if guard.is_none() {
        let late = numbers(&items)?;
        let late = late.into_iter().map(|i| slots.starts[i as usize - 1]);
        return Ok((Reply::Late(late.collect()), standing));
    }
    let Some(tag) = items.first() else {
        return Err(Error::store("write_max answered nothing to a keyed call"));
    };
    let reply = match string(tag, "state")?.as_str() {
        "applied" => Reply::Applied(numbers(&items[1..])?),
        "recorded" => Reply::Recorded(numbers(&items[1..])?),
        "found" => Reply::Found(Timestamp::from_unix_millis(int(&items[1], "now")?)?),
        "reused" => Reply::Reused,
        other => return Err(Error::store(format!("write_max answered {other:?}"))),
    };
    Ok((reply, standing))
}
