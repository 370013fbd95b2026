//! Exact reads that share a store read: concurrent reads of one key (a board's top-10,
//! the standings of a window's members) that allow no staleness are answered by one
//! fetch, which every one of them saw start after it arrived, so each answer is still
//! the store's state at an instant between the read's arrival and its answer (what a
//! read of its own would answer).
//!
//! The rule: a read that finds no fetch of its key under way starts one. A read that
//! finds one under way (started before it arrived, so it may miss a write acknowledged
//! before this read) waits for the *next* fetch, which the first of the reads waiting
//! starts for all of them as soon as a fetch under way ends, or after [`MAX_WAIT`] if
//! none has (a store slowed by other work: then the reads wait no longer than that).
//! Under load, one store read answers every read of the key that arrived during the
//! previous one; alone, a read costs one lock more than a plain fetch.
//!
//! Each read brings an item (a member, or `()` where the key says everything): a fetch
//! reads the distinct items of its reads at once, and each read takes its item's answer.
//! A fetch that fails, or whose reader goes away, hands nothing on: the reads that waited
//! for it fetch by themselves.

use foldhash::HashMap;
use std::any::Any;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use std::time::Duration;

use tokio::sync::{oneshot, watch};

use crate::error::{Error, Result};

/// A fetch's answers (`Vec<T>`, one per item) or items (`Vec<I>`), of the types the key
/// reads.
type Items = Box<dyn Any + Send>;
type Shared = Arc<dyn Any + Send + Sync>;

/// How long the next fetch of a key waits at most for one under way to end. Measured
/// (benchmark `topreads`): 64 connections of exact top-10 reads do as many reads/s with
/// 250 µs as with 1 ms, and 8 readers beside saturating batch ingest a p99 ~1 ms lower.
pub(super) const MAX_WAIT: Duration = Duration::from_micros(250);

/// The reads of each key with a fetch under way.
#[derive(Default)]
pub(super) struct Coalescer {
    flights: Mutex<HashMap<String, Flight>>,
}

/// A key's fetches under way (one, or more where the next did not wait), and the reads
/// that arrived since, waiting for the next.
struct Flight {
    running: usize,
    next: Option<Next>,
    /// Nexts made so far, each one's number.
    made: u64,
}

/// The next fetch of a key: its items so far, `start` hands them to its reader when the
/// fetch under way ends, `done` carries its answers (`None`: it failed, or was not run).
struct Next {
    number: u64,
    items: Items,
    start: oneshot::Sender<Items>,
    done: watch::Receiver<Option<Shared>>,
}

/// What a read does on arrival: fetch its item now (no fetch is under way), wait for the
/// answer at an index of the next fetch, or make that next fetch itself once told to.
enum Role {
    Lead,
    Join(usize, watch::Receiver<Option<Shared>>),
    Next(u64, oneshot::Receiver<Items>, watch::Sender<Option<Shared>>),
}

impl Coalescer {
    /// The answer for `item` of the read `key`, from a fetch started after this call:
    /// its own `fetch` (of the items of every read that waited for it), or another
    /// read's. `fetch` answers one value per item, in order.
    pub(super) async fn read<I, T, F, Fut>(&self, key: String, item: I, fetch: F) -> Result<T>
    where
        I: Clone + PartialEq + Send + 'static,
        T: Clone + Send + Sync + 'static,
        F: FnOnce(Vec<I>) -> Fut,
        Fut: Future<Output = Result<Vec<T>>>,
    {
        let (number, start, done) = match self.join(&key, &item) {
            Role::Lead => {
                let _turn = Turn { owner: self, key };
                return first(fetch(vec![item]).await);
            }
            Role::Join(index, mut done) => {
                let answers = done
                    .wait_for(Option::is_some)
                    .await
                    .ok()
                    .and_then(|a| a.clone());
                return match answers {
                    Some(shared) => Ok(answer::<T>(&shared, index)),
                    None => first(fetch(vec![item]).await),
                };
            }
            Role::Next(number, start, done) => (number, start, done),
        };
        // A fetch under way hands its turn on when it ends (or is dropped), with the
        // items of the reads that waited, this one's first; after MAX_WAIT this read
        // takes them itself.
        let mut waiting = Waiting {
            owner: self,
            key: &key,
            start,
        };
        let items = tokio::select! {
            biased;
            items = &mut waiting.start => items.ok(),
            () = tokio::time::sleep(MAX_WAIT) => match self.start_early(&key, number) {
                Some(items) => Some(items),
                // Handed on meanwhile.
                None => (&mut waiting.start).await.ok(),
            },
        };
        drop(waiting);
        let Some(items) = items else {
            return first(fetch(vec![item]).await);
        };
        let _turn = Turn { owner: self, key };
        let items = *items
            .downcast::<Vec<I>>()
            .expect("a key always reads one type");
        let count = items.len();
        let answers = fetch(items).await?;
        if answers.len() != count {
            return Err(Error::store(format!(
                "a read of {count} items answered {}",
                answers.len()
            )));
        }
        let shared: Shared = Arc::new(answers);
        let _ = done.send(Some(shared.clone()));
        Ok(answer::<T>(&shared, 0))
    }

