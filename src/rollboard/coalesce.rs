//! Exact reads that share a store read: concurrent reads of one key (a board's top-10,
//! say) that allow no staleness are answered by one fetch, which every one of them saw
//! start after it arrived, so each answer is still the store's state at an instant
//! between the read's arrival and its answer (what a read of its own would answer).
//!
//! The rule: at most one fetch of a key is under way. A read that finds none starts
//! one. A read that finds one under way (started before it arrived, so it may miss a
//! write acknowledged before this read) waits for the *next* fetch, which the first of
//! the reads waiting starts as soon as the one under way ends, for all of them. Under
//! load, one store read answers every read of the key that arrived during the previous
//! one; alone, a read costs one lock more than a plain fetch.
//!
//! A fetch that fails, or whose reader goes away, hands nothing on: the reads that waited
//! for it fetch by themselves.

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{oneshot, watch};

use crate::error::Result;

/// A fetched answer: any of the read answers (the key says which type).
type Shared = Arc<dyn Any + Send + Sync>;

/// The reads of each key with a fetch under way.
#[derive(Default)]
pub(super) struct Coalescer {
    flights: Mutex<HashMap<String, Flight>>,
}

/// A key's fetch under way, and the reads that arrived since, waiting for the next.
#[derive(Default)]
struct Flight {
    next: Option<Next>,
}

/// What a read does on arrival: start a fetch now (none is under way), wait for the next
/// fetch another read starts, or start that next fetch itself once told to.
enum Role {
    Lead,
    Join(watch::Receiver<Option<Shared>>),
    Next(oneshot::Receiver<()>, watch::Sender<Option<Shared>>),
}

/// The next fetch of a key: `start` tells its reader to begin, `done` carries its answer
/// (`None`: it failed, or was not run).
struct Next {
    start: oneshot::Sender<()>,
    done: watch::Receiver<Option<Shared>>,
}

