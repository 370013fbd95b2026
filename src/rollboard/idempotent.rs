//! Writes under an idempotency key: a write retried after an unknown outcome (a timeout,
//! a 503) is applied once and answered as the first time.
//!
//! The batch goes to the store whole, under the key, with the write's fingerprint and the
//! `now` it was admitted at; the store splits it into calls and records each (see
//! `Store::write_keyed`). A retry admits the events again at the recorded `now`, so
//! every event lands in the same slot and gets the same verdict; calls already applied
//! answer from their records, the others (a retry after a failure half-way) are applied
//! then.

use super::Windowed;
use super::write::{BatchOutcome, record, slot_writes};
use crate::domain::{Event, Fingerprint, IdempotencyKey};
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

impl Windowed<'_> {
    /// Applies a batch once for `key` (an idempotency key: 1–255 printable ASCII
    /// characters) within [`Settings::idempotency_ttl`](crate::Settings): a retry with the
    /// same key and events applies nothing and answers the first call's outcome; the same
    /// key with other events is [`Error::IdempotencyKeyReused`].
    pub async fn write_idempotent(self, events: &[Event], key: &str) -> Result<BatchOutcome> {
        let key = IdempotencyKey::parse(key)?;
        let fingerprint = Fingerprint::of_events(events);
        Ok(self.write_keyed(events, &key, &fingerprint).await?.outcome)
    }

    /// [`write_idempotent`](Self::write_idempotent) with the fingerprint given (the HTTP
    /// service fingerprints the request body), telling whether it was a replay.
    pub async fn write_keyed(
        self,
        events: &[Event],
        key: &IdempotencyKey,
        fingerprint: &Fingerprint,
    ) -> Result<KeyedOutcome> {
        let mut board = self.cached().await?;
        let store = &self.rb.inner.store;
        let write_key = WriteKey {
            name: key.as_str().to_owned(),
            fingerprint: fingerprint.as_str().to_owned(),
            ttl: self.rb.inner.settings.idempotency_ttl,
        };
        let write_key = &write_key;
        let mut now = self.rb.now();
        // Once more at most: a replay recorded at another `now` is admitted again at it.
        for _ in 0..2 {
            let (valid, mut outcome) = self.rb.validate(&board, now, events)?;
            let valid_ref = &valid;
            // Even a batch with nothing to apply is recorded, so it answers the same.
            let keyed = self
                .rb
                .retry_changed(&mut board, |b| async move {
                    let written =
                        store.write_keyed(b.writing(now, slot_writes(valid_ref)), write_key);
                    self.rb.change(&b.name, written).await
                })
                .await??;
            let (statuses, replayed) = match keyed {
                Keyed::Applied(statuses) => (statuses, false),
                Keyed::Reused => {
                    return Err(Error::IdempotencyKeyReused {
                        key: key.to_string(),
                    });
                }
                Keyed::Replayed { now: first, .. } if first != now => {
                    // Admit the events again as the first call did.
                    now = first;
                    continue;
                }
                Keyed::Replayed { recorded, .. } => {
                    (recorded.statuses(&slot_writes(&valid))?, true)
                }
            };
            record(&board, now, events, &valid, statuses, &mut outcome);
            outcome.rejected.sort_by_key(|r| r.index);
            // A replay keeps the data again: the first call may have failed to.
            self.rb
                .keep_event_data(&mut board, events, &outcome)
                .await?;
            return Ok(KeyedOutcome { outcome, replayed });
        }
        Err(Error::store(format!(
            "the record of idempotency key {key:?} changed while its write was admitted again"
        )))
    }
}
