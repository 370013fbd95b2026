//! The service's retirement scheduler: the library's [`Retirer`] with metrics and logs,
//! and a sweep job (tokio-cron-scheduler).
//!
//! - The retirer retires each board at its slot boundaries (any slot length and offset),
//!   catches every board up at start-up (after downtime), picks up boards created
//!   through this process at once, and every `sweep_every` re-reads the boards from the
//!   store (picking up those of other replicas) and retires every board again: the
//!   safety net for failed passes.
//! - The sweep job, every `sweep_every` and once at start, builds windows added to a
//!   board whose build did not finish (its process stopped).
//! - The counter clean-up job, every minute, runs one clean-up pass over every counter
//!   (coarse precisions on fewer passes, see [`CleanPlan`](crate::CleanPlan)); every
//!   call it makes is bounded and idempotent, so replicas running it at once are safe.
//!
//! Retirement is idempotent and exact with any number of retirers, so every replica runs
//! this without coordination. Shutdown stops both and waits, up to a bound, for passes
//! and builds in progress.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio_cron_scheduler::{Job, JobScheduler};
use tokio_util::task::TaskTracker;

use crate::{
    CleanReport, Error, Retirer, RetirerEvent, RetirerObserver, RetirerOptions, RetirerStatus,
    Rollboard, TrendOptions,
};

/// Retires boards at slot boundaries. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Scheduler {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler").finish_non_exhaustive()
    }
}

struct Inner {
    boards: Rollboard,
    /// The running retirer (none before `start` and after `shutdown`).
    retirer: tokio::sync::Mutex<Option<Retirer>>,
    /// Window builds and metric reads in progress, so shutdown can wait for them.
    background: TaskTracker,
    stopping: AtomicBool,
    cron: tokio::sync::Mutex<Option<JobScheduler>>,
    /// Counter clean-up passes run, which decides the precisions each pass visits.
    clean_passes: AtomicU64,
}

