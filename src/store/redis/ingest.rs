//! Group commit: concurrent writes to one board are applied together.
//!
//! Each board has a committer task. A write is queued and awaits its statuses. The
//! committer takes one write, adds every write already queued (up to a bound), and
//! applies them with one `write.lua` call; it keeps up to `max_in_flight` calls going.
//! No timer holds a write back: under light load a lone event goes out at once, under
//! load the queue fills while calls are in flight, so batches grow by themselves. A
//! caller is answered only after its batch is in Redis.
//!
//! Inside a batch, `write.lua` sums events of the same slot and member, so a skewed load
//! (a few hot posts) costs Redis far less than one call per event.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{Semaphore, mpsc, oneshot};

use super::RedisStore;
use crate::board::Board;
use crate::domain::{BoardName, Timestamp};
use crate::error::{Error, Result};
use crate::store::{SlotWrite, WriteStatus};

/// How batches form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IngestOptions {
    /// The committer stops adding queued writes to a batch at this many events.
    pub max_batch_events: usize,
    /// Most `write.lua` calls of one board in flight at once.
    pub max_in_flight: usize,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            max_batch_events: 2000,
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

async fn commit_loop(store: RedisStore, mut inbox: mpsc::Receiver<Submission>) {
    let options = store.ingest_options;
    let slots = Arc::new(Semaphore::new(options.max_in_flight.max(1)));
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let Some(first) = inbox.recv().await else {
            return;
        };
        let mut events = first.writes.len();
        let mut batch = vec![first];
        while events < options.max_batch_events {
            match inbox.try_recv() {
                Ok(next) => {
                    events += next.writes.len();
                    batch.push(next);
                }
                Err(_) => break,
            }
        }
        let store = store.clone();
        tokio::spawn(async move {
            apply(&store, batch).await;
            drop(permit);
        });
    }
}

/// Applies a batch: submissions for the same incarnation of the board go together (a
/// stale one, after a re-creation, goes alone and gets its `BoardChanged`).
async fn apply(store: &RedisStore, batch: Vec<Submission>) {
    let mut groups: Vec<Vec<Submission>> = Vec::new();
    for submission in batch {
        match groups
            .iter_mut()
            .find(|g| g[0].board.version == submission.board.version)
        {
            Some(group) => group.push(submission),
            None => groups.push(vec![submission]),
        }
    }
    for group in groups {
        let board = group[0].board.clone();
        let now = group
            .iter()
            .map(|s| s.now)
            .max()
            .expect("a group is never empty");
        let mut writes = Vec::with_capacity(group.iter().map(|s| s.writes.len()).sum());
        let mut sizes = Vec::with_capacity(group.len());
        let mut replies = Vec::with_capacity(group.len());
        for submission in group {
            sizes.push(submission.writes.len());
            writes.extend(submission.writes);
            replies.push(submission.reply);
        }
        // One script call per group, so a failure never leaves a caller half applied. Its
        // size is bounded: the loop stops collecting at max_batch_events, and callers
        // send at most Settings::events_per_call events each.
        let result = super::write::write(store, &board, now, &writes).await;
        match result {
            Ok(statuses) => {
                let mut statuses = statuses.into_iter();
                for (size, reply) in sizes.into_iter().zip(replies) {
                    let _ = reply.send(Ok(statuses.by_ref().take(size).collect()));
                }
            }
            Err(error) => {
                for reply in replies {
                    let _ = reply.send(Err(error.clone()));
                }
            }
        }
    }
}
