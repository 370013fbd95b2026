//! Writes under an idempotency key: a write retried after an unknown outcome (a timeout,
//! a 503) is applied once and answered as the first time.
//!
//! A batch goes to the store in calls of at most `events_per_call` events, each recorded
//! under its own part of the key with the write's fingerprint and the `now` it was
//! admitted at. A retry admits the events again at that recorded `now`, so every event
//! lands in the same slot and gets the same verdict; parts already applied answer from
//! their record, the others (a retry after a failure half-way) are applied then.

use super::Rollboard;
use super::write::{BatchOutcome, record, slot_writes};
use crate::domain::{BoardName, Event, Fingerprint, IdempotencyKey, Timestamp};
use crate::error::{Error, Result};
use crate::store::{Keyed, WriteKey};

/// The outcome of a keyed write, and whether it was applied before.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyedOutcome {
    /// What the write did (the first time, when replayed).
    pub outcome: BatchOutcome,
    /// Every part of it had been applied by an earlier call with the same key: nothing
    /// was applied this time.
    pub replayed: bool,
}

impl Rollboard {
    /// Applies a batch once for `key` (an idempotency key: 1–255 printable ASCII
    /// characters) within [`Settings::idempotency_ttl`](crate::Settings): a retry with the
    /// same key and events applies nothing and answers the first call's outcome; the same
    /// key with other events is [`Error::IdempotencyKeyReused`].
    pub async fn write_idempotent(
        &self,
        board: &str,
        events: &[Event],
        key: &str,
    ) -> Result<BatchOutcome> {
        let key = IdempotencyKey::parse(key)?;
        let fingerprint = Fingerprint::of_events(events);
        Ok(self
            .write_keyed(board, events, &key, &fingerprint)
            .await?
            .outcome)
    }

    /// [`write_idempotent`](Self::write_idempotent) with the fingerprint given (the HTTP
    /// service fingerprints the request body), telling whether it was a replay.
    pub async fn write_keyed(
        &self,
        board: &str,
        events: &[Event],
        key: &IdempotencyKey,
        fingerprint: &Fingerprint,
    ) -> Result<KeyedOutcome> {
        let mut board = self.cached_board(&BoardName::parse(board)?).await?;
        let store = &self.inner.store;
        let per_call = self.inner.settings.events_per_call.max(1);
        let ttl = self.inner.settings.idempotency_ttl;
        let mut now = self.now();
        let mut restarted = false;
        'admit: loop {
            let (valid, mut outcome) = self.validate(&board, now, events)?;
            // Even a batch with nothing to apply is recorded, so it answers the same.
            let calls: Vec<&[_]> = if valid.is_empty() {
                vec![&[]]
            } else {
                valid.chunks(per_call).collect()
            };
            let mut replayed = true;
            for (part, chunk) in calls.into_iter().enumerate() {
                let write_key = WriteKey {
                    name: key.part(part),
                    fingerprint: fingerprint.as_str().to_owned(),
                    ttl,
                };
                let write_key = &write_key;
                let keyed = self
                    .retry_changed(&mut board, |b| async move {
                        store
                            .write_keyed(&b, now, slot_writes(chunk), write_key)
                            .await
                    })
                    .await??;
                let statuses = match keyed {
                    Keyed::Applied(statuses) => {
                        replayed = false;
                        statuses
                    }
                    Keyed::Reused => {
                        return Err(Error::IdempotencyKeyReused {
                            key: key.to_string(),
                        });
                    }
                    Keyed::Replayed { now: first, .. } if first != now => {
                        if restarted {
                            return Err(parts_disagree(key, first, now));
                        }
                        // Admit the events again as the first call did.
                        restarted = true;
                        now = first;
                        continue 'admit;
                    }
                    Keyed::Replayed { recorded, .. } => recorded.statuses(&slot_writes(chunk))?,
                };
                record(&board, now, events, chunk, statuses, &mut outcome);
            }
            outcome.rejected.sort_by_key(|r| r.index);
            return Ok(KeyedOutcome { outcome, replayed });
        }
    }
}

/// The parts of a key were recorded at different times: some expired and were applied
/// again. Only a retry later than the key's time to live gets here.
fn parts_disagree(key: &IdempotencyKey, first: Timestamp, now: Timestamp) -> Error {
    Error::Store(format!(
        "the records of idempotency key {key:?} disagree (written at {} and {} ms): retried after its time to live?",
        first.unix_millis(),
        now.unix_millis()
    ))
}
