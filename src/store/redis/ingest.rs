//! Group commit: concurrent writes to one board are applied together.
//!
//! Each board has a committer task. A write is queued and awaits its statuses. The
//! committer takes one write and adds every write already queued, summing events of the
//! same slot and member as it goes, until the batch holds `max_batch_members` distinct
//! (slot, member) pairs or `max_batch_events` events. One `write.lua` call applies the
//! sums; up to `max_in_flight` calls run at once. No timer holds a write back: under light
//! load a lone event goes out at once, under load the queue fills while calls are in
//! flight, so batches grow by themselves, and a skewed load (a few hot posts) costs Redis
//! one update per hot post per batch. A caller is answered only after its batch is in
//! Redis.
//!
//! When the board's bound no longer proves the range (see `write.lua`), the script
//! applies nothing and each caller's events are sent again, one by one, on the exact
//! path; the committer remembers this for the board.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{Semaphore, mpsc, oneshot};

use super::RedisStore;
use super::write::{Summed, SumsOutcome, write_events, write_sums};
use crate::board::Board;
use crate::domain::{BoardName, Timestamp};
use crate::error::{Error, Result};
use crate::store::{SlotWrite, WriteStatus};

/// How batches form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IngestOptions {
    /// A batch stops growing at this many distinct (slot, member) pairs: it bounds the
    /// work, and so the duration, of one `write.lua` call.
    pub max_batch_members: usize,
    /// A batch also stops growing at this many events.
    pub max_batch_events: usize,
    /// Most `write.lua` calls of one board in flight at once.
    pub max_in_flight: usize,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            max_batch_members: 1000,
            max_batch_events: 20_000,
            max_in_flight: 3,
        }
    }
}

/// One caller's writes, waiting for their statuses.
struct Submission {
    board: Board,
    now: Timestamp,
    writes: Vec<SlotWrite>,
    reply: oneshot::Sender<Result<Vec<WriteStatus>>>,
}

/// The committers, by board.
#[derive(Default)]
pub(super) struct Ingest {
    committers: Mutex<HashMap<BoardName, mpsc::Sender<Submission>>>,
}

/// Writes waiting per board before callers wait to queue (back-pressure).
const QUEUE: usize = 4096;

impl Ingest {
    /// Queues `writes` and waits until they are applied.
    pub(super) async fn write(
        &self,
        store: &RedisStore,
        board: &Board,
        now: Timestamp,
        writes: Vec<SlotWrite>,
    ) -> Result<Vec<WriteStatus>> {
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        let (reply, answer) = oneshot::channel();
        let mut submission = Submission {
            board: board.clone(),
            now,
            writes,
            reply,
        };
        // A committer that stopped (its runtime ended) is replaced once.
        for _ in 0..2 {
            let queue = self.committer(store, &board.name);
            match queue.send(submission).await {
                Ok(()) => {
                    return answer.await.map_err(|_| {
                        Error::StoreUnavailable("the write was dropped unapplied".into())
                    })?;
                }
                Err(mpsc::error::SendError(back)) => {
                    submission = back;
                    self.lock().remove(&board.name);
                }
            }
        }
        Err(Error::StoreUnavailable(
            "cannot start the board's committer".into(),
        ))
    }

