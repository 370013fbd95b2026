//! Writes to Redis through `write.lua`: a [`WriteCall`] sent as summed entries (the fast
//! path; the common call, unguarded and of the open slot, through the lean
//! `write_plain.lua` first) or as events one by one (the exact path), [`apply`] doing
//! both in turn for one caller's writes; and member removal.

use foldhash::HashMap;

use redis::{ScriptInvocation, Value};

use super::budget::Limit;
use super::changes;
use super::write_call::{Answer, Guard, Summed, WriteCall, Writes, status_of};
use crate::domain::Removed;
use crate::domain::board::Board;
use crate::domain::{BoardConfig, BoardName, ChangeStamp, Member, RankedTotals, Ties, Timestamp};
use crate::error::{Error, Result};
use crate::store::redis::board::layout::member_hash;
use crate::store::redis::conn::reply::{array, int};
use crate::store::redis::conn::{RedisConn, Retry};
use crate::store::{SlotWrite, WriteStatus};

/// Slots whose stage hashes one `remove_member.lua` call visits.
const REMOVE_SLOTS_PER_CALL: usize = 64;

/// What a call of summed entries did.
#[derive(Debug)]
pub(crate) enum SumsReply {
    /// The first `pairs` entries applied (all, unless the call stopped at its budget),
    /// except the entries of these slots (too late).
    Applied { pairs: usize, too_late: Vec<i64> },
    /// Nothing applied: the board's bound needs every event checked; send them one by one.
    NeedsExact,
}

/// The standing part of a `write.lua` reply (see its header, Standing): flat, per member,
/// per window asked, total before, rank before, total after, rank after.
pub(crate) type StandingReply = Option<Vec<Value>>;

/// Runs a `write.lua` call: its reply, and for a call that asked for standing
/// (`standing`) and applied its entries, the standing part (the reply is then
/// `{reply, standing}`). A call without standing parses the reply as it always did.
async fn run(
    conn: &RedisConn,
    invocation: &ScriptInvocation<'_>,
    board: &BoardName,
    standing: bool,
) -> Result<(Vec<i64>, StandingReply)> {
    if !standing {
        let reply: Vec<i64> = conn.script(invocation, board, Retry::Never).await?;
        return Ok((reply, None));
    }
    let reply: Value = conn.script(invocation, board, Retry::Never).await?;
    let bad = |v: &Value| Error::store(format!("write.lua answered {v:?} to a standing write"));
    match reply {
        Value::Array(mut parts) if matches!(parts.first(), Some(Value::Array(_))) => {
            if parts.len() != 2 {
                return Err(bad(&Value::Array(parts)));
            }
            let standing = array(parts.pop().expect("two parts"), "standing")?;
            let reply = array(parts.pop().expect("two parts"), "write")?
                .iter()
                .map(|v| int(v, "write"))
                .collect::<Result<Vec<i64>>>()?;
            Ok((reply, Some(standing)))
        }
        Value::Array(parts) => Ok((
            parts
                .iter()
                .map(|v| int(v, "write"))
                .collect::<Result<Vec<i64>>>()?,
            None,
        )),
        other => Err(bad(&other)),
    }
}

/// Sends summed entries, each (slot, member) once, on the fast path (see `write.lua`):
/// `events` is how many events they sum (recorded under a key). Also answers how long
/// the script ran, in µs by the server's clock (0 when it found its guard's record), and
/// the standing asked for (`call.standing`) when the call applied its entries. The
/// call may stop before its last entry as `limit` allows, having applied at least its
/// first group. A call [`plain`] allows goes to `write_plain.lua` first, and to
/// `write.lua` only when that answers `{6}` (it changed nothing).
pub(crate) async fn send_sums<G: Guard>(
    conn: &RedisConn,
    call: &WriteCall<'_, G>,
    entries: &[Summed],
    abs_total: u128,
    events: usize,
    limit: &Limit,
) -> Result<(Answer<SumsReply, G::Found>, u64, StandingReply)> {
    let slots = Slots::of(entries.iter().map(|e| e.slot));
    // Anything past 2^53 takes the exact path; keep the number exact in Lua.
    let abs_total = abs_total.min(1 << 53) as u64;
    let board = &call.board.name;
    let push_entries = |invocation: &mut ScriptInvocation<'_>| {
        for e in entries {
            slots.push_number(invocation, e.slot);
            invocation.arg(e.member.as_str()).arg(e.sum);
        }
    };
    if plain(call, &slots, limit) {
        let mut invocation = plain_invocation(conn, call, &slots, abs_total, limit);
        push_entries(&mut invocation);
        let (reply, _) = run(conn, &invocation, board, false).await?;
        if reply != [6] {
            return sums_answer::<G>(reply, &slots, entries.len(), None);
        }
    }
    let mut invocation = invocation(conn, call, &slots, Mode::Sums(abs_total), events, limit);
    if sends_hashes(conn, call.board, call.now, &slots) {
        invocation.arg(packed_hashes(entries.iter().map(|e| e.member.as_str())));
    }
    push_entries(&mut invocation);
    let (reply, standing) = run(conn, &invocation, board, call.standing.is_some()).await?;
    sums_answer::<G>(reply, &slots, entries.len(), standing)
}

