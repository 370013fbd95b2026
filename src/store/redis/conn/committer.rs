//! The queue in front of a group-commit task (stats records, rate hits): a caller's
//! submission goes to the running task, which is started at the first submission and
//! replaced when it stopped (its runtime ended). The task itself, what it merges and how
//! it answers, is the caller's (`stats/commit.rs`, `rates/commit.rs`).

use std::future::Future;
use std::sync::Mutex;

use tokio::sync::mpsc;

use super::RedisConn;
use crate::error::{Error, Result};

/// The queue of a store's running committer, if any.
pub(crate) struct Committer<S> {
    queue: Mutex<Option<mpsc::Sender<S>>>,
    /// Submissions waiting before callers wait to queue (back-pressure).
    capacity: usize,
}

impl<S: Send + 'static> Committer<S> {
    /// A committer whose queue holds `capacity` submissions.
    pub(crate) fn new(capacity: usize) -> Self {
        Committer {
            queue: Mutex::new(None),
            capacity,
        }
    }

    /// Queues `submission`, starting the task `run(conn, inbox)` when none runs; `what`
    /// names the committer in the error when none can be started.
    pub(crate) async fn submit<F, Fut>(
        &self,
        conn: &RedisConn,
        mut submission: S,
        run: F,
        what: &str,
    ) -> Result<()>
    where
        F: Fn(RedisConn, mpsc::Receiver<S>) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        for _ in 0..3 {
            let queue = self.queue(conn, &run);
            match queue.send(submission).await {
                Ok(()) => return Ok(()),
                Err(mpsc::error::SendError(back)) => submission = back,
            }
        }
        Err(Error::StoreUnavailable(format!("cannot start the {what}")))
    }

    /// The running committer's queue, starting one when none runs.
    fn queue<F, Fut>(&self, conn: &RedisConn, run: &F) -> mpsc::Sender<S>
    where
        F: Fn(RedisConn, mpsc::Receiver<S>) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(q) = queue.as_ref().filter(|q| !q.is_closed()) {
            return q.clone();
        }
        let (sender, inbox) = mpsc::channel(self.capacity);
        tokio::spawn(run(conn.clone(), inbox));
        *queue = Some(sender.clone());
        sender
    }
}
