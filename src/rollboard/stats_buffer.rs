//! Stats values recorded in the background ([`Rollboard::record_stat_deferred`]): held in
//! this process, per (context, kind, hour), and written by [`Rollboard::flush_stats`] as
//! [`Stats::record_many`](super::Stats::record_many) batches of at most [`FLUSH_RECORD`]
//! values. The service's access-time layer records every request this way, so a request
//! costs a lock and a push instead of a store call.
//!
//! Nothing is sampled: every value is recorded, in the hour it was recorded in, within
//! [`FLUSH_EVERY`] (a task started with the first value flushes; stats reads of this
//! process flush first, so they see every value this process recorded). A flush that
//! fails or takes longer than [`FLUSH_TIMEOUT`] drops its values; so do values beyond
//! [`MAX_PENDING`] while a flush is overdue (a store down for long). Drops are counted in
//! `rollboard_access_time_dropped_total`, by context.

use foldhash::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use super::{Inner, Rollboard};
use crate::domain::stats::hour_of;

/// How often the pending values are written.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// How long one flush may take before its values are dropped.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// Values held at most; more are dropped (counted) until a flush empties the buffer.
pub const MAX_PENDING: usize = 200_000;

/// The most values one flushed record holds. A record is written all or nothing, so it
/// bounds what one script call must carry: the Redis store packs records into calls of
/// ~0.4 ms of Redis time each (3,880 values of one context at most), splitting a
/// context's records over several calls, run in order, but never one record. Under
/// 20,000 requests/s, one record per (context, kind, hour) made calls of ~7,150 values
/// and 5 ms.
pub const FLUSH_RECORD: usize = 1024;

/// The values recorded and not yet written.
#[derive(Default)]
pub(super) struct StatsBuffer {
    pending: Mutex<Pending>,
    /// Held by a flush while it writes, so a flush that returns has written every value
    /// recorded before it started, even those another flush had taken.
    flushing: tokio::sync::Mutex<()>,
    /// The task that flushes every [`FLUSH_EVERY`], started with the first value.
    flusher: OnceLock<()>,
}

/// A kind's values of one context, by hour (unix seconds), oldest first.
type ByHour = Vec<(i64, Vec<f64>)>;

#[derive(Default)]
struct Pending {
    /// Values by context, then kind.
    values: HashMap<String, HashMap<&'static str, ByHour>>,
    /// How many values in all.
    len: usize,
}

impl Rollboard {
    /// Records `value` for `kind` in `context` in the current hour, in the background:
    /// the value is held in this process and written with the others within a second
    /// (see the module docs). Never waits for the store. A value that is not finite, or
    /// a context or kind that is not valid, is dropped (and counted) when written. Call
    /// it inside a Tokio runtime: the first call starts the flushing task.
    pub(crate) fn record_stat_deferred(&self, context: &str, kind: &'static str, value: f64) {
        let buffer = &self.inner.stats_buffer;
        buffer.flusher.get_or_init(|| spawn_flusher(&self.inner));
        let hour = hour_of(self.now());
        let mut pending = buffer.pending.lock().expect("stats buffer lock");
        if pending.len >= MAX_PENDING {
            drop(pending);
            dropped(context, 1);
            return;
        }
        pending.len += 1;
        let kinds = match pending.values.get_mut(context) {
            Some(kinds) => kinds,
            None => pending.values.entry(context.to_owned()).or_default(),
        };
        let hours = kinds.entry(kind).or_default();
        match hours.last_mut() {
            Some((at, values)) if *at == hour => values.push(value),
            _ => hours.push((hour, vec![value])),
        }
    }

    /// Writes every value [`record_stat_deferred`](Self::record_stat_deferred) holds:
    /// batches of [`FLUSH_RECORD`] values per (context, kind, hour), concurrently (so
    /// batches share script calls), each within [`FLUSH_TIMEOUT`]. The values of a batch
    /// that cannot be written are dropped and counted.
    pub(crate) async fn flush_stats(&self) {
        let buffer = &self.inner.stats_buffer;
        let _flushing = buffer.flushing.lock().await;
        let taken = std::mem::take(&mut *buffer.pending.lock().expect("stats buffer lock"));
        if taken.len == 0 {
            return;
        }
        let max_batch = self.settings().admission().max_batch.clamp(1, FLUSH_RECORD);
        let mut writes = Vec::new();
        for (context, kinds) in &taken.values {
            for (kind, hours) in kinds {
                for (hour, values) in hours {
                    for chunk in values.chunks(max_batch) {
                        writes.push(async move {
                            let write = self.record_stats_in_hour(context, kind, chunk, *hour);
                            let written = tokio::time::timeout(FLUSH_TIMEOUT, write).await;
                            if !matches!(written, Ok(Ok(()))) {
                                dropped(context, chunk.len());
                            }
                        });
                    }
                }
            }
        }
        futures_util::future::join_all(writes).await;
    }
}

/// Starts the task that flushes `inner`'s buffer every [`FLUSH_EVERY`] until the
/// [`Rollboard`] is dropped.
fn spawn_flusher(inner: &Arc<Inner>) {
    let inner: Weak<Inner> = Arc::downgrade(inner);
    tokio::spawn(async move {
        let mut every = tokio::time::interval(FLUSH_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            let Some(inner) = inner.upgrade() else {
                return;
            };
            let staleness = crate::domain::Staleness::EXACT;
            Rollboard { inner, staleness }.flush_stats().await;
        }
    });
}

/// Counts `n` values of `context` dropped.
fn dropped(context: &str, n: usize) {
    metrics::counter!("rollboard_access_time_dropped_total", "route" => context.to_owned())
        .increment(n as u64);
}