/// What a `write.lua` (or `write_plain.lua`) call of `entries` summed entries answered.
fn sums_answer<G: Guard>(
    reply: Vec<i64>,
    slots: &Slots,
    entries: usize,
    standing: StandingReply,
) -> Result<(Answer<SumsReply, G::Found>, u64, StandingReply)> {
    let bad = || Error::store(format!("write.lua answered {reply:?} to summed entries"));
    match reply.as_slice() {
        [0, us, pairs, too_late @ ..] => Ok((
            Answer::Did(SumsReply::Applied {
                pairs: usize::try_from(*pairs)
                    .ok()
                    .filter(|p| *p <= entries && (*p > 0 || entries == 0))
                    .ok_or_else(bad)?,
                too_late: too_late
                    .iter()
                    .map(|i| slots.start(*i))
                    .collect::<Result<_>>()?,
            }),
            micros(*us),
            standing,
        )),
        [2, us] => Ok((Answer::Did(SumsReply::NeedsExact), micros(*us), None)),
        _ => G::found(&reply)
            .map(|found| (Answer::Found(found), 0, None))
            .ok_or_else(bad),
    }
}

/// A script's own duration as it reported it (never negative, even if the server's
/// clock stepped back during the call).
fn micros(us: i64) -> u64 {
    u64::try_from(us).unwrap_or(0)
}

/// `write.lua`'s ARGV[5] in mode `events`: `'<cap> <budget> <slot>'` (`-` for none; the
/// slot's length in seconds) on a board that keeps contributors, then ` <delta>` when
/// every event of the call has that delta (the entries then leave it out: an argument
/// costs Redis about what a command's work does); else `''`.
fn contributor_caps(config: &BoardConfig, same: Option<i64>) -> String {
    if !config.keeps_contributors() {
        return String::new();
    }
    let word = |cap: Option<i64>| cap.map_or("-".to_owned(), |c| c.to_string());
    let same = same.map_or(String::new(), |delta| format!(" {delta}"));
    format!(
        "{} {} {}{same}",
        word(config.per_contributor_member()),
        word(config.per_contributor()),
        config.slot().seconds()
    )
}

/// The delta every event of `writes` has, if they all have the same.
fn same_delta(writes: &[SlotWrite]) -> Option<i64> {
    let first = writes.first()?.delta;
    writes.iter().all(|w| w.delta == first).then_some(first)
}