    /// What a read of `key` for `item` arriving now does.
    fn join<I: Clone + PartialEq + Send + 'static>(&self, key: &str, item: &I) -> Role {
        let mut flights = self.lock();
        let Some(flight) = flights.get_mut(key) else {
            let flight = Flight {
                running: 1,
                next: None,
                made: 0,
            };
            flights.insert(key.to_owned(), flight);
            return Role::Lead;
        };
        if let Some(next) = &mut flight.next {
            let items = next
                .items
                .downcast_mut::<Vec<I>>()
                .expect("a key always reads one type");
            let index = items.iter().position(|i| i == item).unwrap_or_else(|| {
                items.push(item.clone());
                items.len() - 1
            });
            return Role::Join(index, next.done.clone());
        }
        let (start, started) = oneshot::channel();
        let (done, receiver) = watch::channel(None);
        flight.made += 1;
        flight.next = Some(Next {
            number: flight.made,
            items: Box::new(vec![item.clone()]),
            start,
            done: receiver,
        });
        Role::Next(flight.made, started, done)
    }

    /// The items of the next fetch of `key` numbered `number`, taken by its reader beside
    /// the fetches under way; `None` when one of them handed it on first (the next
    /// waiting then, if any, is another's).
    fn start_early(&self, key: &str, number: u64) -> Option<Items> {
        let mut flights = self.lock();
        let flight = flights.get_mut(key)?;
        if flight.next.as_ref()?.number != number {
            return None;
        }
        let next = flight.next.take()?;
        flight.running += 1;
        Some(next.items)
    }

    /// A fetch of `key` under way ended: the next one starts, or, with none under way
    /// and no read waiting, the key is forgotten.
    fn end_turn(&self, key: &str) {
        let mut flights = self.lock();
        let Some(flight) = flights.get_mut(key) else {
            return;
        };
        flight.running -= 1;
        // The next fetch is now one under way; its reader gone, the reads that joined it
        // see its answer channel closed and fetch by themselves.
        if let Some(next) = flight.next.take()
            && next.start.send(next.items).is_ok()
        {
            flight.running += 1;
        }
        if flight.running == 0 {
            flights.remove(key);
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Flight>> {
        self.flights.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The one answer of a fetch of one item.
pub(super) fn first<T>(answers: Result<Vec<T>>) -> Result<T> {
    answers?
        .into_iter()
        .next()
        .ok_or_else(|| Error::store("a read of one item answered none"))
}

/// The answer at `index` of a fetch's answers.
fn answer<T: Clone + 'static>(shared: &Shared, index: usize) -> T {
    shared
        .downcast_ref::<Vec<T>>()
        .expect("a key always reads one type")[index]
        .clone()
}

/// A fetch under way: when it ends (or its future is dropped), the next fetch of its key
/// starts, or, with none under way and no read waiting, the key is forgotten.
struct Turn<'a> {
    owner: &'a Coalescer,
    key: String,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.owner.end_turn(&self.key);
    }
}

