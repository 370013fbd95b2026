//! Writes to Redis through `write.lua` (summed entries on the fast path, or events one by
//! one on the exact path), and member removal.

use std::collections::HashMap;

use redis::ScriptInvocation;

use super::conn::{RedisConn, Retry};
use super::keys;
use crate::board::Board;
use crate::domain::Removed;
use crate::domain::{Member, Timestamp};
use crate::error::{Error, Result};
use crate::store::{SlotWrite, WriteStatus};

/// Slots whose stage hashes one `remove_member.lua` call visits.
const REMOVE_SLOTS_PER_CALL: usize = 64;

/// One slot and member, with the sum of the deltas of its events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Summed {
    pub slot: i64,
    pub member: String,
    pub sum: i64,
}

/// What `write.lua` did with summed entries.
pub(super) enum SumsOutcome {
    /// Applied, except the entries of these slots (too late).
    Applied { too_late: Vec<i64> },
    /// Nothing applied: the board's bound needs every event checked; send them one by one.
    NeedsExact,
    /// Nothing applied: the call's token is in the journal (it was applied before).
    AlreadyApplied,
}

/// Applies summed entries, each (slot, member) once, on the fast path (see `write.lua`).
/// `abs_total` is the sum of |delta| over the original events.
pub(super) async fn write_sums(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    entries: &[Summed],
    abs_total: u128,
    token: Option<&str>,
) -> Result<SumsOutcome> {
    let slots = Slots::of(entries.iter().map(|e| e.slot));
    // Anything past 2^53 takes the exact path; keep the number exact in Lua.
    let abs_total = abs_total.min(1 << 53) as u64;
    let mut invocation = invocation(
        conn,
        board,
        now,
        &slots,
        "sums",
        &abs_total.to_string(),
        token,
    );
    for e in entries {
        slots.push_number(&mut invocation, e.slot);
        invocation.arg(e.member.as_str()).arg(e.sum);
    }
    let reply: Vec<i64> = conn.script(&invocation, &board.name, Retry::Never).await?;
    match reply.split_first() {
        Some((0, too_late)) => Ok(SumsOutcome::Applied {
            too_late: too_late
                .iter()
                .map(|i| slots.start(*i))
                .collect::<Result<_>>()?,
        }),
        Some((2, [])) => Ok(SumsOutcome::NeedsExact),
        Some((3, [])) => Ok(SumsOutcome::AlreadyApplied),
        _ => Err(Error::Store(format!(
            "write.lua answered {reply:?} to summed entries"
        ))),
    }
}

/// Applies events one by one, in order, each checked against the stored values (the
/// exact path, for boards whose bound no longer proves the range). `None` when `token`
/// is in the journal (applied before).
pub(super) async fn write_events(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    writes: &[SlotWrite],
    token: Option<&str>,
) -> Result<Option<Vec<WriteStatus>>> {
    let slots = Slots::of(writes.iter().map(|w| w.slot));
    let mut invocation = invocation(conn, board, now, &slots, "events", "", token);
    for w in writes {
        slots.push_number(&mut invocation, w.slot);
        invocation.arg(w.member.as_str()).arg(w.delta);
    }
    let reply: Vec<i64> = conn.script(&invocation, &board.name, Retry::Never).await?;
    let bad = || {
        Error::Store(format!(
            "write.lua answered {reply:?} for {} events",
            writes.len()
        ))
    };
    match reply.split_first() {
        Some((1, codes)) if codes.len() == writes.len() => codes
            .iter()
            .map(|code| match code {
                0 => Ok(WriteStatus::Applied),
                1 => Ok(WriteStatus::TooLate),
                2 => Ok(WriteStatus::OutOfRange),
                _ => Err(bad()),
            })
            .collect::<Result<Vec<_>>>()
            .map(Some),
        Some((3, [])) => Ok(None),
        _ => Err(bad()),
    }
}

/// The distinct slots of a write, numbered from 1 in order of first appearance.
struct Slots {
    starts: Vec<i64>,
    numbers: HashMap<i64, usize>,
}

impl Slots {
    fn of(slots: impl Iterator<Item = i64>) -> Slots {
        let mut this = Slots {
            starts: Vec::new(),
            numbers: HashMap::new(),
        };
        for slot in slots {
            this.numbers.entry(slot).or_insert_with(|| {
                this.starts.push(slot);
                this.starts.len()
            });
        }
        this
    }

    /// With one slot the number is implied (`write.lua` reads pairs, not triples).
    fn push_number(&self, invocation: &mut ScriptInvocation<'_>, slot: i64) {
        if self.starts.len() > 1 {
            invocation.arg(self.numbers[&slot]);
        }
    }

    fn start(&self, number: i64) -> Result<i64> {
        usize::try_from(number - 1)
            .ok()
            .and_then(|i| self.starts.get(i).copied())
            .ok_or_else(|| Error::Store(format!("write.lua named slot number {number}")))
    }
}

/// KEYS and the leading ARGV of `write.lua`, up to the entries.
fn invocation<'a>(
    conn: &'a RedisConn,
    board: &Board,
    now: Timestamp,
    slots: &Slots,
    mode: &str,
    abs_total: &str,
    token: Option<&str>,
) -> ScriptInvocation<'a> {
    let config = &board.config;
    let windows = config.windows();
    let mut invocation = conn.scripts().write.key(keys::record(&board.name));
    invocation.key(keys::index(&board.name));
    invocation.key(keys::rebuild(&board.name));
    invocation.key(keys::rebuild_log(&board.name));
    invocation.key(keys::all_totals(&board.name, windows));
    for s in &slots.starts {
        invocation.key(keys::stages(board, *s).collect::<Vec<_>>());
    }
    if token.is_some() {
        invocation.key(keys::journal(&board.name));
    }
    invocation
        .arg(board.version)
        .arg(windows.len())
        .arg(slots.starts.len())
        .arg(mode)
        .arg(abs_total)
        .arg(token.unwrap_or(""));
    invocation.arg(windows.iter().map(|w| w.seconds()).collect::<Vec<_>>());
    invocation.arg(
        (0..windows.len())
            .map(|j| config.cutoff(j, now))
            .collect::<Vec<_>>(),
    );
    invocation.arg(&slots.starts);
    invocation
}

pub(super) async fn remove_member(
    conn: &RedisConn,
    board: &Board,
    member: &Member,
) -> Result<Removed> {
    let slots = super::boards::live_slots(conn, &board.name).await?;
    let windows = board.config.windows();
    let mut removed = Removed::default();
    // An empty batch still runs once, to check the board's version.
    let batches: Vec<&[i64]> = if slots.is_empty() {
        vec![&[]]
    } else {
        slots.chunks(REMOVE_SLOTS_PER_CALL).collect()
    };
    for batch in batches {
        let mut invocation = conn.scripts().remove_member.key(keys::record(&board.name));
        invocation.key(keys::rebuild(&board.name));
        invocation.key(keys::rebuild_log(&board.name));
        invocation.key(keys::all_totals(&board.name, windows));
        for s in batch {
            invocation.key(keys::stages(board, *s).collect::<Vec<_>>());
        }
        invocation
            .arg(board.version)
            .arg(windows.len())
            .arg(member.as_str())
            .arg(windows.iter().map(|w| w.seconds()).collect::<Vec<_>>())
            .arg(batch);
        // Idempotent: a replayed batch finds nothing left to delete.
        let deleted: u64 = conn
            .script(&invocation, &board.name, Retry::Idempotent)
            .await?;
        removed.slot_values += deleted;
    }
    Ok(removed)
}
