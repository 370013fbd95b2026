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

/// What [`CounterStore::incr_counter`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incremented {
    /// Added.
    Done,
    /// Nothing changed: a sample would leave ±(2^53 − 1).
    OutOfRange,
    /// Nothing changed: the counter's own precisions are these (`None`: it has none),
    /// not what the caller assumed.
    Precisions(Option<Vec<Span>>),
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
    /// `configured` is what the caller assumed of the counter's own precisions (`None`:
    /// it has none, the global ones apply); when the store holds others, nothing is
    /// changed and [`Incremented::Precisions`] says which. Nothing is changed either
    /// when a sample would leave ±(2^53 − 1) ([`Incremented::OutOfRange`]).
    async fn incr_counter(
        &self,
        name: &CounterName,
        configured: Option<&[Span]>,
        sums: &SliceSums,
    ) -> Result<Incremented>;

    /// Sets the counter's own precisions (sorted, distinct), or with `None` removes
    /// them (the global ones apply again). Kept until changed or the counter is dropped,
    /// clean-up or not.
    async fn set_counter_config(
        &self,
        name: &CounterName,
        precisions: Option<&[Span]>,
    ) -> Result<()>;

    /// The counter's own precisions, `None` when it has none.
    async fn counter_config(&self, name: &CounterName) -> Result<Option<Vec<Span>>>;

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

    /// Deletes the counter, its samples and its own precisions; `false` when it had no
    /// samples.
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
