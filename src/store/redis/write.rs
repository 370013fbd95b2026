//! Writes to Redis through `write.lua` (summed entries on the fast path, or events one by
//! one on the exact path), and member removal.

use std::collections::HashMap;

use redis::ScriptInvocation;

use super::conn::{RedisConn, Retry};
use super::keys;
use super::layout::member_hash;
use crate::board::Board;
use crate::domain::Removed;
use crate::domain::{Member, Timestamp};
use crate::error::{Error, Result};
use crate::store::{Keyed, Recorded, SlotWrite, WriteKey, WriteStatus};

/// Slots whose stage hashes one `remove_member.lua` call visits.
const REMOVE_SLOTS_PER_CALL: usize = 64;

/// One slot and member, with the sum of the deltas of its events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Summed {
    pub slot: i64,
    pub member: String,
    pub sum: i64,
}

/// What makes a `write.lua` call count once: nothing, a job's token (kept in the
/// board's journal), or a client's idempotency key (an expiring record of its own).
#[derive(Clone, Copy)]
pub(super) enum Guard<'a> {
    None,
    Token(&'a str),
    Key(&'a WriteKey),
}

/// When a `write.lua` call may stop before its last entry (ARGV[12]): it reads the
/// server's clock at each stop point and stops there once it has run its budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Limit {
    /// No budget: the call applies every entry (a token covers exactly one call).
    None,
    /// A budget of `budget_us`, read after every `stride` entries (or events).
    Every { budget_us: u64, stride: usize },
    /// A budget of `budget_us`, read only after the listed numbers of entries, each with
    /// how many of the write's events those entries carry (a keyed write in mode
    /// `sums`, whose record says how many events it applied): ascending.
    At {
        budget_us: u64,
        stops: Vec<(usize, usize)>,
    },
}

impl Limit {
    /// ARGV[12] of `write.lua`.
    fn arg(&self) -> String {
        match self {
            Limit::None => String::new(),
            Limit::Every { budget_us, stride } => format!("{budget_us} {}", (*stride).max(1)),
            Limit::At { budget_us, stops } => {
                let mut arg = format!("{budget_us} 0");
                for (entries, events) in stops {
                    arg.push_str(&format!(" {entries} {events}"));
                }
                arg
            }
        }
    }
}

/// What `write.lua` did with summed entries.
#[derive(Debug)]
pub(super) enum SumsOutcome {
    /// The first `pairs` entries applied (all, unless the call stopped at its budget),
    /// except the entries of these slots (too late).
    Applied { pairs: usize, too_late: Vec<i64> },
    /// Nothing applied: the board's bound needs every event checked; send them one by one.
    NeedsExact,
    /// Nothing applied: the call's token is in the journal (it was applied before).
    AlreadyApplied,
    /// Nothing applied: the key's record says what the first call did.
    Replayed(Replay),
}

/// What `write.lua` did with events sent one by one.
#[derive(Debug)]
pub(super) enum EventsOutcome {
    /// Applied: the status of each event applied, from the first (fewer than the events
    /// sent when the call stopped at its budget, never none of them).
    Applied(Vec<WriteStatus>),
    /// Nothing applied: the call's token is in the journal.
    AlreadyApplied,
    /// Nothing applied: the key's record says what the first call did.
    Replayed(Replay),
}

/// A keyed call's answer when it found the key's record: what the record says, and how
/// many events the recorded call carried (`None` in a record written before counts were
/// kept: one call then carried the whole part).
#[derive(Debug)]
pub(super) struct Replay {
    pub keyed: Keyed,
    pub events: Option<usize>,
}

/// The answer to a keyed call that found the key's record
/// ({4, now, events, reply…} or {5}).
fn replayed(reply: &[i64]) -> Option<Replay> {
    let (keyed, events) = match reply {
        [5] => (Keyed::Reused, -1),
        [4, now, events, 0, slots @ ..] => (
            Keyed::Replayed {
                now: Timestamp::from_unix_millis(*now).ok()?,
                recorded: Recorded::TooLateSlots(slots.to_vec()),
            },
            *events,
        ),
        [4, now, events, 1, codes @ ..] => (
            Keyed::Replayed {
                now: Timestamp::from_unix_millis(*now).ok()?,
                recorded: Recorded::Statuses(
                    codes.iter().map(|c| status_of(*c)).collect::<Option<_>>()?,
                ),
            },
            *events,
        ),
        _ => return None,
    };
    Some(Replay {
        keyed,
        events: usize::try_from(events).ok(),
    })
}

