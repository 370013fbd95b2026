//! Window 1 of a board whose first window is one slot long retires the slot that closed
//! by a swap (`retire_swap.lua`: totals rebuilt from the newer slots, the closed slot's
//! stage 1 renamed to stage 2, merged with the late writes already there). On `1h`/`24h`,
//! `1h` alone and dense boards, with writes to the open slot, a future slot within the
//! skew and late writes to the closed slot: totals equal the oracle and the memory store,
//! the raw invariant holds, and the report says the swap did it (`slots_swapped`). The
//! cases that must fall back (a newer slot over the bound, a compact closed slot, a
//! relayout lease) stay exact, and so does a swap with writers running.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rollboard::{
    BoardConfig, Event, Layout, MemoryStore, RetireOptions, RetireReport, Rollboard, Ties,
};

use crate::oracle::{Oracle, check_redis_invariants};
use crate::support::{START, TestRedis, clock, ranking, ts, unique, with_clock};

const HOUR: i64 = 3600;
/// Members written to the slot that closes.
const MEMBERS: usize = 200;

struct Fixture {
    _redis: TestRedis,
    clock: rollboard::ManualClock,
    boards: Rollboard,
    memory: Rollboard,
    raw: redis::aio::MultiplexedConnection,
    board: String,
    oracle: Oracle,
}

impl Fixture {
    async fn new(windows: &[&str], ties: Ties, layout: Layout) -> Fixture {
        let redis = TestRedis::spawn().await;
        redis.config_set("hash-max-listpack-entries", "16").await;
        let clock = clock();
        let boards = with_clock(redis.store().await, &clock);
        let memory = with_clock(Arc::new(MemoryStore::new()), &clock);
        let board = unique("swap");
        let config = BoardConfig::parse("1h", windows)
            .unwrap()
            .with_ties(ties)
            .with_layout(Some(layout));
        boards.create(&board, config.clone()).await.unwrap();
        memory.create(&board, config.clone()).await.unwrap();
        let raw = redis.raw().await;
        Fixture {
            _redis: redis,
            clock,
            boards,
            memory,
            raw,
            board,
            oracle: Oracle::new(config),
        }
    }

    /// Moves the clock to START + `seconds`.
    fn at(&self, seconds: i64) {
        self.clock.set(ts(START + seconds));
    }

    /// Writes `(member, delta)` at START + `at` to both stores (and the oracle when
    /// accepted); returns how many were rejected (too late).
    async fn write(&mut self, events: &[(String, i64)], at: i64) -> usize {
        let events: Vec<Event> = events
            .iter()
            .map(|(m, d)| Event::new(m.clone(), *d).at(ts(START + at)))
            .collect();
        let outcome = self
            .boards
            .windowed(&self.board)
            .incr_batch(&events)
            .await
            .unwrap();
        let mirror = self
            .memory
            .windowed(&self.board)
            .incr_batch(&events)
            .await
            .unwrap();
        assert_eq!(outcome.rejected.len(), mirror.rejected.len());
        if outcome.rejected.is_empty() {
            let slot = self.oracle.config.slot_start(ts(START + at));
            for e in &events {
                self.oracle.record(slot, &e.member, e.delta);
            }
        }
        outcome.rejected.len()
    }

    async fn retire(&mut self, options: RetireOptions) -> RetireReport {
        let report = self
            .boards
            .windowed(&self.board)
            .retire(Some(options))
            .await
            .unwrap();
        self.memory
            .windowed(&self.board)
            .retire(None)
            .await
            .unwrap();
        assert!(report.complete);
        report
    }

    /// Every window's whole ranking equals the oracle's and the memory store's, and the
    /// raw invariants hold.
    async fn assert_exact(&mut self) {
        let now = self.clock_now();
        for (j, window) in self.oracle.config.windows().iter().enumerate() {
            let page = self
                .boards
                .windowed(&self.board)
                .top(Some(*window), 0, 1000)
                .await
                .unwrap();
            let mirror = self
                .memory
                .windowed(&self.board)
                .top(Some(*window), 0, 1000)
                .await
                .unwrap();
            assert_eq!(
                ranking(&page),
                self.oracle.ranking(j, now),
                "window {window}"
            );
            assert_eq!(ranking(&page), ranking(&mirror), "window {window}");
            let ranks: Vec<u64> = page.entries.iter().map(|e| e.rank).collect();
            let mirror_ranks: Vec<u64> = mirror.entries.iter().map(|e| e.rank).collect();
            assert_eq!(ranks, mirror_ranks, "ranks of window {window}");
        }
        check_redis_invariants(&mut self.raw, &self.board, &self.oracle.config, Some(now)).await;
    }

