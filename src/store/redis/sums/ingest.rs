//! Group commit: concurrent writes to one board are applied together.
//!
//! Each board has a committer task. A write is queued and awaits its statuses. The
//! committer takes one write and adds every write already queued, summing events of the
//! same slot and member as it goes, until the batch holds `max_batch_members` distinct
//! (slot, member) pairs, or the board's call cap (see below), or `max_batch_events`
//! events. `write.lua` calls apply the sums; up to `max_in_flight` batches are in flight
//! at once. No timer holds a write back: under light
//! load a lone event goes out at once, under load the queue fills while calls are in
//! flight, so batches grow by themselves, and a skewed load (a few hot posts) costs Redis
//! one update per hot post per batch. A caller is answered only after its batch is in
//! Redis. On a board keeping contributors, whose events are capped one by one, nothing is
//! summed: a batch is its callers' events one caller after the other, each caller's in
//! its own order, applied as the callers' own calls one after the other would be, and
//! the call's fixed cost (what ~4.6 capped likes cost Redis) is shared. A caller whose
//! events fill half a call or more gains nothing from that: its events go at once, in
//! calls of their own, as many callers' at a time as send them (measured: joined, 8
//! callers' batches of 100 ran ~15% slower, at most `max_in_flight` calls at a time).
//!
//! When a value the batch touches is too close to ±(2^53 − 1) for the batch to be
//! applied whatever the order of its events (see `write.lua`), the script applies nothing
//! and each caller's events are sent again, one by one, on the exact path. That is
//! decided per batch, so one huge delta never slows the board's later batches.
//!
//! Bounded calls: a `write.lua` call holds Redis, and on a big board a pair costs ~12 µs,
//! so a batch is applied in calls of at most the board's cap of pairs, sized from the
//! calls' own measured durations to stay within `call_budget` (see `budget.rs`): one
//! call on small boards, several on big ones. The cap is an estimate, so each call also
//! carries the budget and stops itself once it has run that long (`write.lua` reads the
//! clock every few pairs); the rest of its pairs go in the next call, as when a caller's
//! events span calls. Each call is atomic and exact on its own.
//! A caller whose events were all in calls that succeeded gets its statuses; one none of
//! whose events were applied gets the error; one whose events span a call that succeeded
//! and one that failed gets the statuses of the applied ones and
//! [`WriteStatus::Unconfirmed`] for the others (the failed call's reply may have been
//! lost after Redis applied it; later calls were never sent), or
//! [`WriteStatus::StoreFull`] when Redis refused the call at its memory limit, or
//! [`WriteStatus::Changed`] when it refused it because the board changed. Writes under
//! a key or a token do not come here: they are applied one caller at a time (`once.rs`).
//!
//! A board's committer ends when the board is dropped, after `committer_idle` without
//! writes, or when the store is dropped, once it has applied what it holds.

use foldhash::HashMap;
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use futures_channel::mpsc;
use futures_util::StreamExt;
use tokio::sync::{Semaphore, oneshot};

use super::budget::Budget;
use super::write::{SumsReply, fast_status, send_events, send_sums};
use super::write_call::{Answer, Sums, Unguarded, WriteCall};
use crate::domain::board::Board;
use crate::domain::{BoardName, Timestamp};
use crate::error::{Error, Result};
use crate::store::redis::conn::RedisConn;
use crate::store::redis::conn::options::IngestOptions;
use crate::store::{SlotWrite, WriteStatus};

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
pub(crate) struct Ingest {
    committers: Arc<Committers>,
    shared: Arc<Shared>,
}

/// What every committer of a store uses, behind one pointer so that a live committer's
/// task stays small.
struct Shared {
    conn: RedisConn,
    options: IngestOptions,
    budget: Budget,
}

type Committers = Mutex<HashMap<BoardName, Committer>>;

/// A board's running committer: its queue, and an id telling it from its successors.
struct Committer {
    id: u64,
    /// The queue of `futures-channel`, whose buffer is a linked list of the items queued
    /// (~0.2 KB when empty): tokio's allocates cache-padded halves and a first block of
    /// 32 slots (~0.8 KB), which across many boards written at once was half of a live
    /// committer's heap.
    queue: mpsc::Sender<Box<Submission>>,
}

/// Ids of committers.
static NEXT_COMMITTER: AtomicU64 = AtomicU64::new(1);

