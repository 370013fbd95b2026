//! [`CounterStore`]: what a store does for counters (see [`crate::domain::counter`]),
//! implemented by both stores and checked by one conformance suite.

use async_trait::async_trait;
use serde::Serialize;

use crate::domain::counter::{CleanPlan, CounterName, SliceSums};
use crate::domain::{Span, Timestamp};

use crate::error::Result;

/// A counter and the precisions it counts at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct CounterInfo {
    /// The counter's name.
    #[cfg_attr(feature = "server", schema(value_type = String))]
    pub name: CounterName,
    /// Its precisions, finest first.
    #[cfg_attr(feature = "server", schema(value_type = Vec<String>))]
    pub precisions: Vec<Span>,
}

/// What cleaning one counter did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CounterCleaned {
    /// Samples deleted (slices older than the plan keeps).
    pub removed: u64,
    /// The counter was empty afterwards and is forgotten (no longer listed).
    pub forgotten: bool,
}

/// Counter storage. All methods are safe to call concurrently, from several processes.
#[async_trait]
pub trait CounterStore: Send + Sync {
    /// Adds, at each precision, each `(slice_start, sum)` of `sums` (from
    /// [`slice_sums`](crate::domain::counter::slice_sums); precisions sorted, distinct)
    /// to its sample, atomically; a counter not seen before is created and listed.
    /// `false` when a sample would leave ±(2^53 − 1) (nothing is changed then).
    async fn incr_counter(&self, name: &CounterName, sums: &SliceSums) -> Result<bool>;

    /// The samples of `name` at `precision` as stored, `(slice_start, count)` in any
    /// order; `None` when the counter does not count at that precision (or is unknown).
    async fn counter_samples(
        &self,
        name: &CounterName,
        precision: Span,
    ) -> Result<Option<Vec<(i64, i64)>>>;

    /// The counter's precisions, `None` when it is unknown.
    async fn counter_precisions(&self, name: &CounterName) -> Result<Option<Vec<Span>>>;

    /// Every listed counter, by name.
    async fn list_counters(&self) -> Result<Vec<CounterInfo>>;

    /// Deletes the counter and its samples; `false` when it did not exist.
    async fn drop_counter(&self, name: &CounterName) -> Result<bool>;

    /// Deletes the samples `plan` does not keep at `now`, at the precisions the plan
    /// visits, and forgets the counter if it is then empty, atomically with checking
    /// that it is (a concurrent increment either lands before and keeps it, or after
    /// and starts it afresh).
    async fn clean_counter(
        &self,
        name: &CounterName,
        now: Timestamp,
        plan: CleanPlan,
    ) -> Result<CounterCleaned>;
}