/// Sends events one by one, in order, each checked against the stored values (the
/// exact path, for boards whose bound no longer proves the range): the status of each
/// event applied, from the first (fewer than sent when the call stopped at its budget,
/// never none of them). Also answers the script's own duration in µs and the standing
/// asked for, as [`send_sums`] does.
pub(crate) async fn send_events<G: Guard>(
    conn: &RedisConn,
    call: &WriteCall<'_, G>,
    writes: &[SlotWrite],
    limit: &Limit,
) -> Result<(Answer<Vec<WriteStatus>, G::Found>, u64, StandingReply)> {
    let slots = Slots::of(writes.iter().map(|w| w.slot));
    // Only a board keeping contributors sends a shared delta (see `contributor_caps`).
    let contributors = call.board.config.keeps_contributors();
    let same = contributors.then(|| same_delta(writes)).flatten();
    let mode = Mode::Events(same);
    let mut invocation = invocation(conn, call, &slots, mode, writes.len(), limit);
    if sends_hashes(conn, call.board, call.now, &slots) {
        invocation.arg(packed_hashes(writes.iter().map(|w| w.member.as_str())));
    }
    for w in writes {
        slots.push_number(&mut invocation, w.slot);
        invocation.arg(w.member.as_str());
        if same.is_none() {
            invocation.arg(w.delta);
        }
        if contributors {
            invocation.arg(w.by.as_ref().map_or("", |by| by.as_str()));
        }
    }
    let board = &call.board.name;
    let (reply, standing) = run(conn, &invocation, board, call.standing.is_some()).await?;
    let bad = || {
        Error::store(format!(
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
                .map(|statuses| (Answer::Did(statuses), micros(*us), standing))
        }
        _ => G::found(&reply)
            .map(|found| (Answer::Found(found), 0, None))
            .ok_or_else(bad),
    }
}

/// Applies one caller's writes in one call: their sums on the fast path, then, when the
/// script asks for it (the board's bound needs every event checked), the events one by
/// one. Answers the status of each event applied, from the first: all of them, unless
/// the call stopped at its budget (then at least the first). A call of sums stops only
/// where its entries are a prefix of the events, so what it applied is a prefix too.
pub(crate) async fn apply<G: Guard>(
    conn: &RedisConn,
    call: &WriteCall<'_, G>,
    writes: &Writes<'_>,
) -> Result<Answer<Vec<WriteStatus>, G::Found>> {
    Ok(match apply_standing(conn, call, writes).await? {
        Answer::Did((statuses, _)) => Answer::Did(statuses),
        Answer::Found(found) => Answer::Found(found),
    })
}

/// [`apply`], also answering the standing the call asked for (`call.standing`), read by
/// the call that applied the writes.
pub(crate) async fn apply_standing<G: Guard>(
    conn: &RedisConn,
    call: &WriteCall<'_, G>,
    writes: &Writes<'_>,
) -> Result<Answer<(Vec<WriteStatus>, StandingReply), G::Found>> {
    let limit = call.limit();
    let entries = &writes.sums.entries;
    let events = writes.events;
    if call.board.config.keeps_contributors() {
        // Contributions are capped per event: never summed (see `write.lua`).
        let (answer, us, standing) = send_events(conn, call, events, &limit).await?;
        return Ok(match answer {
            Answer::Did(statuses) => {
                observe(call, us, statuses.len());
                Answer::Did((statuses, standing))
            }
            Answer::Found(found) => Answer::Found(found),
        });
    }
    let sums_limit = limit.at(&writes.boundaries);
    let (answer, us, standing) = send_sums(
        conn,
        call,
        entries,
        writes.sums.abs_total,
        events.len(),
        &sums_limit,
    )
    .await?;
    match answer {
        Answer::Did(SumsReply::Applied { pairs, too_late }) => {
            observe(call, us, pairs);
            let applied = writes.events_in(pairs).ok_or_else(|| {
                Error::store(format!(
                    "write.lua stopped after {pairs} entries, not a stop point"
                ))
            })?;
            Ok(Answer::Did((
                fast_statuses(&events[..applied], &too_late),
                standing,
            )))
        }
        Answer::Did(SumsReply::NeedsExact) => {
            observe(call, us, entries.len());
            let (answer, us, standing) = send_events(conn, call, events, &limit).await?;
            Ok(match answer {
                Answer::Did(statuses) => {
                    observe(call, us, statuses.len());
                    Answer::Did((statuses, standing))
                }
                Answer::Found(found) => Answer::Found(found),
            })
        }
        Answer::Found(found) => Ok(Answer::Found(found)),
    }
}

/// Takes in a call's duration for the board's budget, when it has one.
fn observe<G>(call: &WriteCall<'_, G>, us: u64, pairs: usize) {
    if let Some(budget) = call.budget {
        budget.observe(&call.board.name, us, pairs);
    }
}

/// The status of each write applied on the fast path, by a call that found `too_late`.
pub(crate) fn fast_statuses(writes: &[SlotWrite], too_late: &[i64]) -> Vec<WriteStatus> {
    writes
        .iter()
        .map(|w| fast_status(w.slot, too_late))
        .collect()
}

/// The status of a write to `slot` applied on the fast path, which found `too_late`.
pub(crate) fn fast_status(slot: i64, too_late: &[i64]) -> WriteStatus {
    if too_late.contains(&slot) {
        WriteStatus::TooLate
    } else {
        WriteStatus::Applied
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
/// much as the bucket key the hash names (`docs/compact-slots.md`, "Compact slots").
fn packed_hashes<'m>(members: impl ExactSizeIterator<Item = &'m str>) -> Vec<u8> {
    let mut packed = Vec::with_capacity(4 * members.len());
    for member in members {
        packed.extend_from_slice(&member_hash(member).to_be_bytes());
    }
    packed
}

/// The distinct slots of a write, numbered from 1 in order of first appearance.
pub(crate) struct Slots {
    pub(crate) starts: Vec<i64>,
    pub(crate) numbers: HashMap<i64, usize>,
}

impl Slots {
    pub(crate) fn of(slots: impl Iterator<Item = i64>) -> Slots {
        let mut this = Slots {
            starts: Vec::new(),
            numbers: HashMap::default(),
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
            .ok_or_else(|| Error::store(format!("write.lua named slot number {number}")))
    }
}

/// A call's mode (ARGV[4] and ARGV[5] of `write.lua`): summed entries, with the sum of
/// |delta| over their events, or events one by one, with the delta they all have, if
/// any, on a board keeping contributors.
#[derive(Clone, Copy)]
enum Mode {
    Sums(u64),
    Events(Option<i64>),
}

/// KEYS and the leading ARGV of `write.lua`, up to the entries (`events`: how many
/// events the call carries, recorded under a key unless it stops early; `limit`: when
/// it may stop).
fn invocation<'a, G: Guard>(
    conn: &'a RedisConn,
    call: &WriteCall<'_, G>,
    slots: &Slots,
    mode: Mode,
    events: usize,
    limit: &Limit,
) -> ScriptInvocation<'a> {
    let (board, now) = (call.board, call.now);
    let windows = board.config.windows();
    let mut invocation = conn.scripts().write.key(conn.keys().record(&board.name));
    invocation.key(conn.keys().index(&board.name));
    invocation.key(conn.keys().rebuild(&board.name));
    invocation.key(conn.keys().rebuild_log(&board.name));
    invocation.key(conn.keys().slot_geometry(&board.name));
    invocation.key(conn.keys().all_totals(&board.name, windows));
    for s in &slots.starts {
        invocation.key(conn.keys().stages(board, *s).collect::<Vec<_>>());
    }
    if let Some(record) = call.guard.record_key(conn.keys(), board) {
        invocation.key(record);
    }
    invocation.key(conn.keys().all_dense(board));
    invocation.key(conn.keys().data(&board.name));
    invocation
        .arg(changes::stamped_version(board, now, None))
        .arg(windows.len())
        .arg(slots.starts.len());
    match mode {
        Mode::Sums(abs_total) => invocation.arg("sums").arg(abs_total.to_string()),
        Mode::Events(same) => invocation
            .arg("events")
            .arg(contributor_caps(&board.config, same)),
    };
    call.guard.push_args(&mut invocation, now, events);
    let mut slot_words = conn
        .layout()
        .new_slots(board, sends_hashes(conn, board, now, slots));
    if let Some(windows) = call.standing {
        slot_words.push_str(&standing_words(board, windows));
    }
    invocation.arg(slot_words);
    invocation.arg(limit.arg());
    push_slot_args(&mut invocation, board, now, slots);
    invocation
}

/// The windows' seconds, their cutoffs at `now` and the slots' starts: the ARGV of
/// `write.lua`, `write_plain.lua` and `write_max.lua` just before the entries.
pub(crate) fn push_slot_args(
    invocation: &mut ScriptInvocation<'_>,
    board: &Board,
    now: Timestamp,
    slots: &Slots,
) {
    let config = &board.config;
    let windows = config.windows();
    invocation.arg(windows.iter().map(|w| w.seconds()).collect::<Vec<_>>());
    invocation.arg(
        (0..windows.len())
            .map(|j| config.cutoff(j, now))
            .collect::<Vec<_>>(),
    );
    invocation.arg(&slots.starts);
}

/// Whether a call of summed entries goes to `write_plain.lua` first: unguarded, without
/// standing, on a board without dense tallies, with a budget read every few entries (or
/// none), and every slot at or after the open one (so a slot it creates is plain). The
/// script answers `{6}` when the board needs `write.lua` after all.
fn plain<G: Guard>(call: &WriteCall<'_, G>, slots: &Slots, limit: &Limit) -> bool {
    let open = call.board.config.slot_start(call.now);
    G::PLAIN
        && call.standing.is_none()
        && call.board.config.ties() != Ties::Dense
        && !matches!(limit, Limit::At { .. })
        && slots.starts.iter().all(|s| *s >= open)
}

/// KEYS and the leading ARGV of `write_plain.lua`, up to the entries.
fn plain_invocation<'a, G: Guard>(
    conn: &'a RedisConn,
    call: &WriteCall<'_, G>,
    slots: &Slots,
    abs_total: u64,
    limit: &Limit,
) -> ScriptInvocation<'a> {
    let (board, now) = (call.board, call.now);
    let windows = board.config.windows();
    let mut invocation = conn
        .scripts()
        .write_plain
        .key(conn.keys().record(&board.name));
    invocation.key(conn.keys().index(&board.name));
    invocation.key(conn.keys().slot_geometry(&board.name));
    invocation.key(conn.keys().all_totals(&board.name, windows));
    for s in &slots.starts {
        invocation.key(conn.keys().stages(board, *s).collect::<Vec<_>>());
    }
    invocation.key(conn.keys().data(&board.name));
    invocation
        .arg(changes::stamped_version(board, now, None))
        .arg(windows.len())
        .arg(slots.starts.len())
        .arg(abs_total.to_string())
        .arg(limit.arg());
    push_slot_args(&mut invocation, board, now, slots);
    invocation
}