/// Writes waiting per board before callers wait to queue (back-pressure).
const QUEUE: usize = 4096;

impl Ingest {
    pub(crate) fn new(conn: RedisConn, options: IngestOptions) -> Ingest {
        let budget = Budget::new(
            options.call_target.unwrap_or(options.call_budget),
            options.max_batch_members,
            options.call_budget,
            options.call_check_every,
            conn.reads_seen().clone(),
        );
        Ingest {
            committers: Arc::default(),
            shared: Arc::new(Shared {
                conn,
                options,
                budget,
            }),
        }
    }

    /// Queues `writes` and waits until they are applied.
    pub(crate) async fn write(
        &self,
        board: &Board,
        now: Timestamp,
        writes: Vec<SlotWrite>,
    ) -> Result<Vec<WriteStatus>> {
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        if board.config.keeps_contributors()
            && 2 * writes.len() > self.shared.budget.cap(&board.name)
        {
            // Events capped one by one are never summed: a caller's that fill half a call
            // or more gain nothing from joining others, and go at once in calls of their
            // own (the board's calls in flight are then not bounded by the committer's).
            let call = WriteCall {
                board,
                now,
                guard: Unguarded,
                budget: Some(&self.shared.budget),
                standing: None,
            };
            return exact(&self.shared.conn, &call, &writes, vec![None; writes.len()]).await;
        }
        let (reply, answer) = oneshot::channel();
        let mut submission = Box::new(Submission {
            board: board.clone(),
            now,
            writes,
            reply,
        });
        // A committer that stopped (idle, or its runtime ended) is replaced.
        for _ in 0..3 {
            let mut queue = self.committer(&board.name);
            // Waits for room in the queue (back-pressure); an error: the queue closed.
            if std::future::poll_fn(|cx| queue.poll_ready(cx))
                .await
                .is_err()
            {
                continue;
            }
            match queue.try_send(submission) {
                Ok(()) => {
                    return answer.await.map_err(|_| {
                        Error::StoreUnavailable("the write was dropped unapplied".into())
                    })?;
                }
                Err(closed) => submission = closed.into_inner(),
            }
        }
        Err(Error::StoreUnavailable(
            "cannot start the board's committer".into(),
        ))
    }