/// A status code of `write.lua`.
fn status_of(code: i64) -> Option<WriteStatus> {
    match code {
        0 => Some(WriteStatus::Applied),
        1 => Some(WriteStatus::TooLate),
        2 => Some(WriteStatus::OutOfRange),
        _ => None,
    }
}

/// Applies summed entries, each (slot, member) once, on the fast path (see `write.lua`).
/// `abs_total` is the sum of |delta| over the original events (an upper bound will do);
/// `events` is how many they are (recorded under a key). Also answers how long the
/// script ran, in µs by the server's clock (0 when it applied nothing for a token or
/// key). The call may stop before its last entry as `limit` allows, having applied at
/// least its first group.
pub(super) async fn write_sums(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    entries: &[Summed],
    (abs_total, events): (u128, usize),
    guard: Guard<'_>,
    limit: &Limit,
) -> Result<(SumsOutcome, u64)> {
    let slots = Slots::of(entries.iter().map(|e| e.slot));
    // Anything past 2^53 takes the exact path; keep the number exact in Lua.
    let abs_total = abs_total.min(1 << 53) as u64;
    let mut invocation = invocation(
        conn,
        board,
        now,
        &slots,
        ("sums", &abs_total.to_string()),
        guard,
        (events, limit),
    );
    if sends_hashes(conn, board, now, &slots) {
        invocation.arg(packed_hashes(entries.iter().map(|e| e.member.as_str())));
    }
    for e in entries {
        slots.push_number(&mut invocation, e.slot);
        invocation.arg(e.member.as_str()).arg(e.sum);
    }
    let reply: Vec<i64> = conn.script(&invocation, &board.name, Retry::Never).await?;
    let bad = || Error::Store(format!("write.lua answered {reply:?} to summed entries"));
    match reply.as_slice() {
        [0, us, pairs, too_late @ ..] => Ok((
            SumsOutcome::Applied {
                pairs: usize::try_from(*pairs)
                    .ok()
                    .filter(|p| *p <= entries.len() && (*p > 0 || entries.is_empty()))
                    .ok_or_else(bad)?,
                too_late: too_late
                    .iter()
                    .map(|i| slots.start(*i))
                    .collect::<Result<_>>()?,
            },
            micros(*us),
        )),
        [2, us] => Ok((SumsOutcome::NeedsExact, micros(*us))),
        [3] => Ok((SumsOutcome::AlreadyApplied, 0)),
        _ => replayed(&reply)
            .map(|r| (SumsOutcome::Replayed(r), 0))
            .ok_or_else(bad),
    }
}

/// A script's own duration as it reported it (never negative, even if the server's
/// clock stepped back during the call).
fn micros(us: i64) -> u64 {
    u64::try_from(us).unwrap_or(0)
}

/// Applies events one by one, in order, each checked against the stored values (the
/// exact path, for boards whose bound no longer proves the range). Also answers the
/// script's own duration in µs, as [`write_sums`] does. The call may stop between
/// events as `limit` allows (never a listed one: every event boundary is a stop point).
pub(super) async fn write_events(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    writes: &[SlotWrite],
    guard: Guard<'_>,
    limit: &Limit,
) -> Result<(EventsOutcome, u64)> {
    let slots = Slots::of(writes.iter().map(|w| w.slot));
    let mut invocation = invocation(
        conn,
        board,
        now,
        &slots,
        ("events", ""),
        guard,
        (writes.len(), limit),
    );
    if sends_hashes(conn, board, now, &slots) {
        invocation.arg(packed_hashes(writes.iter().map(|w| w.member.as_str())));
    }
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
    match reply.as_slice() {
        [1, us, codes @ ..]
            if codes.len() <= writes.len() && (!codes.is_empty() || writes.is_empty()) =>
        {
            codes
                .iter()
                .map(|code| status_of(*code).ok_or_else(bad))
                .collect::<Result<Vec<_>>>()
                .map(|statuses| (EventsOutcome::Applied(statuses), micros(*us)))
        }
        [3] => Ok((EventsOutcome::AlreadyApplied, 0)),
        _ => replayed(&reply)
            .map(|r| (EventsOutcome::Replayed(r), 0))
            .ok_or_else(bad),
    }
}

