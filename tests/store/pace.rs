//! The pace of the tests where writers, retirers and the clock race: the clock moves with
//! the writers' progress (one step every so many batches, whoever writes them), never
//! with wall time, and each writer waits at fixed points until every retirer has finished
//! a whole pass begun after that point. So how much simulated time passes, how many slots
//! close while writes go on and that retirement really interleaves with them do not
//! depend on how fast the machine is, or on what else it is doing; only the order of the
//! races does.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use rollboard::{Clock, ManualClock, Timestamp};
use tokio::sync::watch;

/// A writer waits for the retirers after every this many of its batches.
const WAIT_EVERY: u64 = 30;

/// A retirer that makes no pass for this long is stuck (a deadlock guard, far beyond any
/// pass; the test fails saying so instead of hanging).
const STUCK: Duration = Duration::from_secs(300);

pub struct Pace {
    clock: ManualClock,
    /// Batches written so far, by every writer.
    batches: AtomicU64,
    /// The clock moves `step_ms` every `per_step` batches.
    per_step: u64,
    step_ms: i64,
    /// Passes finished so far, per retirer.
    passes: watch::Sender<Vec<u64>>,
    stop: AtomicBool,
}

impl Pace {
    /// A pace for `retirers` retirers on `clock`, which moves `step_ms` every `per_step`
    /// batches.
    pub fn new(clock: &ManualClock, retirers: usize, per_step: u64, step_ms: i64) -> Pace {
        Pace {
            clock: clock.clone(),
            batches: AtomicU64::new(0),
            per_step,
            step_ms,
            passes: watch::Sender::new(vec![0; retirers]),
            stop: AtomicBool::new(false),
        }
    }

    /// The clock's time.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// A writer wrote its batch `i` (from 0): the clock moves when it is the
    /// `per_step`-th batch of all writers since the last step, and after every
    /// [`WAIT_EVERY`] of its own batches the writer waits for the retirers.
    pub async fn wrote(&self, i: u64) {
        if (self.batches.fetch_add(1, Ordering::SeqCst) + 1).is_multiple_of(self.per_step) {
            self.clock.advance_millis(self.step_ms);
        }
        if (i + 1).is_multiple_of(WAIT_EVERY) {
            self.retired().await;
        }
    }

    /// Waits until every retirer has finished a pass begun after this call (the pass in
    /// progress, if any, ends first: so two more).
    async fn retired(&self) {
        let mut passes = self.passes.subscribe();
        let start = passes.borrow_and_update().clone();
        let after = |now: &Vec<u64>| now.iter().zip(&start).all(|(n, s)| *n >= s + 2);
        match tokio::time::timeout(STUCK, passes.wait_for(after)).await {
            Ok(result) => drop(result.expect("the pace outlives its waiters")),
            Err(_) => panic!("a retirer finished no pass in {STUCK:?}"),
        }
    }

    /// Retirer `r` finished a pass.
    pub fn passed(&self, r: usize) {
        self.passes.send_modify(|p| p[r] += 1);
    }

    /// Whether the writers are done (the retirers stop).
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}
