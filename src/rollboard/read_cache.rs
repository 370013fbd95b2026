//! The read cache of a [`Rollboard`](super::Rollboard): answers of top-N, member, ranks
//! and around reads (and the member data beside them), kept per board for reads that
//! allow a staleness bound, so hot reads skip the store.
//!
//! The rules, each for a reason:
//! - An entry is used only while its age (now, on the instance's clock, minus the time
//!   its fetch *started*) is at most the read's bound: other replicas' writes are seen
//!   within the bound. A clock gone backwards makes no entry young: it is refetched.
//! - Every write through this process on a board forgets the board's entries at once
//!   ([`ReadCache::invalidate`]), so a read after its own process's write never sees the
//!   state before it.
//! - Concurrent misses of one read share one fetch (single flight), unless the fetch
//!   started longer ago than the read's bound allows (a stuck store). The board's entries
//!   carry a generation, new at each invalidation (from one counter, so never reused):
//!   a read after a write cannot join a fetch started before it (the write removed it),
//!   and that fetch's answer is handed to the reads that joined it but not kept.
//! - At most [`MAX_ENTRIES`] answers are kept; past that the least recently used eighth
//!   is dropped at once (so eviction costs little per insertion). Errors are never kept:
//!   the reads that joined a failed fetch read the store themselves.
//! - A read with bound 0 never comes here.

use foldhash::HashMap;
use std::any::Any;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;

use crate::domain::{BoardName, Staleness, Timestamp};
use crate::error::Result;

/// Most answers kept, all boards together.
pub const MAX_ENTRIES: usize = 10_000;

/// A cached answer: any of the read answers (the key says which type).
type Value = Arc<dyn Any + Send + Sync>;

/// What a fetch hands the reads that joined it: the answer and when its fetch started
/// (unix ms), or `None` when it failed (the reads then fetch themselves).
type Outcome = Option<(Value, i64)>;

/// The answers kept, by board.
#[derive(Default)]
pub(super) struct ReadCache {
    state: Mutex<State>,
    /// Set once anything was ever kept: until then a write skips the lock.
    used: AtomicBool,
}

#[derive(Default)]
struct State {
    boards: HashMap<BoardName, BoardReads>,
    /// Answers kept (ready ones), all boards together.
    kept: usize,
    /// The last generation handed out.
    generation: u64,
    /// A counter of uses, for least-recently-used eviction.
    tick: u64,
}

/// One board's reads, all of one generation.
struct BoardReads {
    generation: u64,
    reads: HashMap<String, Slot>,
}

enum Slot {
    /// An answer and when its fetch started (unix ms).
    Ready { value: Value, at: i64, used: u64 },
    /// A fetch under way since `started` (unix ms): `id` tells it from a later one,
    /// `done` is told its outcome.
    Pending {
        id: u64,
        started: i64,
        done: watch::Receiver<Outcome>,
    },
}

/// What a read found.
enum Found {
    Hit(Value, i64),
    Join(watch::Receiver<Outcome>),
    Lead {
        generation: u64,
        id: u64,
        done: watch::Sender<Outcome>,
    },
}

