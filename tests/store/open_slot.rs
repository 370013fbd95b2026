//! A compact board's open slot is written plain (a hashtable takes writes cheaper than
//! buckets), and the retirer compacts it once it closed, after retiring the board, on
//! both retirement paths (`retire_small.lua`'s one call per small board, and the
//! window-by-window path), with the relayout converter (`relayout_chunk.lua`): exact
//! while writes go on, skipped while a user relayout holds the lease, never on a plain
//! board or a slot too small to gain. The server's listpack limit is 16: a fill of 8, so
//! a slot of 16 fields or more is worth compacting.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rollboard::{
    BoardConfig, Event, Layout, RedisOptions, RetireOptions, RetireReport, RetirerStatus,
    Rollboard, Span, Timestamp,
};
use tokio::sync::watch;

use crate::oracle::{Geometry, Oracle, check_redis_invariants};
use crate::proxy::{Fault, FaultProxy};
use crate::support::{START, TestRedis, clock, ranking, ts, unique, with_clock};

/// Fields per bucket on the test server (half its listpack limit of 16).
const FILL: usize = 8;

struct Fixture {
    redis: TestRedis,
    clock: rollboard::ManualClock,
    boards: Rollboard,
    raw: redis::aio::MultiplexedConnection,
    board: String,
    oracle: Oracle,
}

impl Fixture {
    /// A board of `windows` with 1m slots, in `layout` (`None`: the store's default,
    /// compact), the clock at START + 10.
    async fn new(windows: &[&str], layout: Option<Layout>) -> Fixture {
        let redis = TestRedis::spawn().await;
        redis.config_set("hash-max-listpack-entries", "16").await;
        let clock = clock();
        let store = redis
            .store_with(RedisOptions {
                default_layout: Layout::Compact,
                ..RedisOptions::default()
            })
            .await;
        let boards = with_clock(store, &clock);
        let board = unique("open");
        let config = BoardConfig::parse("1m", windows)
            .unwrap()
            .with_layout(layout);
        boards.create(&board, config.clone()).await.unwrap();
        let raw = redis.raw().await;
        clock.set(ts(START + 10));
        Fixture {
            redis,
            clock,
            boards,
            raw,
            board,
            oracle: Oracle::new(config),
        }
    }

    fn at(&self, seconds: i64) {
        self.clock.set(ts(START + seconds));
    }

    /// Writes `m<i>` with delta i + 1, for i in `members`, at `at` seconds after START.
    async fn write(&mut self, members: std::ops::Range<usize>, at: i64) {
        let events: Vec<Event> = members
            .map(|i| Event::new(format!("m{i}"), i as i64 + 1).at(ts(START + at)))
            .collect();
        for chunk in events.chunks(100) {
            let outcome = self
                .boards
                .windowed(&self.board)
                .incr_batch(chunk)
                .await
                .unwrap();
            assert!(outcome.rejected.is_empty(), "{:?}", outcome.rejected);
        }
        let slot = self.oracle.config.slot_start(ts(START + at));
        for e in &events {
            self.oracle.record(slot, &e.member, e.delta);
        }
    }

    async fn geometry(&mut self, slot: i64) -> Option<Geometry> {
        let text: Option<String> = redis::cmd("HGET")
            .arg(format!("slotgeo_{{{}}}", self.board))
            .arg(slot)
            .query_async(&mut self.raw)
            .await
            .unwrap();
        text.map(|t| Geometry::parse(&t))
    }

    /// The stage key of `slot` for stage `k` (1-based).
    fn stage(&self, slot: i64, k: usize) -> String {
        match k {
            1 => format!("slot_{{{}}}_{slot}", self.board),
            k => format!("slot_{{{}}}_{slot}_{}", self.board, k - 1),
        }
    }

    async fn hlen(&mut self, key: &str) -> i64 {
        redis::cmd("HLEN")
            .arg(key)
            .query_async(&mut self.raw)
            .await
            .unwrap()
    }

    /// Every field of the buckets of `stage` under `geometry`, checking each is in the
    /// bucket its hash names.
    async fn buckets(&mut self, stage: &str, geometry: Geometry) -> BTreeMap<String, i64> {
        let mut all = BTreeMap::new();
        for i in 0..geometry.buckets() {
            let fields: BTreeMap<String, i64> = redis::cmd("HGETALL")
                .arg(format!("{stage}:{i}"))
                .query_async(&mut self.raw)
                .await
                .unwrap();
            for (member, value) in fields {
                assert_eq!(geometry.bucket_of(&member), i, "{member}");
                assert!(all.insert(member, value).is_none());
            }
        }
        all
    }

