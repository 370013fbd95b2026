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
//! When a value the batch touches is too close to ±(2^53 − 1) for the batch to be
//! applied whatever the order of its events (see `write.lua`), the script applies nothing
//! and each caller's events are sent again, one by one, on the exact path. That is
//! decided per batch, so one huge delta never slows the board's later batches.
//!
//! A board's committer ends when the board is dropped, after `committer_idle` without
//! writes, or when the store is dropped, once it has applied what it holds.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc, oneshot};

use super::conn::RedisConn;
use super::write::{EventsOutcome, Guard, Summed, SumsOutcome, write_events, write_sums};
use crate::board::Board;
use crate::domain::{BoardName, Timestamp};
use crate::error::{Error, Result};
use crate::store::{Keyed, SlotWrite, WriteKey, WriteStatus};

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
    /// A board's committer task ends after this long without writes (a dropped board's
    /// ends at once), so boards no longer written cost nothing.
    pub committer_idle: Duration,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            max_batch_members: 1000,
            max_batch_events: 20_000,
            max_in_flight: 3,
            committer_idle: Duration::from_secs(60),
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

/// The committers, by board. A committer holds only a weak reference to the map, so
/// dropping the store drops every queue, and each committer ends once its queue is
/// drained.
pub(super) struct Ingest {
    committers: Arc<Committers>,
    options: IngestOptions,
}

type Committers = Mutex<HashMap<BoardName, Committer>>;

/// A board's running committer: its queue, and an id telling it from its successors.
struct Committer {
    id: u64,
    queue: mpsc::Sender<Submission>,
}

/// Ids of committers.
static NEXT_COMMITTER: AtomicU64 = AtomicU64::new(1);

/// Writes waiting per board before callers wait to queue (back-pressure).
const QUEUE: usize = 4096;

impl Ingest {
    pub(super) fn new(options: IngestOptions) -> Ingest {
        Ingest {
            committers: Arc::default(),
            options,
        }
    }

    /// Queues `writes` and waits until they are applied.
    pub(super) async fn write(
        &self,
        conn: &RedisConn,
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
        // A committer that stopped (idle, or its runtime ended) is replaced.
        for _ in 0..3 {
            let queue = self.committer(conn, &board.name);
            match queue.send(submission).await {
                Ok(()) => {
                    return answer.await.map_err(|_| {
                        Error::StoreUnavailable("the write was dropped unapplied".into())
                    })?;
                }
                Err(mpsc::error::SendError(back)) => submission = back,
            }
        }
        Err(Error::StoreUnavailable(
            "cannot start the board's committer".into(),
        ))
    }

    /// The board's committer queue, starting a committer when none runs.
    fn committer(&self, conn: &RedisConn, board: &BoardName) -> mpsc::Sender<Submission> {
        let mut committers = lock(&self.committers);
        if let Some(c) = committers.get(board).filter(|c| !c.queue.is_closed()) {
            return c.queue.clone();
        }
        let (queue, inbox) = mpsc::channel(QUEUE);
        let id = NEXT_COMMITTER.fetch_add(1, Ordering::Relaxed);
        let idle = Idle {
            committers: Arc::downgrade(&self.committers),
            board: board.clone(),
            id,
            after: self.options.committer_idle,
        };
        tokio::spawn(commit_loop(conn.clone(), self.options, inbox, idle));
        committers.insert(
            board.clone(),
            Committer {
                id,
                queue: queue.clone(),
            },
        );
        queue
    }

    /// Ends the board's committer once what it holds is applied (the board was dropped).
    pub(super) fn forget(&self, board: &BoardName) {
        lock(&self.committers).remove(board);
    }
}

fn lock(committers: &Committers) -> std::sync::MutexGuard<'_, HashMap<BoardName, Committer>> {
    committers.lock().unwrap_or_else(|e| e.into_inner())
}

/// How a committer with nothing to do leaves: it unlists itself (if still listed) and
/// closes its queue, so new writes start a successor while it applies what it holds.
struct Idle {
    committers: Weak<Committers>,
    board: BoardName,
    id: u64,
    after: Duration,
}

