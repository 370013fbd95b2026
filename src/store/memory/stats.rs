//! Stats in memory: per (context, kind) the newest hour and the one before, per kind
//! the slowest list, all behind one mutex so a record and its list update are atomic.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use super::MemoryStore;
use crate::domain::stats::{Moments, SlowEntry, StatsContext, StatsKind, StoredStats};
use crate::error::Result;
use crate::store::{StatRecord, StatsStore};

#[derive(Debug, Default)]
struct State {
    stats: BTreeMap<(StatsContext, StatsKind), StoredStats>,
    /// Per kind, per context: (hour, count, mean) of the newest hour recorded.
    slowest: BTreeMap<StatsKind, BTreeMap<String, (i64, u64, f64)>>,
}

/// Every stat.
#[derive(Debug, Default)]
pub(super) struct MemStats(Mutex<State>);

impl MemStats {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A record changes its entry only after computing it: no half-done change.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl StatsStore for MemoryStore {
    async fn record_stat(&self, r: StatRecord<'_>) -> Result<()> {
        let mut state = self.stats.lock();
        let entry = state
            .stats
            .entry((r.context.clone(), r.kind.clone()))
            .or_default();
        let mut hour = r.hour;
        match entry.newest.take() {
            Some((h, m)) if h >= r.hour => {
                // A writer whose clock is behind counts in the newest hour.
                hour = h;
                entry.newest = Some((h, m));
            }
            Some((h, m)) if h == r.hour - 3600 => entry.before = Some((h, m)),
            _ => entry.before = None,
        }
        let (_, moments) = entry
            .newest
            .get_or_insert_with(|| (hour, Moments::default()));
        r.values.iter().for_each(|v| moments.record(*v));
        let (count, mean) = (moments.count, moments.mean);
        let list = state.slowest.entry(r.kind.clone()).or_default();
        list.insert(r.context.to_string(), (hour, count, mean));
        while list.len() > crate::domain::stats::SLOWEST_KEPT {
            let lowest = list
                .iter()
                .min_by(|a, b| a.1.2.total_cmp(&b.1.2).then(a.0.cmp(b.0)))
                .map(|(c, _)| c.clone());
            lowest.map(|c| list.remove(&c));
        }
        Ok(())
    }

    async fn read_stats(&self, context: &StatsContext, kind: &StatsKind) -> Result<StoredStats> {
        let state = self.stats.lock();
        Ok(state
            .stats
            .get(&(context.clone(), kind.clone()))
            .cloned()
            .unwrap_or_default())
    }

    async fn slowest(&self, kind: &StatsKind, limit: usize) -> Result<Vec<SlowEntry>> {
        let state = self.stats.lock();
        let mut entries: Vec<SlowEntry> = state
            .slowest
            .get(kind)
            .into_iter()
            .flatten()
            .map(|(context, (_, count, mean))| SlowEntry {
                context: context.clone(),
                mean: *mean,
                count: *count,
            })
            .collect();
        // Highest mean first; ties by context, descending, as Redis's ZREVRANGE.
        entries.sort_by(|a, b| b.mean.total_cmp(&a.mean).then(b.context.cmp(&a.context)));
        entries.truncate(limit);
        Ok(entries)
    }

    async fn stat_kinds(&self) -> Result<Vec<StatsKind>> {
        // A kind's list is made by its first record and never removed: the map's keys.
        Ok(self.stats.lock().slowest.keys().cloned().collect())
    }
}
