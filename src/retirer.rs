//! The retirer: a background task that retires every board at its slot boundaries, so
//! totals drop the slots that left each window without anyone calling `retire`.
//!
//! It has the shape of mini-redis's expired-key purge task (`db.rs`). One task loops:
//! it retires every board whose slot boundary passed since its last pass (catching up
//! everything overdue, however long the downtime), in batches through
//! [`Rollboard::retire_many`] (small boards in one pipelined call each, no task or timer
//! per board), then sleeps until the next slot boundary of any board, by the
//! `Rollboard`'s clock. A `select!` also wakes it when a
//! board is created or dropped through the same `Rollboard`, when a [`ManualClock`] is
//! moved (see [`Clock::moves`]), and when it is told to stop. The [`Retirer`] handle owns
//! the task: dropping it ends the task at once, [`Retirer::stop`] after the passes in
//! progress. Either way nothing is lost: every retirement chunk is atomic, and the next
//! pass, in any process, resumes where this one stopped.
//!
//! After a complete pass over a board it takes the board's period snapshots, if the board
//! asks for them ([`Rollboard::take_snapshots`]: once per boundary across replicas).
//!
//! It needs no `server` feature: an embedding backend starts one with
//! [`Rollboard::start_retirer`]; the service's scheduler runs one too. Retirement is
//! idempotent and exact with any number of retirers, so every process may run one.
//!
//! [`ManualClock`]: crate::clock::ManualClock
//! [`Clock::moves`]: crate::clock::Clock::moves

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Semaphore, oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use crate::domain::board::Board;
use crate::domain::{BoardName, RetireReport, Span, Timestamp};
use crate::error::{Error, Result};
use crate::rollboard::Rollboard;

/// Something the retirer did, for metrics and logs (see [`RetirerOptions::observer`]).
#[derive(Debug)]
pub enum RetirerEvent<'a> {
    /// One pass over one board ended.
    Pass {
        /// The board.
        board: &'a BoardName,
        /// Its windows, smallest first.
        windows: &'a [Span],
        /// What the pass did, or why it failed (retried after `retry_after`).
        result: &'a Result<RetireReport>,
    },
    /// The list of boards could not be read (retried after `retry_after`).
    ListFailed(&'a Error),
    /// A round ended that passed over at least one board: after its [`Pass`](Self::Pass)
    /// events, what they did together.
    Round {
        /// Boards passed over (failed passes included).
        boards: usize,
        /// The sum of the successful passes' reports (`complete`: every one was).
        report: &'a RetireReport,
        /// Passes that failed.
        failed: usize,
        /// How long the round's passes took.
        elapsed: Duration,
    },
}

/// Receives every [`RetirerEvent`]; called on the retirer's task, so keep it short.
pub type RetirerObserver = Arc<dyn Fn(RetirerEvent<'_>) + Send + Sync>;

/// How a [`Retirer`] runs.
#[derive(Clone)]
pub struct RetirerOptions {
    /// How often the list of boards is re-read from the store (picking up boards created
    /// by other processes; those created through the same `Rollboard` are picked up at
    /// once) and every board retired again, as a safety net. Default 60 s.
    pub rescan_every: Duration,
    /// How soon a failed pass or listing is retried. Default 1 s.
    pub retry_after: Duration,
    /// Told of every pass and failure; none by default.
    pub observer: Option<RetirerObserver>,
}

impl Default for RetirerOptions {
    fn default() -> Self {
        RetirerOptions {
            rescan_every: Duration::from_secs(60),
            retry_after: Duration::from_secs(1),
            observer: None,
        }
    }
}

impl std::fmt::Debug for RetirerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetirerOptions")
            .field("rescan_every", &self.rescan_every)
            .field("retry_after", &self.retry_after)
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

/// What the retirer has done so far (see [`Retirer::status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RetirerStatus {
    /// Rounds finished. A round retires every board whose slot boundary has passed.
    pub rounds: u64,
    /// The clock's time when the last round began: every board known then was retired
    /// as of that time, except `failed` ones.
    pub as_of: Option<Timestamp>,
    /// Passes (or the listing of boards) that failed in the last round.
    pub failed: usize,
}

/// The handle of a running retirer task. Dropping it ends the task.
#[must_use = "dropping the Retirer stops it"]
#[derive(Debug)]
pub struct Retirer {
    /// Sending stops the task after its passes in progress; dropping stops it at once.
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    status: watch::Receiver<RetirerStatus>,
}