    /// The board's committer queue, starting a committer when none runs.
    fn committer(&self, board: &BoardName) -> mpsc::Sender<Box<Submission>> {
        let mut committers = lock(&self.committers);
        if let Some(c) = committers.get(board).filter(|c| !c.queue.is_closed()) {
            return c.queue.clone();
        }
        // The queue's room is `QUEUE` plus one per sender (one item each).
        let (queue, inbox) = mpsc::channel(QUEUE);
        let id = NEXT_COMMITTER.fetch_add(1, Ordering::Relaxed);
        let idle = Idle {
            committers: Arc::downgrade(&self.committers),
            board: board.clone(),
            id,
        };
        tokio::spawn(commit_loop(self.shared.clone(), inbox, idle));
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
    pub(crate) fn forget(&self, board: &BoardName) {
        lock(&self.committers).remove(board);
        self.shared.budget.forget(board);
    }

    /// The board's call budget and cost estimate (for the keyed and token paths).
    pub(crate) fn budget(&self) -> &Budget {
        &self.shared.budget
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
}

impl Idle {
    fn leave(&self, inbox: &mut mpsc::Receiver<Box<Submission>>) {
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
    /// For each submission, the position in `sums` of each of its writes; on a board
    /// keeping contributors, whose events are capped one by one and never summed, in
    /// the submissions' writes one after the other (`in_order`).
    pairs: Vec<Vec<usize>>,
    events: usize,
    sums: Sums,
    in_order: bool,
}

impl Batch {
    fn new(first: Submission) -> Batch {
        let mut batch = Batch {
            in_order: first.board.config.keeps_contributors(),
            submissions: Vec::new(),
            pairs: Vec::new(),
            events: 0,
            sums: Sums::default(),
        };
        batch.add(first);
        batch
    }

    fn version(&self) -> u64 {
        self.submissions[0].board.version
    }

    fn add(&mut self, submission: Submission) {
        let pairs = match self.in_order {
            true => (self.events..self.events + submission.writes.len()).collect(),
            false => submission.writes.iter().map(|w| self.sums.add(w)).collect(),
        };
        self.events += submission.writes.len();
        self.pairs.push(pairs);
        self.submissions.push(submission);
    }

    /// What one call of the batch would carry: its pairs, or its events in order.
    fn len(&self) -> usize {
        match self.in_order {
            true => self.events,
            false => self.sums.entries.len(),
        }
    }
}

async fn commit_loop(shared: Arc<Shared>, mut inbox: mpsc::Receiver<Box<Submission>>, idle: Idle) {
    let options = &shared.options;
    let slots = Arc::new(Semaphore::new(options.max_in_flight.max(1)));
    // A submission for another incarnation of the board, or one that would overflow a
    // batch of events in order, held for the next batch (boxed, so the task's state
    // stays small).
    let mut carried: Option<Box<Submission>> = None;
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        // A submission already queued is taken without arming the idle timer (its
        // registration and removal, ~300 instructions a like at 8 connections).
        let first = match carried.take().or_else(|| inbox.try_recv().ok()) {
            Some(submission) => *submission,
            None => match tokio::time::timeout(options.committer_idle, inbox.next()).await {
                Ok(Some(submission)) => *submission,
                // Every queue handle is gone (board dropped, store dropped), or closed
                // and drained: what was queued is applied or in flight.
                Ok(None) => return,
                // Idle: it leaves once its batches in flight are applied too, so a
                // successor never has more in flight than `max_in_flight` beside them.
                Err(_) if slots.available_permits() + 1 >= options.max_in_flight.max(1) => {
                    idle.leave(&mut inbox);
                    continue;
                }
                Err(_) => continue,
            },
        };
        // A batch grows to what one call may carry: a bigger one would wait for several.
        let cap = shared
            .budget
            .cap(&first.board.name)
            .min(options.max_batch_members);
        let mut batch = Batch::new(first);
        while batch.len() < cap && batch.events < options.max_batch_events {
            match inbox.try_recv() {
                // A submission for another incarnation of the board waits for the next batch.
                Ok(next) if next.board.version != batch.version() => {
                    carried = Some(next);
                    break;
                }
                // Events in order are never summed: one that would not fit in the call
                // waits for the next batch, rather than make this one two calls.
                Ok(next) if batch.in_order && batch.len() + next.writes.len() > cap => {
                    carried = Some(next);
                    break;
                }
                Ok(next) => batch.add(*next),
                Err(_) => break,
            }
        }
        let shared = shared.clone();
        // Boxed: the task then holds a pointer. Spawned whole, the call's future (all of
        // its awaits' states) was copied three times, ~1,800 instructions a like.
        tokio::spawn(Box::pin(async move {
            commit(&shared.conn, &shared.budget, batch).await;
            drop(permit);
        }));
    }
}

/// Why a batch's calls stopped before its last pair.
enum Stopped {
    /// The board's bound needs every event checked: the rest go on the exact path.
    NeedsExact,
    /// A call failed (its reply may have been lost after Redis applied it).
    Failed(Error),
}

/// Applies a batch in calls of at most the board's cap of pairs (of events, in order, on
/// a board keeping contributors), and answers each caller (see the module header).
async fn commit(conn: &RedisConn, budget: &Budget, mut batch: Batch) {
    let board = batch.submissions[0].board.clone();
    let now = batch
        .submissions
        .iter()
        .map(|s| s.now)
        .max()
        .expect("a batch is never empty");
    let call = WriteCall {
        board: &board,
        now,
        guard: Unguarded,
        budget: Some(budget),
        standing: None,
    };
    // Each pair's (or event's) status, once the call that carried it answered.
    let mut done: Vec<Option<WriteStatus>> = vec![None; batch.len()];
    let stopped = match batch.in_order {
        // Events in order stop only on a failed call (never `NeedsExact`, whose retry
        // below reads the submissions' writes), so they are moved out, not copied.
        true => {
            let writes: Vec<SlotWrite> = (batch.submissions.iter_mut())
                .flat_map(|s| std::mem::take(&mut s.writes))
                .collect();
            in_order(conn, &call, &writes, &mut done)
                .await
                .map(Stopped::Failed)
        }
        false => summed(conn, budget, &call, &batch.sums, &mut done).await,
    };
    for (submission, pairs) in batch.submissions.into_iter().zip(batch.pairs) {
        let statuses: Vec<Option<WriteStatus>> = pairs.iter().map(|p| done[*p]).collect();
        let result = match &stopped {
            Some(Stopped::NeedsExact) => {
                // One caller at a time, so a failure never touches another caller.
                exact(conn, &call, &submission.writes, statuses).await
            }
            Some(Stopped::Failed(error)) => settle(statuses, error),
            None => settle(statuses, &Error::store("a batch pair was left unsent")),
        };
        let _ = submission.reply.send(result);
    }
}

/// A caller's answer from the statuses of its writes (`None`: not confirmed applied):
/// `error` when none was applied, else each status, unconfirmed ones included (known
/// not applied when Redis refused the call at its memory limit, or because the board
/// changed).
fn settle(statuses: Vec<Option<WriteStatus>>, error: &Error) -> Result<Vec<WriteStatus>> {
    if statuses.iter().all(Option::is_none) {
        return Err(error.clone());
    }
    let missing = match error {
        Error::StoreFull(_) => WriteStatus::StoreFull,
        Error::BoardChanged(_) => WriteStatus::Changed,
        _ => WriteStatus::Unconfirmed,
    };
    Ok(statuses.into_iter().map(|s| s.unwrap_or(missing)).collect())
}

/// Applies a caller's writes not applied yet (`None` in `statuses`) on the exact path,
/// in order, in calls of at most the board's cap of events.
async fn exact(
    conn: &RedisConn,
    call: &WriteCall<'_, Unguarded>,
    writes: &[SlotWrite],
    mut statuses: Vec<Option<WriteStatus>>,
) -> Result<Vec<WriteStatus>> {
    match in_order(conn, call, writes, &mut statuses).await {
        Some(error) => settle(statuses, &error),
        None => settle(statuses, &Error::store("no write was applied")),
    }
}

/// Applies the writes whose status is `None`, in order, in calls of at most the board's
/// cap of events, filling in their statuses; returns the error of the call that failed.
async fn in_order(
    conn: &RedisConn,
    call: &WriteCall<'_, Unguarded>,
    writes: &[SlotWrite],
    statuses: &mut [Option<WriteStatus>],
) -> Option<Error> {
    let budget = call.budget.expect("group commit calls have a budget");
    let todo: Vec<usize> = (0..writes.len())
        .filter(|i| statuses[*i].is_none())
        .collect();
    let mut from = 0;
    while from < todo.len() {
        let end = (from + budget.cap(&call.board.name)).min(todo.len());
        let part: Cow<[SlotWrite]> = match todo.len() == writes.len() {
            true => Cow::Borrowed(&writes[from..end]),
            false => todo[from..end].iter().map(|i| writes[*i].clone()).collect(),
        };
        match send_events(conn, call, &part, &call.limit()).await {
            Ok((Answer::Did(got), us, _)) => {
                budget.observe(&call.board.name, us, got.len());
                // A call that stopped at its budget: the rest go in the next call.
                let applied = from..from + got.len();
                from = applied.end;
                for (i, status) in todo[applied].iter().zip(got) {
                    statuses[*i] = Some(status);
                }
            }
            Err(error) => return Some(error),
        }
    }
    None
}

/// Applies a batch's pairs in calls of at most the board's cap of pairs, in order,
/// filling in their statuses; returns why the calls stopped before the last pair.
async fn summed(
    conn: &RedisConn,
    budget: &Budget,
    call: &WriteCall<'_, Unguarded>,
    sums: &Sums,
    done: &mut [Option<WriteStatus>],
) -> Option<Stopped> {
    let (name, entries) = (&call.board.name, &sums.entries);
    let mut from = 0;
    while from < entries.len() {
        let end = (from + budget.cap(name)).min(entries.len());
        let chunk = &entries[from..end];
        let limit = call.limit();
        match send_sums(conn, call, chunk, sums.abs_total, chunk.len(), &limit).await {
            // A call that stopped at its budget: the rest go in the next call.
            Ok((Answer::Did(SumsReply::Applied { pairs, too_late }), us, _)) => {
                budget.observe(name, us, pairs);
                for (status, e) in done[from..from + pairs].iter_mut().zip(chunk) {
                    *status = Some(fast_status(e.slot, &too_late));
                }
                from += pairs;
            }
            Ok((Answer::Did(SumsReply::NeedsExact), us, _)) => {
                budget.observe(name, us, chunk.len());
                return Some(Stopped::NeedsExact);
            }
            Err(error) => return Some(Stopped::Failed(error)),
        }
    }
    None
}
