//! Active relayout (`relayout --now`, `RelayoutOptions::now`): live slots are converted
//! to the board's new layout, both directions, on a two-window board with several live
//! slots, late events in second stages and a slot split into many buckets; exact while
//! writes and retirement run beside it; exact and readable when cut half-way, and a
//! second run finishes it. The memory store only records the layout.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rand::{Rng, SeedableRng};
use rollboard::{
    BoardConfig, Clock, Event, Layout, RedisOptions, RelayoutOptions, RetireOptions, Rollboard,
    ServerStore, Span,
};

use crate::oracle::{Geometry, Oracle, check_redis_invariants};
use crate::support::{Harness, START, TestRedis, clock, ranking, ts, with_clock};

/// The listpack limit of the test server: a fill of 8 per bucket, so a 600-member slot
/// splits into dozens of buckets.
const LISTPACK: &str = "16";
const WINDOWS: [&str; 2] = ["1h", "2h"];
/// Members of the big slot.
const BIG: usize = 600;

const NOW: RelayoutOptions = RelayoutOptions {
    now: true,
    chunk_budget: std::time::Duration::from_micros(1500),
    max_calls: None,
};

const SMALL_CHUNKS: RetireOptions = RetireOptions {
    chunk_size: 100,
    chunk_budget: std::time::Duration::from_micros(1500),
    max_chunks: None,
    compact: true,
    swap_fields: 600,
};

fn other(layout: Layout) -> Layout {
    match layout {
        Layout::Plain => Layout::Compact,
        Layout::Compact => Layout::Plain,
    }
}

/// A board whose slots start in layout `from` (the store's default), with the oracle.
struct Fixture {
    _redis: TestRedis,
    store: Arc<rollboard::RedisStore>,
    boards: Rollboard,
    clock: rollboard::ManualClock,
    raw: redis::aio::MultiplexedConnection,
    board: String,
    from: Layout,
    oracle: Oracle,
    /// member -> slot -> value
    points: BTreeMap<String, BTreeMap<i64, i64>>,
}

impl Fixture {
    async fn new(from: Layout) -> Fixture {
        // A server of its own: the listpack limit is server-wide.
        let redis = TestRedis::spawn().await;
        redis
            .config_set("hash-max-listpack-entries", LISTPACK)
            .await;
        let clock = clock();
        let options = RedisOptions {
            default_layout: from,
            ..RedisOptions::default()
        };
        let store = redis.store_with(options).await;
        let boards = with_clock(store.clone(), &clock);
        let raw = redis.raw().await;
        let board = crate::test_redis::unique("rl");
        let config = BoardConfig::parse("1h", &WINDOWS).unwrap();
        boards.create(&board, config.clone()).await.unwrap();
        Fixture {
            _redis: redis,
            store,
            boards,
            clock,
            raw,
            board,
            from,
            oracle: Oracle::new(config),
            points: BTreeMap::new(),
        }
    }

    fn at(&self, seconds: i64) {
        self.clock.set(ts(START + seconds));
    }

    fn note(&mut self, slot: i64, member: &str, delta: i64) {
        self.oracle.record(slot, member, delta);
        *self
            .points
            .entry(member.to_owned())
            .or_default()
            .entry(slot)
            .or_insert(0) += delta;
    }

    /// Writes `events` (member, delta, seconds after START), recording them.
    async fn write(&mut self, events: &[(String, i64, i64)]) {
        for batch in events.chunks(500) {
            let list: Vec<Event> = batch
                .iter()
                .map(|(m, d, at)| Event::new(m.clone(), *d).at(ts(START + at)))
                .collect();
            let outcome = self
                .boards
                .windowed(&self.board)
                .incr_batch(&list)
                .await
                .unwrap();
            assert!(outcome.rejected.is_empty(), "{:?}", outcome.rejected);
        }
        for (m, d, at) in events {
            let slot = self.oracle.config.slot_start(ts(START + at));
            self.note(slot, m, *d);
        }
    }