impl ReadCache {
    /// The answer of the read `key` on `board`: from the cache when an answer at most
    /// `bound` old is kept, else from the fetch under way for it, else from `fetch`
    /// (then kept); with its age in milliseconds at `now` (0 when fetched now).
    pub(super) async fn read<T, F, Fut>(
        &self,
        board: &BoardName,
        key: String,
        bound: Staleness,
        now: Timestamp,
        fetch: F,
    ) -> Result<(T, u64)>
    where
        T: Clone + Send + Sync + 'static,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let now = now.unix_millis();
        let found = self.find(board, &key, bound, now);
        let (generation, id, done) = match found {
            Found::Hit(value, at) => return Ok((cast::<T>(&value), age(now, at))),
            Found::Join(mut done) => {
                let outcome = done
                    .wait_for(Option::is_some)
                    .await
                    .ok()
                    .and_then(|o| o.clone());
                return match outcome {
                    Some((value, at)) => Ok((cast::<T>(&value), age(now, at))),
                    // The fetch failed or was given up: read the store.
                    None => fetch().await.map(|value| (value, 0)),
                };
            }
            Found::Lead {
                generation,
                id,
                done,
            } => (generation, id, done),
        };
        // Forgets the pending slot if this future is dropped before the fetch ends.
        let mut guard = PendingGuard {
            cache: self,
            board,
            key: &key,
            id,
            armed: true,
        };
        let result = fetch().await;
        guard.armed = false;
        let mut state = self.lock();
        let current = state.boards.get(board).map(|b| b.generation) == Some(generation);
        match &result {
            Ok(value) => {
                let value: Value = Arc::new(value.clone());
                if current {
                    state.tick += 1;
                    let used = state.tick;
                    let reads = &mut state.boards.get_mut(board).expect("current").reads;
                    if matches!(reads.get(&key), Some(Slot::Pending { id: p, .. }) if *p == id) {
                        let ready = Slot::Ready {
                            value: value.clone(),
                            at: now,
                            used,
                        };
                        reads.insert(key.clone(), ready);
                        state.kept += 1;
                        if state.kept > MAX_ENTRIES {
                            state.evict();
                        }
                    }
                }
                let _ = done.send(Some((value, now)));
            }
            Err(_) => {
                if current {
                    remove_pending(&mut state, board, &key, id);
                }
                let _ = done.send(None);
            }
        }
        drop(state);
        result.map(|value| (value, 0))
    }

    /// Forgets every answer kept for `board`, and the fetches under way for it (the reads
    /// that joined one still get its answer; it is not kept). Called after every write
    /// through this process on the board.
    pub(super) fn invalidate(&self, board: &BoardName) {
        if !self.used.load(Ordering::SeqCst) {
            return;
        }
        let mut state = self.lock();
        if let Some(gone) = state.boards.remove(board) {
            let ready = gone
                .reads
                .values()
                .filter(|s| matches!(s, Slot::Ready { .. }))
                .count();
            state.kept -= ready;
        }
    }

    /// Answers kept, all boards together.
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.lock().kept
    }

    /// Looks the read up, and when no answer or fetch serves it, registers this read's
    /// fetch.
    fn find(&self, board: &BoardName, key: &str, bound: Staleness, now: i64) -> Found {
        let mut state = self.lock();
        state.tick += 1;
        let tick = state.tick;
        if let Some(reads) = state.boards.get_mut(board) {
            match reads.reads.get_mut(key) {
                Some(Slot::Ready { value, at, used }) if fresh(now, *at, bound) => {
                    *used = tick;
                    return Found::Hit(value.clone(), *at);
                }
                // A fetch started longer ago than this read's bound would answer too old
                // a state: this read fetches anew (and that fetch's answer is not kept).
                Some(Slot::Pending { done, started, .. }) if fresh(now, *started, bound) => {
                    return Found::Join(done.clone());
                }
                _ => {}
            }
        }
        self.used.store(true, Ordering::SeqCst);
        state.generation += 1;
        let id = state.generation;
        let (done, receiver) = watch::channel(None);
        let reads = match state.boards.get_mut(board) {
            Some(reads) => reads,
            None => state.boards.entry(board.clone()).or_insert(BoardReads {
                generation: id,
                reads: HashMap::default(),
            }),
        };
        let generation = reads.generation;
        let old = reads.reads.insert(
            key.to_owned(),
            Slot::Pending {
                id,
                started: now,
                done: receiver,
            },
        );
        if matches!(old, Some(Slot::Ready { .. })) {
            state.kept -= 1;
        }
        Found::Lead {
            generation,
            id,
            done,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    /// Drops the least recently used eighth of the answers kept (and the boards left
    /// with nothing).
    fn evict(&mut self) {
        let mut uses: Vec<u64> = self
            .boards
            .values()
            .flat_map(|b| b.reads.values())
            .filter_map(|s| match s {
                Slot::Ready { used, .. } => Some(*used),
                Slot::Pending { .. } => None,
            })
            .collect();
        let drop = (uses.len() / 8).max(1);
        if uses.is_empty() {
            return;
        }
        let (_, cutoff, _) = uses.select_nth_unstable(drop - 1);
        let cutoff = *cutoff;
        let mut dropped = 0;
        for board in self.boards.values_mut() {
            board.reads.retain(|_, s| match s {
                Slot::Ready { used, .. } if *used <= cutoff => {
                    dropped += 1;
                    false
                }
                _ => true,
            });
        }
        self.boards.retain(|_, b| !b.reads.is_empty());
        self.kept -= dropped;
    }
}

/// Removes the pending slot `id` of `key` on `board`, if it is still there.
fn remove_pending(state: &mut State, board: &BoardName, key: &str, id: u64) {
    if let Some(reads) = state.boards.get_mut(board)
        && matches!(reads.reads.get(key), Some(Slot::Pending { id: pending, .. }) if *pending == id)
    {
        reads.reads.remove(key);
    }
}

/// A fetch's pending slot, removed when the fetching future is dropped midway (a client
/// gone), so later reads do not wait on a fetch nobody runs.
struct PendingGuard<'a> {
    cache: &'a ReadCache,
    board: &'a BoardName,
    key: &'a str,
    id: u64,
    armed: bool,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            remove_pending(&mut self.cache.lock(), self.board, self.key, self.id);
        }
    }
}

/// Whether an answer fetched from `at` may serve a read at `now` under `bound`.
fn fresh(now: i64, at: i64, bound: Staleness) -> bool {
    now >= at && ((now - at) as u64) <= bound.millis()
}

fn age(now: i64, at: i64) -> u64 {
    now.saturating_sub(at).max(0) as u64
}

