//! Counters in memory: one map of counters behind one mutex, held only for the
//! synchronous work of a call, so every call is atomic as a Redis script is.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use super::MemoryStore;
use crate::domain::counter::{CleanPlan, CounterName, SliceSums};
use crate::domain::{MAX_ABS, Span, Timestamp};
use crate::error::Result;
use crate::store::{CounterCleaned, CounterInfo, CounterStore, Incremented};

/// One counter: per precision, per slice start, the count.
type Counter = BTreeMap<Span, BTreeMap<i64, i64>>;

type Counters = BTreeMap<CounterName, Counter>;

/// Every counter, and the precisions of the counters that have their own.
#[derive(Debug, Default)]
pub(super) struct MemCounters(Mutex<(Counters, BTreeMap<CounterName, Vec<Span>>)>);

impl MemCounters {
    fn lock(&self) -> MutexGuard<'_, (Counters, BTreeMap<CounterName, Vec<Span>>)> {
        // Every call checks before it changes anything, so a poisoned lock holds no
        // half-done change.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl CounterStore for MemoryStore {
    async fn incr_counter(
        &self,
        name: &CounterName,
        configured: Option<&[Span]>,
        sums: &SliceSums,
    ) -> Result<Incremented> {
        let mut guard = self.counters.lock();
        let (counters, configs) = &mut *guard;
        let stored = configs.get(name).map(Vec::as_slice);
        if stored != configured {
            return Ok(Incremented::Precisions(stored.map(<[Span]>::to_vec)));
        }
        let fits = sums.iter().all(|(p, slices)| {
            slices.iter().all(|(slice, sum)| {
                let stored = counters.get(name).and_then(|c| c.get(p)?.get(slice));
                stored
                    .copied()
                    .unwrap_or(0)
                    .checked_add(*sum)
                    .is_some_and(|v| v.abs() <= MAX_ABS)
            })
        });
        if !fits {
            return Ok(Incremented::OutOfRange);
        }
        let counter = counters.entry(name.clone()).or_default();
        for (p, slices) in sums {
            let samples = counter.entry(*p).or_default();
            for (slice, sum) in slices {
                *samples.entry(*slice).or_default() += sum;
            }
        }
        Ok(Incremented::Done)
    }

    async fn set_counter_config(
        &self,
        name: &CounterName,
        precisions: Option<&[Span]>,
    ) -> Result<()> {
        let configs = &mut self.counters.lock().1;
        match precisions {
            Some(p) => configs.insert(name.clone(), p.to_vec()),
            None => configs.remove(name),
        };
        Ok(())
    }

    async fn counter_config(&self, name: &CounterName) -> Result<Option<Vec<Span>>> {
        Ok(self.counters.lock().1.get(name).cloned())
    }

    async fn counter_samples(
        &self,
        name: &CounterName,
        precision: Span,
    ) -> Result<Option<Vec<(i64, i64)>>> {
        let counters = &self.counters.lock().0;
        Ok(counters
            .get(name)
            .and_then(|c| c.get(&precision))
            .map(|s| s.iter().map(|(k, v)| (*k, *v)).collect()))
    }

    async fn counter_precisions(&self, name: &CounterName) -> Result<Option<Vec<Span>>> {
        Ok(self
            .counters
            .lock()
            .0
            .get(name)
            .map(|c| c.keys().copied().collect()))
    }

    async fn list_counters(&self) -> Result<Vec<CounterInfo>> {
        Ok(self
            .counters
            .lock()
            .0
            .iter()
            .map(|(name, c)| CounterInfo {
                name: name.clone(),
                precisions: c.keys().copied().collect(),
            })
            .collect())
    }

    async fn drop_counter(&self, name: &CounterName) -> Result<bool> {
        let mut guard = self.counters.lock();
        guard.1.remove(name);
        Ok(guard.0.remove(name).is_some())
    }

    async fn clean_counter(
        &self,
        name: &CounterName,
        now: Timestamp,
        plan: CleanPlan,
    ) -> Result<CounterCleaned> {
        let counters = &mut self.counters.lock().0;
        let Some(counter) = counters.get_mut(name) else {
            return Ok(CounterCleaned::default());
        };
        let mut removed = 0;
        for (precision, samples) in counter.iter_mut() {
            if plan.visits(*precision) {
                let kept = samples.split_off(&plan.cutoff(*precision, now));
                removed += samples.len() as u64;
                *samples = kept;
            }
        }
        let forgotten = counter.values().all(BTreeMap::is_empty);
        if forgotten {
            counters.remove(name);
        }
        Ok(CounterCleaned { removed, forgotten })
    }
}