/// The standing words of `write.lua`'s ARGV[11]: ' <windows> <ties> <rank>', the
/// windows (indexes) as 1-based positions.
pub(crate) fn standing_words(board: &Board, windows: &[usize]) -> String {
    let positions: Vec<String> = windows.iter().map(|j| (j + 1).to_string()).collect();
    let ties = match board.config.ties() {
        Ties::Competition => "competition",
        Ties::Dense => "dense",
        Ties::Position => "position",
    };
    let rank = match board.config.rank() {
        RankedTotals::Positive => "positive",
        RankedTotals::Nonzero => "nonzero",
        RankedTotals::All => "all",
    };
    format!(" {} {ties} {rank}", positions.join(","))
}

pub(crate) async fn remove_member(
    conn: &RedisConn,
    board: &Board,
    member: &Member,
    stamp: ChangeStamp,
) -> Result<Removed> {
    let slots = crate::store::redis::board::slot_index::live_slots(conn, &board.name).await?;
    let windows = board.config.windows();
    let mut removed = Removed::default();
    // An empty batch still runs once, to check the board's version.
    let batches: Vec<&[i64]> = if slots.is_empty() {
        vec![&[]]
    } else {
        slots.chunks(REMOVE_SLOTS_PER_CALL).collect()
    };
    for batch in batches {
        let mut invocation = conn
            .scripts()
            .remove_member
            .key(conn.keys().record(&board.name));
        invocation.key(conn.keys().rebuild(&board.name));
        invocation.key(conn.keys().rebuild_log(&board.name));
        invocation.key(conn.keys().slot_geometry(&board.name));
        invocation.key(conn.keys().all_totals(&board.name, windows));
        for s in batch {
            invocation.key(conn.keys().stages(board, *s).collect::<Vec<_>>());
        }
        invocation.key(conn.keys().all_dense(board));
        invocation.key(conn.keys().data(&board.name));
        invocation
            .arg(changes::stamped_version(
                board,
                stamp.now,
                Some(stamp.cause),
            ))
            .arg(windows.len())
            .arg(member.as_str())
            .arg(windows.iter().map(|w| w.seconds()).collect::<Vec<_>>())
            .arg(batch);
        // Idempotent: a replayed batch finds nothing left to delete.
        let deleted: u64 = conn
            .script(&invocation, &board.name, Retry::IdempotentWrite)
            .await?;
        removed.slot_values += deleted;
    }
    Ok(removed)
}