    fn clock_now(&self) -> rollboard::Timestamp {
        rollboard::Clock::now(&self.clock)
    }

    async fn hlen(&mut self, key: &str) -> i64 {
        redis::cmd("HLEN")
            .arg(key)
            .query_async(&mut self.raw)
            .await
            .unwrap()
    }

    fn stage(&self, slot: i64, k: usize) -> String {
        match k {
            1 => format!("slot_{{{}}}_{slot}", self.board),
            k => format!("slot_{{{}}}_{slot}_{}", self.board, k - 1),
        }
    }

    /// Slot START holds m0..m199 (delta i + 1, m7 written twice) and "z" 5; at START +
    /// 7150 (the open slot START + 1h, the slot START closed 50 minutes ago and window
    /// 1 not yet retired) the open slot gets m0..m39 (-(i + 1): m0..m39 leave window 1),
    /// "z" -5, "y" 3 and new members n0..n29; the future slot START + 2h (55 s ahead,
    /// within the skew) gets "y" -3 (window 1's sum for "y": exactly 0) and m50 4; and,
    /// unless `late` is false, late writes to slot START: m0 -1 (cancels its stage 1
    /// value exactly), m1 10 and "late" 7. Returns how many late events were rejected.
    async fn fill(&mut self, late: bool) -> usize {
        self.at(300);
        let closed: Vec<(String, i64)> = (0..MEMBERS)
            .map(|i| (format!("m{i}"), i as i64 + 1))
            .chain([("m7".to_owned(), 100), ("z".to_owned(), 5)])
            .collect();
        for chunk in closed.chunks(100) {
            assert_eq!(self.write(chunk, 100).await, 0);
        }
        self.at(2 * HOUR - 50);
        let open: Vec<(String, i64)> = (0..40)
            .map(|i| (format!("m{i}"), -(i as i64 + 1)))
            .chain([("z".to_owned(), -5), ("y".to_owned(), 3)])
            .chain((0..30).map(|i| (format!("n{i}"), 2 * i as i64 + 1)))
            .collect();
        assert_eq!(self.write(&open, HOUR + 20).await, 0);
        let future = [("y".to_owned(), -3), ("m50".to_owned(), 4)];
        assert_eq!(self.write(&future, 2 * HOUR + 5).await, 0);
        if !late {
            return 0;
        }
        let late = [
            ("m0".to_owned(), -1),
            ("m1".to_owned(), 10),
            ("late".to_owned(), 7),
        ];
        self.write(&late, 200).await
    }
}

/// Retirement options that leave compaction out unless asked.
fn options(compact: bool) -> RetireOptions {
    RetireOptions {
        compact,
        ..RetireOptions::default()
    }
}

async fn two_windows_swap(ties: Ties, layout: Layout) {
    let mut f = Fixture::new(&["1h", "24h"], ties, layout).await;
    assert_eq!(f.fill(true).await, 0);
    // The late writes went to stage 2 of slot START (window 1 froze it), beside stage 1.
    let (stage1, stage2) = (f.stage(START, 1), f.stage(START, 2));
    assert_eq!(f.hlen(&stage1).await, MEMBERS as i64 + 1);
    assert_eq!(f.hlen(&stage2).await, 3);

    let report = f.retire(options(true)).await;
    assert_eq!(
        (report.slots_swapped, report.slots_retired, report.chunks),
        (1, 1, 1)
    );
    assert_eq!(report.fields_subtracted, MEMBERS as u64 + 1);
    // In window 1's totals before, not after: m40..m199 but m50 (159); m7 (100, then
    // -8) stays.
    assert_eq!(report.members_zeroed, 159);
    // Stage 1 moved whole to stage 2, merged with the late writes: m0's 1 - 1 is gone.
    assert_eq!(f.hlen(&stage1).await, 0);
    assert_eq!(f.hlen(&stage2).await, MEMBERS as i64 + 1 + 1 - 1);
    let m1: i64 = redis::cmd("HGET")
        .arg(&stage2)
        .arg("m1")
        .query_async(&mut f.raw)
        .await
        .unwrap();
    assert_eq!(m1, 12);
    f.assert_exact().await;
    let top = f
        .boards
        .windowed(&f.board)
        .top(Some("1h".parse().unwrap()), 0, 3)
        .await
        .unwrap();
    assert_eq!(
        ranking(&top),
        vec![
            ("n29".to_owned(), 59),
            ("n28".to_owned(), 57),
            ("n27".to_owned(), 55)
        ]
    );

    // A second pass finds nothing due.
    let again = f.retire(options(true)).await;
    assert_eq!(
        (
            again.slots_retired,
            again.slots_swapped,
            again.fields_subtracted
        ),
        (0, 0, 0)
    );

    // The next boundary: the open slot closes and swaps against the future slot.
    f.at(2 * HOUR + 10);
    assert_eq!(f.write(&[("y".to_owned(), 1)], 2 * HOUR + 10).await, 0);
    let next = f.retire(options(true)).await;
    assert_eq!((next.slots_swapped, next.slots_retired), (1, 1));
    f.assert_exact().await;
}

