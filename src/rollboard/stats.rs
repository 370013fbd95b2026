//! Aggregate statistics: record a value, read a (context, kind)'s current and previous
//! hour, list a kind's slowest contexts.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Rollboard, Stats};
use crate::domain::stats::{
    self, Bucket, HourStats, SlowEntry, StatsContext, StatsKind, check_value, hour_of,
};
use crate::error::{Error, Result};
use crate::store::StatRecord;

/// A (context, kind)'s statistics for the current hour and the previous one.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct ContextStats {
    /// The context.
    pub context: String,
    /// The kind.
    pub kind: String,
    /// The current hour (by this instance's clock), null when nothing was recorded in it.
    pub current: Option<HourStats>,
    /// The previous hour, null when nothing was recorded in it.
    pub previous: Option<HourStats>,
}

impl Stats<'_> {
    /// Records `value` (a finite number) for `kind` in `context`, in the current hour:
    /// count, sum, min, max, a stable variance and a histogram, atomically, and the
    /// kind's list of the 100 slowest contexts. On Redis, concurrent records share one
    /// script call (group commit); this answers once the value is in Redis.
    pub async fn record(self, context: &str, kind: &str, value: f64) -> Result<()> {
        self.record_many(context, kind, &[value]).await
    }

    /// Records a batch of values for `kind` in `context` in one store call (one script
    /// call on Redis, possibly shared with concurrent records), all or nothing, and
    /// updates the slowest list once.
    pub async fn record_many(self, context: &str, kind: &str, values: &[f64]) -> Result<()> {
        self.rb
            .record_stats_in_hour(context, kind, values, hour_of(self.rb.now()))
            .await
    }

    /// The statistics of `kind` in `context` for the current and the previous hour
    /// (mean, sample standard deviation, p50/p95/p99 within 2 %);
    /// [`Error::StatsNotFound`] when neither holds anything.
    pub async fn read(self, context: &str, kind: &str) -> Result<ContextStats> {
        let context = StatsContext::parse(context)?;
        let kind = StatsKind::parse(kind)?;
        self.rb.flush_pending_stats().await;
        let stored = self
            .rb
            .inner
            .store
            .stats()
            .read_stats(&context, &kind)
            .await?;
        match stored.view(self.rb.now()) {
            (None, None) => Err(Error::StatsNotFound {
                context: context.to_string(),
                kind: kind.to_string(),
            }),
            (current, previous) => Ok(ContextStats {
                context: context.to_string(),
                kind: kind.to_string(),
                current,
                previous,
            }),
        }
    }

    /// Up to `limit` (1–100) contexts of `kind` with the highest mean of their newest
    /// hour, highest first.
    pub async fn slowest(self, kind: &str, limit: usize) -> Result<Vec<SlowEntry>> {
        let kind = StatsKind::parse(kind)?;
        if !(1..=stats::SLOWEST_KEPT).contains(&limit) {
            return Err(Error::InvalidQuery {
                reason: format!("limit must be 1 to {}", stats::SLOWEST_KEPT),
            });
        }
        self.rb.flush_pending_stats().await;
        self.rb.inner.store.stats().slowest(&kind, limit).await
    }
}

impl Rollboard {
    /// [`record_stats`](Self::record_stats) into the hour starting at `hour` (unix
    /// seconds): for values recorded earlier and written now.
    pub(crate) async fn record_stats_in_hour(
        &self,
        context: &str,
        kind: &str,
        values: &[f64],
        hour: i64,
    ) -> Result<()> {
        let context = StatsContext::parse(context)?;
        let kind = StatsKind::parse(kind)?;
        self.settings().admission().check_batch(values.len())?;
        let mut counts = BTreeMap::<Bucket, u64>::new();
        for value in values {
            *counts.entry(Bucket::of(check_value(*value)?)).or_default() += 1;
        }
        let buckets: BTreeMap<String, u64> = counts
            .into_iter()
            .map(|(b, n)| (b.to_string(), n))
            .collect();
        if values.is_empty() {
            return Ok(());
        }
        let record = StatRecord {
            context: &context,
            kind: &kind,
            values,
            buckets: &buckets,
            hour,
        };
        self.inner.store.stats().record_stat(record).await
    }

    /// Writes the values this process recorded in the background, so that a read sees
    /// every value recorded before it here (other processes' within their flush).
    pub(crate) async fn flush_pending_stats(&self) {
        #[cfg(feature = "server")]
        self.flush_stats().await;
    }
}
