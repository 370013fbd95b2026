//! Rate windows in memory: one [`RateRing`] per key (and tiers), behind one mutex held
//! only for the synchronous work of a call. (Unlike Redis keys, silent rings do not
//! expire: the memory store is for trying the service and for tests.)

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use super::MemoryStore;
use crate::domain::Timestamp;
use crate::error::{Error, Result};
use crate::rates::ring::RateRing;
use crate::rates::{RateKey, RateTiers, RateWindow, Verdict};
use crate::store::rates::{RateHit, RateStore};

/// The rings, by tiers fingerprint and key.
#[derive(Debug, Default)]
pub(super) struct MemRates {
    rings: Mutex<HashMap<(String, RateKey), RateRing>>,
}

impl MemRates {
    fn lock(&self) -> MutexGuard<'_, HashMap<(String, RateKey), RateRing>> {
        // Every operation completes its change before it can panic, so a poisoned
        // lock holds consistent rings.
        self.rings.lock().unwrap_or_else(|e| e.into_inner())
    }
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
                let ring = rings
                    .entry(slot(tiers, &hit.key))
                    .or_insert_with(|| RateRing::new(tiers));
                ring.hit(tiers, now, hit.at, hit.count)
                    .map_err(|_| Error::RateOverflow {
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
        let ring = rings.get(&slot(tiers, key));
        Ok(windows
            .iter()
            .map(|w| ring.map_or(0, |r| r.count(tiers, w, now)))
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
        let ring = rings
            .entry(slot(tiers, key))
            .or_insert_with(|| RateRing::new(tiers));
        let outcome =
            ring.check(tiers, window, now, limit, count)
                .map_err(|_| Error::RateOverflow {
                    key: key.to_string(),
                })?;
        Ok(outcome.verdict(limit))
    }

    async fn rate_delete(&self, tiers: &RateTiers, key: &RateKey) -> Result<bool> {
        let removed = self.rates.lock().remove(&slot(tiers, key));
        Ok(removed.is_some_and(|ring| !ring.is_empty()))
    }
}