    /// Three live slots: START (100 members, 50 more late, in its second stage),
    /// START + 1h (600 members, split; late events in its second stage) and START + 2h;
    /// the clock at START + 2h + 10 min.
    async fn populate(&mut self) {
        self.at(60);
        let first: Vec<_> = (0..100).map(|i| (format!("s{i}"), 1 + i % 5, 60)).collect();
        self.write(&first).await;
        self.at(3600 + 60);
        let second: Vec<_> = (0..BIG)
            .map(|i| (format!("m{i}"), 3 + (i % 7) as i64, 3600 + 60))
            .chain((0..50).map(|i| (format!("s{}", i * 2), 5, 600)))
            .collect();
        self.write(&second).await;
        self.at(2 * 3600 + 600);
        // Late for START + 1h (its second stage), current for START + 2h.
        let third: Vec<_> = (0..150)
            .map(|i| (format!("m{}", i * 4), 2, 3600 + 900))
            .chain((0..120).map(|i| (format!("m{}", i * 5), -1, 3600 + 1000)))
            .chain((0..80).map(|i| (format!("n{i}"), 7, 2 * 3600 + 30)))
            .collect();
        self.write(&third).await;
        self.settle().await;
    }

    /// On a compact board, converts the slots written while open (plain: the retirer
    /// compacts a slot once it closed, `open_slot.rs`) to compact, so that every live
    /// slot starts in layout `from`.
    async fn settle(&mut self) {
        if self.from == Layout::Compact {
            let report = self
                .boards
                .windowed(&self.board)
                .relayout(Layout::Compact, NOW)
                .await
                .unwrap();
            assert!(report.complete);
        }
    }

    /// Live slots holding both a plain stage hash and buckets (partly converted).
    async fn mixed_slots(&mut self) -> Vec<i64> {
        let (plain, buckets) = self.slot_keys().await;
        let prefix = format!("slot_{{{}}}_", self.board);
        let slot_of = |key: &str| -> i64 {
            let rest = &key[prefix.len()..];
            let rest = rest.split(':').next().unwrap();
            rest.split('_').next().unwrap().parse().unwrap()
        };
        let with_buckets: BTreeSet<i64> = buckets.iter().map(|k| slot_of(k)).collect();
        let mut mixed: Vec<i64> = plain
            .iter()
            .map(|k| slot_of(k))
            .filter(|s| with_buckets.contains(s))
            .collect();
        mixed.dedup();
        mixed
    }

    /// After retiring what is due, every window's whole ranking, every member's history
    /// and the raw invariants equal the oracle.
    async fn assert_exact(&mut self) {
        self.retire().await;
        let now = self.boards.now();
        for (j, window) in WINDOWS.iter().enumerate() {
            let mut got = Vec::new();
            loop {
                let page = self
                    .boards
                    .windowed(&self.board)
                    .top(Some(Span::parse(window).unwrap()), got.len() as u64, 1000)
                    .await
                    .unwrap();
                let n = page.entries.len();
                got.extend(ranking(&page));
                if n < 1000 {
                    break;
                }
            }
            assert_eq!(got, self.oracle.ranking(j, now), "window {window}");
        }
        let live: BTreeSet<i64> = self.live_slots().await.into_iter().collect();
        for (member, slots) in &self.points {
            let history = self
                .boards
                .windowed(&self.board)
                .history(member)
                .await
                .unwrap();
            let got: BTreeMap<i64, i64> =
                history.points.iter().map(|p| (p.slot, p.value)).collect();
            let mut expected = slots.clone();
            expected.retain(|s, v| *v != 0 && live.contains(s));
            assert_eq!(got, expected, "history of {member}");
        }
        check_redis_invariants(&mut self.raw, &self.board, &self.oracle.config, Some(now)).await;
    }

    async fn live_slots(&mut self) -> Vec<i64> {
        redis::cmd("ZRANGE")
            .arg(format!("slots_{{{}}}", self.board))
            .arg(0)
            .arg(-1)
            .query_async(&mut self.raw)
            .await
            .unwrap()
    }