impl Coalescer {
    /// The answer of the read `key`, from a fetch started after this call: its own
    /// `fetch`, or another read's.
    pub(super) async fn read<T, F, Fut>(&self, key: String, fetch: F) -> Result<T>
    where
        T: Clone + Send + Sync + 'static,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let (start, done) = match self.join(&key) {
            Role::Lead => {
                let _turn = Turn { owner: self, key };
                return fetch().await;
            }
            Role::Join(mut done) => {
                let answer = done
                    .wait_for(Option::is_some)
                    .await
                    .ok()
                    .and_then(|a| a.clone());
                return match answer {
                    Some(shared) => Ok(shared
                        .downcast_ref::<T>()
                        .expect("a key always reads one type of answer")
                        .clone()),
                    None => fetch().await,
                };
            }
            Role::Next(start, done) => (start, done),
        };
        // The fetch under way hands its turn on when it ends (or is dropped).
        let _ = start.await;
        let _turn = Turn { owner: self, key };
        let answer = fetch().await;
        if let Ok(value) = &answer {
            let _ = done.send(Some(Arc::new(value.clone())));
        }
        answer
    }

    /// What a read of `key` arriving now does.
    fn join(&self, key: &str) -> Role {
        let mut flights = self.lock();
        let Some(flight) = flights.get_mut(key) else {
            flights.insert(key.to_owned(), Flight::default());
            return Role::Lead;
        };
        if let Some(next) = &flight.next {
            return Role::Join(next.done.clone());
        }
        let (start, started) = oneshot::channel();
        let (done, receiver) = watch::channel(None);
        flight.next = Some(Next {
            start,
            done: receiver,
        });
        Role::Next(started, done)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Flight>> {
        self.flights.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A fetch under way: when it ends (or its future is dropped), the next fetch of its key
/// starts, or, with no read waiting, the key has none under way.
struct Turn<'a> {
    owner: &'a Coalescer,
    key: String,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut flights = self.owner.lock();
        let next = flights.get_mut(&self.key).and_then(|f| f.next.take());
        // The next fetch is now the one under way; with none waiting, or its reader gone
        // (the reads that joined it see its answer channel closed and fetch by
        // themselves), the key has none.
        if next.is_none_or(|next| next.start.send(()).is_err()) {
            flights.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A fetch that counts itself and answers `value` once `gate` opens.
    async fn gated(fetches: &AtomicUsize, gate: &watch::Receiver<bool>, value: u32) -> Result<u32> {
        fetches.fetch_add(1, Ordering::SeqCst);
        gate.clone().wait_for(|open| *open).await.unwrap();
        Ok(value)
    }

    #[tokio::test]
    async fn reads_during_a_fetch_share_the_next_one_not_it() {
        let c = Coalescer::default();
        let fetches = AtomicUsize::new(0);
        let (open_first, first_gate) = watch::channel(false);
        let (open_next, next_gate) = watch::channel(false);
        let first = c.read("k".into(), || gated(&fetches, &first_gate, 1));
        // Four reads arrive while the first fetch is under way.
        let (fetches, next_gate) = (&fetches, &next_gate);
        let later = futures_util::future::join_all(
            (0..4).map(|i| c.read("k".into(), move || gated(fetches, next_gate, 10 + i))),
        );
        let driver = async {
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
            assert_eq!(fetches.load(Ordering::SeqCst), 1);
            open_first.send(true).unwrap();
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
            // The first of the waiting reads started the next fetch, for all four.
            assert_eq!(fetches.load(Ordering::SeqCst), 2);
            open_next.send(true).unwrap();
        };
        let (first, later, ()) = tokio::join!(first, later, driver);
        assert_eq!(first.unwrap(), 1);
        let later: Vec<u32> = later.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(later, vec![10; 4]);
        assert_eq!(fetches.load(Ordering::SeqCst), 2);
        assert!(c.lock().is_empty());
        // Other keys never wait on this one's.
        assert_eq!(c.read("j".into(), || async { Ok(5u32) }).await.unwrap(), 5);
    }

    #[tokio::test]
    async fn a_failed_or_abandoned_fetch_leaves_its_waiters_to_fetch_themselves() {
        let c = Coalescer::default();
        let fetches = AtomicUsize::new(0);
        let (open, gate) = watch::channel(false);
        let first = c.read("k".into(), || gated(&fetches, &gate, 1));
        let failing = c.read("k".into(), || async {
            fetches.fetch_add(1, Ordering::SeqCst);
            Err::<u32, _>(crate::error::Error::InvalidQuery { reason: "x".into() })
        });
        let joined = c.read("k".into(), || async {
            fetches.fetch_add(1, Ordering::SeqCst);
            Ok(7u32)
        });
        let driver = async {
            tokio::task::yield_now().await;
            open.send(true).unwrap();
        };
        let (first, failing, joined, ()) = tokio::join!(first, failing, joined, driver);
        assert_eq!(first.unwrap(), 1);
        assert!(failing.is_err());
        // It waited on the failed fetch, then read by itself.
        assert_eq!(joined.unwrap(), 7);
        assert_eq!(fetches.load(Ordering::SeqCst), 3);

        // A reader that goes away before its fetch starts: the read that joined it reads
        // by itself, and the key is free again.
        let (open, gate) = watch::channel(false);
        let mut first = Box::pin(c.read("k".into(), || gated(&fetches, &gate, 1)));
        assert!(futures_util::poll!(&mut first).is_pending());
        let mut abandoned = Box::pin(c.read("k".into(), || async { Ok(2u32) }));
        assert!(futures_util::poll!(&mut abandoned).is_pending());
        let joined = c.read("k".into(), || async { Ok(3u32) });
        let driver = async {
            tokio::task::yield_now().await;
            drop(abandoned);
            open.send(true).unwrap();
        };
        let (first, joined, ()) = tokio::join!(first, joined, driver);
        assert_eq!((first.unwrap(), joined.unwrap()), (1, 3));
        assert!(c.lock().is_empty());
    }
}
