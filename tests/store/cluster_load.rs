//! Writers and a reader on one board, for the tests that move the board under them
//! (resharding, failover) or kill its Redis: the writers keep the oracle of what was
//! acknowledged (and apart, what was answered `store_unavailable` or `write_uncertain`,
//! for a whole batch or for the events of a batch after a call that failed part-way: it
//! may have run), and every answer is one of those or a success; any other error fails
//! the test at once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rollboard::{BoardConfig, Error, Event, RedisOptions, RedisStore, Rollboard};
use tokio::task::JoinHandle;

use crate::support::{clock, unique, with_clock};
use crate::test_cluster::TestCluster;

const WRITERS: usize = 4;

/// A Rollboard on `cluster` with a board (`1h` slot, `1h` and `24h` windows) named from
/// `prefix`: the Rollboard, the board's name and its hash slot. The response timeout is
/// generous, so that no reply is lost to a slow machine: every write answered
/// unavailable is then one that did not run (MOVED, READONLY, CLUSTERDOWN).
pub async fn busy_board(cluster: &TestCluster, prefix: &str) -> (Rollboard, String, u16) {
    let options = RedisOptions {
        response_timeout: std::time::Duration::from_secs(10),
        ..RedisOptions::default()
    };
    busy_board_with(cluster, prefix, options).await
}

/// As [`busy_board`], on a store with `options`.
pub async fn busy_board_with(
    cluster: &TestCluster,
    prefix: &str,
    options: RedisOptions,
) -> (Rollboard, String, u16) {
    let store = RedisStore::connect_cluster_with(&cluster.urls, options)
        .await
        .unwrap();
    let boards: Rollboard = with_clock(Arc::new(store), &clock());
    let name = unique(prefix);
    boards
        .create(&name, BoardConfig::parse("1h", &["1h", "24h"]).unwrap())
        .await
        .unwrap();
    let slot = cluster.keyslot(&format!("board_{{{name}}}"));
    (boards, name, slot)
}

/// The load on a board.
pub struct Load {
    stop: Arc<AtomicBool>,
    acknowledged: Arc<AtomicU64>,
    writers: Vec<JoinHandle<Written>>,
    reader: JoinHandle<(u64, u64)>,
}

/// What one writer saw.
type Written = (BTreeMap<String, i64>, BTreeMap<String, i64>, u64);

/// What the load saw.
pub struct Seen {
    /// Member → sum of the acknowledged deltas.
    pub oracle: BTreeMap<String, i64>,
    /// Member → sum of the deltas answered `store_unavailable` or `write_uncertain`
    /// (each may have run).
    pub maybe: BTreeMap<String, i64>,
    pub batches: u64,
    /// Writes answered `store_unavailable` or `write_uncertain`.
    pub writes_unavailable: u64,
    pub reads: u64,
    pub reads_unavailable: u64,
}

