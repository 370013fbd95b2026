//! Group commit of rate hits: concurrent batches are merged in flight, so that the hits
//! of one key from many callers reach Redis as one key of one script call.
//!
//! A store has one rate committer task, started at its first batch. A batch is queued
//! and awaits its answer. The committer takes one batch and adds every batch already
//! queued that it can merge with (the same tiers, and a `now` in the same slot of every
//! tier), up to [`MAX_HITS`] hits, and sends them as one batch (see `mod.rs`: hits
//! grouped by key, each key's hits summed per counter, many keys a call, the calls in
//! one pipeline); up to [`MAX_IN_FLIGHT`] merged batches are in flight at once. A batch
//! it cannot merge waits for the next round, ahead of the queue. No timer holds a batch
//! back: a lone batch goes out at once, and under load the queue fills while batches
//! are in flight, so merged batches grow by themselves.
//!
//! Merging is exact. The callers' batches are concurrent, so any order of them is one
//! they could have run in; the merged batch plays them in the order taken (each one's
//! hits in its own order). What a hit does depends on `now` only through now's slot of
//! each tier, equal for every merged batch, and the merged batch is sent with the
//! latest `now` of them (the key's expiry is computed from it, by the writer's clock).
//! Each caller is answered with its own hits' statuses once the merged batch is in
//! Redis, or with the error of the call that held them: nothing is dropped silently.
//!
//! The committer ends when the store is dropped, once it has answered what it holds.

use std::sync::Arc;

use tokio::sync::{Semaphore, mpsc, oneshot};

use super::heads::RateHeads;
use super::send_hits;
use crate::domain::Timestamp;
use crate::error::{Error, Result};
use crate::rates::RateTiers;
use crate::store::rates::RateHit;
use crate::store::redis::conn::RedisConn;
use crate::store::redis::conn::committer::Committer;

/// A merged batch stops growing at this many hits (a caller's batch larger than this
/// goes alone).
const MAX_HITS: usize = 16_384;

/// Merged batches in flight at once: one being played by Redis while the next is built.
const MAX_IN_FLIGHT: usize = 2;

/// Batches waiting before callers wait to queue (back-pressure).
const QUEUE: usize = 1024;

/// What a batch answers: per hit, the tiers that counted it or its error.
type Statuses = Result<Vec<Result<usize>>>;

/// One caller's batch, waiting for its answer.
struct Submission {
    tiers: RateTiers,
    now: Timestamp,
    hits: Vec<RateHit>,
    reply: oneshot::Sender<Statuses>,
}

impl Submission {
    /// Whether `other` plays the same with this one's `now`: the same tiers, and its
    /// `now` in the same slot of every tier.
    fn merges_with(&self, other: &Submission) -> bool {
        self.tiers == other.tiers
            && self.tiers.tiers().iter().all(|tier| {
                let g = tier.slot_ms();
                self.now.unix_millis().div_euclid(g) == other.now.unix_millis().div_euclid(g)
            })
    }
}

/// A store's rate committer.
pub(crate) struct RatesCommit {
    committer: Committer<Submission>,
    /// The heads of the keys written, guessed for the next batches.
    heads: Arc<RateHeads>,
}

impl Default for RatesCommit {
    fn default() -> Self {
        RatesCommit {
            committer: Committer::new(QUEUE),
            heads: Arc::default(),
        }
    }
}

impl RatesCommit {
    /// Queues the batch `hits` seen at `now` and waits until it is counted; per hit,
    /// what [`RateStore::rate_hits`](crate::store::RateStore::rate_hits) answers.
    pub(crate) async fn hits(
        &self,
        conn: &RedisConn,
        tiers: &RateTiers,
        now: Timestamp,
        hits: &[RateHit],
    ) -> Statuses {
        if hits.is_empty() {
            return Ok(Vec::new());
        }
        let (reply, answer) = oneshot::channel();
        let submission = Submission {
            tiers: tiers.clone(),
            now,
            hits: hits.to_vec(),
            reply,
        };
        let heads = &self.heads;
        self.committer
            .submit(
                conn,
                submission,
                |conn, inbox| commit_loop(conn, heads.clone(), inbox),
                "rate hit committer",
            )
            .await?;
        answer.await.map_err(|_| {
            Error::StoreUnavailable("the rate hits were lost before they were answered".into())
        })?
    }

