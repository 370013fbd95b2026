//! Writes: events (one, a batch, a batch at most once) and member removal, and a
//! batch's outcome.

use super::{Rollboard, Windowed};
use crate::domain::board::Board;
use crate::domain::{ChangeCause, ChangeStamp};
use crate::domain::{Event, Member, Removed, Timestamp, too_late};
use crate::error::{Error, Result};
use crate::store::{SlotWrite, WriteStatus};

/// The outcome of a batch: each bad event is rejected on its own, the rest are applied.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BatchOutcome {
    /// Events applied.
    pub accepted: usize,
    /// Events rejected, with their index in the batch, in index order.
    pub rejected: Vec<Rejected>,
    /// On a board that keeps contributors, each applied event with a contributor: its
    /// index and how much of its delta counts in the largest window (the rest was over
    /// the contributor's cap), in index order.
    pub counted: Vec<Counted>,
}

/// How much of an applied event with a contributor counts (see [`BatchOutcome`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    /// Its position in the batch, from 0.
    pub index: usize,
    /// What of its delta counts in the largest window's total.
    pub counted: i64,
}

impl BatchOutcome {
    /// `Err` with the error of the first rejected event, if any: the answer of a batch
    /// of one.
    pub fn first_error(self) -> Result<()> {
        match self.rejected.into_iter().next() {
            Some(rejected) => Err(rejected.error),
            None => Ok(()),
        }
    }

    /// The answer of a batch of one: `Err` with its error when it was rejected, else
    /// what of its delta counts when it had a contributor on a board keeping
    /// contributors (`None` otherwise: all of it counts).
    pub fn single(self) -> Result<Option<i64>> {
        let counted = self.counted.first().map(|c| c.counted);
        self.first_error().map(|()| counted)
    }
}

/// One rejected event of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// Its position in the batch, from 0.
    pub index: usize,
    /// Why it was rejected.
    pub error: Error,
}

impl Windowed<'_> {
    /// Adds `delta` to `member` on `board`, at `at` (now when `None`).
    pub async fn incr(self, member: &str, delta: i64, at: Option<Timestamp>) -> Result<()> {
        let event = Event {
            at,
            ..Event::new(member, delta)
        };
        self.incr_batch(std::slice::from_ref(&event))
            .await?
            .first_error()
    }

    /// Applies a batch of events. Each bad event is rejected on its own (with its index)
    /// and the rest are applied. Errors only when nothing could be applied: unknown
    /// board, batch too large, or the store failed before any event landed.
    pub async fn incr_batch(self, events: &[Event]) -> Result<BatchOutcome> {
        let mut board = self.cached().await?;
        let now = self.rb.now();
        let (valid, mut outcome) = self.rb.validate(&board, now, events)?;

        let per_call = self.rb.inner.settings.events_per_call.max(1);
        let store = &self.rb.inner.store;
        for (n, chunk) in valid.chunks(per_call).enumerate() {
            let statuses = self
                .rb
                .retry_changed(&mut board, |b| async move {
                    let written = store.write(b.writing(now, slot_writes(chunk)));
                    self.rb.change(&b.name, written).await
                })
                .await?;
            match statuses {
                Ok(statuses) => record(&board, now, events, chunk, statuses, &mut outcome),
                Err(error) if n == 0 => return Err(error),
                Err(error) => {
                    // Earlier chunks landed; report the rest as rejected with the cause.
                    for (index, _) in valid[n * per_call..].iter() {
                        outcome.rejected.push(Rejected {
                            index: *index,
                            error: error.clone(),
                        });
                    }
                    break;
                }
            }
        }
        outcome.rejected.sort_by_key(|r| r.index);
        self.rb
            .keep_event_data(&mut board, events, &outcome)
            .await?;
        Ok(outcome)
    }

    /// Applies a batch at most once for `token`, in one store call: a job that replays
    /// its batches after a crash (the legacy import) counts each once. `None` when the
    /// token was applied before. The batch should stay within `events_per_call`.
    pub async fn incr_batch_once(
        self,
        events: &[Event],
        token: &str,
    ) -> Result<Option<BatchOutcome>> {
        let mut board = self.cached().await?;
        let now = self.rb.now();
        let (valid, mut outcome) = self.rb.validate(&board, now, events)?;
        let store = &self.rb.inner.store;
        let valid_ref = &valid;
        let statuses = self
            .rb
            .retry_changed(&mut board, |b| async move {
                let written = store.write_once(b.writing(now, slot_writes(valid_ref)), token);
                self.rb.change(&b.name, written).await
            })
            .await??;
        let Some(statuses) = statuses else {
            return Ok(None);
        };
        record(&board, now, events, &valid, statuses, &mut outcome);
        outcome.rejected.sort_by_key(|r| r.index);
        self.rb
            .keep_event_data(&mut board, events, &outcome)
            .await?;
        Ok(Some(outcome))
    }

    /// Removes the member from every slot and window of the board (moderation).
    pub async fn remove_member(self, member: &str) -> Result<Removed> {
        let member = Member::parse(member)?;
        let store = &self.rb.inner.store;
        let (member, now) = (&member, self.rb.now());
        let stamp = ChangeStamp {
            cause: ChangeCause::Remove,
            now,
        };
        self.change(|b| async move { store.remove_member(&b, member, stamp).await })
            .await
    }
}