    async fn geometries(&mut self) -> BTreeMap<i64, Geometry> {
        let raw: BTreeMap<i64, String> = redis::cmd("HGETALL")
            .arg(format!("slotgeo_{{{}}}", self.board))
            .query_async(&mut self.raw)
            .await
            .unwrap();
        raw.into_iter()
            .map(|(s, g)| (s, Geometry::parse(&g)))
            .collect()
    }

    /// Slot data keys: (plain stage hashes, buckets).
    async fn slot_keys(&mut self) -> (Vec<String>, Vec<String>) {
        let mut keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("slot_{{{}}}_*", self.board))
            .query_async(&mut self.raw)
            .await
            .unwrap();
        keys.sort();
        keys.into_iter().partition(|k| !k.contains(':'))
    }

    /// No live slot is left in a layout other than `layout` (nor partly converted).
    async fn assert_all(&mut self, layout: Layout) {
        let live = self.live_slots().await;
        let geometries = self.geometries().await;
        let (plain, buckets) = self.slot_keys().await;
        match layout {
            Layout::Compact => {
                assert_eq!(geometries.keys().copied().collect::<Vec<_>>(), live);
                assert!(geometries.values().all(|g| !g.to_plain), "{geometries:?}");
                assert_eq!(plain, Vec::<String>::new(), "plain stage hashes left");
                assert!(!buckets.is_empty());
            }
            Layout::Plain => {
                assert_eq!(geometries, BTreeMap::new());
                assert_eq!(buckets, Vec::<String>::new(), "buckets left");
                assert!(!plain.is_empty());
            }
        }
    }

    /// Retires everything due at the clock's now, in small chunks.
    async fn retire(&self) {
        let report = self
            .boards
            .windowed(&self.board)
            .retire(Some(SMALL_CHUNKS))
            .await
            .unwrap();
        assert!(report.complete);
    }
}

/// Both directions: after an active relayout no live slot keeps the old layout, every
/// ranking, history and the raw invariants equal the oracle, and retirement through both
/// windows stays exact and leaves no slot data.
async fn converts_every_live_slot(from: Layout) {
    let mut f = Fixture::new(from).await;
    f.populate().await;
    f.assert_all(from).await;
    if from == Layout::Compact {
        let biggest = f.geometries().await[&(START + 3600)].buckets();
        assert!(biggest > 32, "the big slot is split: {biggest} buckets");
    }

    let report = f
        .boards
        .windowed(&f.board)
        .relayout(other(from), NOW)
        .await
        .unwrap();
    assert_eq!(report.layout, other(from));
    assert_eq!(report.live_slots, 3);
    assert_eq!(report.converted_slots, 3);
    assert_eq!(report.old_layout_slots, 0);
    assert!(report.complete);
    // Every live (slot, stage, member) value moved once: 600 + 350 distinct in START's
    // stage 1 ... counted from the raw data before would be circular, so bound it by
    // the members written.
    let values: u64 = f.points.values().map(|s| s.len() as u64).sum();
    assert!(
        report.moved_values >= values,
        "{} moved, {values} (slot, member) values",
        report.moved_values
    );
    f.assert_all(other(from)).await;
    f.assert_exact().await;
    if other(from) == Layout::Compact {
        let g = f.geometries().await[&(START + 3600)];
        assert!(
            g.buckets() >= (BIG / 8) as u64,
            "sized from the slot: {g:?}"
        );
    }
    // A second run finds nothing to convert.
    let again = f
        .boards
        .windowed(&f.board)
        .relayout(other(from), NOW)
        .await
        .unwrap();
    assert_eq!((again.converted_slots, again.moved_values), (0, 0));

    // Writes after the conversion go to the new layout; retirement through both windows.
    f.write(&[
        ("m1".into(), 4, 2 * 3600 + 500),
        ("z".into(), 9, 3600 + 700),
    ])
    .await;
    f.assert_all(other(from)).await;
    f.at(3 * 3600 + 60);
    f.retire().await;
    f.assert_exact().await;
    f.at(5 * 3600 + 60);
    f.retire().await;
    f.assert_exact().await;
    let (plain, buckets) = f.slot_keys().await;
    assert_eq!((plain, buckets), (vec![], vec![]), "every slot retired");
    assert_eq!(f.geometries().await, BTreeMap::new());
}

