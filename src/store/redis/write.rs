//! Writes to Redis: a batch of events in one `write.lua` call, and member removal.

use std::collections::HashMap;

use super::RedisStore;
use super::keys;
use crate::board::Board;
use crate::domain::{Member, Timestamp};
use crate::error::{Error, Result};
use crate::store::{SlotWrite, WriteStatus};
use crate::write::Removed;

/// Slots whose stage hashes one `remove_member.lua` call visits.
const REMOVE_SLOTS_PER_CALL: usize = 64;

pub(super) async fn write(
    store: &RedisStore,
    board: &Board,
    now: Timestamp,
    writes: &[SlotWrite],
) -> Result<Vec<WriteStatus>> {
    if writes.is_empty() {
        return Ok(Vec::new());
    }
    let config = &board.config;
    let windows = config.windows();

    // Distinct slots, in order of first appearance; events refer to them by number.
    let mut slots: Vec<i64> = Vec::new();
    let mut slot_number: HashMap<i64, usize> = HashMap::new();
    for w in writes {
        slot_number.entry(w.slot).or_insert_with(|| {
            slots.push(w.slot);
            slots.len()
        });
    }

    let mut invocation = store.scripts.write.key(keys::record(&board.name));
    invocation.key(keys::index(&board.name));
    invocation.key(keys::all_totals(&board.name, windows));
    for s in &slots {
        invocation.key(keys::stages(board, *s).collect::<Vec<_>>());
    }
    invocation
        .arg(board.version)
        .arg(windows.len())
        .arg(slots.len());
    invocation.arg(windows.iter().map(|w| w.seconds()).collect::<Vec<_>>());
    invocation.arg(
        (0..windows.len())
            .map(|j| config.cutoff(j, now))
            .collect::<Vec<_>>(),
    );
    invocation.arg(&slots);
    // With one slot the slot number is implied: pairs instead of triples.
    let single_slot = slots.len() == 1;
    for w in writes {
        if !single_slot {
            invocation.arg(slot_number[&w.slot]);
        }
        invocation.arg(w.member.as_str()).arg(w.delta);
    }

    let reply: Vec<i64> = store.invoke(&invocation, &board.name, false).await?;
    parse_statuses(&reply, writes, &slot_number)
}

/// Reads `write.lua`'s reply: `[0, too-late slot numbers…]` (fast path) or
/// `[1, status per event…]` (exact path).
fn parse_statuses(
    reply: &[i64],
    writes: &[SlotWrite],
    slot_number: &HashMap<i64, usize>,
) -> Result<Vec<WriteStatus>> {
    let bad = || {
        Error::Store(format!(
            "write.lua answered {reply:?} for {} events",
            writes.len()
        ))
    };
    match reply.split_first() {
        Some((0, too_late)) => Ok(writes
            .iter()
            .map(|w| {
                if too_late.contains(&(slot_number[&w.slot] as i64)) {
                    WriteStatus::TooLate
                } else {
                    WriteStatus::Applied
                }
            })
            .collect()),
        Some((1, codes)) if codes.len() == writes.len() => codes
            .iter()
            .map(|code| match code {
                0 => Ok(WriteStatus::Applied),
                1 => Ok(WriteStatus::TooLate),
                2 => Ok(WriteStatus::OutOfRange),
                _ => Err(bad()),
            })
            .collect(),
        _ => Err(bad()),
    }
}

pub(super) async fn remove_member(
    store: &RedisStore,
    board: &Board,
    member: &Member,
) -> Result<Removed> {
    let slots: Vec<i64> = store
        .query(
            redis::cmd("ZRANGE")
                .arg(keys::index(&board.name))
                .arg(0)
                .arg(-1),
            Some(&board.name),
        )
        .await?;
    let windows = board.config.windows();
    let mut removed = Removed::default();
    // An empty batch still runs once, to check the board's version.
    let batches: Vec<&[i64]> = if slots.is_empty() {
        vec![&[]]
    } else {
        slots.chunks(REMOVE_SLOTS_PER_CALL).collect()
    };
    for batch in batches {
        let mut invocation = store.scripts.remove_member.key(keys::record(&board.name));
        invocation.key(keys::all_totals(&board.name, windows));
        for s in batch {
            invocation.key(keys::stages(board, *s).collect::<Vec<_>>());
        }
        invocation
            .arg(board.version)
            .arg(windows.len())
            .arg(member.as_str());
        // Idempotent: a replayed batch finds nothing left to delete.
        let deleted: u64 = store.invoke(&invocation, &board.name, true).await?;
        removed.slot_values += deleted;
    }
    Ok(removed)
}