impl Rollboard {
    /// Checks a batch against the admission rules: the valid events, placed in their
    /// slots, and an outcome holding the rejected ones.
    pub(super) fn validate(
        &self,
        board: &Board,
        now: Timestamp,
        events: &[Event],
    ) -> Result<(Vec<(usize, SlotWrite)>, BatchOutcome)> {
        let rules = self.inner.settings.admission();
        rules.check_batch(events.len())?;
        let mut outcome = BatchOutcome::default();
        let mut valid = Vec::with_capacity(events.len());
        for (index, event) in events.iter().enumerate() {
            match rules.admit(&board.config, now, event) {
                Ok(write) => valid.push((index, write)),
                Err(error) => outcome.rejected.push(Rejected { index, error }),
            }
        }
        Ok((valid, outcome))
    }
}

/// The writes of admitted events (by index), for one store call.
pub(super) fn slot_writes(admitted: &[(usize, SlotWrite)]) -> Vec<SlotWrite> {
    admitted.iter().map(|(_, w)| w.clone()).collect()
}

/// Adds the store's statuses of `written` (events by index) to `outcome`.
pub(super) fn record(
    board: &Board,
    now: Timestamp,
    events: &[Event],
    written: &[(usize, SlotWrite)],
    statuses: Vec<WriteStatus>,
    outcome: &mut BatchOutcome,
) {
    for ((index, write), status) in written.iter().zip(statuses) {
        match status {
            WriteStatus::Applied => outcome.accepted += 1,
            WriteStatus::Counted(counted) => {
                outcome.accepted += 1;
                outcome.counted.push(Counted {
                    index: *index,
                    counted,
                });
            }
            WriteStatus::TooLate => outcome.rejected.push(Rejected {
                index: *index,
                error: too_late(&board.config, now, &events[*index], write.slot),
            }),
            WriteStatus::OutOfRange => outcome.rejected.push(Rejected {
                index: *index,
                error: Error::OutOfRange {
                    member: write.member.to_string(),
                },
            }),
            WriteStatus::StoreFull => outcome.rejected.push(Rejected {
                index: *index,
                error: Error::StoreFull(
                    "Redis is full: it refused the write at its memory limit (maxmemory, \
                     with the noeviction policy), so nothing of it was applied: this event \
                     is not counted (the batch's accepted events are)"
                        .into(),
                ),
            }),
            WriteStatus::Changed => outcome.rejected.push(Rejected {
                index: *index,
                error: Error::BoardChanged(board.name.to_string()),
            }),
            WriteStatus::Unconfirmed => outcome.rejected.push(Rejected {
                index: *index,
                error: Error::StoreUnavailable(
                    "not confirmed: the store failed part-way through this batch, after \
                     its accepted events were applied (or, retried under its key, the shard \
                     that recorded it was removed by a reshard); this event may or may not \
                     be counted \
                     (send writes with an Idempotency-Key to retry them safely)"
                        .into(),
                ),
            }),
        }
    }
}
