//! [`StatsStore`]: what a store does for aggregate statistics (see
//! [`crate::domain::stats`]), implemented by both stores and checked by one suite.

use std::collections::BTreeMap;

use async_trait::async_trait;

use crate::domain::stats::{SlowEntry, StatsContext, StatsKind, StoredStats};
use crate::error::Result;

/// Values to record in one (context, kind), with what the caller computed for them.
#[derive(Debug, Clone, PartialEq)]
pub struct StatRecord<'a> {
    /// Where it was measured.
    pub context: &'a StatsContext,
    /// What was measured.
    pub kind: &'a StatsKind,
    /// The values, in order (at least one).
    pub values: &'a [f64],
    /// How many of them fall in each histogram bucket
    /// ([`bucket_of`](crate::domain::stats::bucket_of)).
    pub buckets: &'a BTreeMap<String, u64>,
    /// The hour it counts in, by the caller's clock (unix seconds). The kind's slowest
    /// list keeps [`SLOWEST_KEPT`](crate::SLOWEST_KEPT) entries.
    pub hour: i64,
}

/// Stats storage. All methods are safe to call concurrently, from several processes.
#[async_trait]
pub trait StatsStore: Send + Sync {
    /// Records the values in their (context, kind) for their hour, atomically, rolling the hours over
    /// (the newest becomes the previous one; older ones go), then updates the kind's
    /// slowest list with the newest hour's mean. Redis gathers concurrent calls into
    /// shared script calls (group commit); each call answers once its values are stored.
    async fn record_stat(&self, record: StatRecord<'_>) -> Result<()>;

    /// The newest stored hour of (context, kind) and the one before it.
    async fn read_stats(&self, context: &StatsContext, kind: &StatsKind) -> Result<StoredStats>;

    /// Up to `limit` contexts of `kind` with the highest mean, highest first.
    async fn slowest(&self, kind: &StatsKind, limit: usize) -> Result<Vec<SlowEntry>>;

    /// Every kind that has a slowest list (a kind gets one at its first record), sorted
    /// by name. Slowest lists are kept for good, so a kind recorded once is listed for
    /// good; on Redis a kind recorded only before this listing existed is listed from its
    /// next record on.
    async fn stat_kinds(&self) -> Result<Vec<StatsKind>>;
}