    /// The slot at START is compacted: it has a geometry (returned), its stage 1 plain
    /// hash is gone, its buckets hold exactly `expected`, and the board is exact.
    async fn assert_compacted(&mut self, expected: BTreeMap<String, i64>) -> Geometry {
        let geometry = self.geometry(START).await.expect("compacted");
        let open = self.stage(START, 1);
        assert_eq!(self.hlen(&open).await, 0, "the plain hash is gone");
        assert_eq!(self.buckets(&open, geometry).await, expected);
        self.assert_exact().await;
        geometry
    }

    /// Every window's ranking and the raw invariants equal the oracle.
    async fn assert_exact(&mut self) {
        let now = self.boards.now();
        let windows: Vec<Span> = self.oracle.config.windows().to_vec();
        for (j, w) in windows.iter().enumerate() {
            let page = self
                .boards
                .windowed(&self.board)
                .top(Some(*w), 0, 1000)
                .await
                .unwrap();
            assert_eq!(ranking(&page), self.oracle.ranking(j, now), "window {w}");
        }
        check_redis_invariants(&mut self.raw, &self.board, &self.oracle.config, Some(now)).await;
    }

    /// A second handle on the board, through a fault proxy (armed by the caller), on the
    /// same clock; its response timeout outlasts any delay a test arms.
    async fn proxied(&self) -> (FaultProxy, Rollboard) {
        let proxy = FaultProxy::start(&self.redis.url).await;
        let store = rollboard::RedisStore::connect_with(
            &proxy.url(),
            RedisOptions {
                default_layout: Layout::Compact,
                response_timeout: Duration::from_secs(30),
                ..RedisOptions::default()
            },
        )
        .await
        .unwrap();
        (proxy, with_clock(Arc::new(store), &self.clock))
    }

    /// Retires the board by the window-by-window path (`chunked`) or `retire_many`'s
    /// one call per small board.
    async fn retire(&self, chunked: bool) -> RetireReport {
        if chunked {
            self.boards
                .windowed(&self.board)
                .retire(None)
                .await
                .unwrap()
        } else {
            let board = Arc::new(self.boards.board(&self.board).await.unwrap());
            self.boards.retire_many(&[board]).await.remove(0).unwrap()
        }
    }
}

/// `m0..m<n>` with values 1..=n.
fn written(n: usize) -> BTreeMap<String, i64> {
    (0..n).map(|i| (format!("m{i}"), i as i64 + 1)).collect()
}

async fn compacted_once_closed(chunked: bool) {
    let n = 4 * FILL;
    let mut f = Fixture::new(&["5m", "10m"], None).await;
    f.write(0..n, 10).await;
    let open = f.stage(START, 1);
    assert_eq!(
        f.hlen(&open).await,
        n as i64,
        "the open slot is one plain hash"
    );
    assert_eq!(f.geometry(START).await, None);

    f.at(70);
    let report = f.retire(chunked).await;
    assert_eq!((report.slots_retired, report.fields_subtracted), (0, 0));
    assert_eq!(
        (report.slots_compacted, report.fields_compacted),
        (1, n as u64)
    );
    assert!(report.complete);
    // 32 fields / a fill of 8: 4 buckets, L = 2, p = 0.
    let geometry = f.geometry(START).await.expect("compacted");
    assert_eq!(
        (geometry.level, geometry.split, geometry.to_plain),
        (2, 0, false)
    );
    assert_eq!(f.hlen(&open).await, 0, "the plain hash is gone");
    assert_eq!(f.buckets(&open, geometry).await, written(n));
    f.assert_exact().await;
    let history = f.boards.windowed(&f.board).history("m5").await.unwrap();
    let points: Vec<(i64, i64)> = history.points.iter().map(|p| (p.slot, p.value)).collect();
    assert_eq!(points, [(START, 6)]);

    // A second pass at the same boundary compacts nothing.
    let again = f.retire(chunked).await;
    assert_eq!((again.slots_compacted, again.fields_compacted), (0, 0));

    // Each window retires the compacted slot exactly.
    f.at(5 * 60 + 10);
    let report = f.retire(chunked).await;
    assert_eq!(
        (report.slots_retired, report.fields_subtracted),
        (1, n as u64)
    );
    f.assert_exact().await;
    assert_eq!(f.buckets(&f.stage(START, 2), geometry).await, written(n));
    f.at(10 * 60 + 10);
    let report = f.retire(chunked).await;
    assert_eq!(
        (report.slots_retired, report.fields_subtracted),
        (1, n as u64)
    );
    f.assert_exact().await;
    assert_eq!(f.geometry(START).await, None, "gone with the slot");
}

