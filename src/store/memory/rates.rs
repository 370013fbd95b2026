//! Rate windows in memory: one [`RateRing`] per key (and tiers), behind one mutex held
//! only for the synchronous work of a call. A ring silent for its longest tier holds
//! nothing and is forgotten, as its Redis key expires: each change notes how long the
//! ring still holds anything (by the callers' clock) and, like Redis's `PEXPIRE`, turns
//! that into a deadline on this process's monotonic clock; a sweep at most once a minute
//! drops rings past theirs, so silent keys cost no memory. Expiring by the monotonic
//! clock, not the callers' one, keeps a caller's clock that jumps ahead and back (a test's
//! `ManualClock`) from forgetting hits that Redis would still hold.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::MemoryStore;
use crate::domain::Timestamp;
use crate::error::{Error, Result};
use crate::rates::ring::RateRing;
use crate::rates::{RateKey, RateTiers, RateWindow, Verdict};
use crate::store::rates::{RateHit, RateStore};

/// The rings, by tiers fingerprint and key, each with the deadline (monotonic) after
/// which it holds nothing.
#[derive(Debug, Default)]
pub(super) struct MemRates {
    rings: Mutex<Rings>,
}

#[derive(Debug, Default)]
struct Rings {
    by_key: HashMap<(String, RateKey), (RateRing, Instant)>,
    /// When the next sweep of rings that hold nothing is due (none yet: at once).
    next_sweep: Option<Instant>,
}

/// How often silent rings are swept, at most.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

impl MemRates {
    /// The rings, swept of those past their deadline when a sweep is due.
    fn lock(&self) -> MutexGuard<'_, Rings> {
        let mut rings = self.rings_now();
        let now = Instant::now();
        if rings.next_sweep.is_none_or(|due| now >= due) {
            rings.by_key.retain(|_, (_, deadline)| *deadline > now);
            rings.next_sweep = Some(now + SWEEP_EVERY);
        }
        rings
    }

    /// The rings, without a sweep.
    fn rings_now(&self) -> MutexGuard<'_, Rings> {
        // Every operation completes its change before it can panic, so a poisoned
        // lock holds consistent rings.
        self.rings.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Rings {
    /// The ring of `key` and until when it holds anything, created empty when missing.
    fn ring(&mut self, tiers: &RateTiers, key: &RateKey) -> &mut (RateRing, Instant) {
        self.by_key
            .entry(slot(tiers, key))
            .or_insert_with(|| (RateRing::new(tiers), Instant::now()))
    }
}

/// Notes, after a change at `now`, until when `entry`'s ring holds anything, as a
/// deadline on the monotonic clock (what `PEXPIRE` of the time left does in Redis).
fn touch(tiers: &RateTiers, now: Timestamp, entry: &mut (RateRing, Instant)) {
    let left_ms = entry
        .0
        .holds_until_ms(tiers)
        .map_or(0, |until| until.saturating_sub(now.unix_millis()).max(0));
    entry.1 = Instant::now() + Duration::from_millis(left_ms.unsigned_abs());
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
        let mut rings = self.rates.lock();
        Ok(hits
            .iter()
            .map(|hit| {
                let entry = rings.ring(tiers, &hit.key);
                let counted = entry.0.hit(tiers, now, hit.at, hit.count);
                touch(tiers, now, entry);
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
        let rings = self.rates.lock();
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
        let mut rings = self.rates.lock();
        let entry = rings.ring(tiers, key);
        let outcome = entry.0.check(tiers, window, now, limit, count);
        touch(tiers, now, entry);
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

    #[tokio::test(start_paused = true)]
    async fn a_ring_silent_for_its_longest_tier_is_forgotten() {
        let store = MemoryStore::new();
        let tiers = RateTiers::default();
        let key = |k: &str| RateKey::parse(k).unwrap();
        let t0 = 1_700_000_000_000;
        let day = 86_400_000;
        let hit = |k: &str, ms: i64| RateHit {
            key: key(k),
            at: at(ms),
            count: 1,
        };
        let (store_ref, tiers_ref) = (&store, &tiers);
        let hit_at = |k: &str, ms: i64| {
            let hit = hit(k, ms);
            async move {
                store_ref
                    .rate_hits(tiers_ref, at(ms), &[hit])
                    .await
                    .unwrap()
            }
        };
        let keys = |store: &MemoryStore| {
            let mut keys: Vec<String> = store
                .rates
                .rings_now()
                .by_key
                .keys()
                .map(|(_, k)| k.to_string())
                .collect();
            keys.sort();
            keys
        };
        // "a" is counted by the longest tier (366 days of 1 day) until the end of its
        // 366th day: 365 days and 24 h minus the time since midnight, by the callers'
        // clock, which jumping ahead (a manual clock) forgets nothing.
        hit_at("a", t0).await;
        hit_at("b", t0 + 400 * day).await;
        assert_eq!(keys(&store), ["a", "b"]);
        // Like a Redis key's TTL, the time left runs on the monotonic clock: 365 days
        // on, "a" still holds its hit.
        tokio::time::advance(Duration::from_millis(365 * day as u64)).await;
        hit_at("c", t0 + 400 * day).await;
        assert_eq!(keys(&store), ["a", "b", "c"]);
        // Another 2 days on, "a" and "b" (hit at the same moment, whatever the callers'
        // clock said) hold nothing and are gone at the next sweep.
        tokio::time::advance(Duration::from_millis(2 * day as u64)).await;
        hit_at("d", t0 + 400 * day).await;
        assert_eq!(keys(&store), ["c", "d"]);
        // And the sweep runs at most once a minute.
        hit_at("e", t0 + 400 * day).await;
        tokio::time::advance(Duration::from_millis(367 * day as u64)).await;
        assert_eq!(keys(&store), ["c", "d", "e"]);
        hit_at("f", t0 + 400 * day).await;
        assert_eq!(keys(&store), ["f"]);
    }
}