#[tokio::test]
async fn relayout_now_converts_plain_slots_to_compact() {
    converts_every_live_slot(Layout::Plain).await;
}

#[tokio::test]
async fn relayout_now_converts_compact_slots_to_plain() {
    converts_every_live_slot(Layout::Compact).await;
}

/// A conversion cut after a few calls leaves mixed slots (both forms in a stage): reads,
/// history, a recompute and retirement of window 1 stay exact on them, and a second run
/// finishes the conversion; then both windows retire exactly.
async fn a_cut_conversion_stays_exact_and_a_second_run_finishes_it(from: Layout) {
    let mut f = Fixture::new(from).await;
    f.populate().await;
    let cut = RelayoutOptions {
        max_calls: Some(6),
        chunk_budget: std::time::Duration::from_micros(100),
        ..NOW
    };
    let report = f
        .boards
        .windowed(&f.board)
        .relayout(other(from), cut)
        .await
        .unwrap();
    assert!(!report.complete);
    assert!(report.moved_values > 0);
    assert!(report.old_layout_slots >= 1, "{report:?}");
    assert_eq!(
        report.converted_slots + report.old_layout_slots,
        3,
        "{report:?}"
    );
    // At most one slot is left mixed (a stage with both a plain hash and buckets): the
    // one the run stopped in, when it stopped inside a slot (the budget is timed).
    let mixed = f.mixed_slots().await;
    assert!(mixed.len() <= 1, "{mixed:?}");
    for slot in &mixed {
        assert_eq!(
            f.geometries().await[slot].to_plain,
            other(from) == Layout::Plain
        );
    }
    f.assert_exact().await;

    // Writes: late into START + 1h, current into START + 2h.
    f.write(&[
        ("m2".into(), 11, 3600 + 1200),
        ("m5".into(), -2, 3600 + 900),
        ("m9".into(), 6, 2 * 3600 + 550),
    ])
    .await;
    f.assert_exact().await;
    // Removal of a member of the mixed slot (5 before the cut, 11 since: in either form
    // or both) deletes its one slot value (stage 2 of START + 1h) from every form.
    let removed = f
        .boards
        .windowed(&f.board)
        .remove_member("m2")
        .await
        .unwrap();
    assert_eq!(removed.slot_values, 1);
    f.oracle.remove("m2");
    f.points.remove("m2");
    assert_eq!(
        f.boards
            .windowed(&f.board)
            .history("m2")
            .await
            .unwrap()
            .points,
        Vec::new()
    );
    f.assert_exact().await;
    // Drift, then a recompute of window 2 reads both forms of the mixed slot.
    let _: () = redis::cmd("ZADD")
        .arg(format!("stats_{{{}}}_7200", f.board))
        .arg(1_000_000)
        .arg("m3")
        .query_async(&mut f.raw)
        .await
        .unwrap();
    let recomputed = f
        .boards
        .windowed(&f.board)
        .recompute(Some(Span::parse("2h").unwrap()))
        .await
        .unwrap();
    assert!(recomputed.fields_scanned > 0);
    f.assert_exact().await;

    // Window 1 retires START + 1h, window 2 START: the mixed slot retires both forms.
    f.at(3 * 3600 + 60);
    f.retire().await;
    f.assert_exact().await;

    let second = f
        .boards
        .windowed(&f.board)
        .relayout(other(from), NOW)
        .await
        .unwrap();
    assert!(second.complete);
    assert_eq!(second.old_layout_slots, 0);
    f.assert_all(other(from)).await;
    f.assert_exact().await;
    f.at(5 * 3600 + 60);
    f.retire().await;
    f.assert_exact().await;
    assert_eq!(f.live_slots().await, Vec::<i64>::new());
}

#[tokio::test]
async fn a_cut_conversion_to_compact_stays_exact_and_a_second_run_finishes_it() {
    a_cut_conversion_stays_exact_and_a_second_run_finishes_it(Layout::Plain).await;
}