#[tokio::test]
async fn the_open_slot_is_written_plain_and_compacted_once_closed() {
    compacted_once_closed(false).await;
}

#[tokio::test]
async fn the_open_slot_is_compacted_once_closed_on_the_window_by_window_path() {
    compacted_once_closed(true).await;
}

/// Slot as long as window 1: the boundary retires the closed slot from window 1 (its
/// plain stage 1 handed on to a plain stage 2), then stage 2 is compacted; window 2
/// retires it from the buckets.
#[tokio::test]
async fn a_slot_as_long_as_window_1_is_compacted_in_its_second_stage() {
    let n = 4 * FILL;
    let mut f = Fixture::new(&["1m", "2m"], None).await;
    f.write(0..n, 10).await;
    f.at(70);
    let report = f.retire(false).await;
    assert_eq!(
        (report.slots_retired, report.fields_subtracted),
        (1, n as u64)
    );
    assert_eq!(
        (report.slots_compacted, report.fields_compacted),
        (1, n as u64)
    );
    let geometry = f.geometry(START).await.expect("compacted");
    assert_eq!((geometry.level, geometry.split), (2, 0));
    let (one, two) = (f.stage(START, 1), f.stage(START, 2));
    assert_eq!((f.hlen(&one).await, f.hlen(&two).await), (0, 0));
    assert_eq!(f.buckets(&one, geometry).await, BTreeMap::new());
    assert_eq!(f.buckets(&two, geometry).await, written(n));
    f.assert_exact().await;

    f.at(130);
    let report = f.retire(false).await;
    assert_eq!(
        (report.slots_retired, report.fields_subtracted),
        (1, n as u64)
    );
    assert_eq!((report.slots_compacted, report.fields_compacted), (0, 0));
    f.assert_exact().await;
    assert_eq!(f.buckets(&two, geometry).await, BTreeMap::new());
    assert_eq!(f.geometry(START).await, None);
}

/// A slot under two buckets' fill is one listpack already: left plain. A plain board is
/// never compacted. A late event creating a closed slot on a compact board gives it a
/// geometry at once.
#[tokio::test]
async fn small_slots_and_plain_boards_stay_plain_and_late_slots_are_compact() {
    let small = 2 * FILL - 1;
    let mut f = Fixture::new(&["5m", "10m"], None).await;
    f.write(0..small, 10).await;
    f.at(70);
    for chunked in [false, true] {
        let report = f.retire(chunked).await;
        assert_eq!((report.slots_compacted, report.fields_compacted), (0, 0));
    }
    assert_eq!(f.geometry(START).await, None);
    let open = f.stage(START, 1);
    assert_eq!(f.hlen(&open).await, small as i64);
    // Late for slot START - 1m, which it creates: compact, one bucket.
    f.write(0..3, -30).await;
    let late = f
        .geometry(START - 60)
        .await
        .expect("a late slot is compact");
    assert_eq!(late.buckets(), 1);
    assert_eq!(f.buckets(&f.stage(START - 60, 1), late).await, written(3));
    f.assert_exact().await;

    let mut p = Fixture::new(&["5m", "10m"], Some(Layout::Plain)).await;
    p.write(0..4 * FILL, 10).await;
    p.at(70);
    for chunked in [false, true] {
        let report = p.retire(chunked).await;
        assert_eq!((report.slots_compacted, report.fields_compacted), (0, 0));
    }
    assert_eq!(p.geometry(START).await, None);
    let open = p.stage(START, 1);
    assert_eq!(p.hlen(&open).await, 4 * FILL as i64);
    p.write(0..3, -30).await;
    assert_eq!(
        p.geometry(START - 60).await,
        None,
        "a plain board's late slot"
    );
    p.assert_exact().await;
}

