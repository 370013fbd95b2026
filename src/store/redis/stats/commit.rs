//! Group commit of stats records: concurrent records (of any contexts and kinds) are
//! recorded together.
//!
//! A store has one stats committer task, started at its first record. A record is
//! queued and awaits its answer. The committer takes one record and adds every record
//! already queued, up to [`MAX_RECORDS`] records or [`MAX_VALUES`] values, and records
//! them with [`record_many`] (script calls within a budget of Redis time, slowest lists
//! included on a single node; on a Cluster per hash slot, then one slowest-list call
//! per kind); up to
//! [`MAX_IN_FLIGHT`] batches are in flight at once. No timer holds a record back: a
//! lone record goes out at once, and under load the queue fills while batches are in
//! flight, so batches grow by themselves. A caller is answered only once its values are
//! in Redis, or with the error of the call that held them: nothing is dropped silently.
//!
//! The committer ends when the store is dropped, once it has answered what it holds.

use std::sync::Arc;

use tokio::sync::{Semaphore, mpsc, oneshot};

use super::calls::{Recorded, record_many};
use crate::error::{Error, Result};
use crate::store::redis::conn::RedisConn;
use crate::store::redis::conn::committer::Committer;

/// A batch stops growing at this many records...
const MAX_RECORDS: usize = 1024;

/// ...or this many values.
const MAX_VALUES: usize = 8192;

/// Batches in flight at once.
const MAX_IN_FLIGHT: usize = 3;

/// Records waiting before callers wait to queue (back-pressure).
const QUEUE: usize = 8192;

/// One caller's record, waiting for its answer.
struct Submission {
    record: Recorded,
    reply: oneshot::Sender<Result<()>>,
}

/// A store's stats committer.
pub(crate) struct StatsCommit {
    committer: Committer<Submission>,
    /// The kinds this process registered in `stat_kinds`, and when.
    pub(crate) kinds: super::KindRegistry,
}

impl Default for StatsCommit {
    fn default() -> Self {
        StatsCommit {
            committer: Committer::new(QUEUE),
            kinds: Default::default(),
        }
    }
}

impl StatsCommit {
    /// Queues `record` and waits until it is recorded.
    pub(crate) async fn record(&self, conn: &RedisConn, record: Recorded) -> Result<()> {
        let (reply, answer) = oneshot::channel();
        let submission = Submission { record, reply };
        self.committer
            .submit(conn, submission, commit_loop, "stats committer")
            .await?;
        answer.await.map_err(|_| {
            Error::StoreUnavailable("the stats record was lost before it was answered".into())
        })?
    }
}

/// Takes batches off the queue and records them, [`MAX_IN_FLIGHT`] at once, until
/// every queue handle is gone (the store was dropped) and the queue is drained.
async fn commit_loop(conn: RedisConn, mut inbox: mpsc::Receiver<Submission>) {
    let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let Some(first) = inbox.recv().await else {
            return;
        };
        let mut values = first.record.values.len();
        let mut batch = vec![first];
        while batch.len() < MAX_RECORDS && values < MAX_VALUES {
            match inbox.try_recv() {
                Ok(next) => {
                    values += next.record.values.len();
                    batch.push(next);
                }
                Err(_) => break,
            }
        }
        let conn = conn.clone();
        tokio::spawn(async move {
            let records: Vec<&Recorded> = batch.iter().map(|s| &s.record).collect();
            let results = record_many(&conn, &records).await;
            for (submission, result) in batch.into_iter().zip(results) {
                // A caller that gave up waiting (a timeout) needs no answer.
                let _ = submission.reply.send(result);
            }
            drop(permit);
        });
    }
}
