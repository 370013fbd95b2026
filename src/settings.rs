//! Tunable limits of a [`Rollboard`](crate::Rollboard), with the defaults a service uses.

use crate::domain::{Admission, Span};
use crate::rates::RateTiers;

/// Limits and tuning. `Settings::default()` is what `rollboard serve` uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// How far in the future an event's time may be (clock skew between writers).
    pub max_future_skew: Span,
    /// Most events in one batch.
    pub max_batch: usize,
    /// Most events applied per store call (one Redis script call), so a big batch never
    /// blocks Redis for long.
    pub events_per_call: usize,
    /// Largest `limit` of a top-N read.
    pub max_limit: u64,
    /// The tiers of every rate key's time ring.
    pub rate_tiers: RateTiers,
    /// The precisions every counter counts at (default 1 s, 5 s, 1 min, 5 min, 1 h, 5 h,
    /// 1 day), sorted, distinct.
    pub counter_precisions: Vec<Span>,
    /// Slices of time a counter keeps per precision (default 120).
    pub counter_keep: u32,
    /// Accept a Redis whose `maxmemory-policy` may evict keys (anything but
    /// `noeviction`): totals are then exact only while Redis stays under its limit.
    /// Off by default: such a Redis fails the memory check (and `/readyz`).
    pub accept_eviction: bool,
    /// How long a write made under an idempotency key is remembered (default 24 h): a
    /// retry with the same key within this time is applied once.
    pub idempotency_ttl: Span,
    /// Most boards with Prometheus series of their own (default 1,000; 0: none): the
    /// first boards seen get them, every other board is counted under `board="(other)"`,
    /// so the number of series stays bounded however many boards there are.
    pub metrics_board_series: usize,
    /// How old, in milliseconds, an answer of a read (top-N, member, ranks, around) may
    /// be when the caller does not say: 0 (the default) reads the store every time;
    /// above 0, a read may be answered from this process's read cache while its answer
    /// is at most this old (at most [`MAX_STALENESS_MS`](crate::MAX_STALENESS_MS); see
    /// [`Rollboard::reading_within`](crate::Rollboard::reading_within)).
    pub max_staleness_ms: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_future_skew: Span::from_seconds(60).expect("60 s is a valid span"),
            max_batch: 10_000,
            events_per_call: 1_000,
            max_limit: 1_000,
            rate_tiers: RateTiers::default(),
            counter_precisions: crate::domain::counter::default_precisions(),
            counter_keep: crate::domain::counter::DEFAULT_KEEP,
            accept_eviction: false,
            idempotency_ttl: Span::from_seconds(86_400).expect("24 h is a valid span"),
            metrics_board_series: 1_000,
            max_staleness_ms: 0,
        }
    }
}

impl Settings {
    /// The limits events are admitted under.
    pub(crate) fn admission(&self) -> Admission {
        Admission {
            max_batch: self.max_batch,
            max_future_skew: self.max_future_skew,
        }
    }
}