#[tokio::test]
async fn two_window_board_swaps_window_1() {
    two_windows_swap(Ties::Competition, Layout::Plain).await;
}

#[tokio::test]
async fn dense_board_swaps_window_1_with_its_tallies() {
    two_windows_swap(Ties::Dense, Layout::Plain).await;
}

#[tokio::test]
async fn compact_board_swaps_then_compacts_the_closed_slot() {
    let mut f = Fixture::new(&["1h", "24h"], Ties::Competition, Layout::Compact).await;
    assert_eq!(f.fill(true).await, 0);
    let report = f.retire(options(true)).await;
    assert_eq!((report.slots_swapped, report.slots_retired), (1, 1));
    // The closed slot, now all in stage 2, is compacted after the swap.
    assert_eq!(report.slots_compacted, 1);
    assert_eq!(report.fields_compacted, MEMBERS as u64 + 1);
    let stage2 = f.stage(START, 2);
    assert_eq!(f.hlen(&stage2).await, 0, "stage 2 lives in buckets now");
    f.assert_exact().await;
}

#[tokio::test]
async fn one_window_board_swaps_and_drops_the_slot() {
    let mut f = Fixture::new(&["1h"], Ties::Competition, Layout::Plain).await;
    // Late writes are too late on a board of one window.
    assert_eq!(f.fill(true).await, 3);
    let report = f.retire(options(true)).await;
    assert_eq!((report.slots_swapped, report.slots_retired), (1, 1));
    assert_eq!(report.fields_subtracted, MEMBERS as u64 + 1);
    let stage1 = f.stage(START, 1);
    assert_eq!(f.hlen(&stage1).await, 0);
    let index: Vec<i64> = redis::cmd("ZRANGE")
        .arg(format!("slots_{{{}}}", f.board))
        .arg(0)
        .arg(-1)
        .query_async(&mut f.raw)
        .await
        .unwrap();
    assert_eq!(index, vec![START + HOUR, START + 2 * HOUR]);
    f.assert_exact().await;
}

/// The swap falls back, changing nothing, and the chunks retire the slot exactly.
async fn falls_back(f: &mut Fixture, options: RetireOptions) {
    let report = f.retire(options).await;
    assert_eq!((report.slots_swapped, report.slots_retired), (0, 1));
    assert_eq!(report.fields_subtracted, MEMBERS as u64 + 1);
    assert!(report.chunks >= 1);
    f.assert_exact().await;
}

#[tokio::test]
async fn newer_slots_over_the_bound_fall_back_to_chunks() {
    let mut f = Fixture::new(&["1h", "24h"], Ties::Competition, Layout::Plain).await;
    f.fill(true).await;
    // The open slot holds 72 fields, the future one 2, the closed slot's stage 2 3:
    // 77 > 76.
    let bounded = RetireOptions {
        swap_fields: 76,
        ..options(false)
    };
    falls_back(&mut f, bounded).await;
}

#[tokio::test]
async fn newer_slots_at_the_bound_swap() {
    let mut f = Fixture::new(&["1h", "24h"], Ties::Competition, Layout::Plain).await;
    f.fill(true).await;
    let bounded = RetireOptions {
        swap_fields: 77,
        ..options(false)
    };
    let report = f.retire(bounded).await;
    assert_eq!(report.slots_swapped, 1);
    f.assert_exact().await;
}