/// How often the counter clean-up runs (the source's daemon: once a minute).
pub const COUNTER_CLEAN_EVERY: Duration = Duration::from_secs(60);

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
                retirer: tokio::sync::Mutex::new(None),
                background: TaskTracker::new(),
                stopping: AtomicBool::new(false),
                cron: tokio::sync::Mutex::new(None),
                clean_passes: AtomicU64::new(0),
            }),
        }
    }

    /// Starts the retirer (which catches every board up at once) and the sweep job,
    /// every `sweep_every`; runs one sweep now.
    pub async fn start(&self, sweep_every: Duration) -> Result<(), SchedulerError> {
        let fail = |e: tokio_cron_scheduler::JobSchedulerError| SchedulerError(e.to_string());
        let options = RetirerOptions {
            rescan_every: sweep_every,
            observer: Some(self.observer()),
            ..RetirerOptions::default()
        };
        *self.inner.retirer.lock().await = Some(Retirer::start(self.inner.boards.clone(), options));

        let cron = JobScheduler::new().await.map_err(fail)?;
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
        let me = self.clone();
        cron.add(
            Job::new_repeated_async(COUNTER_CLEAN_EVERY, move |_, _| {
                let me = me.clone();
                Box::pin(async move {
                    let _ = me.clean_counters().await;
                })
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

    /// A receiver of the retirer's progress (see [`Retirer::status`]); `None` before
    /// [`start`](Self::start) and after [`shutdown`](Self::shutdown).
    pub async fn retirer_status(&self) -> Option<tokio::sync::watch::Receiver<RetirerStatus>> {
        self.inner
            .retirer
            .lock()
            .await
            .as_ref()
            .map(Retirer::status)
    }

    /// Builds, in the background, the windows added to any board whose build did not
    /// finish (its process stopped, or the build failed), and runs a maintenance pass of
    /// every trending board (rescale when due, prune below the floor).
    pub async fn sweep(&self) {
        if self.inner.stopping.load(Ordering::SeqCst) {
            return;
        }
        let boards = match self.inner.boards.boards().await {
            Ok(boards) => boards,
            Err(e) => {
                tracing::warn!(error = %e, "scheduler: cannot list boards");
                crate::metrics::store_error(e.code());
                return;
            }
        };
        for board in boards {
            let (boards, name) = (self.inner.boards.clone(), board.name.to_string());
            self.inner.background.spawn(async move {
                match boards.windowed(&name).build_windows().await {
                    Ok(report) if !report.windows.is_empty() => {
                        tracing::info!(board = %name, windows = ?report.windows, "built added windows");
                    }
                    Ok(_) | Err(Error::BoardBusy(_) | Error::BoardNotFound(_)) => {}
                    Err(e) => {
                        tracing::warn!(board = %name, error = %e, "building added windows failed")
                    }
                }
            });
        }
        // Trending boards: rescale when due and prune below the floor, in bounded steps.
        let boards = self.inner.boards.clone();
        self.inner.background.spawn(async move {
            match boards.maintain_trending(TrendOptions::default()).await {
                Ok(done) => {
                    for (name, report) in done.iter().filter(|(_, r)| r.copied + r.pruned > 0) {
                        tracing::info!(board = %name, ?report, "trending board maintained");
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "trending maintenance failed; retrying next sweep");
                    crate::metrics::store_error(e.code());
                }
            }
        });
    }

    /// Runs the next counter clean-up pass: pass 0 visits every precision, pass `k` a
    /// precision of `p` seconds when `k` is a multiple of `p / 60`. Failures are logged
    /// and counted; the next pass retries.
    pub async fn clean_counters(&self) -> Option<CleanReport> {
        if self.inner.stopping.load(Ordering::SeqCst) {
            return None;
        }
        let pass = self.inner.clean_passes.fetch_add(1, Ordering::SeqCst);
        let boards = &self.inner.boards;
        match boards
            .counters()
            .clean(boards.counters().clean_plan(pass))
            .await
        {
            Ok(report) => {
                tracing::debug!(?report, pass, "counters cleaned");
                Some(report)
            }
            Err(e) => {
                tracing::warn!(error = %e, "counter clean-up failed; retrying next pass");
                crate::metrics::store_error(e.code());
                None
            }
        }
    }

    /// Stops the retirer and the sweep, and waits up to `grace` for passes and builds in
    /// progress. A pass cut short is safe: every chunk is atomic and the next pass,
    /// anywhere, resumes it.
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.stopping.store(true, Ordering::SeqCst);
        if let Some(mut cron) = self.inner.cron.lock().await.take()
            && let Err(e) = cron.shutdown().await
        {
            tracing::warn!(error = %e, "scheduler: stopping the sweep failed");
        }
        let retirer = self.inner.retirer.lock().await.take();
        self.inner.background.close();
        let background = &self.inner.background;
        let stopped = async move {
            if let Some(retirer) = retirer {
                retirer.stop().await;
            }
            background.wait().await;
        };
        if tokio::time::timeout(grace, stopped).await.is_err() {
            tracing::warn!(
                "scheduler: retirement still running after {grace:?}; leaving it to the next start"
            );
        }
    }

    /// Records each retirement pass in metrics and logs.
    fn observer(&self) -> RetirerObserver {
        let (boards, background) = (self.inner.boards.clone(), self.inner.background.clone());
        Arc::new(move |event| match event {
            RetirerEvent::Pass {
                board,
                windows,
                result: Ok(report),
            } => {
                crate::metrics::retired(boards.board_series(), board, report);
                if report.slots_retired > 0 {
                    tracing::debug!(%board, ?report, "retired");
                }
                if report.complete {
                    // Retired through now: no window lags, and no read is needed to say
                    // so (one per board per boundary would double the retirer's calls).
                    crate::metrics::caught_up(boards.board_series(), board, windows);
                    return;
                }
                let (boards, board) = (boards.clone(), board.to_string());
                background.spawn(async move {
                    if let Ok(status) = boards.describe_board(&board).await {
                        crate::metrics::retirement_lag(boards.board_series(), &status);
                    }
                });
            }
            RetirerEvent::Pass {
                board,
                result: Err(Error::BoardNotFound(_)),
                ..
            } => crate::metrics::dropped(boards.board_series(), board),
            RetirerEvent::Pass {
                board,
                result: Err(Error::BoardBusy(_)),
                ..
            } => tracing::debug!(%board, "retirement waits for a recompute"),
            RetirerEvent::Pass {
                board,
                result: Err(e),
                ..
            } => {
                tracing::warn!(%board, error = %e, "retirement failed; retrying");
                crate::metrics::store_error(e.code());
            }
            RetirerEvent::ListFailed(e) => {
                tracing::warn!(error = %e, "scheduler: cannot list boards; retrying");
                crate::metrics::store_error(e.code());
            }
            // One line per boundary that retired something (a sweep over boards with
            // nothing due says nothing).
            RetirerEvent::Round {
                boards,
                report,
                failed,
                elapsed,
            } if report.slots_retired + report.slots_compacted > 0 || failed > 0 => {
                tracing::info!(
                    boards,
                    slots_retired = report.slots_retired,
                    fields_retired = report.fields_subtracted,
                    members_zeroed = report.members_zeroed,
                    slots_compacted = report.slots_compacted,
                    failed,
                    complete = report.complete,
                    duration_ms = elapsed.as_millis() as u64,
                    "retirement pass"
                );
            }
            RetirerEvent::Round { .. } => {}
        })
    }
}
