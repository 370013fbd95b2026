//! The finest head of each rate key a store wrote, as the last reply of `rate_hits.lua`
//! left it (or as the batches in flight will leave it), kept in the process: a guess
//! the script checks, so that a key whose head moves costs one `BITFIELD`, not two.
//!
//! A guess is never trusted: the script's `BITFIELD` sets the head and answers the value
//! it replaced; when that is not the guess (another process wrote the key, a check moved
//! its head, it expired), every op of that `BITFIELD` is undone from the values it
//! answered and the key is played as if no guess had been sent. A wrong or missing
//! guess costs Redis time, never a count. Keys are held by a 64-bit hash of their Redis
//! key (two keys sharing one only share a guess), at most [`MAX_KEYS`] of them: past
//! that the table starts over.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

/// The most keys held (about 16 bytes each, plus the table's slack).
const MAX_KEYS: usize = 1 << 18;

/// What is sent for a key whose head is not known.
pub(crate) const UNKNOWN: i64 = -1;

/// The guesses of one store (see the module docs).
#[derive(Default)]
pub(crate) struct RateHeads {
    /// By hash of the Redis key: the finest head as stored (its slot + 1).
    heads: Mutex<HashMap<u64, i64>>,
}

/// The hash a key is held by.
pub(crate) fn id(redis_key: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    redis_key.hash(&mut hasher);
    hasher.finish()
}

impl RateHeads {
    /// Per key of a batch about to be sent (in the order the script plays them: a key
    /// may come more than once), its id and the newest finest slot its hits reach
    /// (`None`: none counts): the guess to send ([`UNKNOWN`] when none). Each key is then
    /// held at the head the batch leaves it at when the guess is right, so that a batch
    /// built while this one is in flight guesses from it.
    pub(crate) fn guess(&self, keys: impl Iterator<Item = (u64, Option<i64>)>) -> Vec<i64> {
        let mut heads = self.lock();
        keys.map(|(id, need)| {
            let guess = heads.get(&id).copied().unwrap_or(UNKNOWN);
            if let Some(need) = need {
                let after = guess.max(need + 1);
                if heads.len() >= MAX_KEYS && !heads.contains_key(&id) {
                    heads.clear();
                }
                heads.insert(id, after);
            }
            guess
        })
        .collect()
    }

    /// Takes in what the script answered per key: (id, the guess sent, the head as
    /// stored after, or [`UNKNOWN`]). A head below the guess sent means the guess was
    /// wrong and replaces it; otherwise the newer one is kept (a later batch may have
    /// moved it further already).
    pub(crate) fn answered(&self, keys: impl Iterator<Item = (u64, i64, i64)>) {
        let mut heads = self.lock();
        for (id, sent, head) in keys {
            if head == UNKNOWN {
                heads.remove(&id);
            } else if sent > head {
                heads.insert(id, head);
            } else {
                let held = heads.entry(id).or_insert(head);
                *held = (*held).max(head);
            }
        }
    }

    /// Forgets the keys `ids` (a call that failed, a check, a delete).
    pub(crate) fn forget(&self, ids: impl Iterator<Item = u64>) {
        let mut heads = self.lock();
        for id in ids {
            heads.remove(&id);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, i64>> {
        // A guess is only a guess: one left half-written by a panic is still safe.
        self.heads.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_guessed_at_the_head_its_last_batch_leaves_and_corrected_by_the_reply() {
        let heads = RateHeads::default();
        let (a, b) = (id("rate_{a}_x"), id("rate_{b}_x"));
        // Unknown at first; then, in flight, at need + 1 (a later batch reads that).
        assert_eq!(
            heads.guess([(a, Some(10)), (b, None)].into_iter()),
            [UNKNOWN; 2]
        );
        assert_eq!(
            heads.guess([(a, Some(9)), (b, Some(3))].into_iter()),
            [11, UNKNOWN]
        );
        // The first batch's reply (a at 11) after the second's optimistic 11: kept.
        heads.answered([(a, UNKNOWN, 11)].into_iter());
        assert_eq!(heads.guess([(a, None)].into_iter()), [11]);
        // A guess found too high (the key expired, was written elsewhere) is replaced.
        heads.answered([(a, 11, 5)].into_iter());
        assert_eq!(heads.guess([(a, None)].into_iter()), [5]);
        // A head not known after the call is forgotten, as are failed calls' keys.
        heads.answered([(a, 5, UNKNOWN)].into_iter());
        heads.forget([b].into_iter());
        assert_eq!(
            heads.guess([(a, None), (b, None)].into_iter()),
            [UNKNOWN; 2]
        );
    }
}
