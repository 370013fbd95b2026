//! A `write.lua` call, as a type: the board and `now` it writes at, what makes it count
//! once (its [`Guard`]), the call budget it runs under, and the events it carries, with
//! the same events summed per (slot, member) for the fast path. Each guard names what a
//! call answers when it finds it counted before, so a caller matches only the answers
//! its call can get.

use foldhash::HashMap;
use std::convert::Infallible;

use redis::ScriptInvocation;

use super::budget::{Budget, Limit};
use crate::domain::Timestamp;
use crate::domain::board::Board;
use crate::store::redis::conn::keys::Keys;
use crate::store::{Recorded, SlotWrite, WriteKey, WriteStatus};

/// One `write.lua` call: the board and `now` it writes at, its guard, the budget that
/// bounds it (`None`: no budget, it applies everything it carries), and the windows (by
/// index) whose standing it answers (`None` but for a write that returns its standing,
/// which has no budget: `write.lua`'s Standing).
pub(crate) struct WriteCall<'a, G> {
    pub board: &'a Board,
    pub now: Timestamp,
    pub guard: G,
    pub budget: Option<&'a Budget>,
    pub standing: Option<&'a [usize]>,
}

impl<G> WriteCall<'_, G> {
    /// When the call may stop (every few entries or events, once it has run its budget).
    pub(crate) fn limit(&self) -> Limit {
        self.budget.map_or(Limit::None, Budget::limit)
    }
}

/// What `write.lua` answered: it applied (some of) the call, or it found the call's
/// guard had counted it before and applied nothing.
#[derive(Debug)]
pub(crate) enum Answer<T, F> {
    Did(T),
    Found(F),
}

/// What makes a `write.lua` call count once: nothing ([`Unguarded`]), a job's token
/// ([`Token`], kept in the board's journal) or a client's idempotency key ([`Key`], an
/// expiring record of its own).
pub(crate) trait Guard: Copy {
    /// What the call answers when it finds it counted before.
    type Found;

    /// Whether its calls may go to `write_plain.lua` (which keeps no guard's record).
    const PLAIN: bool = false;

    /// The key of the guard's record (the KEYS entry after the stages), if any.
    fn record_key(&self, keys: &Keys, board: &Board) -> Option<String>;

    /// ARGV[6] to ARGV[10] of `write.lua`, for a call carrying `events` events.
    fn push_args(&self, invocation: &mut ScriptInvocation<'_>, now: Timestamp, events: usize);

    /// The answer of a call that found its guard's record, from `write.lua`'s reply.
    fn found(reply: &[i64]) -> Option<Self::Found>;
}

/// A call that counts every time it is sent (group commit, and its exact path).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unguarded;

/// A call that counts once for a job's token.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Token<'a>(pub &'a str);

/// A token call's answer when its token was in the journal: it was applied before.
#[derive(Debug)]
pub(crate) struct Journaled;

/// A call that counts once for an idempotency key while the key's record lives.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Key<'a>(pub &'a WriteKey);

/// A keyed call's answer when it found the key's record.
#[derive(Debug)]
pub(crate) enum Replay {
    /// The key names another write (another fingerprint).
    Reused,
    /// The same write was recorded at `now`: what that call did, and how many events it
    /// applied (`None` in a record written before counts were kept: one call then
    /// carried the whole part).
    Recorded {
        now: Timestamp,
        recorded: Recorded,
        events: Option<usize>,
    },
}

fn empty_guard_args(invocation: &mut ScriptInvocation<'_>) {
    invocation.arg("").arg("").arg("").arg("");
}

impl Guard for Unguarded {
    type Found = Infallible;
    const PLAIN: bool = true;

    fn record_key(&self, _: &Keys, _: &Board) -> Option<String> {
        None
    }

    fn push_args(&self, invocation: &mut ScriptInvocation<'_>, _: Timestamp, _: usize) {
        invocation.arg("");
        empty_guard_args(invocation);
    }

    fn found(_: &[i64]) -> Option<Infallible> {
        None
    }
}

impl Guard for Token<'_> {
    type Found = Journaled;

    fn record_key(&self, keys: &Keys, board: &Board) -> Option<String> {
        Some(keys.journal(&board.name))
    }

    fn push_args(&self, invocation: &mut ScriptInvocation<'_>, _: Timestamp, _: usize) {
        invocation.arg(self.0);
        empty_guard_args(invocation);
    }

    fn found(reply: &[i64]) -> Option<Journaled> {
        (reply == [3]).then_some(Journaled)
    }
}

impl Guard for Key<'_> {
    type Found = Replay;

    fn record_key(&self, keys: &Keys, board: &Board) -> Option<String> {
        Some(keys.idempotency(board, &self.0.name))
    }

    fn push_args(&self, invocation: &mut ScriptInvocation<'_>, now: Timestamp, events: usize) {
        let ttl_ms = self.0.ttl.secs_i64() * 1000;
        invocation
            .arg("")
            .arg(format!("{}:{events}", self.0.fingerprint))
            .arg(now.unix_millis())
            .arg(now.unix_millis() + ttl_ms)
            .arg(ttl_ms);
    }

    /// `{4, now, events, 0, too-late slot...}`, `{4, now, events, 1, status...}` or `{5}`.
    fn found(reply: &[i64]) -> Option<Replay> {
        let (now, events, recorded) = match reply {
            [5] => return Some(Replay::Reused),
            [4, now, events, 0, slots @ ..] => {
                (now, events, Recorded::TooLateSlots(slots.to_vec()))
            }
            [4, now, events, 1, codes @ ..] => (
                now,
                events,
                Recorded::Statuses(codes.iter().map(|c| status_of(*c)).collect::<Option<_>>()?),
            ),
            _ => return None,
        };
        Some(Replay::Recorded {
            now: Timestamp::from_unix_millis(*now).ok()?,
            recorded,
            events: usize::try_from(*events).ok(),
        })
    }
}

