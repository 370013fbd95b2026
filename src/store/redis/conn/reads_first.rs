//! Reads first: Redis runs one call at a time, so a hot read (a top page, a member's
//! standing, a page around one) waits for the write calls sent before it. Two things
//! keep that wait short while batch writes saturate Redis:
//!
//! - the hot reads go on a link of their own ([`Lane::Reads`](super::Lane)): Redis
//!   serves its connections in turn, so a read waits for the write calls Redis has
//!   already read, not for every call queued before it on one socket;
//! - each hot read marks when it went out ([`ReadsSeen`]), and while one went out within
//!   [`LATELY`], write calls are sized for a [`WHILE_READING`]th of their budget
//!   (`sums/budget.rs`), so the write work ahead of a read is a few hundred µs.
//!
//! Measured on the benchmark's `topreads` phase (8 top-10 readers beside 8 connections
//! posting batches of 1,000 events to a 100,000-member board, 2 cores): the reads' p99
//! went from 11–15 ms to 4.2–5.0 ms, and the ingest meanwhile fell by 8–20% (calls a
//! quarter as long). Writes alone are sized as before.

use std::sync::Arc;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long after a hot read the writes still yield to reads.
pub(crate) const LATELY: Duration = Duration::from_millis(100);

/// The share of its budget a write call is sized for while reads go on.
pub(crate) const WHILE_READING: u32 = 4;

/// The instant the marks count from.
static BASE: LazyLock<Instant> = LazyLock::new(Instant::now);

/// When a hot read of the store last went out: shared by the store's clones.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReadsSeen {
    /// Milliseconds after [`BASE`] plus one; 0: never.
    last: Arc<AtomicU64>,
}

impl ReadsSeen {
    /// A hot read goes out now.
    pub(crate) fn mark(&self) {
        self.mark_at(ms_since_base());
    }

    /// Whether a hot read went out within [`LATELY`].
    pub(crate) fn lately(&self) -> bool {
        self.lately_at(ms_since_base())
    }

    fn mark_at(&self, ms: u64) {
        // One store per millisecond at most: reads on every core mark it.
        if self.last.load(Ordering::Relaxed) != ms + 1 {
            self.last.store(ms + 1, Ordering::Relaxed);
        }
    }

    fn lately_at(&self, ms: u64) -> bool {
        let last = self.last.load(Ordering::Relaxed);
        last != 0 && (ms + 1).saturating_sub(last) < LATELY.as_millis() as u64
    }
}

fn ms_since_base() -> u64 {
    BASE.elapsed().as_millis() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_count_as_lately_until_lately_has_passed() {
        let seen = ReadsSeen::default();
        assert!(!seen.lately_at(0));
        seen.mark_at(5);
        assert!(seen.clone().lately_at(5));
        assert!(seen.lately_at(104));
        assert!(!seen.lately_at(105));
        seen.mark_at(105);
        assert!(seen.lately_at(105));
    }
}
