//! The retirement scheduler (tokio-cron-scheduler).
//!
//! - A job fires every second and retires each board whose slot boundary has passed
//!   since its last retirement. Any slot length and offset work, not only those a cron
//!   expression can spell.
//! - A sweep job (every minute by default) re-reads the list of boards from the store,
//!   picking up boards created by other replicas, and retires every board again: the
//!   safety net for missed ticks (cron skips them) and failed passes.
//! - At start-up every board is retired once, to catch up after downtime.
//!
//! Retirement is idempotent and exact with any number of retirers, so every replica runs
//! this without coordination; a board is never retired by two passes of the same process
//! at once. Shutdown stops the jobs and waits, up to a bound, for passes in progress.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_cron_scheduler::{Job, JobScheduler};
use tokio_util::task::TaskTracker;

use crate::{Board, BoardConfig, BoardName, Rollboard};

/// Retires boards at slot boundaries. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Scheduler {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("tracked", &self.lock().len())
            .finish_non_exhaustive()
    }
}

struct Inner {
    boards: Rollboard,
    /// Boards this process retires.
    tracked: Mutex<HashMap<BoardName, Tracked>>,
    /// Retirement passes in progress, so shutdown can wait for them.
    passes: TaskTracker,
    stopping: AtomicBool,
    cron: tokio::sync::Mutex<Option<JobScheduler>>,
}

struct Tracked {
    config: BoardConfig,
    /// The current slot when the last successful pass began (`i64::MIN`: due now).
    retired_at_slot: i64,
    /// A pass of this board is running.
    busy: Arc<AtomicBool>,
}

/// Why the scheduler could not start.
#[derive(Debug, thiserror::Error)]
#[error("scheduler: {0}")]
pub struct SchedulerError(String);

impl Scheduler {
    /// A scheduler for the boards of `boards`; nothing runs until [`start`](Self::start).
    pub fn new(boards: Rollboard) -> Self {
        Scheduler {
            inner: Arc::new(Inner {
                boards,
                tracked: Mutex::new(HashMap::new()),
                passes: TaskTracker::new(),
                stopping: AtomicBool::new(false),
                cron: tokio::sync::Mutex::new(None),
            }),
        }
    }

    /// Catches up every board in the background, then fires [`tick`](Self::tick) every
    /// second and [`sweep`](Self::sweep) every `sweep_every`.
    pub async fn start(&self, sweep_every: Duration) -> Result<(), SchedulerError> {
        let fail = |e: tokio_cron_scheduler::JobSchedulerError| SchedulerError(e.to_string());
        let cron = JobScheduler::new().await.map_err(fail)?;
        let me = self.clone();
        cron.add(
            Job::new_async("* * * * * *", move |_, _| {
                let me = me.clone();
                Box::pin(async move { me.tick() })
            })
            .map_err(fail)?,
        )
        .await
        .map_err(fail)?;
        let me = self.clone();
        cron.add(
            Job::new_repeated_async(sweep_every, move |_, _| {
                let me = me.clone();
                Box::pin(async move { me.sweep().await })
            })
            .map_err(fail)?,
        )
        .await
        .map_err(fail)?;
        cron.start().await.map_err(fail)?;
        *self.inner.cron.lock().await = Some(cron);

        let me = self.clone();
        tokio::spawn(async move { me.sweep().await });
        Ok(())
    }

    /// Starts retiring `board` (a board created through this process).
    pub fn track(&self, board: &Board) {
        let mut tracked = self.lock();
        tracked
            .entry(board.name.clone())
            .or_insert_with(|| Tracked {
                config: board.config.clone(),
                retired_at_slot: i64::MIN,
                busy: Arc::new(AtomicBool::new(false)),
            });
    }

    /// Starts a retirement pass for each tracked board whose slot boundary has passed
    /// since its last pass (and that is not being retired already).
    pub fn tick(&self) {
        if self.inner.stopping.load(Ordering::SeqCst) {
            return;
        }
        let now = self.inner.boards.now();
        let mut tracked = self.lock();
        for (name, board) in tracked.iter_mut() {
            let slot = board.config.slot_start(now);
            if slot <= board.retired_at_slot || board.busy.swap(true, Ordering::SeqCst) {
                continue;
            }
            let (me, name, busy) = (self.clone(), name.clone(), board.busy.clone());
            self.inner.passes.spawn(async move {
                let ok = me.retire(&name).await;
                if ok && let Some(b) = me.lock().get_mut(&name) {
                    b.retired_at_slot = b.retired_at_slot.max(slot);
                }
                busy.store(false, Ordering::SeqCst);
            });
        }
    }