impl Retirer {
    /// Starts retiring the boards of `boards` in a task of the current tokio runtime.
    pub fn start(boards: Rollboard, options: RetirerOptions) -> Retirer {
        let (stop, stopped) = oneshot::channel();
        let (status_tx, status) = watch::channel(RetirerStatus::default());
        let task = Task {
            boards,
            options,
            tracked: HashMap::new(),
            status: status_tx,
        };
        Retirer {
            stop: Some(stop),
            task: Some(tokio::spawn(task.run(stopped))),
            status,
        }
    }

    /// A receiver of the retirer's progress: wait on it with `changed` or `wait_for`.
    /// Once the task has ended, `changed` fails.
    pub fn status(&self) -> watch::Receiver<RetirerStatus> {
        self.status.clone()
    }

    /// Stops the task: no new pass starts, and this returns when the passes in progress
    /// have ended.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Rollboard {
    /// Starts a [`Retirer`] for these boards with default options: every board is
    /// retired at each of its slot boundaries until the handle is dropped or stopped.
    /// Call it inside a tokio runtime.
    pub fn start_retirer(&self) -> Retirer {
        Retirer::start(self.clone(), RetirerOptions::default())
    }
}

/// The retirer's state, owned by its task.
struct Task {
    boards: Rollboard,
    options: RetirerOptions,
    /// The boards known from the last listing.
    tracked: HashMap<BoardName, Tracked>,
    status: watch::Sender<RetirerStatus>,
}

/// A board the retirer knows: its listed copy (shared with the batches that retire it)
/// and how far it is retired. About 200 bytes a board.
struct Tracked {
    board: Arc<Board>,
    /// The slot current when the last complete pass began (`i64::MIN`: due now).
    retired_at_slot: i64,
}

/// Boards per [`Rollboard::retire_many`] call: its small boards go in pipelines of
/// `retire_small.lua` calls, the others one by one, concurrently.
const BOARDS_PER_BATCH: usize = 1024;

/// Batches retired at once. Each keeps a few pipelines in flight already; more batches
/// would only queue in Redis, where the last ones' replies could wait past the
/// connection's response timeout (at 100,000 boards, all 98 batches at once left 5 of
/// them failed, retried a second later).
const BATCHES_IN_FLIGHT: usize = 2;

/// How a round ended.
enum Round {
    /// Every pass ended; `failed` of them (or the listing) failed.
    Done { failed: usize },
    /// The handle asked to stop or was dropped.
    Stop,
}

impl Task {
    async fn run(mut self, mut stop: oneshot::Receiver<()>) {
        let mut clock_moves = self.boards.clock().moves();
        let mut board_changes = self.boards.board_changes();
        let mut rescan_at = Instant::now();
        let mut relist = true;
        loop {
            // Marked before the clock is read and the boards listed: a move or a change
            // from here on wakes the sleep below.
            if let Some(moves) = clock_moves.as_mut() {
                moves.mark_unchanged();
            }
            board_changes.mark_unchanged();
            if Instant::now() >= rescan_at {
                relist = true;
                rescan_at = Instant::now() + self.options.rescan_every;
                for board in self.tracked.values_mut() {
                    board.retired_at_slot = i64::MIN;
                }
            }
            let mut failed = 0;
            if relist {
                match self.boards.boards().await {
                    Ok(boards) => {
                        self.track(boards);
                        relist = false;
                    }
                    Err(e) => {
                        self.observe(RetirerEvent::ListFailed(&e));
                        failed += 1;
                    }
                }
            }
            let now = self.boards.now();
            match self.retire_due(now, &mut stop).await {
                Round::Stop => return,
                Round::Done { failed: f } => failed += f,
            }
            self.status.send_modify(|s| {
                s.rounds += 1;
                s.as_of = Some(now);
                s.failed = failed;
            });

            let mut wake = rescan_at;
            if let Some(boundary) = self.next_boundary() {
                wake = wake.min(Instant::now() + until(boundary, self.boards.now()));
            }
            if failed > 0 {
                wake = wake.min(Instant::now() + self.options.retry_after);
            }
            tokio::select! {
                _ = tokio::time::sleep_until(wake) => {}
                _ = moved(&mut clock_moves) => {}
                _ = board_changes.changed() => relist = true,
                _ = &mut stop => return,
            }
        }
    }

    /// Takes a fresh list of boards: new ones are due now, dropped ones are forgotten,
    /// known ones keep how far they were retired.
    fn track(&mut self, boards: Vec<Board>) {
        let mut fresh = HashMap::with_capacity(boards.len());
        for board in boards {
            let retired_at_slot = self
                .tracked
                .get(&board.name)
                .map_or(i64::MIN, |t| t.retired_at_slot);
            fresh.insert(
                board.name.clone(),
                Tracked {
                    board: Arc::new(board),
                    retired_at_slot,
                },
            );
        }
        self.tracked = fresh;
    }