/// A status code of `write.lua`: 3 and up, a contribution's (`contrib_code`: 3 + the
/// zigzag of what it counted).
pub(crate) fn status_of(code: i64) -> Option<WriteStatus> {
    match code {
        0 => Some(WriteStatus::Applied),
        1 => Some(WriteStatus::TooLate),
        2 => Some(WriteStatus::OutOfRange),
        3.. => {
            let zigzag = code - 3;
            Some(WriteStatus::Counted(if zigzag % 2 == 0 {
                zigzag / 2
            } else {
                -(zigzag + 1) / 2
            }))
        }
        _ => None,
    }
}

/// One slot and member, with the sum of the deltas of its events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Summed {
    pub slot: i64,
    pub member: String,
    pub sum: i64,
}

/// Events summed per (slot, member): the entries of a call in mode `sums`.
#[derive(Default)]
pub(crate) struct Sums {
    /// Distinct (slot, member) pairs, in order of first appearance.
    pub entries: Vec<Summed>,
    /// The sum of |delta| over every event (the call's margin, see `write.lua`).
    pub abs_total: u128,
    /// slot -> member -> position in `entries`.
    positions: HashMap<i64, HashMap<String, usize>>,
}

impl Sums {
    /// Adds an event: the position of its entry.
    pub(crate) fn add(&mut self, w: &SlotWrite) -> usize {
        self.abs_total += w.delta.unsigned_abs() as u128;
        let members = self.positions.entry(w.slot).or_default();
        match members.get(w.member.as_str()) {
            Some(&at) => {
                self.entries[at].sum += w.delta;
                at
            }
            None => {
                let at = self.entries.len();
                members.insert(w.member.to_string(), at);
                self.entries.push(Summed {
                    slot: w.slot,
                    member: w.member.to_string(),
                    sum: w.delta,
                });
                at
            }
        }
    }
}

/// One caller's events and their sums: what [`apply`](super::write::apply) sends.
pub(crate) struct Writes<'a> {
    pub events: &'a [SlotWrite],
    pub sums: Sums,
    /// Where a call of the sums may stop: see [`boundaries`].
    pub boundaries: Vec<(usize, usize)>,
}

impl<'a> Writes<'a> {
    pub(crate) fn of(events: &'a [SlotWrite]) -> Writes<'a> {
        let mut sums = Sums::default();
        let entry_of: Vec<usize> = events.iter().map(|w| sums.add(w)).collect();
        Writes {
            events,
            sums,
            boundaries: boundaries(&entry_of),
        }
    }

    /// How many events the first `entries` entries carry, when that is a stop point.
    pub(crate) fn events_in(&self, entries: usize) -> Option<usize> {
        self.boundaries
            .iter()
            .find(|(e, _)| *e == entries)
            .map(|(_, events)| *events)
    }
}

/// Where a call of summed entries may stop: each (entries, events) such that the first
/// `entries` summed entries are exactly the pairs of the first `events` events and no
/// later event has one of them (`pairs`: each event's entry, numbered in order of first
/// appearance), ascending, the last being all of them. An event whose pair comes back
/// later holds every entry up to that return in one group.
fn boundaries(pairs: &[usize]) -> Vec<(usize, usize)> {
    let mut last = HashMap::default();
    for (event, pair) in pairs.iter().enumerate() {
        last.insert(*pair, event);
    }
    let mut stops = Vec::new();
    let (mut reach, mut entries) = (0, 0);
    for (event, pair) in pairs.iter().enumerate() {
        entries = entries.max(pair + 1);
        reach = reach.max(last[pair]);
        if reach == event {
            stops.push((entries, event + 1));
        }
    }
    if stops.is_empty() {
        stops.push((0, 0));
    }
    stops
}

#[cfg(test)]
mod tests {
    use super::boundaries;

    #[test]
    fn a_keyed_call_stops_only_where_its_entries_are_a_prefix_of_its_events() {
        // a b c a d: a comes back at 3, so the first stop is after a, b, c (4 events).
        assert_eq!(boundaries(&[0, 1, 2, 0, 3]), [(3, 4), (4, 5)]);
        // Distinct pairs: a stop after each event.
        assert_eq!(boundaries(&[0, 1, 2]), [(1, 1), (2, 2), (3, 3)]);
        // a a b b a: one group.
        assert_eq!(boundaries(&[0, 0, 1, 1, 0]), [(2, 5)]);
        // a a b c c: after a a, b, c c.
        assert_eq!(boundaries(&[0, 0, 1, 2, 2]), [(1, 2), (2, 3), (3, 5)]);
        assert_eq!(boundaries(&[]), [(0, 0)]);
    }
}
