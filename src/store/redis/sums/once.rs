//! Writes that count once, outside group commit: a job's batch under its token (the
//! legacy import), and a client's batch under its idempotency key. Each is applied one
//! caller at a time through [`apply`], its guard recorded in the same atomic call.
//!
//! A keyed write is split here, and only here: in spans of [`KEY_SPAN`] events, each
//! span in calls of at most the board's cap of distinct pairs, every call recorded
//! under its own name (see [`call_name`]) with how many events it applied. A retry
//! follows the recorded calls (whatever the cap is now) and applies only what is
//! missing after them, so a write that failed half-way is completed exactly.

use std::collections::HashSet;

use super::budget::Budget;
use super::write::apply;
use super::write_call::{Answer, Key, Replay, Token, WriteCall, Writes};
use crate::domain::board::SlotWrites;
use crate::error::{Error, Result};
use crate::store::redis::conn::RedisConn;
use crate::store::{Keyed, Recorded, SlotWrite, WriteKey, WriteStatus};

/// Events per span of a keyed write: each span's calls are named after the span. It is
/// the `events_per_call` (1,000) of the versions that split keyed writes before the
/// store saw them, so a retry reads the records they left.
const KEY_SPAN: usize = 1000;

/// Applies `writes` at most once for `token`, in one call with no budget (a token covers
/// exactly one call, so the call never stops early; the legacy import sends at most
/// `events_per_call` events per token): `None` when the token was applied before.
pub(crate) async fn write_once(
    conn: &RedisConn,
    w: SlotWrites<'_>,
    token: &str,
) -> Result<Option<Vec<WriteStatus>>> {
    let SlotWrites { board, now, writes } = w;
    let call = WriteCall {
        board,
        now,
        guard: Token(token),
        budget: None,
        standing: None,
    };
    match apply(conn, &call, &Writes::of(&writes)).await? {
        Answer::Did(statuses) => Ok(Some(statuses)),
        Answer::Found(_) => Ok(None),
    }
}

/// Applies `writes` once for `key` while its records live (see `Store::write_keyed`),
/// span by span, call by call (see the module header).
pub(crate) async fn write_keyed(
    conn: &RedisConn,
    budget: &Budget,
    w: SlotWrites<'_>,
    key: &WriteKey,
) -> Result<Keyed> {
    let SlotWrites { board, now, writes } = w;
    let mut statuses = Vec::with_capacity(writes.len());
    let mut applied = false;
    let mut pos = 0;
    // Even a write with no events makes one call, so that it is recorded.
    loop {
        let span_end = (pos / KEY_SPAN + 1) * KEY_SPAN;
        let rest = &writes[pos..span_end.min(writes.len())];
        let part = &rest[..within_cap(rest, budget.cap(&board.name))];
        let part_key = WriteKey {
            name: call_name(&key.name, pos),
            ..key.clone()
        };
        let call = WriteCall {
            board,
            now,
            guard: Key(&part_key),
            budget: Some(budget),
            standing: None,
        };
        match apply(conn, &call, &Writes::of(part)).await? {
            Answer::Did(got) => {
                applied = true;
                pos += got.len();
                statuses.extend(got);
            }
            Answer::Found(Replay::Reused) => return Ok(Keyed::Reused),
            Answer::Found(Replay::Recorded {
                now: first,
                recorded,
                events,
            }) => {
                if first != now {
                    if pos == 0 {
                        // The caller admits the events again at the recorded now.
                        return Ok(Keyed::Replayed {
                            now: first,
                            recorded,
                        });
                    }
                    return Err(Error::store(format!(
                        "the records of idempotency key {:?} disagree (written at {} and {} ms): retried after its time to live?",
                        key.name,
                        first.unix_millis(),
                        now.unix_millis()
                    )));
                }
                // A record from before counts were kept covers the whole span's rest.
                let count = events.unwrap_or(rest.len());
                if count > rest.len() || (count == 0 && !rest.is_empty()) {
                    return Err(Error::store(format!(
                        "a record of idempotency key {:?} covers {count} events at {pos} of {}",
                        key.name,
                        writes.len()
                    )));
                }
                statuses.extend(recorded.statuses(&rest[..count])?);
                pos += count;
            }
        }
        if pos >= writes.len() {
            break;
        }
    }
    Ok(if applied {
        Keyed::Applied(statuses)
    } else {
        Keyed::Replayed {
            now,
            recorded: Recorded::Statuses(statuses),
        }
    })
}

/// The name the call of a keyed write starting at event `pos` is recorded under: the
/// key itself for the first span's first call, `<key>\x1f<span>` for another span's,
/// and `\x1f@<offset>` after either for a call starting `offset` events into its span
/// (after one that stopped at its budget or cap). No key can be any of these, since no
/// key holds `\x1f`.
fn call_name(key: &str, pos: usize) -> String {
    let (span, offset) = (pos / KEY_SPAN, pos % KEY_SPAN);
    let mut name = key.to_owned();
    if span > 0 {
        name.push_str(&format!("\u{1f}{span}"));
    }
    if offset > 0 {
        name.push_str(&format!("\u{1f}@{offset}"));
    }
    name
}

/// How many of `writes`, from the first, make at most `cap` distinct (slot, member)
/// pairs (what a call costs): at least one when there are any.
fn within_cap(writes: &[SlotWrite], cap: usize) -> usize {
    let mut pairs = HashSet::new();
    for (n, w) in writes.iter().enumerate() {
        pairs.insert((w.slot, w.member.as_str()));
        if pairs.len() > cap.max(1) {
            return n;
        }
    }
    writes.len()
}

#[cfg(test)]
mod tests {
    use super::call_name;

    #[test]
    fn call_names_never_collide_with_keys() {
        assert_eq!(call_name("k", 0), "k");
        assert_eq!(call_name("k", 2000), "k\u{1f}2");
        assert_eq!(call_name("k", 40), "k\u{1f}@40");
        assert_eq!(call_name("k", 2040), "k\u{1f}2\u{1f}@40");
    }
}