/// Writers keep writing into the closed slot while it is compacted one HSCAN step per
/// call (a budget of 1 µs): every value is counted once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_to_the_closed_slot_during_compaction_stay_exact() {
    let n = 200;
    let mut f = Fixture::new(&["5m", "10m"], None).await;
    f.write(0..n, 10).await;
    f.at(70);
    let recorded: Arc<Mutex<Vec<(String, i64)>>> = Arc::default();
    let writer = {
        let (boards, board, recorded) = (f.boards.clone(), f.board.clone(), recorded.clone());
        tokio::spawn(async move {
            for round in 0..60usize {
                let events: Vec<Event> = (0..5)
                    .map(|k| {
                        let member = format!("m{}", (round * 37 + k * 11) % 260);
                        Event::new(member, 1 + (k as i64 % 3)).at(ts(START + 20))
                    })
                    .collect();
                boards.windowed(&board).incr_batch(&events).await.unwrap();
                recorded
                    .lock()
                    .unwrap()
                    .extend(events.iter().map(|e| (e.member.clone(), e.delta)));
                tokio::task::yield_now().await;
            }
        })
    };
    let options = RetireOptions {
        chunk_budget: Duration::from_micros(1),
        ..RetireOptions::default()
    };
    let report = f
        .boards
        .windowed(&f.board)
        .retire(Some(options))
        .await
        .unwrap();
    writer.await.unwrap();
    for (member, delta) in recorded.lock().unwrap().iter() {
        f.oracle.record(START, member, *delta);
    }
    assert_eq!(report.slots_compacted, 1);
    assert!(
        report.fields_compacted >= n as u64,
        "{} values moved",
        report.fields_compacted
    );
    let mut expected: BTreeMap<String, i64> = written(n);
    for (member, delta) in recorded.lock().unwrap().iter() {
        *expected.entry(member.clone()).or_insert(0) += delta;
    }
    f.assert_compacted(expected).await;
}

/// A user's active relayout holding the board's lease: retirement succeeds on both
/// paths and compacts nothing; the slot stays plain (and exact) until the lease is gone.
#[tokio::test]
async fn a_relayout_holding_the_lease_leaves_the_closed_slot_plain() {
    let n = 4 * FILL;
    let mut f = Fixture::new(&["5m", "10m"], None).await;
    f.write(0..n, 10).await;
    f.at(70);
    let until = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 60_000;
    let record = format!("board_{{{}}}", f.board);
    let _: () = redis::cmd("HSET")
        .arg(&record)
        .arg("rl_until")
        .arg(until.to_string())
        .arg("rl_token")
        .arg("someone-else")
        .query_async(&mut f.raw)
        .await
        .unwrap();
    for chunked in [false, true] {
        let report = f.retire(chunked).await;
        assert!(report.complete);
        assert_eq!((report.slots_compacted, report.fields_compacted), (0, 0));
    }
    assert_eq!(f.geometry(START).await, None);
    let open = f.stage(START, 1);
    assert_eq!(f.hlen(&open).await, n as i64);
    let token: Option<String> = redis::cmd("HGET")
        .arg(&record)
        .arg("rl_token")
        .query_async(&mut f.raw)
        .await
        .unwrap();
    assert_eq!(
        token.as_deref(),
        Some("someone-else"),
        "their lease is kept"
    );
    f.assert_exact().await;

    // Once their run ended its lease, a pass at the same boundary compacts the slot.
    let _: () = redis::cmd("HDEL")
        .arg(&record)
        .arg("rl_until")
        .arg("rl_token")
        .query_async(&mut f.raw)
        .await
        .unwrap();
    let report = f.retire(false).await;
    assert_eq!(
        (report.slots_compacted, report.fields_compacted),
        (1, n as u64)
    );
    let lease: Vec<Option<String>> = redis::cmd("HMGET")
        .arg(&record)
        .arg("rl_until")
        .arg("rl_token")
        .query_async(&mut f.raw)
        .await
        .unwrap();
    assert_eq!(lease, [None, None], "the compaction ended its own lease");
    f.assert_exact().await;
}

/// Waits (at most 10 s, against a hang) until a round that began at `at` or later ended.
async fn round_at(status: &mut watch::Receiver<RetirerStatus>, at: Timestamp) {
    tokio::time::timeout(
        Duration::from_secs(10),
        status.wait_for(|s| s.as_of.is_some_and(|t| t >= at)),
    )
    .await
    .expect("the retirer ran a round within 10 s")
    .expect("the retirer is running");
}

