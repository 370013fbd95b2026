//! Writes to a max board (a min board is one of negated values: the library negates
//! them) or a latest board, through `write_max.lua`: each caller's events combined per
//! (slot, member) by their highest value (a latest board: their newest event), in calls
//! of at most [`PAIRS_PER_CALL`] pairs. Every step of the script keeps a maximum, so a
//! call applied twice leaves what it left once: calls are sent again after a lost
//! reply, and a write under an idempotency key or a token is simply applied
//! (docs/design.md, "Max and min boards", "Latest boards").

use std::collections::{HashMap, HashSet};

use super::conn::{RedisConn, Retry};
use super::keys;
use super::write::{Slots, push_slot_args};
use crate::board::Board;
use crate::domain::Timestamp;
use crate::error::Result;
use crate::store::{SlotWrite, WriteStatus};

/// Distinct (slot, member) pairs per `write_max.lua` call: the script reads and writes
/// them in bulk, a few µs of Redis time a pair, so a call stays near a millisecond.
const PAIRS_PER_CALL: usize = 256;

/// One (slot, member) pair of a call: its value, and its time (unix ms).
type Pair<'a> = (i64, &'a str, i64, i64);

/// Applies `writes` to the max or latest board `board` at `now`: one status per write,
/// in order.
pub(super) async fn write(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    writes: &[SlotWrite],
) -> Result<Vec<WriteStatus>> {
    // Per pair, the event kept: the highest value, or (a latest board) the newest.
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
    let mut too_late: HashSet<(i64, &str)> = HashSet::new();
    for chunk in order.chunks(PAIRS_PER_CALL) {
        let pairs: Vec<Pair> = chunk
            .iter()
            .map(|&(slot, member)| {
                let w = kept[&(slot, member)];
                (slot, member, w.delta, w.at)
            })
            .collect();
        let late = call(conn, board, now, &pairs).await?;
        too_late.extend(
            chunk
                .iter()
                .filter(|(slot, _)| late.contains(slot))
                .copied(),
        );
    }
    Ok(writes
        .iter()
        .map(|w| {
            if too_late.contains(&(w.slot, w.member.as_str())) {
                WriteStatus::TooLate
            } else {
                WriteStatus::Applied
            }
        })
        .collect())
}

/// One `write_max.lua` call of `pairs`: the slots found too late.
async fn call(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    pairs: &[Pair<'_>],
) -> Result<Vec<i64>> {
    let name = &board.name;
    let windows = board.config.windows();
    let slots = Slots::of(pairs.iter().map(|(slot, ..)| *slot));
    let mut invocation = conn.scripts().write_max.key(keys::record(name));
    invocation.key(keys::index(name)).key(keys::records(board));
    invocation
        .key(keys::rebuild_records(name))
        .key(keys::rebuild(name));
    invocation.key(keys::all_totals(name, windows));
    for s in &slots.starts {
        invocation.key(keys::stage(name, *s, 0));
    }
    invocation.key(keys::all_dense(board));
    invocation
        .arg(board.version)
        .arg(windows.len())
        .arg(slots.starts.len())
        .arg(keys::mode(board));
    push_slot_args(&mut invocation, board, now, &slots);
    let latest = board.config.aggregate().latest();
    for (slot, member, value, at) in pairs {
        invocation.arg(slots.numbers[slot]).arg(*member).arg(*value);
        if latest {
            invocation.arg(*at);
        }
    }
    let late: Vec<usize> = conn.script(&invocation, name, Retry::Idempotent).await?;
    Ok(late.into_iter().map(|i| slots.starts[i - 1]).collect())
}