#[tokio::test]
async fn a_cut_conversion_to_plain_stays_exact_and_a_second_run_finishes_it() {
    a_cut_conversion_stays_exact_and_a_second_run_finishes_it(Layout::Compact).await;
}

/// Writers (current and late slots) and a retirer run while the board is converted to
/// compact and back to plain, a few calls at a time, the clock moving on meanwhile; at
/// the end every ranking, history and the raw invariants equal the oracle.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn relayout_now_under_writes_and_retirement_stays_exact() {
    let mut f = Fixture::new(Layout::Plain).await;
    f.populate().await;
    let events: Arc<Mutex<Vec<(i64, String, i64)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for w in 0..2u64 {
        let (boards, clock, b, events, stop, config) = (
            f.boards.clone(),
            f.clock.clone(),
            f.board.clone(),
            events.clone(),
            stop.clone(),
            f.oracle.config.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(w);
            while !stop.load(Ordering::SeqCst) {
                let now = clock.now().unix_seconds();
                // The current slot or the one before (late: window 1 froze it).
                let from = now - now.rem_euclid(3600) - 3600;
                let batch: Vec<Event> = (0..rng.random_range(1..40))
                    .map(|_| {
                        let at = ts(rng.random_range(from..=now));
                        let delta = if rng.random_bool(0.8) { 2 } else { -1 };
                        Event::new(format!("m{}", rng.random_range(0..BIG)), delta).at(at)
                    })
                    .collect();
                let outcome = boards.windowed(&b).incr_batch(&batch).await.unwrap();
                // The clock may cross a boundary between reading it and writing: the
                // slot before then is too late for the largest window (and only that).
                let rejected: BTreeSet<usize> = outcome
                    .rejected
                    .iter()
                    .map(|r| {
                        assert!(matches!(r.error, rollboard::Error::TooLate { .. }), "{r:?}");
                        r.index
                    })
                    .collect();
                let mut all = events.lock().unwrap();
                for (x, e) in batch.iter().enumerate() {
                    if !rejected.contains(&x) {
                        all.push((config.slot_start(e.at.unwrap()), e.member.clone(), e.delta));
                    }
                }
            }
        }));
    }
    {
        let (boards, b, stop) = (f.boards.clone(), f.board.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                boards
                    .windowed(&b)
                    .retire(Some(SMALL_CHUNKS))
                    .await
                    .unwrap();
                tokio::task::yield_now().await;
            }
        }));
    }
    let step = RelayoutOptions {
        max_calls: Some(10),
        chunk_budget: std::time::Duration::from_micros(300),
        ..NOW
    };
    let mut runs = 0;
    for (target, hour) in [(Layout::Compact, 3), (Layout::Plain, 4)] {
        loop {
            runs += 1;
            assert!(runs < 500, "the conversion to {target:?} makes no progress");
            let report = f
                .boards
                .windowed(&f.board)
                .relayout(target, step)
                .await
                .unwrap();
            if runs == 3 {
                // The clock moves on mid-conversion: retirement runs on mixed slots.
                f.at(hour * 3600 + 60);
            }
            if report.complete {
                break;
            }
            tokio::task::yield_now().await;
        }
        runs = 0;
        f.at(hour * 3600 + 600);
    }
    stop.store(true, Ordering::SeqCst);
    for t in tasks {
        t.await.unwrap();
    }
    for (slot, member, delta) in events.lock().unwrap().clone() {
        f.note(slot, &member, delta);
    }
    f.retire().await;
    // Slots created after the second relayout are plain, and so is every older one.
    f.assert_all(Layout::Plain).await;
    f.assert_exact().await;
}

