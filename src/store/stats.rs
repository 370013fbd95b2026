//! [`StatsStore`]: what a store does for aggregate statistics (see
//! [`crate::domain::stats`]), implemented by both stores and checked by one suite.

use async_trait::async_trait;

use crate::domain::stats::{SlowEntry, StatsContext, StatsKind, StoredStats};
use crate::error::Result;

/// One value to record, with what the caller computed for it.
#[derive(Debug, Clone, PartialEq)]
pub struct StatRecord<'a> {
    /// Where it was measured.
    pub context: &'a StatsContext,
    /// What was measured.
    pub kind: &'a StatsKind,
    /// The value.
    pub value: f64,
    /// Its histogram bucket ([`bucket_of`](crate::domain::stats::bucket_of)).
    pub bucket: &'a str,
    /// The hour it counts in, by the caller's clock (unix seconds).
    pub hour: i64,
    /// Entries the kind's slowest list keeps.
    pub slowest_kept: usize,
}

/// Stats storage. All methods are safe to call concurrently, from several processes.
#[async_trait]
pub trait StatsStore: Send + Sync {
    /// Records one value in its (context, kind) for its hour, rolling the hours over
    /// (the newest becomes the previous one; older ones go), then updates the kind's
    /// slowest list with the newest hour's mean.
    async fn record_stat(&self, record: StatRecord<'_>) -> Result<()>;

    /// The newest stored hour of (context, kind) and the one before it.
    async fn read_stats(&self, context: &StatsContext, kind: &StatsKind) -> Result<StoredStats>;

    /// Up to `limit` contexts of `kind` with the highest mean, highest first.
    async fn slowest(&self, kind: &StatsKind, limit: usize) -> Result<Vec<SlowEntry>>;
}