    /// Re-reads the boards from the store (forgetting dropped ones), marks every board
    /// due, and starts the passes; also builds windows added to a board whose build did
    /// not finish (its process stopped).
    pub async fn sweep(&self) {
        match self.inner.boards.boards().await {
            Ok(boards) => {
                for board in &boards {
                    self.build_added_windows(board.name.as_str());
                }
                let mut tracked = self.lock();
                tracked.retain(|name, _| boards.iter().any(|b| &b.name == name));
                for board in boards {
                    let entry = tracked
                        .entry(board.name.clone())
                        .or_insert_with(|| Tracked {
                            config: board.config.clone(),
                            retired_at_slot: i64::MIN,
                            busy: Arc::new(AtomicBool::new(false)),
                        });
                    entry.config = board.config;
                    entry.retired_at_slot = i64::MIN;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "scheduler: cannot list boards");
                crate::http::store_error(e.code());
            }
        }
        self.tick();
    }

    /// Builds the board's added windows in the background, if any are still to build.
    fn build_added_windows(&self, name: &str) {
        let (boards, name) = (self.inner.boards.clone(), name.to_owned());
        self.inner.passes.spawn(async move {
            match boards.build_windows(&name).await {
                Ok(report) if !report.windows.is_empty() => {
                    tracing::info!(board = %name, windows = ?report.windows, "built added windows");
                }
                Ok(_) | Err(crate::Error::BoardBusy(_)) => {}
                Err(e) => {
                    tracing::warn!(board = %name, error = %e, "building added windows failed")
                }
            }
        });
    }

    /// Waits until no pass is running (for tests and shutdown).
    pub async fn idle(&self) {
        while self.lock().values().any(|b| b.busy.load(Ordering::SeqCst)) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Stops the jobs and waits up to `grace` for passes in progress. A pass cut short
    /// is safe: every chunk is atomic and the next pass, anywhere, resumes it.
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.stopping.store(true, Ordering::SeqCst);
        if let Some(mut cron) = self.inner.cron.lock().await.take()
            && let Err(e) = cron.shutdown().await
        {
            tracing::warn!(error = %e, "scheduler: stopping the jobs failed");
        }
        self.inner.passes.close();
        if tokio::time::timeout(grace, self.inner.passes.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                "scheduler: retirement still running after {grace:?}; leaving it to the next start"
            );
        }
    }

    /// One pass over one board, with its metrics. Returns whether it completed.
    async fn retire(&self, name: &BoardName) -> bool {
        let boards = &self.inner.boards;
        match boards.retire(name.as_str()).await {
            Ok(report) => {
                let board = name.to_string();
                metrics::counter!("rollboard_retired_fields_total", "board" => board.clone())
                    .increment(report.fields_subtracted);
                metrics::counter!("rollboard_members_zeroed_total", "board" => board.clone())
                    .increment(report.members_zeroed);
                if let Ok(status) = boards.describe_board(name.as_str()).await {
                    for w in status.windows {
                        metrics::gauge!(
                            "rollboard_retirement_lag_seconds",
                            "board" => board.clone(),
                            "window" => w.window.to_string(),
                        )
                        .set(w.lag_seconds as f64);
                    }
                }
                if report.slots_retired > 0 {
                    tracing::debug!(board = %name, ?report, "retired");
                }
                report.complete
            }
            Err(crate::Error::BoardNotFound(_)) => {
                self.lock().remove(name);
                false
            }
            Err(crate::Error::BoardBusy(_)) => {
                tracing::debug!(board = %name, "retirement waits for a recompute");
                false
            }
            Err(e) => {
                tracing::warn!(board = %name, error = %e, "retirement failed; retrying next tick");
                crate::http::store_error(e.code());
                false
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<BoardName, Tracked>> {
        self.inner.tracked.lock().unwrap_or_else(|e| e.into_inner())
    }
}