    /// The store's guesses of heads (a check or a delete forgets its key's).
    pub(crate) fn heads(&self) -> &RateHeads {
        &self.heads
    }
}

/// Takes merged batches off the queue and sends them, [`MAX_IN_FLIGHT`] at once, until
/// every queue handle is gone (the store was dropped) and the queue is drained.
async fn commit_loop(
    conn: RedisConn,
    heads: Arc<RateHeads>,
    mut inbox: mpsc::Receiver<Submission>,
) {
    let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    // A batch taken off the queue that the last merged batch could not hold.
    let mut held: Option<Submission> = None;
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let first = match held.take() {
            Some(first) => first,
            None => match inbox.recv().await {
                Some(first) => first,
                None => return,
            },
        };
        let mut hits = first.hits.len();
        let mut batch = vec![first];
        while hits < MAX_HITS {
            match inbox.try_recv() {
                Ok(next) if batch[0].merges_with(&next) && hits + next.hits.len() <= MAX_HITS => {
                    hits += next.hits.len();
                    batch.push(next);
                }
                Ok(next) => {
                    held = Some(next);
                    break;
                }
                Err(_) => break,
            }
        }
        let (conn, heads) = (conn.clone(), heads.clone());
        tokio::spawn(async move {
            send_merged(&conn, &heads, batch).await;
            drop(permit);
        });
    }
}

/// Sends the merged `batch` and answers each caller with its own hits' statuses.
async fn send_merged(conn: &RedisConn, heads: &RateHeads, batch: Vec<Submission>) {
    if batch.len() == 1 {
        let Submission {
            tiers,
            now,
            hits,
            reply,
        } = batch.into_iter().next().expect("one batch");
        // A caller that gave up waiting (a timeout) needs no answer.
        let _ = reply.send(send_hits(conn, heads, &tiers, now, &hits).await);
        return;
    }
    let now = batch.iter().map(|s| s.now).max().expect("a batch");
    let tiers = batch[0].tiers.clone();
    let mut hits = Vec::with_capacity(batch.iter().map(|s| s.hits.len()).sum());
    let mut parts = Vec::with_capacity(batch.len());
    for submission in batch {
        hits.extend(submission.hits);
        parts.push((submission.reply, hits.len()));
    }
    match send_hits(conn, heads, &tiers, now, &hits).await {
        Ok(statuses) => {
            let mut statuses = statuses.into_iter();
            let mut start = 0;
            for (reply, end) in parts {
                let own: Vec<Result<usize>> = statuses.by_ref().take(end - start).collect();
                start = end;
                let _ = reply.send(Ok(own));
            }
        }
        Err(e) => {
            for (reply, _) in parts {
                let _ = reply.send(Err(e.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn submission(tiers: &str, now_ms: i64) -> Submission {
        Submission {
            tiers: RateTiers::parse(tiers).unwrap(),
            now: Timestamp::from_unix_millis(now_ms).unwrap(),
            hits: Vec::new(),
            reply: oneshot::channel().0,
        }
    }

    #[test]
    fn batches_merge_only_with_the_same_tiers_and_now_in_the_same_slot_of_every_tier() {
        let tiers = "5x1s,4x1m";
        let first = submission(tiers, 120_000);
        // The same second, 999 ms later.
        assert!(first.merges_with(&submission(tiers, 120_999)));
        // The next second, though the same minute.
        assert!(!first.merges_with(&submission(tiers, 121_000)));
        // The same second, other tiers.
        assert!(!first.merges_with(&submission("5x1s,4x1m,2x1h", 120_500)));
        // The same 2 s slot (8 to 10 s) in another 3 s slot (6 to 9 s, 9 to 12 s).
        let odd = submission("5x2s,3x3s", 8_500);
        assert!(odd.merges_with(&submission("5x2s,3x3s", 8_999)));
        assert!(!odd.merges_with(&submission("5x2s,3x3s", 9_500)));
    }
}