/// The memory store has no slot layout: `now` only records the layout.
#[tokio::test]
async fn relayout_now_on_the_memory_store_only_records_the_layout() {
    let h = Harness::memory().await;
    let b = h.board("1h", &WINDOWS).await;
    h.boards.windowed(&b).incr("a", 2, None).await.unwrap();
    let report = h
        .boards
        .windowed(&b)
        .relayout(Layout::Plain, NOW)
        .await
        .unwrap();
    assert_eq!(
        (
            report.layout,
            report.live_slots,
            report.old_layout_slots,
            report.converted_slots,
            report.moved_values,
            report.complete
        ),
        (Layout::Plain, 1, 0, 0, 0, true)
    );
    assert_eq!(
        h.boards.board(&b).await.unwrap().config.layout(),
        Some(Layout::Plain)
    );
    let top = h.boards.windowed(&b).top(None, 0, 10).await.unwrap();
    assert_eq!(ranking(&top), [("a".to_owned(), 2)]);
}

/// A small board cut after one conversion call (a mixed slot: the new form in one stage,
/// the old one left in another or beside it) is retired through both windows by
/// `retire_small.lua`, one call per boundary, exactly.
async fn a_small_mixed_board_retires_in_one_call(from: Layout) {
    let mut f = Fixture::new(from).await;
    f.at(60);
    let first: Vec<_> = (0..90).map(|i| (format!("s{i}"), 1 + i % 4, 60)).collect();
    f.write(&first).await;
    f.at(3600 + 60);
    let late: Vec<_> = (0..30).map(|i| (format!("s{}", i * 3), 2, 600)).collect();
    f.write(&late).await;
    f.settle().await;
    let one = RelayoutOptions {
        max_calls: Some(1),
        chunk_budget: std::time::Duration::from_micros(1),
        ..NOW
    };
    let report = f
        .boards
        .windowed(&f.board)
        .relayout(other(from), one)
        .await
        .unwrap();
    assert!(!report.complete);
    assert_eq!(f.mixed_slots().await, [START]);
    for hour in [1, 2] {
        f.at(hour * 3600 + 60);
        let board = Arc::new(f.boards.board(&f.board).await.unwrap());
        let fast = f
            .store
            .retire_small(&[board], f.boards.now())
            .await
            .unwrap();
        let report = fast[0].expect("retired by retire_small.lua");
        assert_eq!(report.slots_retired, 1, "hour {hour}");
        f.assert_exact().await;
    }
    assert_eq!(f.live_slots().await, Vec::<i64>::new());
    assert_eq!(f.slot_keys().await, (vec![], vec![]));
    assert_eq!(f.geometries().await, BTreeMap::new());
}

#[tokio::test]
async fn a_small_board_mixed_towards_compact_retires_in_one_call() {
    a_small_mixed_board_retires_in_one_call(Layout::Plain).await;
}

#[tokio::test]
async fn a_small_board_mixed_towards_plain_retires_in_one_call() {
    a_small_mixed_board_retires_in_one_call(Layout::Compact).await;
}

/// A recompute and an active relayout exclude each other: each refuses while the
/// other's lease holds (a conversion moving values between forms would make a scan see
/// one twice), with a clear error, and runs once it is gone.
#[tokio::test]
async fn a_recompute_and_an_active_relayout_exclude_each_other() {
    let mut f = Fixture::new(Layout::Plain).await;
    f.populate().await;
    let record = format!("board_{{{}}}", f.board);
    let far = (f.boards.now().unix_seconds() + 86_400 * 365 * 100) * 1000;
    let _: () = redis::cmd("HSET")
        .arg(&record)
        .arg("rb_until")
        .arg(far)
        .query_async(&mut f.raw)
        .await
        .unwrap();
    let err = f
        .boards
        .windowed(&f.board)
        .relayout(Layout::Compact, NOW)
        .await
        .unwrap_err();
    assert!(matches!(err, rollboard::Error::BoardBusy(_)), "{err:?}");
    assert_eq!(f.geometries().await, BTreeMap::new(), "nothing converted");
    let _: () = redis::cmd("HDEL")
        .arg(&record)
        .arg("rb_until")
        .query_async(&mut f.raw)
        .await
        .unwrap();
    // Another run's relayout lease.
    let _: () = redis::cmd("HSET")
        .arg(&record)
        .arg("rl_until")
        .arg(far)
        .arg("rl_token")
        .arg("another")
        .query_async(&mut f.raw)
        .await
        .unwrap();
    let two_hours = Some(Span::parse("2h").unwrap());
    let err = f
        .boards
        .windowed(&f.board)
        .recompute(two_hours)
        .await
        .unwrap_err();
    assert!(
        matches!(err, rollboard::Error::RelayoutRunning(_)),
        "{err:?}"
    );
    assert_eq!(err.code(), "board_busy");
    let err = f
        .boards
        .windowed(&f.board)
        .relayout(Layout::Compact, NOW)
        .await
        .unwrap_err();
    assert!(
        matches!(err, rollboard::Error::RelayoutRunning(_)),
        "{err:?}"
    );
    let _: () = redis::cmd("HDEL")
        .arg(&record)
        .arg("rl_until")
        .arg("rl_token")
        .query_async(&mut f.raw)
        .await
        .unwrap();
    let report = f
        .boards
        .windowed(&f.board)
        .relayout(Layout::Compact, NOW)
        .await
        .unwrap();
    assert!(report.complete);
    // The run ended its lease: a recompute starts at once.
    let lease: Option<String> = redis::cmd("HGET")
        .arg(&record)
        .arg("rl_until")
        .query_async(&mut f.raw)
        .await
        .unwrap();
    assert_eq!(lease, None);
    f.boards
        .windowed(&f.board)
        .recompute(two_hours)
        .await
        .unwrap();
    f.assert_all(Layout::Compact).await;
    f.assert_exact().await;
}