impl Load {
    /// Starts four writers (batches of five events, all acknowledged ones in the oracle)
    /// and one reader of the top on `board`.
    pub fn start(boards: &Rollboard, board: &str) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let acknowledged = Arc::new(AtomicU64::new(0));
        let writers = (0..WRITERS)
            .map(|w| {
                let (boards, name, stop, acknowledged) = (
                    boards.clone(),
                    board.to_owned(),
                    stop.clone(),
                    acknowledged.clone(),
                );
                tokio::spawn(async move {
                    let mut oracle: BTreeMap<String, i64> = BTreeMap::new();
                    let mut maybe: BTreeMap<String, i64> = BTreeMap::new();
                    let mut unavailable = 0u64;
                    let mut i = 0i64;
                    while !stop.load(Ordering::Relaxed) {
                        i += 1;
                        let events: Vec<Event> = (0..5)
                            .map(|k| Event::new(format!("m{}", (w as i64 * 7 + i + k) % 12), 1 + k))
                            .collect();
                        match boards.windowed(&name).incr_batch(&events).await {
                            // A batch whose calls failed part-way (the writers' batches
                            // are merged and applied in calls of the board's cap):
                            // its accepted events count, the others may have.
                            Ok(outcome) => {
                                let unsure: Vec<usize> = outcome
                                    .rejected
                                    .iter()
                                    .map(|r| match &r.error {
                                        Error::StoreUnavailable(_) | Error::WriteUncertain(_) => {
                                            r.index
                                        }
                                        other => panic!("writer {w}: {other:?}"),
                                    })
                                    .collect();
                                assert_eq!(outcome.accepted + unsure.len(), 5);
                                for (k, e) in events.iter().enumerate() {
                                    let seen = if unsure.contains(&k) {
                                        &mut maybe
                                    } else {
                                        &mut oracle
                                    };
                                    *seen.entry(e.member.clone()).or_default() += e.delta;
                                }
                                if unsure.is_empty() {
                                    acknowledged.fetch_add(1, Ordering::Relaxed);
                                } else {
                                    unavailable += 1;
                                }
                            }
                            Err(
                                error @ (Error::StoreUnavailable(_) | Error::WriteUncertain(_)),
                            ) => {
                                for e in &events {
                                    *maybe.entry(e.member.clone()).or_default() += e.delta;
                                }
                                unavailable += 1;
                                if unavailable <= 3 {
                                    eprintln!("writer {w}: {}: {error}", error.code());
                                }
                                // A node that is down refuses at once: no busy loop.
                                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                            }
                            Err(other) => panic!("writer {w}: {other:?}"),
                        }
                    }
                    (oracle, maybe, unavailable)
                })
            })
            .collect();
        let reader = {
            let (boards, name, stop) = (boards.clone(), board.to_owned(), stop.clone());
            tokio::spawn(async move {
                let (mut reads, mut unavailable) = (0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    match boards.windowed(&name).top(None, 0, 20).await {
                        Ok(_) => reads += 1,
                        Err(Error::StoreUnavailable(why)) => {
                            unavailable += 1;
                            if unavailable <= 3 {
                                eprintln!("reader: store_unavailable: {why}");
                            }
                        }
                        Err(other) => panic!("reader: {other:?}"),
                    }
                }
                (reads, unavailable)
            })
        };
        Load {
            stop,
            acknowledged,
            writers,
            reader,
        }
    }

    /// Waits (polling) until `n` more batches than now are acknowledged; a guard
    /// fails the test if that takes a minute (the writers stopped getting through).
    pub async fn more(&self, n: u64) {
        let target = self.acknowledged.load(Ordering::Relaxed) + n;
        let started = std::time::Instant::now();
        while self.acknowledged.load(Ordering::Relaxed) < target {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(60),
                "the writers got no {n} batches through in a minute"
            );
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }

    /// Stops the load and gathers what it saw.
    pub async fn stop(self) -> Seen {
        self.stop.store(true, Ordering::Relaxed);
        let mut oracle: BTreeMap<String, i64> = BTreeMap::new();
        let mut maybe: BTreeMap<String, i64> = BTreeMap::new();
        let mut writes_unavailable = 0;
        for writer in self.writers {
            let (part, unsure, unavailable) = writer.await.unwrap();
            writes_unavailable += unavailable;
            for (m, v) in part {
                *oracle.entry(m).or_default() += v;
            }
            for (m, v) in unsure {
                *maybe.entry(m).or_default() += v;
            }
        }
        let (reads, reads_unavailable) = self.reader.await.unwrap();
        Seen {
            oracle,
            maybe,
            batches: self.acknowledged.load(Ordering::Relaxed),
            writes_unavailable,
            reads,
            reads_unavailable,
        }
    }
}

/// Every window of `board` against what the load saw: each member counts all its
/// acknowledged deltas and at most the uncertain ones besides (a write answered
/// `store_unavailable` or `write_uncertain` may have run); exact when none was uncertain.
pub async fn assert_windows_equal(boards: &Rollboard, board: &str, seen: &Seen) {
    for window in ["1h", "24h"] {
        let top = boards
            .windowed(board)
            .top(Some(window.parse().unwrap()), 0, 100)
            .await
            .unwrap();
        let got: BTreeMap<String, i64> = top
            .entries
            .iter()
            .map(|e| (e.member.clone(), e.score))
            .collect();
        if seen.maybe.is_empty() {
            assert_eq!(got, seen.oracle, "window {window}");
            continue;
        }
        for member in seen.oracle.keys().chain(seen.maybe.keys()) {
            let counted = got.get(member).copied().unwrap_or(0);
            let acked = seen.oracle.get(member).copied().unwrap_or(0);
            let maybe = seen.maybe.get(member).copied().unwrap_or(0);
            assert!(
                acked <= counted && counted <= acked + maybe,
                "window {window}, {member}: acknowledged {acked}, counted {counted}, \
                 uncertain {maybe}"
            );
        }
        assert!(
            got.keys()
                .all(|m| seen.oracle.contains_key(m) || seen.maybe.contains_key(m))
        );
    }
}