#[tokio::test]
async fn a_compact_closed_slot_falls_back_to_chunks() {
    let mut f = Fixture::new(&["1h", "24h"], Ties::Competition, Layout::Plain).await;
    f.fill(true).await;
    // An operator's relayout converts every live slot, the closed one too.
    let now = rollboard::RelayoutOptions {
        now: true,
        ..rollboard::RelayoutOptions::default()
    };
    let converted = f
        .boards
        .windowed(&f.board)
        .relayout(Layout::Compact, now)
        .await
        .unwrap();
    assert!(converted.complete);
    let geometry: Option<String> = redis::cmd("HGET")
        .arg(format!("slotgeo_{{{}}}", f.board))
        .arg(START)
        .query_async(&mut f.raw)
        .await
        .unwrap();
    assert!(geometry.is_some());
    falls_back(&mut f, options(false)).await;
}

#[tokio::test]
async fn a_relayout_lease_falls_back_to_chunks() {
    let mut f = Fixture::new(&["1h", "24h"], Ties::Competition, Layout::Plain).await;
    f.fill(true).await;
    // A relayout run holds its lease (by Redis's clock, for a minute).
    let (secs, _): (i64, i64) = redis::cmd("TIME").query_async(&mut f.raw).await.unwrap();
    let _: () = redis::cmd("HSET")
        .arg(format!("board_{{{}}}", f.board))
        .arg("rl_until")
        .arg((secs + 60) * 1000)
        .query_async(&mut f.raw)
        .await
        .unwrap();
    falls_back(&mut f, options(false)).await;
}

#[tokio::test]
async fn swap_off_retires_in_chunks() {
    let mut f = Fixture::new(&["1h", "24h"], Ties::Dense, Layout::Plain).await;
    f.fill(true).await;
    let off = RetireOptions {
        swap_fields: 0,
        ..options(false)
    };
    falls_back(&mut f, off).await;
}

/// Writers to the open slot and late writers to the closed slot run while the retirer
/// swaps; every accepted event is in the oracle, and the result is exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swap_is_exact_while_writes_go_on() {
    for round in 0..4 {
        let mut f = Fixture::new(&["1h", "24h"], Ties::Competition, Layout::Plain).await;
        f.fill(false).await;
        let recorded: Arc<Mutex<Vec<(i64, String, i64)>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let mut writers = Vec::new();
        for w in 0..2 {
            let (boards, board, recorded, stop) = (
                f.boards.clone(),
                f.board.clone(),
                recorded.clone(),
                stop.clone(),
            );
            writers.push(tokio::spawn(async move {
                let mut i = 0;
                // At least 20 batches each, whatever the retirer does.
                while i < 20 || !stop.load(Ordering::SeqCst) {
                    // Writer 0 the open slot, writer 1 late writes to the closed slot.
                    let at = if w == 0 {
                        START + HOUR + 30
                    } else {
                        START + 300
                    };
                    let events: Vec<Event> = (0..5)
                        .map(|k| {
                            Event::new(format!("w{w}-{}", (i * 5 + k) % 37), [-2, -1, 1, 2, 3][k])
                        })
                        .chain([Event::new(format!("m{}", i % 50), 1)])
                        .map(|e| e.at(ts(at)))
                        .collect();
                    let outcome = boards.windowed(&board).incr_batch(&events).await.unwrap();
                    assert!(outcome.rejected.is_empty());
                    recorded
                        .lock()
                        .unwrap()
                        .extend(events.iter().map(|e| (at, e.member.clone(), e.delta)));
                    i += 1;
                    tokio::task::yield_now().await;
                }
            }));
        }
        tokio::task::yield_now().await;
        let report = f
            .boards
            .windowed(&f.board)
            .retire(Some(options(false)))
            .await
            .unwrap();
        assert_eq!(report.slots_swapped, 1, "round {round}");
        stop.store(true, Ordering::SeqCst);
        for w in writers {
            w.await.unwrap();
        }
        for (at, member, delta) in recorded.lock().unwrap().iter() {
            let slot = f.oracle.config.slot_start(ts(*at));
            f.oracle.record(slot, member, *delta);
        }
        // The memory store is not written by the writers: compare with the oracle only.
        let now = f.clock_now();
        for (j, window) in f.oracle.config.windows().iter().enumerate() {
            let page = f
                .boards
                .windowed(&f.board)
                .top(Some(*window), 0, 1000)
                .await
                .unwrap();
            assert_eq!(ranking(&page), f.oracle.ranking(j, now), "window {window}");
        }
        check_redis_invariants(&mut f.raw, &f.board, &f.oracle.config, Some(now)).await;
    }
}