impl Idle {
    fn leave(&self, inbox: &mut mpsc::Receiver<Submission>) {
        if let Some(committers) = self.committers.upgrade() {
            let mut committers = lock(&committers);
            if committers.get(&self.board).is_some_and(|c| c.id == self.id) {
                committers.remove(&self.board);
            }
        }
        inbox.close();
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

async fn commit_loop(
    conn: RedisConn,
    options: IngestOptions,
    mut inbox: mpsc::Receiver<Submission>,
    idle: Idle,
) {
    let slots = Arc::new(Semaphore::new(options.max_in_flight.max(1)));
    // The board version known to need the exact path (0: none).
    let mut carried: Option<Submission> = None;
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let first = match carried.take() {
            Some(submission) => submission,
            None => match tokio::time::timeout(idle.after, inbox.recv()).await {
                Ok(Some(submission)) => submission,
                // Every queue handle is gone (board dropped, store dropped), or closed
                // and drained: what was queued is applied or in flight.
                Ok(None) => return,
                Err(_) => {
                    idle.leave(&mut inbox);
                    continue;
                }
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
        let conn = conn.clone();
        tokio::spawn(async move {
            apply(&conn, batch).await;
            drop(permit);
        });
    }
}

async fn apply(conn: &RedisConn, batch: Batch) {
    let board = batch.submissions[0].board.clone();
    let now = batch
        .submissions
        .iter()
        .map(|s| s.now)
        .max()
        .expect("a batch is never empty");
    match write_sums(conn, &board, now, &batch.sums, batch.abs_total, Guard::None).await {
        Ok(SumsOutcome::Applied { too_late }) => {
            for submission in batch.submissions {
                let statuses = statuses(&submission.writes, &too_late);
                let _ = submission.reply.send(Ok(statuses));
            }
        }
        Ok(SumsOutcome::NeedsExact) => {
            // One call per caller, so a failure never leaves a caller half applied.
            for submission in batch.submissions {
                let result = write_events(conn, &board, now, &submission.writes, Guard::None).await;
                let _ = submission
                    .reply
                    .send(result.and_then(|outcome| match outcome {
                        EventsOutcome::Applied(statuses) => Ok(statuses),
                        _ => Err(Error::Store(
                            "write.lua answered a replay to a call without token or key".into(),
                        )),
                    }));
            }
        }
        Ok(SumsOutcome::AlreadyApplied | SumsOutcome::Replayed(_)) => {
            let error = Error::Store("write.lua answered a replay to group commit".into());
            for submission in batch.submissions {
                let _ = submission.reply.send(Err(error.clone()));
            }
        }
        Err(error) => {
            for submission in batch.submissions {
                let _ = submission.reply.send(Err(error.clone()));
            }
        }
    }
}

/// The status of each write of a batch applied on the fast path.
fn statuses(writes: &[SlotWrite], too_late: &[i64]) -> Vec<WriteStatus> {
    writes
        .iter()
        .map(|w| {
            if too_late.contains(&w.slot) {
                WriteStatus::TooLate
            } else {
                WriteStatus::Applied
            }
        })
        .collect()
}

/// Applies `writes` at most once for `token`, outside group commit (a token covers
/// exactly one call): `None` when the token was applied before.
pub(super) async fn write_once(
    conn: &RedisConn,
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
    let guard = Guard::Token(token);
    let unexpected = || Error::Store("write.lua answered a key's replay to a token".into());
    match write_sums(conn, board, now, &batch.sums, batch.abs_total, guard).await? {
        SumsOutcome::Applied { too_late } => Ok(Some(statuses(writes, &too_late))),
        SumsOutcome::AlreadyApplied => Ok(None),
        SumsOutcome::Replayed(_) => Err(unexpected()),
        SumsOutcome::NeedsExact => match write_events(conn, board, now, writes, guard).await? {
            EventsOutcome::Applied(statuses) => Ok(Some(statuses)),
            EventsOutcome::AlreadyApplied => Ok(None),
            EventsOutcome::Replayed(_) => Err(unexpected()),
        },
    }
}

/// Applies `writes` once for `key` while its record lives, outside group commit (a
/// record covers exactly one call; see `Store::write_keyed`).
pub(super) async fn write_keyed(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    writes: Vec<SlotWrite>,
    key: &WriteKey,
) -> Result<Keyed> {
    let mut batch = Batch::new();
    let (reply, _) = oneshot::channel();
    batch.add(Submission {
        board: board.clone(),
        now,
        writes,
        reply,
    });
    let writes = &batch.submissions[0].writes;
    let guard = Guard::Key(key);
    let unexpected = || Error::Store("write.lua answered a token's replay to a key".into());
    match write_sums(conn, board, now, &batch.sums, batch.abs_total, guard).await? {
        SumsOutcome::Applied { too_late } => Ok(Keyed::Applied(statuses(writes, &too_late))),
        SumsOutcome::Replayed(keyed) => Ok(keyed),
        SumsOutcome::AlreadyApplied => Err(unexpected()),
        SumsOutcome::NeedsExact => match write_events(conn, board, now, writes, guard).await? {
            EventsOutcome::Applied(statuses) => Ok(Keyed::Applied(statuses)),
            EventsOutcome::Replayed(keyed) => Ok(keyed),
            EventsOutcome::AlreadyApplied => Err(unexpected()),
        },
    }
}