/// A read waiting to make the next fetch of its key. A fetch that ended handed it the
/// turn (counted as under way) with the items: if it goes away before it takes them, it
/// ends that turn, or the key would count a fetch under way forever (and every later
/// read of it would wait [`MAX_WAIT`] whenever no fetch is).
struct Waiting<'a> {
    owner: &'a Coalescer,
    key: &'a str,
    start: oneshot::Receiver<Items>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.start.try_recv().is_ok() {
            self.owner.end_turn(self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::sync::Mutex as StdMutex;

    /// A fetch that records its items and, once `gate` opens, answers each item `i` with
    /// `base + i`.
    async fn gated(
        fetches: &StdMutex<Vec<Vec<u32>>>,
        gate: &watch::Receiver<bool>,
        base: u32,
        items: Vec<u32>,
    ) -> Result<Vec<u32>> {
        fetches.lock().unwrap().push(items.clone());
        gate.clone().wait_for(|open| *open).await.unwrap();
        Ok(items.iter().map(|i| base + i).collect())
    }

    fn made(fetches: &StdMutex<Vec<Vec<u32>>>) -> Vec<Vec<u32>> {
        fetches.lock().unwrap().clone()
    }

    #[tokio::test(start_paused = true)]
    async fn reads_during_a_fetch_share_the_next_one_not_it() {
        let c = Coalescer::default();
        let fetches = StdMutex::new(Vec::new());
        let (open_first, first_gate) = watch::channel(false);
        let (open_next, next_gate) = watch::channel(false);
        let (f, first_gate, next_gate) = (&fetches, &first_gate, &next_gate);
        let first = c.read("k".into(), 1, |items| gated(f, first_gate, 100, items));
        // Reads of items 2, 1, 3, 2 arrive while the first fetch is under way.
        let later = futures_util::future::join_all([2, 1, 3, 2].map(|item| {
            c.read("k".into(), item, move |items| {
                gated(f, next_gate, 200, items)
            })
        }));
        let driver = async {
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
            assert_eq!(made(f), vec![vec![1]]);
            open_first.send(true).unwrap();
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
            // The first of the waiting reads started the next fetch, for the distinct
            // items of all four, its own first.
            assert_eq!(made(f), vec![vec![1], vec![2, 1, 3]]);
            open_next.send(true).unwrap();
        };
        let (first, later, ()) = tokio::join!(first, later, driver);
        assert_eq!(first.unwrap(), 101);
        let later: Vec<u32> = later.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(later, vec![202, 201, 203, 202]);
        assert!(c.lock().is_empty());
        // Other keys never wait on this one's.
        let alone = c.read("j".into(), 5, |items: Vec<u32>| async move { Ok(items) });
        assert_eq!(alone.await.unwrap(), 5);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_or_abandoned_fetch_leaves_its_waiters_to_fetch_themselves() {
        let c = Coalescer::default();
        let fetches = StdMutex::new(Vec::new());
        let (open, gate) = watch::channel(false);
        let (f, gate) = (&fetches, &gate);
        let first = c.read("k".into(), 1, |items| gated(f, gate, 100, items));
        let failing = c.read("k".into(), 2, |_: Vec<u32>| async {
            Err::<Vec<u32>, _>(Error::InvalidQuery { reason: "x".into() })
        });
        let joined = c.read("k".into(), 3, |items| gated(f, gate, 300, items));
        let driver = async {
            tokio::task::yield_now().await;
            open.send(true).unwrap();
        };
        let (first, failing, joined, ()) = tokio::join!(first, failing, joined, driver);
        assert_eq!(first.unwrap(), 101);
        assert!(failing.is_err());
        // It waited on the failed fetch, then read its own item by itself.
        assert_eq!(joined.unwrap(), 303);
        assert_eq!(made(f), vec![vec![1], vec![3]]);

        // A reader that goes away before its fetch starts: the read that joined it reads
        // by itself, and the key is free again.
        let (open, gate) = watch::channel(false);
        let gate = &gate;
        let mut first = Box::pin(c.read("k".into(), 1, |items| gated(f, gate, 100, items)));
        assert!(futures_util::poll!(&mut first).is_pending());
        let mut abandoned = Box::pin(c.read("k".into(), 2, |items| gated(f, gate, 200, items)));
        assert!(futures_util::poll!(&mut abandoned).is_pending());
        let joined = c.read("k".into(), 3, |items| gated(f, gate, 300, items));
        let driver = async {
            tokio::task::yield_now().await;
            drop(abandoned);
            open.send(true).unwrap();
        };
        let (first, joined, ()) = tokio::join!(first, joined, driver);
        assert_eq!((first.unwrap(), joined.unwrap()), (101, 303));
        assert!(c.lock().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn the_next_fetch_waits_at_most_max_wait_for_a_slow_one() {
        let c = Coalescer::default();
        let fetches = StdMutex::new(Vec::new());
        let (open, slow_gate) = watch::channel(false);
        let (f, slow_gate) = (&fetches, &slow_gate);
        let mut slow = Box::pin(c.read("k".into(), 1, |items| gated(f, slow_gate, 100, items)));
        assert!(futures_util::poll!(&mut slow).is_pending());
        let waiting = futures_util::future::join_all(
            [2, 3].map(|item| c.read("k".into(), item, |items: Vec<u32>| async move { Ok(items) })),
        );
        let before = tokio::time::Instant::now();
        // The slow fetch is still under way: the others read after MAX_WAIT, together.
        assert_eq!(
            waiting
                .await
                .into_iter()
                .map(Result::unwrap)
                .collect::<Vec<_>>(),
            [2, 3]
        );
        assert!(before.elapsed() >= MAX_WAIT);
        assert_eq!(made(f), vec![vec![1]]);
        open.send(true).unwrap();
        assert_eq!(slow.await.unwrap(), 101);
        assert!(c.lock().is_empty());
    }

    /// Answers its items.
    async fn echo(items: Vec<u32>) -> Result<Vec<u32>> {
        Ok(items)
    }

    /// A read of item 2 of key `k`, waiting for the next fetch, which the fetch under
    /// way when it arrived (of item 1) has just handed on to it; it has not run since.
    async fn handed_on(c: &Coalescer) -> Pin<Box<impl Future<Output = Result<u32>> + '_>> {
        let fetches = StdMutex::new(Vec::new());
        let (open, gate) = watch::channel(false);
        let (f, gate) = (&fetches, &gate);
        let mut first = Box::pin(c.read("k".into(), 1, |items| gated(f, gate, 100, items)));
        assert!(futures_util::poll!(&mut first).is_pending());
        let mut handed = Box::pin(c.read("k".into(), 2, echo));
        assert!(futures_util::poll!(&mut handed).is_pending());
        open.send(true).unwrap();
        assert_eq!(first.await.unwrap(), 101);
        assert_eq!(made(f), vec![vec![1]]);
        handed
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_whose_next_was_handed_on_never_takes_a_later_one() {
        let c = Coalescer::default();
        let handed = handed_on(&c).await;
        // Before its reader runs, a read makes a later next, and both waits' time runs
        // out.
        let mut later = Box::pin(c.read("k".into(), 3, echo));
        assert!(futures_util::poll!(&mut later).is_pending());
        tokio::time::advance(2 * MAX_WAIT).await;
        assert_eq!(handed.await.unwrap(), 2);
        assert_eq!(later.await.unwrap(), 3);
        // Every fetch ended: the key has none under way.
        assert!(c.lock().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_gone_after_its_next_was_handed_on_leaves_no_fetch_under_way() {
        let c = Coalescer::default();
        // Its reader goes away before it runs (a client that hung up).
        drop(handed_on(&c).await);
        assert!(c.lock().is_empty());
        // So the next read fetches at once, without waiting MAX_WAIT.
        let before = tokio::time::Instant::now();
        assert_eq!(c.read("k".into(), 3, echo).await.unwrap(), 3);
        assert_eq!(before.elapsed(), Duration::ZERO);
    }
}
