//! Writes to a max board (a min board is one of negated values: the library negates
//! them), through `write_max.lua`: each caller's events combined per (slot, member) by
//! their highest value, in calls of at most [`PAIRS_PER_CALL`] pairs. Every step of the
//! script keeps a maximum, so a call applied twice leaves what it left once: calls are
//! sent again after a lost reply, and a write under an idempotency key or a token is
//! simply applied (docs/design.md, "Max and min boards").

use std::collections::{HashMap, HashSet};

use super::conn::{RedisConn, Retry};
use super::keys;
use crate::board::Board;
use crate::domain::Timestamp;
use crate::error::Result;
use crate::store::{SlotWrite, WriteStatus};

/// Distinct (slot, member) pairs per `write_max.lua` call: ~4 commands a pair, so a call
/// stays near a millisecond of Redis time.
const PAIRS_PER_CALL: usize = 256;

/// Applies `writes` to the max board `board` at `now`: one status per write, in order.
pub(super) async fn write(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    writes: &[SlotWrite],
) -> Result<Vec<WriteStatus>> {
    let mut highest: HashMap<(i64, &str), i64> = HashMap::new();
    let mut order = Vec::new();
    for w in writes {
        highest
            .entry((w.slot, w.member.as_str()))
            .and_modify(|v| *v = (*v).max(w.delta))
            .or_insert_with(|| {
                order.push((w.slot, w.member.as_str()));
                w.delta
            });
    }
    let mut too_late: HashSet<(i64, &str)> = HashSet::new();
    for chunk in order.chunks(PAIRS_PER_CALL) {
        let pairs: Vec<(i64, &str, i64)> = chunk
            .iter()
            .map(|&(slot, member)| (slot, member, highest[&(slot, member)]))
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

/// One `write_max.lua` call of `pairs` (slot, member, value): the slots found too late.
async fn call(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    pairs: &[(i64, &str, i64)],
) -> Result<Vec<i64>> {
    let (name, config) = (&board.name, &board.config);
    let windows = config.windows();
    let mut starts: Vec<i64> = Vec::new();
    let mut number: HashMap<i64, usize> = HashMap::new();
    for (slot, _, _) in pairs {
        number.entry(*slot).or_insert_with(|| {
            starts.push(*slot);
            starts.len()
        });
    }
    let mut invocation = conn.scripts().write_max.key(keys::record(name));
    invocation.key(keys::index(name)).key(keys::peaks(name));
    invocation.key(keys::all_totals(name, windows));
    for s in &starts {
        invocation.key(keys::stage(name, *s, 0));
    }
    invocation
        .arg(board.version)
        .arg(windows.len())
        .arg(starts.len());
    for w in windows {
        invocation.arg(w.seconds());
    }
    for j in 0..windows.len() {
        invocation.arg(config.cutoff(j, now));
    }
    invocation.arg(&starts);
    for (slot, member, value) in pairs {
        invocation.arg(number[slot]).arg(*member).arg(*value);
    }
    let late: Vec<usize> = conn.script(&invocation, name, Retry::Idempotent).await?;
    Ok(late.into_iter().map(|i| starts[i - 1]).collect())
}
