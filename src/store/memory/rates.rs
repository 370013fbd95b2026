//! Rate windows in memory: one [`RateRing`] per key (and tiers), behind one mutex held
//! only for the synchronous work of a call. A ring silent for its longest tier holds
//! nothing and is forgotten, as its Redis key expires: a sweep at most once a minute
//! (by the callers' clock) drops such rings, so silent keys cost no memory.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use super::MemoryStore;
use crate::domain::Timestamp;
use crate::error::{Error, Result};
use crate::rates::ring::RateRing;
use crate::rates::{RateKey, RateTiers, RateWindow, Verdict};
use crate::store::rates::{RateHit, RateStore};

/// The rings, by tiers fingerprint and key, each with the time (unix ms) until which it
/// holds anything.
#[derive(Debug, Default)]
pub(super) struct MemRates {
    rings: Mutex<Rings>,
}

#[derive(Debug, Default)]
struct Rings {
    by_key: HashMap<(String, RateKey), (RateRing, i64)>,
    /// When (unix ms) the next sweep of rings that hold nothing is due.
    next_sweep: i64,
}

/// How often silent rings are swept, at most.
const SWEEP_EVERY_MS: i64 = 60_000;

impl MemRates {
    /// The rings, swept of those that hold nothing at `now` when a sweep is due.
    fn lock(&self, now: Timestamp) -> MutexGuard<'_, Rings> {
        // Every operation completes its change before it can panic, so a poisoned
        // lock holds consistent rings.
        let mut rings = self.rings.lock().unwrap_or_else(|e| e.into_inner());
        let now = now.unix_millis();
        if now >= rings.next_sweep {
            rings.by_key.retain(|_, (_, until)| *until > now);
            rings.next_sweep = now + SWEEP_EVERY_MS;
        }
        rings
    }
}

impl MemRates {
    /// The rings, without a sweep (for calls that have no time).
    fn rings_now(&self) -> MutexGuard<'_, Rings> {
        self.rings.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Rings {
    /// The ring of `key` and until when it holds anything, created empty when missing.
    fn ring(&mut self, tiers: &RateTiers, key: &RateKey) -> &mut (RateRing, i64) {
        self.by_key
            .entry(slot(tiers, key))
            .or_insert_with(|| (RateRing::new(tiers), 0))
    }
}

/// Notes until when `entry`'s ring holds anything, after a change.
fn touch(tiers: &RateTiers, entry: &mut (RateRing, i64)) {
    entry.1 = entry.0.holds_until_ms(tiers).unwrap_or(0);
}

fn slot(tiers: &RateTiers, key: &RateKey) -> (String, RateKey) {
    (tiers.fingerprint(), key.clone())
}

#[async_trait]
impl RateStore for MemoryStore {
    async fn rate_hits(
        &self,
        tiers: &RateTiers,
        now: Timestamp,
        hits: &[RateHit],
    ) -> Result<Vec<Result<usize>>> {
        let mut rings = self.rates.lock(now);
        Ok(hits
            .iter()
            .map(|hit| {
                let entry = rings.ring(tiers, &hit.key);
                let counted = entry.0.hit(tiers, now, hit.at, hit.count);
                touch(tiers, entry);
                counted.map_err(|_| Error::RateOverflow {
                    key: hit.key.to_string(),
                })
            })
            .collect())
    }

    async fn rate_counts(
        &self,
        tiers: &RateTiers,
        key: &RateKey,
        windows: &[RateWindow],
        now: Timestamp,
    ) -> Result<Vec<u64>> {
        let rings = self.rates.lock(now);
        let ring = rings.by_key.get(&slot(tiers, key));
        Ok(windows
            .iter()
            .map(|w| ring.map_or(0, |(r, _)| r.count(tiers, w, now)))
            .collect())
    }

    async fn rate_check(
        &self,
        tiers: &RateTiers,
        key: &RateKey,
        window: &RateWindow,
        now: Timestamp,
        limit: u64,
        count: u32,
    ) -> Result<Verdict> {
        let mut rings = self.rates.lock(now);
        let entry = rings.ring(tiers, key);
        let outcome = entry.0.check(tiers, window, now, limit, count);
        touch(tiers, entry);
        let outcome = outcome.map_err(|_| Error::RateOverflow {
            key: key.to_string(),
        })?;
        Ok(outcome.verdict(limit))
    }

    async fn rate_delete(&self, tiers: &RateTiers, key: &RateKey) -> Result<bool> {
        let removed = self.rates.rings_now().by_key.remove(&slot(tiers, key));
        Ok(removed.is_some_and(|(ring, _)| !ring.is_empty()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_unix_millis(ms).unwrap()
    }

    #[tokio::test]
    async fn a_ring_silent_for_its_longest_tier_is_forgotten() {
        let store = MemoryStore::new();
        let tiers = RateTiers::default();
        let key = |k: &str| RateKey::parse(k).unwrap();
        let t0 = 1_700_000_000_000;
        let hit = |k: &str, ms: i64| RateHit {
            key: key(k),
            at: at(ms),
            count: 1,
        };
        store
            .rate_hits(&tiers, at(t0), &[hit("a", t0)])
            .await
            .unwrap();
        // The longest tier (366 days of 1 day) still holds "a" a year later.
        let year = 365 * 86_400_000;
        store
            .rate_hits(&tiers, at(t0 + year), &[hit("b", t0 + year)])
            .await
            .unwrap();
        assert_eq!(store.rates.rings_now().by_key.len(), 2);
        let window = tiers.parse_window("180d").unwrap();
        let counts = store
            .rate_counts(&tiers, &key("a"), &[window], at(t0 + year))
            .await
            .unwrap();
        assert_eq!(counts, [0]);
        // Another 367 days on, "a" and "b" hold nothing and are gone at the next sweep.
        let later = t0 + year + 367 * 86_400_000;
        store
            .rate_hits(&tiers, at(later), &[hit("c", later)])
            .await
            .unwrap();
        let rings = store.rates.rings_now();
        assert_eq!(rings.by_key.len(), 1);
        assert!(rings.by_key.contains_key(&slot(&tiers, &key("c"))));
    }
}
