//! A memory board's records of keyed writes (see [`Store::write_keyed`]): each kept until
//! its deadline by the store's clock, then forgotten, so memory stays bounded.
//!
//! [`Store::write_keyed`]: crate::store::Store::write_keyed

use std::collections::{HashMap, VecDeque};

use crate::domain::Timestamp;
use crate::store::{Keyed, Recorded, WriteKey, WriteStatus};

/// One recorded write.
#[derive(Debug)]
struct Record {
    fingerprint: String,
    now: Timestamp,
    /// Unix milliseconds from which the record is as good as absent.
    deadline: i64,
    statuses: Vec<WriteStatus>,
}

/// The records of one board, and the order they expire in.
#[derive(Debug, Default)]
pub(super) struct KeyedRecords {
    records: HashMap<String, Record>,
    /// (deadline, name) in the order recorded; with one TTL that is deadline order.
    expiry: VecDeque<(i64, String)>,
}

impl KeyedRecords {
    /// What a call with `key` at `now` must answer when its write was applied before,
    /// or `None` when it is to be applied (forgetting the records expired by `now`).
    pub fn replay(&mut self, key: &WriteKey, now: Timestamp) -> Option<Keyed> {
        let now_ms = now.unix_millis();
        while let Some((deadline, _)) = self.expiry.front() {
            if *deadline > now_ms {
                break;
            }
            let (deadline, name) = self.expiry.pop_front().expect("front exists");
            // A record written again since has a later deadline: keep it.
            if self
                .records
                .get(&name)
                .is_some_and(|r| r.deadline == deadline)
            {
                self.records.remove(&name);
            }
        }
        let record = self.records.get(&key.name)?;
        if record.deadline <= now_ms {
            return None;
        }
        Some(if record.fingerprint == key.fingerprint {
            Keyed::Replayed {
                now: record.now,
                recorded: Recorded::Statuses(record.statuses.clone()),
            }
        } else {
            Keyed::Reused
        })
    }

    /// Records what the write under `key`, applied at `now`, did.
    pub fn record(&mut self, key: &WriteKey, now: Timestamp, statuses: &[WriteStatus]) {
        let deadline = now.unix_millis() + key.ttl.secs_i64() * 1000;
        self.expiry.push_back((deadline, key.name.clone()));
        self.records.insert(
            key.name.clone(),
            Record {
                fingerprint: key.fingerprint.clone(),
                now,
                deadline,
                statuses: statuses.to_vec(),
            },
        );
    }
}
