//! The store side of rate windows: [`RateStore`], implemented by both stores (the
//! memory store in `memory/rates.rs`, Redis in `redis/rates/`) and reached from any
//! [`Store`](super::Store) through [`Store::rates`](super::Store::rates).
//!
//! Stores receive validated input (keys, windows, counts, times admitted by the
//! [`Rollboard`](crate::Rollboard) facade) and keep one time ring per key with the
//! rules of [`crate::rates::ring`].

use async_trait::async_trait;

use crate::domain::Timestamp;
use crate::error::Result;
use crate::rates::{RateKey, RateTiers, RateWindow, Verdict};

/// One hit to count: `count` hits of `key` at `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateHit {
    /// The key.
    pub key: RateKey,
    /// When it happened.
    pub at: Timestamp,
    /// How many hits (at least 1).
    pub count: u32,
}

/// Rate windows of a store. All methods are safe to call concurrently, from several
/// processes; each hit and each check is atomic.
#[async_trait]
pub trait RateStore: Send + Sync + 'static {
    /// Counts each hit, seen at `now`, in every tier that still holds its slot. Per hit:
    /// how many tiers counted it (0: too late for every tier, nothing changed), or
    /// [`Error::RateOverflow`](crate::Error::RateOverflow) (nothing changed).
    async fn rate_hits(
        &self,
        tiers: &RateTiers,
        now: Timestamp,
        hits: &[RateHit],
    ) -> Result<Vec<Result<usize>>>;

    /// The counts of `windows` at `now`, in order.
    async fn rate_counts(
        &self,
        tiers: &RateTiers,
        key: &RateKey,
        windows: &[RateWindow],
        now: Timestamp,
    ) -> Result<Vec<u64>>;

    /// Counts `count` hits at `now` only if `window` then holds at most `limit`.
    async fn rate_check(
        &self,
        tiers: &RateTiers,
        key: &RateKey,
        window: &RateWindow,
        now: Timestamp,
        limit: u64,
        count: u32,
    ) -> Result<Verdict>;

    /// Forgets the key. `false` when it held nothing.
    async fn rate_delete(&self, tiers: &RateTiers, key: &RateKey) -> Result<bool>;
}