    fn committer(&self, store: &RedisStore, board: &BoardName) -> mpsc::Sender<Submission> {
        let mut committers = self.lock();
        if let Some(queue) = committers.get(board).filter(|q| !q.is_closed()) {
            return queue.clone();
        }
        let (queue, inbox) = mpsc::channel(QUEUE);
        tokio::spawn(commit_loop(store.clone(), inbox));
        committers.insert(board.clone(), queue.clone());
        queue
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<BoardName, mpsc::Sender<Submission>>> {
        self.committers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Submissions of one board incarnation, and the sums of their events.
struct Batch {
    submissions: Vec<Submission>,
    events: usize,
    /// Distinct (slot, member) pairs, in order of first appearance.
    sums: Vec<Summed>,
    /// slot -> member -> position in `sums`.
    positions: HashMap<i64, HashMap<String, usize>>,
    /// The sum of |delta| over every event.
    abs_total: u128,
}

impl Batch {
    fn new() -> Batch {
        Batch {
            submissions: Vec::new(),
            events: 0,
            sums: Vec::new(),
            positions: HashMap::new(),
            abs_total: 0,
        }
    }

    fn version(&self) -> u64 {
        self.submissions[0].board.version
    }

    fn add(&mut self, submission: Submission) {
        for w in &submission.writes {
            self.abs_total += w.delta.unsigned_abs() as u128;
            let members = self.positions.entry(w.slot).or_default();
            match members.get(w.member.as_str()) {
                Some(&at) => self.sums[at].sum += w.delta,
                None => {
                    members.insert(w.member.to_string(), self.sums.len());
                    self.sums.push(Summed {
                        slot: w.slot,
                        member: w.member.to_string(),
                        sum: w.delta,
                    });
                }
            }
        }
        self.events += submission.writes.len();
        self.submissions.push(submission);
    }
}

async fn commit_loop(store: RedisStore, mut inbox: mpsc::Receiver<Submission>) {
    let options = store.ingest_options;
    let slots = Arc::new(Semaphore::new(options.max_in_flight.max(1)));
    // The board version known to need the exact path (0: none).
    let exact_version = Arc::new(AtomicU64::new(0));
    let mut carried: Option<Submission> = None;
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let first = match carried.take() {
            Some(submission) => submission,
            None => match inbox.recv().await {
                Some(submission) => submission,
                None => return,
            },
        };
        let mut batch = Batch::new();
        batch.add(first);
        while batch.sums.len() < options.max_batch_members
            && batch.events < options.max_batch_events
        {
            match inbox.try_recv() {
                // A submission for another incarnation of the board waits for the next batch.
                Ok(next) if next.board.version != batch.version() => {
                    carried = Some(next);
                    break;
                }
                Ok(next) => batch.add(next),
                Err(_) => break,
            }
        }
        let (store, exact_version) = (store.clone(), exact_version.clone());
        tokio::spawn(async move {
            apply(&store, batch, &exact_version).await;
            drop(permit);
        });
    }
}

async fn apply(store: &RedisStore, batch: Batch, exact_version: &AtomicU64) {
    let board = batch.submissions[0].board.clone();
    let now = batch
        .submissions
        .iter()
        .map(|s| s.now)
        .max()
        .expect("a batch is never empty");
    if exact_version.load(Ordering::Relaxed) != board.version {
        match write_sums(store, &board, now, &batch.sums, batch.abs_total, None).await {
            Ok(SumsOutcome::Applied { too_late }) => {
                for submission in batch.submissions {
                    let statuses = submission
                        .writes
                        .iter()
                        .map(|w| {
                            if too_late.contains(&w.slot) {
                                WriteStatus::TooLate
                            } else {
                                WriteStatus::Applied
                            }
                        })
                        .collect();
                    let _ = submission.reply.send(Ok(statuses));
                }
                return;
            }
            Ok(SumsOutcome::NeedsExact) => exact_version.store(board.version, Ordering::Relaxed),
            Ok(SumsOutcome::AlreadyApplied) => unreachable!("group commit sends no token"),
            Err(error) => {
                for submission in batch.submissions {
                    let _ = submission.reply.send(Err(error.clone()));
                }
                return;
            }
        }
    }
    // The exact path, one call per caller, so a failure never leaves a caller half applied.
    for submission in batch.submissions {
        let result = write_events(store, &board, now, &submission.writes, None).await;
        let _ = submission.reply.send(result.map(|s| s.unwrap_or_default()));
    }
}

/// Applies `writes` at most once for `token`, outside group commit (a token covers
/// exactly one call): `None` when the token was applied before.
pub(super) async fn write_once(
    store: &RedisStore,
    board: &Board,
    now: Timestamp,
    writes: Vec<SlotWrite>,
    token: &str,
) -> Result<Option<Vec<WriteStatus>>> {
    let mut batch = Batch::new();
    let (reply, _) = oneshot::channel();
    batch.add(Submission {
        board: board.clone(),
        now,
        writes,
        reply,
    });
    let writes = &batch.submissions[0].writes;
    match write_sums(store, board, now, &batch.sums, batch.abs_total, Some(token)).await? {
        SumsOutcome::Applied { too_late } => Ok(Some(
            writes
                .iter()
                .map(|w| {
                    if too_late.contains(&w.slot) {
                        WriteStatus::TooLate
                    } else {
                        WriteStatus::Applied
                    }
                })
                .collect(),
        )),
        SumsOutcome::AlreadyApplied => Ok(None),
        SumsOutcome::NeedsExact => write_events(store, board, now, writes, Some(token)).await,
    }
}