    /// Retires every board whose slot boundary passed since its last complete pass, in
    /// batches of [`BOARDS_PER_BATCH`] ([`Rollboard::retire_many`]: the small ones in
    /// few round trips), [`BATCHES_IN_FLIGHT`] at a time. Returns the number of failed passes,
    /// or `Stop`.
    async fn retire_due(&mut self, now: Timestamp, stop: &mut oneshot::Receiver<()>) -> Round {
        let due: Vec<(Arc<Board>, i64)> = self
            .tracked
            .values()
            .filter_map(|t| {
                let slot = t.board.config.slot_start(now);
                (slot > t.retired_at_slot).then(|| (t.board.clone(), slot))
            })
            .collect();
        let started = Instant::now();
        let mut total = RetireReport {
            complete: true,
            ..RetireReport::default()
        };
        let (boards_passed, mut failed) = (due.len(), 0);
        let mut passes = JoinSet::new();
        let in_flight = Arc::new(Semaphore::new(BATCHES_IN_FLIGHT));
        for batch in due.chunks(BOARDS_PER_BATCH) {
            let (boards, batch) = (self.boards.clone(), batch.to_vec());
            let in_flight = in_flight.clone();
            passes.spawn(async move {
                let _turn = in_flight.acquire_owned().await.expect("never closed");
                let listed: Vec<Arc<Board>> = batch.iter().map(|(b, _)| b.clone()).collect();
                let results = boards.retire_many(&listed).await;
                let mut done = Vec::with_capacity(batch.len());
                for ((board, slot), result) in batch.into_iter().zip(results) {
                    // A board without snapshots costs no call: the listing (re-read every
                    // `rescan_every`) tells when another process turns them on.
                    let result = match result {
                        // Retirement through the boundary is complete: take the board's
                        // period snapshots (once per boundary, whoever else tries).
                        Ok(report) if report.complete && board.config.snapshots().is_some() => {
                            boards
                                .windowed(board.name.as_str())
                                .take_snapshots()
                                .await
                                .map(|_| report)
                        }
                        other => other,
                    };
                    done.push((board, slot, result));
                }
                done
            });
        }
        loop {
            let joined = tokio::select! {
                joined = passes.join_next() => joined,
                stopped = &mut *stop => {
                    if stopped.is_ok() {
                        // Asked to stop: let the passes in progress end.
                        while passes.join_next().await.is_some() {}
                    }
                    return Round::Stop;
                }
            };
            let Some(joined) = joined else {
                if boards_passed > 0 {
                    self.observe(RetirerEvent::Round {
                        boards: boards_passed,
                        report: &total,
                        failed,
                        elapsed: started.elapsed(),
                    });
                }
                return Round::Done { failed };
            };
            let Ok(done) = joined else {
                failed += 1; // the batch panicked; its boards stay due
                continue;
            };
            for (board, slot, result) in done {
                self.observe(RetirerEvent::Pass {
                    board: &board.name,
                    windows: board.config.windows(),
                    result: &result,
                });
                if let Ok(report) = &result {
                    let complete = total.complete && report.complete;
                    total.absorb(*report);
                    total.complete = complete;
                }
                match &result {
                    Ok(report) if report.complete => {
                        if let Some(tracked) = self.tracked.get_mut(&board.name) {
                            tracked.retired_at_slot = tracked.retired_at_slot.max(slot);
                        }
                    }
                    Err(Error::BoardNotFound(_)) => {
                        self.tracked.remove(&board.name);
                    }
                    _ => failed += 1,
                }
            }
        }
    }

    /// The earliest next slot boundary of any board, as a clock time.
    fn next_boundary(&self) -> Option<Timestamp> {
        let now = self.boards.now();
        self.tracked
            .values()
            .map(|t| t.board.config.slot_start(now) + t.board.config.slot().secs_i64())
            .min()
            .and_then(|s| Timestamp::from_unix_seconds(s).ok())
    }

    fn observe(&self, event: RetirerEvent<'_>) {
        if let Some(observer) = &self.options.observer {
            observer(event);
        }
    }
}

/// How long from `now` until `at` (zero when past), plus a millisecond so the wake-up
/// lands on or after the boundary.
fn until(at: Timestamp, now: Timestamp) -> Duration {
    let millis = (at.unix_millis() - now.unix_millis()).max(0) as u64;
    Duration::from_millis(millis + 1)
}

/// Completes when a manual clock moves; never for a clock that follows real time.
async fn moved(moves: &mut Option<watch::Receiver<()>>) {
    if let Some(moves) = moves
        && moves.changed().await.is_ok()
    {
        return;
    }
    std::future::pending().await
}