/// A recompute while writers write into a slot left mixed by a cut conversion (to
/// plain: its writes go to the plain hashes beside buckets not yet converted): members
/// written during the scan are folded from both forms, and every total is exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_recompute_under_writes_on_a_mixed_slot_stays_exact() {
    let mut f = Fixture::new(Layout::Compact).await;
    f.populate().await;
    // Cut runs until START is plain and START + 1h is mixed. The budget is timed, so how
    // far a call gets varies, and each run starts the slots over (its calls walk again
    // the buckets emptied before): run r makes 2 + r calls, so a run on a slow machine
    // still gets past what the runs before it converted.
    let mut mixed = Vec::new();
    for run in 0.. {
        assert!(run < 100, "START + 1h never got mixed (last: {mixed:?})");
        let cut = RelayoutOptions {
            max_calls: Some(2 + run),
            chunk_budget: std::time::Duration::from_micros(100),
            ..NOW
        };
        let report = f
            .boards
            .windowed(&f.board)
            .relayout(Layout::Plain, cut)
            .await
            .unwrap();
        assert!(
            !report.complete,
            "run {run} converted every slot: {report:?}"
        );
        mixed = f.mixed_slots().await;
        if mixed == [START + 3600] {
            break;
        }
    }
    let events: Arc<Mutex<Vec<(i64, String, i64)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..2u64 {
        let (boards, b, events, stop, config) = (
            f.boards.clone(),
            f.board.clone(),
            events.clone(),
            stop.clone(),
            f.oracle.config.clone(),
        );
        writers.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(10 + w);
            while !stop.load(Ordering::SeqCst) {
                let batch: Vec<Event> = (0..rng.random_range(1..20))
                    .map(|_| {
                        let at = ts(START + rng.random_range(3600..2 * 3600 + 600));
                        Event::new(format!("m{}", rng.random_range(0..BIG)), 3).at(at)
                    })
                    .collect();
                boards.windowed(&b).incr_batch(&batch).await.unwrap();
                {
                    let mut all = events.lock().unwrap();
                    for e in &batch {
                        all.push((config.slot_start(e.at.unwrap()), e.member.clone(), e.delta));
                    }
                }
                tokio::task::yield_now().await;
            }
        }));
    }
    let two_hours = Some(Span::parse("2h").unwrap());
    for _ in 0..3 {
        let report = f
            .boards
            .windowed(&f.board)
            .recompute(two_hours)
            .await
            .unwrap();
        assert!(report.fields_scanned > 0);
    }
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.await.unwrap();
    }
    let written = events.lock().unwrap().clone();
    assert!(!written.is_empty());
    for (slot, member, delta) in written {
        f.note(slot, &member, delta);
    }
    f.assert_exact().await;
}