/// Whether a write call carries its members' hashes: on a board whose new slots are
/// compact, when one of its slots is older than the open one. The open slot (and a
/// future one) is written plain (`write.lua`), so a call of current events only needs
/// none; one with a late event may go to a compact slot. (A slot that is open and has
/// buckets all the same, converted by a `relayout --now`, gets its hashes computed by
/// the script until it closes.)
fn sends_hashes(conn: &RedisConn, board: &Board, now: Timestamp, slots: &Slots) -> bool {
    let open = board.config.slot_start(now);
    conn.layout().compact(board) && slots.starts.iter().any(|s| *s < open)
}

/// The members' hashes ([`member_hash`]) in one `write.lua` argument, 4 bytes each,
/// big-endian, in the entries' order: one argument per entry would cost Redis about as
/// much as the bucket key the hash names (`docs/design.md`, "Compact slots").
fn packed_hashes<'m>(members: impl ExactSizeIterator<Item = &'m str>) -> Vec<u8> {
    let mut packed = Vec::with_capacity(4 * members.len());
    for member in members {
        packed.extend_from_slice(&member_hash(member).to_be_bytes());
    }
    packed
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

/// KEYS and the leading ARGV of `write.lua`, up to the entries (`events`: how many
/// events the call carries, recorded under a key unless it stops early; `limit`: when
/// it may stop).
/// `mode` is ARGV[4] and ARGV[5]: the mode, and in mode 'sums' the sum of |delta|.
fn invocation<'a>(
    conn: &'a RedisConn,
    board: &Board,
    now: Timestamp,
    slots: &Slots,
    (mode, abs_total): (&str, &str),
    guard: Guard<'_>,
    (events, limit): (usize, &Limit),
) -> ScriptInvocation<'a> {
    let config = &board.config;
    let windows = config.windows();
    let mut invocation = conn.scripts().write.key(keys::record(&board.name));
    invocation.key(keys::index(&board.name));
    invocation.key(keys::rebuild(&board.name));
    invocation.key(keys::rebuild_log(&board.name));
    invocation.key(keys::slot_geometry(&board.name));
    invocation.key(keys::all_totals(&board.name, windows));
    for s in &slots.starts {
        invocation.key(keys::stages(board, *s).collect::<Vec<_>>());
    }
    match guard {
        Guard::None => {}
        Guard::Token(_) => {
            invocation.key(keys::journal(&board.name));
        }
        Guard::Key(key) => {
            invocation.key(keys::idempotency(board, &key.name));
        }
    }
    invocation.key(keys::all_dense(board));
    invocation
        .arg(board.version)
        .arg(windows.len())
        .arg(slots.starts.len())
        .arg(mode)
        .arg(abs_total)
        .arg(match guard {
            Guard::Token(token) => token,
            _ => "",
        });
    match guard {
        Guard::Key(key) => {
            let ttl_ms = key.ttl.secs_i64() * 1000;
            invocation
                .arg(format!("{}:{events}", key.fingerprint))
                .arg(now.unix_millis())
                .arg(now.unix_millis() + ttl_ms)
                .arg(ttl_ms);
        }
        _ => {
            invocation.arg("").arg("").arg("").arg("");
        }
    }
    invocation.arg(
        conn.layout()
            .new_slots(board, sends_hashes(conn, board, now, slots)),
    );
    invocation.arg(limit.arg());
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
    let slots = super::slot_index::live_slots(conn, &board.name).await?;
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
        invocation.key(keys::slot_geometry(&board.name));
        invocation.key(keys::all_totals(&board.name, windows));
        for s in batch {
            invocation.key(keys::stages(board, *s).collect::<Vec<_>>());
        }
        invocation.key(keys::all_dense(board));
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