/// The library's retirer task compacts the slot that closed, with no retire call.
#[tokio::test]
async fn the_retirer_task_compacts_the_closed_slot() {
    let n = 4 * FILL;
    let mut f = Fixture::new(&["5m", "10m"], None).await;
    f.write(0..n, 10).await;
    let retirer = f.boards.start_retirer();
    let mut status = retirer.status();
    round_at(&mut status, ts(START + 10)).await;
    assert_eq!(f.geometry(START).await, None);
    f.at(60);
    round_at(&mut status, ts(START + 60)).await;
    let geometry = f.geometry(START).await.expect("compacted by the retirer");
    assert_eq!(geometry.buckets(), 4);
    let open = f.stage(START, 1);
    assert_eq!(f.hlen(&open).await, 0);
    assert_eq!(f.buckets(&open, geometry).await, written(n));
    f.assert_exact().await;
    retirer.stop().await;
}

/// Retires the closed slot START through `proxied`, holding its first `compact_move.lua`
/// call back (after the client scanned stage 1 and grouped it by bucket) until `meanwhile`
/// ran on the direct handle; returns the report.
async fn compact_with_a_pause<F>(f: &mut Fixture, meanwhile: F) -> RetireReport
where
    F: AsyncFnOnce(&mut Fixture),
{
    let (proxy, proxied) = f.proxied().await;
    let (record, stage) = (format!("board_{{{}}}", f.board), f.stage(START, 1));
    // compact_move.lua is the one script with 4 keys naming the record and the stage.
    proxy.arm(Fault::Delay(Duration::from_secs(3)), 1, move |r| {
        r.command() == "EVALSHA"
            && r.args.get(2).map(Vec::as_slice) == Some(b"4".as_slice())
            && r.has_arg(&record)
            && r.has_arg(&stage)
    });
    let retire = tokio::spawn({
        let board = f.board.clone();
        async move { proxied.windowed(&board).retire(None).await.unwrap() }
    });
    proxy.wait_fired(1).await;
    meanwhile(f).await;
    let report = retire.await.unwrap();
    assert_eq!(proxy.fired(), 1);
    report
}

/// Late writes of new members split stage 1 (its first window has not frozen it) between
/// the client's scan and its move, and late writes of old members put values in buckets
/// beside the plain hash's: the move follows the current geometry, every field lands in
/// the bucket its hash names, added to what the bucket holds, exact.
#[tokio::test]
async fn a_split_between_the_scan_and_the_move_is_followed() {
    let n = 4 * FILL;
    let mut f = Fixture::new(&["5m", "10m"], None).await;
    f.write(0..n, 10).await;
    f.at(70);
    let report = compact_with_a_pause(&mut f, async |f: &mut Fixture| {
        // 4 buckets of a fill of 8 (L = 2, p = 0) at the setup call; 12 new fields make
        // 44 > 40 > 32: buckets 0 and 1 split.
        assert_eq!(
            f.geometry(START).await.map(|g| (g.level, g.split)),
            Some((2, 0))
        );
        f.write(100..112, 20).await;
        // And m0, m1 again: their buckets hold a value beside the plain hash's.
        f.write(0..2, 20).await;
        assert_eq!(
            f.geometry(START).await.map(|g| (g.level, g.split)),
            Some((2, 2))
        );
    })
    .await;
    assert_eq!(
        (report.slots_compacted, report.fields_compacted),
        (1, n as u64)
    );
    let mut expected = written(n);
    expected.extend((100..112).map(|i| (format!("m{i}"), i as i64 + 1)));
    expected.insert("m0".into(), 2);
    expected.insert("m1".into(), 4);
    let geometry = f.assert_compacted(expected).await;
    assert_eq!((geometry.level, geometry.split), (2, 2));
}

/// A member removed between the client's scan and its move: its field is gone from the
/// plain hash, so the move skips it (nothing recreated, not counted), exact.
#[tokio::test]
async fn a_field_removed_between_the_scan_and_the_move_is_skipped() {
    let n = 4 * FILL;
    let mut f = Fixture::new(&["5m", "10m"], None).await;
    f.write(0..n, 10).await;
    f.at(70);
    let report = compact_with_a_pause(&mut f, async |f: &mut Fixture| {
        let removed = f
            .boards
            .windowed(&f.board)
            .remove_member("m5")
            .await
            .unwrap();
        assert_eq!(removed.slot_values, 1);
        f.oracle.remove("m5");
    })
    .await;
    assert_eq!(
        (report.slots_compacted, report.fields_compacted),
        (1, n as u64 - 1)
    );
    let mut expected = written(n);
    expected.remove("m5");
    f.assert_compacted(expected).await;
}
