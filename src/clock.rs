//! Where "now" comes from. Production uses the system clock; tests drive a
//! [`ManualClock`] so that window behaviour is tested without sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use tokio::sync::watch;

use crate::domain::Timestamp;

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> Timestamp;

    /// For a clock that is moved by hand: a receiver told of every move, so a task that
    /// sleeps until a clock time (the [`Retirer`](crate::Retirer)) wakes when the time
    /// jumps. `None` (the default): the clock moves only with real time.
    fn moves(&self) -> Option<watch::Receiver<()>> {
        None
    }
}

/// The system's UTC clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now_utc()
    }
}

/// A clock that only moves when told to. Clones share the same time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    millis: Arc<AtomicI64>,
    /// Tells tasks sleeping until a clock time (see [`Clock::moves`]) that it moved.
    moved: Arc<watch::Sender<()>>,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: Timestamp) -> Self {
        ManualClock {
            millis: Arc::new(AtomicI64::new(start.unix_millis())),
            moved: Arc::new(watch::Sender::new(())),
        }
    }

    /// Moves the clock to `t` (backwards too, to test clock trouble).
    pub fn set(&self, t: Timestamp) {
        self.millis.store(t.unix_millis(), Ordering::SeqCst);
        self.moved.send_replace(());
    }

    /// Moves the clock forward by `seconds`.
    pub fn advance_secs(&self, seconds: i64) {
        self.advance_millis(seconds * 1000);
    }

    /// Moves the clock forward by `millis`.
    pub fn advance_millis(&self, millis: i64) {
        self.millis.fetch_add(millis, Ordering::SeqCst);
        self.moved.send_replace(());
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_unix_millis(self.millis.load(Ordering::SeqCst))
            .expect("a manual clock is only set to valid timestamps")
    }

    fn moves(&self) -> Option<watch::Receiver<()>> {
        Some(self.moved.subscribe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_of_a_manual_clock_share_time() {
        let a = ManualClock::new(Timestamp::from_unix_seconds(100).unwrap());
        let b = a.clone();
        a.advance_secs(5);
        assert_eq!(b.now().unix_seconds(), 105);
    }

    #[test]
    fn moving_a_manual_clock_tells_its_watchers() {
        let clock = ManualClock::new(Timestamp::from_unix_seconds(100).unwrap());
        let mut moves = clock.moves().unwrap();
        assert!(!moves.has_changed().unwrap());
        clock.advance_secs(1);
        assert!(moves.has_changed().unwrap());
        moves.mark_unchanged();
        clock.set(Timestamp::from_unix_seconds(50).unwrap());
        assert!(moves.has_changed().unwrap());
        assert!(SystemClock.moves().is_none());
    }
}