/// The kept answer as the type its key reads.
fn cast<T: Clone + 'static>(value: &Value) -> T {
    value
        .downcast_ref::<T>()
        .expect("a read key always holds one type of answer")
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use std::sync::atomic::AtomicUsize;

    fn name(n: &str) -> BoardName {
        BoardName::parse(n).unwrap()
    }

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_unix_millis(1_700_000_000_000 + ms).unwrap()
    }

    fn bound(ms: u64) -> Staleness {
        Staleness::from_millis(ms).unwrap()
    }

    #[tokio::test]
    async fn an_answer_serves_within_its_bound_and_is_refetched_after() {
        let cache = ReadCache::default();
        let b = name("b");
        let read = |value: u32, now: i64| {
            let cache = &cache;
            let b = &b;
            async move {
                cache
                    .read(b, "top".into(), bound(1000), at(now), || async move {
                        Ok(value)
                    })
                    .await
                    .unwrap()
            }
        };
        assert_eq!(read(1, 0).await, (1, 0));
        assert_eq!(read(2, 400).await, (1, 400));
        assert_eq!(read(3, 1000).await, (1, 1000));
        assert_eq!(read(4, 1001).await, (4, 0));
        // A clock gone backwards refetches.
        assert_eq!(read(5, 900).await, (5, 0));
        cache.invalidate(&b);
        assert_eq!(read(6, 900).await, (6, 0));
        assert_eq!(cache.kept(), 1);
    }

    #[tokio::test]
    async fn errors_are_not_kept() {
        let cache = ReadCache::default();
        let b = name("b");
        let failed: Result<(u32, u64)> = cache
            .read(&b, "k".into(), bound(1000), at(0), || async {
                Err(Error::InvalidQuery { reason: "x".into() })
            })
            .await;
        assert!(failed.is_err());
        assert_eq!(cache.kept(), 0);
        let ok = cache
            .read(&b, "k".into(), bound(1000), at(1), || async { Ok(7u32) })
            .await
            .unwrap();
        assert_eq!(ok, (7, 0));
    }

    #[tokio::test]
    async fn concurrent_misses_share_one_fetch_and_a_write_starts_a_new_one() {
        let cache = ReadCache::default();
        let b = name("b");
        let fetches = AtomicUsize::new(0);
        let (release, wait) = watch::channel(false);
        let read = |value: u32| {
            let (cache, b, fetches, wait) = (&cache, &b, &fetches, wait.clone());
            async move {
                cache
                    .read(b, "k".into(), bound(1000), at(0), || async move {
                        fetches.fetch_add(1, Ordering::SeqCst);
                        let mut wait = wait;
                        wait.wait_for(|r| *r).await.unwrap();
                        Ok(value)
                    })
                    .await
                    .unwrap()
            }
        };
        let before = futures_util::future::join_all((0..8).map(|_| read(1)));
        let after_write = async {
            tokio::task::yield_now().await;
            cache.invalidate(&b);
            read(2).await
        };
        let releaser = async {
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
            release.send(true).unwrap();
        };
        let (before, fresh, ()) = tokio::join!(before, after_write, releaser);
        assert_eq!(before, vec![(1, 0); 8]);
        assert_eq!(fresh, (2, 0));
        assert_eq!(fetches.load(Ordering::SeqCst), 2);
        // Only the fetch started after the write is kept.
        let kept = cache
            .read(&b, "k".into(), bound(1000), at(5), || async { Ok(3u32) })
            .await
            .unwrap();
        assert_eq!(kept, (2, 5));
    }

    #[tokio::test]
    async fn a_read_does_not_join_a_fetch_older_than_its_bound() {
        let cache = ReadCache::default();
        let b = name("b");
        let (release, wait) = watch::channel(false);
        let slow = async {
            cache
                .read(&b, "k".into(), bound(1000), at(0), || async {
                    let mut wait = wait.clone();
                    wait.wait_for(|r| *r).await.unwrap();
                    Ok(1u32)
                })
                .await
                .unwrap()
        };
        let later = async {
            tokio::task::yield_now().await;
            // 1,500 ms after the slow fetch started: too old for a bound of 1,000.
            let late = cache
                .read(&b, "k".into(), bound(1000), at(1500), || async { Ok(2u32) })
                .await
                .unwrap();
            release.send(true).unwrap();
            late
        };
        let (slow, late) = tokio::join!(slow, later);
        assert_eq!((slow, late), ((1, 0), (2, 0)));
        // The later fetch is the one kept.
        let kept = cache
            .read(&b, "k".into(), bound(1000), at(1600), || async { Ok(3u32) })
            .await
            .unwrap();
        assert_eq!(kept, (2, 100));
    }

    #[tokio::test]
    async fn the_cache_keeps_at_most_its_bound() {
        let cache = ReadCache::default();
        let b = name("b");
        for i in 0..(MAX_ENTRIES + 10) {
            cache
                .read(&b, format!("k{i}"), bound(1000), at(0), || async { Ok(i) })
                .await
                .unwrap();
        }
        assert!(cache.kept() <= MAX_ENTRIES, "{}", cache.kept());
        // The newest is kept, the oldest was dropped.
        let last = MAX_ENTRIES + 9;
        let newest = cache
            .read(&b, format!("k{last}"), bound(1000), at(1), || async {
                Ok(0)
            })
            .await
            .unwrap();
        assert_eq!(newest, (last, 1));
        let oldest = cache
            .read(&b, "k0".into(), bound(1000), at(1), || async { Ok(99) })
            .await
            .unwrap();
        assert_eq!(oldest, (99, 0));
    }
}
