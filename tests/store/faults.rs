//! Dropped and late replies: a proxy between the store and Redis forwards a chosen call
//! and then cuts the connection before its reply arrives, or holds the reply past the
//! client's timeout. After the caller retries as a real user would (or the next pass
//! runs), every total equals the oracle exactly: a call Redis ran is applied once.

use std::sync::Arc;
use std::time::Duration;

use rollboard::{
    BoardConfig, Clock, Error, Event, IngestOptions, Layout, ManualClock, RedisOptions, RedisStore,
    Rollboard, Settings, Watch,
};

use std::collections::BTreeMap;

use crate::oracle::{Oracle, check_redis_invariants};
use crate::proxy::{Fault, FaultProxy, Request};
use crate::support::{START, TestRedis, clock, ranking, unique};

/// The client's response timeout; a held reply comes 1.5x later, so the client gave up
/// on it, and a retry sent then is answered within its own timeout.
const TIMEOUT: Duration = Duration::from_millis(600);
const HOLD: Fault = Fault::Hold(Duration::from_millis(900));

/// A Rollboard whose store talks to Redis through a fault proxy.
struct Faulty {
    redis: TestRedis,
    proxy: FaultProxy,
    boards: Rollboard,
    clock: ManualClock,
}

impl Faulty {
    /// Boards that name no layout get `layout`.
    async fn start(layout: Layout) -> Faulty {
        let redis = TestRedis::start().await;
        let proxy = FaultProxy::start(&redis.url).await;
        let store = RedisStore::connect_with(
            &proxy.url(),
            RedisOptions {
                response_timeout: TIMEOUT,
                default_layout: layout,
                // One write call per batch however loaded the machine, so the lost call is
                // the whole batch (calls stopping at their budget: budget_stops.rs).
                ingest: IngestOptions {
                    call_budget: Duration::from_secs(1),
                    ..IngestOptions::default()
                },
                ..RedisOptions::default()
            },
        )
        .await
        .unwrap();
        let clock = clock();
        let boards = Rollboard::with(
            Arc::new(store),
            Arc::new(clock.clone()),
            Settings::default(),
        );
        Faulty {
            redis,
            proxy,
            boards,
            clock,
        }
    }

    /// A board with a unique name, and its oracle.
    async fn board(&self, slot: &str, windows: &[&str]) -> (String, Oracle) {
        let config = BoardConfig::parse(slot, windows).unwrap();
        let name = unique("f");
        self.boards.create(&name, config.clone()).await.unwrap();
        (name, Oracle::new(config))
    }

    /// As [`board`](Self::board), watching each window's top 5 when `watched`.
    async fn maybe_watched(&self, windows: &[&str], watched: bool) -> (String, Oracle) {
        let (name, oracle) = self.board("1h", windows).await;
        if watched {
            let top = |w: &&str| Watch::new(w.parse().unwrap(), 5).unwrap();
            let config = oracle
                .config
                .clone()
                .with_watch(windows.iter().map(top).collect());
            self.boards.create(&name, config.unwrap()).await.unwrap();
        }
        (name, oracle)
    }

    /// On a watched board: every change, replayed from the first, rebuilds each watched
    /// top as a read answers it now: the faults recorded none twice and lost none.
    async fn assert_changes_replay(&self, board: &str) {
        let b = self.boards.windowed(board);
        let (mut tops, mut after) = (crate::watch::Tops::new(), None);
        let changes = crate::watch::read_changes(&self.boards, board, &mut after).await;
        assert!(!changes.is_empty());
        crate::watch::apply(&mut tops, &changes, 0);
        let board_now = self.boards.board(board).await.unwrap();
        for watch in board_now.config.watch() {
            let page = b.top(Some(watch.window()), 0, 5).await.unwrap();
            let top: BTreeMap<String, u64> = page
                .entries
                .into_iter()
                .map(|e| (e.member, e.rank))
                .collect();
            assert_eq!(tops[&watch.window()], top, "{}", watch.window());
        }
    }

    /// Retires `board` in chunks of 500 fields until a pass completes: a pass that fails
    /// (the one retry met another fault) is run again, as the scheduler would.
    async fn retire_through_faults(&self, board: &str) {
        let options = rollboard::RetireOptions {
            chunk_size: 500,
            ..rollboard::RetireOptions::default()
        };
        let mut passes = 0;
        loop {
            passes += 1;
            match self.boards.windowed(board).retire(Some(options)).await {
                Ok(report) if report.complete => break,
                Ok(_) | Err(Error::StoreUnavailable(_)) if passes < 5 => continue,
                other => panic!("retirement did not finish: {other:?}"),
            }
        }
    }

    /// Writes `members` members with deltas 1..=3 into each of `hours` hourly slots from
    /// START (the clock ends in the last), recording them in `oracle`.
    async fn fill(&self, board: &str, oracle: &mut Oracle, hours: i64, members: usize) {
        for hour in 0..hours {
            self.clock.set(ts(START + hour * 3600));
            let events: Vec<Event> = (0..members)
                .map(|i| Event::new(format!("m{i}"), 1 + ((i as i64 + hour) % 3)))
                .collect();
            for chunk in events.chunks(1000) {
                self.boards.windowed(board).incr_batch(chunk).await.unwrap();
            }
            for e in &events {
                oracle.record(START + hour * 3600, &e.member, e.delta);
            }
        }
    }

    /// Every window's ranking equals the oracle's, and the keys keep their invariants.
    /// (After a retirement pass at the clock's time, as the scheduler runs them.)
    async fn assert_exact(&self, board: &str, oracle: &Oracle) {
        self.proxy.disarm();
        self.boards.windowed(board).retire(None).await.unwrap();
        let now = self.clock.now();
        for (j, window) in oracle.config.windows().iter().enumerate() {
            let got = full_ranking(&self.boards, board, &window.to_string()).await;
            assert_same(&got, &oracle.ranking(j, now), &format!("window {window}"));
        }
        let mut raw = self.redis.raw().await;
        check_redis_invariants(&mut raw, board, &oracle.config, Some(now)).await;
    }
}

fn ts(seconds: i64) -> rollboard::Timestamp {
    rollboard::Timestamp::from_unix_seconds(seconds).unwrap()
}

/// Fails with the number of wrong totals and a few of them (a whole ranking is long).
fn assert_same(got: &[(String, i64)], want: &[(String, i64)], what: &str) {
    if got == want {
        return;
    }
    let got_map: std::collections::BTreeMap<_, _> = got.iter().cloned().collect();
    let want_map: std::collections::BTreeMap<_, _> = want.iter().cloned().collect();
    let wrong: Vec<_> = want_map
        .keys()
        .chain(got_map.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|m| got_map.get(*m) != want_map.get(*m))
        .map(|m| (m.clone(), got_map.get(m).copied(), want_map.get(m).copied()))
        .collect();
    panic!(
        "{what}: {} of {} totals wrong (member, got, want), first: {:?}",
        wrong.len(),
        want.len(),
        &wrong[..wrong.len().min(5)]
    );
}

/// A window's whole ranking, in ranking order.
async fn full_ranking(boards: &Rollboard, board: &str, window: &str) -> Vec<(String, i64)> {
    let mut all = Vec::new();
    loop {
        let page = boards
            .windowed(board)
            .top(Some(window.parse().unwrap()), all.len() as u64, 1000)
            .await
            .unwrap();
        let n = page.entries.len();
        all.extend(ranking(&page));
        if n < 1000 {
            return all;
        }
    }
}

/// A `recompute_scan.lua` call of `board`: the build and a stage hash, not the log.
fn recompute_scan(board: &str) -> impl Fn(&Request) -> bool + Send + Sync + 'static {
    let (build, log, stage) = (
        format!("rebuild_{{{board}}}"),
        format!("rebuild_log_{{{board}}}"),
        format!("slot_{{{board}}}_"),
    );
    move |r| r.is_script_with_key(&build) && !r.has_arg(&log) && r.has_arg_starting(&stage)
}

async fn recompute_scan_survives(fault: Fault, layout: Layout) {
    let f = Faulty::start(layout).await;
    let (b, mut oracle) = f.board("1h", &["3h"]).await;
    // Three slots of 5,000 members: every hash takes several scan calls.
    f.fill(&b, &mut oracle, 3, 5_000).await;
    f.proxy.arm(fault, 1, recompute_scan(&b));
    let report = f.boards.windowed(&b).recompute(None).await.unwrap();
    assert_eq!(f.proxy.fired(), 1, "a scan call lost its reply");
    // The report counts the fields of the replies received; the lost one's are not.
    assert!(report.fields_scanned <= 15_000, "{report:?}");
    f.assert_exact(&b, &oracle).await;
    let mut raw = f.redis.raw().await;
    let left: Vec<String> = redis::cmd("KEYS")
        .arg(format!("rebuild*{{{b}}}"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(left.is_empty(), "the recompute left {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recompute_scan_with_a_cut_reply_adds_each_field_once() {
    recompute_scan_survives(Fault::Cut, Layout::Plain).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recompute_scan_with_a_held_reply_adds_each_field_once() {
    recompute_scan_survives(HOLD, Layout::Plain).await;
}

/// A write call of `board` carrying `member` (`write.lua`, or `write_plain.lua` for an
/// unguarded call of the open slot): a script with the index and totals keys and the
/// member among its arguments (retirement's scripts name no member).
fn write_call(board: &str, member: &str) -> impl Fn(&Request) -> bool + Send + Sync + 'static {
    let (index, totals, member) = (
        format!("slots_{{{board}}}"),
        format!("stats_{{{board}}}"),
        member.to_string(),
    );
    move |r| r.is_script_with_key(&index) && r.has_arg(&totals) && r.has_arg(&member)
}

/// A write whose reply is lost fails as unavailable, and Redis ran it once: the store
/// never sends a write again by itself (a blind retry could count it twice).
async fn write_survives(fault: Fault, layout: Layout, watched: bool) {
    let f = Faulty::start(layout).await;
    let (b, mut oracle) = f.maybe_watched(&["1h", "3h"], watched).await;
    f.fill(&b, &mut oracle, 2, 50).await;
    f.proxy.arm(fault, 1, write_call(&b, "m7"));
    let lost = f.boards.windowed(&b).incr("m7", 5, None).await;
    assert!(matches!(lost, Err(Error::StoreUnavailable(_))), "{lost:?}");
    assert_eq!(f.proxy.fired(), 1);
    oracle.record(START + 3600, "m7", 5);
    // The connection comes back, and the next write goes through.
    f.boards.windowed(&b).incr("m7", 1, None).await.unwrap();
    oracle.record(START + 3600, "m7", 1);
    f.assert_exact(&b, &oracle).await;
    if watched {
        f.assert_changes_replay(&b).await;
    }
}

#[tokio::test]
async fn a_write_with_a_cut_reply_is_applied_once() {
    write_survives(Fault::Cut, Layout::Plain, false).await;
}

#[tokio::test]
async fn a_write_with_a_held_reply_is_applied_once() {
    write_survives(HOLD, Layout::Plain, false).await;
}

#[tokio::test]
async fn a_write_to_a_watched_board_with_a_cut_reply_records_its_changes_once() {
    write_survives(Fault::Cut, Layout::Plain, true).await;
}

/// The same for a batch, and with a token the caller's retry makes it exactly once.
async fn batch_write_survives(fault: Fault, layout: Layout) {
    let f = Faulty::start(layout).await;
    let (b, mut oracle) = f.board("1h", &["1h", "3h"]).await;
    f.fill(&b, &mut oracle, 2, 50).await;
    let events: Vec<Event> = (0..300)
        .map(|i| Event::new(format!("m{}", i % 70), 1 + i % 4))
        .collect();
    let record = |oracle: &mut Oracle| {
        for e in &events {
            oracle.record(START + 3600, &e.member, e.delta);
        }
    };

    // Without a token: at most once (Redis ran it; nothing sent it again).
    f.proxy.arm(fault, 1, write_call(&b, "m0"));
    let lost = f.boards.windowed(&b).incr_batch(&events).await;
    assert!(matches!(lost, Err(Error::StoreUnavailable(_))), "{lost:?}");
    record(&mut oracle);
    f.assert_exact(&b, &oracle).await;

    // With a token: the caller sends it again, and it is applied exactly once.
    f.proxy.arm(fault, 1, write_call(&b, "m0"));
    let lost = f
        .boards
        .windowed(&b)
        .incr_batch_once(&events, "batch-1")
        .await;
    assert!(matches!(lost, Err(Error::StoreUnavailable(_))), "{lost:?}");
    let again = f
        .boards
        .windowed(&b)
        .incr_batch_once(&events, "batch-1")
        .await
        .unwrap();
    assert!(again.is_none(), "the token was applied by the lost call");
    record(&mut oracle);
    assert_eq!(f.proxy.fired(), 2);
    f.assert_exact(&b, &oracle).await;
}

#[tokio::test]
async fn a_batch_with_a_cut_reply_is_applied_once() {
    batch_write_survives(Fault::Cut, Layout::Plain).await;
}

#[tokio::test]
async fn a_batch_with_a_held_reply_is_applied_once() {
    batch_write_survives(HOLD, Layout::Plain).await;
}

/// With an idempotency key, the caller's retry of a write whose reply was lost is
/// applied once and answered as the first call would have been.
async fn keyed_write_survives(fault: Fault, layout: Layout) {
    let f = Faulty::start(layout).await;
    let (b, mut oracle) = f.board("1h", &["1h", "3h"]).await;
    f.fill(&b, &mut oracle, 2, 50).await;
    let events: Vec<Event> = (0..300)
        .map(|i| Event::new(format!("m{}", i % 70), 1 + i % 4))
        .chain([Event::new("late", 1).at(ts(START - 4 * 3600))])
        .collect();
    f.proxy.arm(fault, 1, write_call(&b, "m0"));
    let lost = f
        .boards
        .windowed(&b)
        .write_idempotent(&events, "retry-1")
        .await;
    assert!(matches!(lost, Err(Error::StoreUnavailable(_))), "{lost:?}");
    assert_eq!(f.proxy.fired(), 1);
    f.clock.advance_secs(30);
    let again = f
        .boards
        .windowed(&b)
        .write_idempotent(&events, "retry-1")
        .await
        .unwrap();
    assert_eq!(again.accepted, 300);
    let rejected: Vec<_> = again
        .rejected
        .iter()
        .map(|r| (r.index, r.error.code()))
        .collect();
    assert_eq!(rejected, [(300, "too_late")]);
    for e in &events[..300] {
        oracle.record(START + 3600, &e.member, e.delta);
    }
    f.assert_exact(&b, &oracle).await;
}

#[tokio::test]
async fn a_keyed_batch_with_a_cut_reply_is_retried_and_counted_once() {
    keyed_write_survives(Fault::Cut, Layout::Plain).await;
}

#[tokio::test]
async fn a_keyed_batch_with_a_held_reply_is_retried_and_counted_once() {
    keyed_write_survives(HOLD, Layout::Plain).await;
}

/// A `retire_chunk.lua` call of `board`: the index, totals and a stage, not the log.
fn retire_chunk(board: &str) -> impl Fn(&Request) -> bool + Send + Sync + 'static {
    let (index, log, stage) = (
        format!("slots_{{{board}}}"),
        format!("rebuild_log_{{{board}}}"),
        format!("slot_{{{board}}}_"),
    );
    move |r| r.is_script_with_key(&index) && !r.has_arg(&log) && r.has_arg_starting(&stage)
}

/// Retirement chunks are idempotent: the store sends a lost one again (or the next pass
/// finishes), and every window ends exact with nothing left of retired slots.
async fn retire_survives(fault: Fault, layout: Layout, watched: bool) {
    let f = Faulty::start(layout).await;
    let (b, mut oracle) = f.maybe_watched(&["1h", "3h"], watched).await;
    f.fill(&b, &mut oracle, 4, 3_000).await;
    f.clock.set(ts(START + 6 * 3600));
    f.proxy.arm(fault, 3, retire_chunk(&b));
    f.retire_through_faults(&b).await;
    assert_eq!(f.proxy.fired(), 3, "three chunks lost their replies");
    f.assert_exact(&b, &oracle).await;
    let mut raw = f.redis.raw().await;
    check_redis_invariants(&mut raw, &b, &oracle.config, Some(f.clock.now())).await;
    if watched {
        f.assert_changes_replay(&b).await;
    }
}

#[tokio::test]
async fn retirement_with_cut_replies_ends_exact() {
    retire_survives(Fault::Cut, Layout::Plain, false).await;
}

#[tokio::test]
async fn retirement_with_held_replies_ends_exact() {
    retire_survives(HOLD, Layout::Plain, false).await;
}

#[tokio::test]
async fn retirement_of_a_watched_board_with_cut_replies_records_each_change_once() {
    retire_survives(Fault::Cut, Layout::Plain, true).await;
}

/// A `remove_member.lua` call of `board`: totals and the log, not the index.
fn remove_member(board: &str) -> impl Fn(&Request) -> bool + Send + Sync + 'static {
    let (index, log) = (
        format!("slots_{{{board}}}"),
        format!("rebuild_log_{{{board}}}"),
    );
    move |r| r.is_script_with_key(&log) && !r.has_arg(&index)
}

/// Removing a member is idempotent (a replayed batch finds nothing left to delete).
async fn remove_member_survives(fault: Fault, layout: Layout) {
    let f = Faulty::start(layout).await;
    let (b, mut oracle) = f.board("1h", &["1h", "3h"]).await;
    f.fill(&b, &mut oracle, 3, 200).await;
    f.proxy.arm(fault, 1, remove_member(&b));
    let removed = match f.boards.windowed(&b).remove_member("m17").await {
        Ok(removed) => removed,
        // The caller asks again.
        Err(Error::StoreUnavailable(_)) => {
            f.boards.windowed(&b).remove_member("m17").await.unwrap()
        }
        Err(other) => panic!("{other}"),
    };
    assert!(removed.slot_values <= 3, "{removed:?}");
    assert_eq!(f.proxy.fired(), 1);
    oracle.remove("m17");
    f.assert_exact(&b, &oracle).await;
}

#[tokio::test]
async fn removing_a_member_with_a_cut_reply_ends_exact() {
    remove_member_survives(Fault::Cut, Layout::Plain).await;
}

#[tokio::test]
async fn removing_a_member_with_a_held_reply_ends_exact() {
    remove_member_survives(HOLD, Layout::Plain).await;
}

/// A `recompute_fold.lua` call of `board` that resumes one of `members` half folded.
fn fold_resuming(
    board: &str,
    members: &[String],
) -> impl Fn(&Request) -> bool + Send + Sync + 'static {
    let (index, log, totals) = (
        format!("slots_{{{board}}}"),
        format!("rebuild_log_{{{board}}}"),
        format!("stats_{{{board}}}"),
    );
    let members = members.to_vec();
    move |r| {
        r.is_script_with_key(&log)
            && r.has_arg(&index)
            && !r.has_arg(&totals)
            && members.iter().any(|m| r.has_arg(m))
    }
}

/// On a long window a member's fold spans calls (1,440 live slots, up to 1,000 read per
/// call). Writes to the member half folded, in a slot its fold has summed and in one it
/// has not, between two of its calls, still end exact; and so does a fold call whose
/// reply is cut (it is sent again, and does nothing twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fold_spanning_calls_stays_exact_under_writes_and_lost_replies() {
    let f = Faulty::start(Layout::Plain).await;
    let (b, mut oracle) = f.board("1m", &["1d"]).await;
    // Another replica, straight to Redis, writes while the proxy delays the recompute.
    let direct = crate::support::with_clock(f.redis.store().await, &f.clock);
    let now = START + 1440 * 60;
    f.clock.set(ts(now));
    let (oldest, newest) = (now - 1439 * 60, now);
    let members: Vec<String> = (0..5).map(|i| format!("m{i}")).collect();
    let events: Vec<Event> = (0..1440i64)
        .flat_map(|i| {
            members
                .iter()
                .map(move |m| Event::new(m.clone(), 1 + i % 3).at(ts(oldest + i * 60)))
        })
        .collect();
    for chunk in events.chunks(1000) {
        f.boards.windowed(&b).incr_batch(chunk).await.unwrap();
    }
    // The newest slot also holds 1,200 other members, so its scan takes two calls at
    // least (1,000 fields a call at most).
    let fillers: Vec<Event> = (0..1200)
        .map(|i| Event::new(format!("filler-{i}"), 1).at(ts(newest + 3)))
        .collect();
    for chunk in fillers.chunks(1000) {
        f.boards.windowed(&b).incr_batch(chunk).await.unwrap();
    }
    for e in events.iter().chain(&fillers) {
        oracle.record(e.at.unwrap().unix_seconds(), &e.member, e.delta);
    }
    let write = |oracle: &mut Oracle, slot: i64, delta: i64| {
        let events: Vec<Event> = members
            .iter()
            .map(|m| Event::new(m.clone(), delta).at(ts(slot + 7)))
            .collect();
        for e in &events {
            oracle.record(slot, &e.member, delta);
        }
        events
    };

    // While the newest slot's scan is held up part-way (its second call, whose cursor
    // is not 0), writes to it put every member in the log: whether the scan has read
    // them is unknown.
    let (newest_hash, progress) = (
        format!("slot_{{{b}}}_{newest}"),
        format!("rebuild_scan_{{{b}}}"),
    );
    f.proxy
        .arm(Fault::Delay(Duration::from_millis(300)), 1, move |r| {
            r.is_script_with_key(&newest_hash) && r.has_arg(&progress) && !r.has_arg("0")
        });
    let recompute = tokio::spawn({
        let (boards, b) = (f.boards.clone(), b.clone());
        async move { boards.windowed(&b).recompute(None).await }
    });
    f.proxy.wait_fired(1).await;
    let during_scan = write(&mut oracle, newest, 2);
    direct.windowed(&b).incr_batch(&during_scan).await.unwrap();

    // The fold of a member spans calls: before one resumes it, write to every member in
    // the oldest slot (summed) and the newest (not yet); the next resuming call's reply
    // is cut.
    f.proxy.arm(
        Fault::Delay(Duration::from_millis(300)),
        1,
        fold_resuming(&b, &members),
    );
    f.proxy.wait_fired(2).await;
    f.proxy.arm(Fault::Cut, 1, fold_resuming(&b, &members));
    for (slot, delta) in [(oldest, 5), (newest, -3)] {
        let events = write(&mut oracle, slot, delta);
        direct.windowed(&b).incr_batch(&events).await.unwrap();
    }
    let report = recompute.await.unwrap().unwrap();
    assert_eq!(f.proxy.fired(), 3, "{report:?}");
    // The cut call may have finished a member: the report misses that one.
    assert!((4..=5).contains(&report.members_folded), "{report:?}");
    f.assert_exact(&b, &oracle).await;
}

/// Cut replies on compact slots: every call that moves stage data is applied once.
mod compact {
    use super::*;

    #[tokio::test]
    async fn a_recompute_scan_with_a_cut_reply_adds_each_field_once() {
        recompute_scan_survives(Fault::Cut, Layout::Compact).await;
    }

    #[tokio::test]
    async fn a_write_with_a_cut_reply_is_applied_once() {
        write_survives(Fault::Cut, Layout::Compact, false).await;
    }

    #[tokio::test]
    async fn a_batch_with_a_cut_reply_is_applied_once() {
        batch_write_survives(Fault::Cut, Layout::Compact).await;
    }

    #[tokio::test]
    async fn a_keyed_batch_with_a_cut_reply_is_retried_and_counted_once() {
        keyed_write_survives(Fault::Cut, Layout::Compact).await;
    }

    #[tokio::test]
    async fn retirement_with_cut_replies_ends_exact() {
        retire_survives(Fault::Cut, Layout::Compact, false).await;
    }

    #[tokio::test]
    async fn removing_a_member_with_a_cut_reply_ends_exact() {
        remove_member_survives(Fault::Cut, Layout::Compact).await;
    }
}

/// As `retire_survives`, on a two-window board whose slot is compact by hand (69
/// buckets, late writes in its second stage; see `compact_fixture.rs`): a lost chunk,
/// sent again from its old cursor, finds the buckets it handled gone (renamed, merged or
/// deleted) and handles each bucket once.
async fn split_slot_retire_survives(fault: Fault) {
    let f = Faulty::start(Layout::Plain).await;
    let mut raw = f.redis.raw().await;
    let (b, oracle) = crate::compact_fixture::split_slot_board(
        &f.boards,
        &f.clock,
        &mut raw,
        rollboard::Ties::Competition,
    )
    .await;
    let options = rollboard::RetireOptions {
        chunk_size: 100,
        ..rollboard::RetireOptions::default()
    };
    for (round, hours) in [2, 3].into_iter().enumerate() {
        f.clock.set(ts(START + hours * 3600));
        f.proxy.arm(fault, 2, retire_chunk(&b));
        let mut passes = 0;
        loop {
            passes += 1;
            match f.boards.windowed(&b).retire(Some(options)).await {
                Ok(report) if report.complete => break,
                Ok(_) | Err(Error::StoreUnavailable(_)) if passes < 5 => continue,
                other => panic!("retirement did not finish: {other:?}"),
            }
        }
        assert_eq!(
            f.proxy.fired(),
            2 * (round + 1),
            "two chunks lost their replies"
        );
        f.assert_exact(&b, &oracle).await;
    }
}

#[tokio::test]
async fn a_split_compact_slot_retired_with_cut_replies_ends_exact() {
    split_slot_retire_survives(Fault::Cut).await;
}

#[tokio::test]
async fn a_split_compact_slot_retired_with_held_replies_ends_exact() {
    split_slot_retire_survives(HOLD).await;
}

/// A `contrib_retire.lua` call of `board`: the record, the member data and a slot stage,
/// not the slot geometries (which `write.lua`, `retire_small.lua` and `retire_chunk.lua`
/// carry).
fn contrib_retire(board: &str) -> impl Fn(&Request) -> bool + Send + Sync + 'static {
    let (record, data, geometries, stage) = (
        format!("board_{{{board}}}"),
        format!("data_{{{board}}}"),
        format!("slotgeo_{{{board}}}"),
        format!("slot_{{{board}}}_"),
    );
    move |r| {
        r.is_script_with_key(&record)
            && r.has_arg(&data)
            && !r.has_arg(&geometries)
            && r.has_arg_starting(&stage)
    }
}

/// A board capping contributors at 1 per member: a slot's contributions leave each window
/// in idempotent chunks too, so lost replies leave every window exact (each like comes
/// from a pair of its own, so the cap takes nothing and a pair retired twice would show).
async fn contributions_retire_survive(fault: Fault) {
    let f = Faulty::start(Layout::Plain).await;
    // Each user likes once: a budget of 1 admits every like, and retirement gives back
    // each user's use of it (field by field) through the faults too.
    let config = BoardConfig::parse("1h", &["1h", "3h"])
        .unwrap()
        .with_contributor_cap(Some(1))
        .unwrap()
        .with_contributor_budget(Some(1))
        .unwrap();
    let b = unique("fc");
    f.boards.create(&b, config.clone()).await.unwrap();
    let mut oracle = Oracle::new(config);
    for hour in 0..4 {
        f.clock.set(ts(START + hour * 3600));
        let events: Vec<Event> = (0..3_000)
            .map(|i| Event::new(format!("m{}", i % 300), 1).by(format!("u{i}-{hour}")))
            .collect();
        for chunk in events.chunks(1000) {
            let outcome = f.boards.windowed(&b).incr_batch(chunk).await.unwrap();
            assert_eq!((outcome.accepted, outcome.counted.len()), (1000, 1000));
        }
        for e in &events {
            oracle.record(START + hour * 3600, &e.member, 1);
        }
    }
    f.clock.set(ts(START + 5 * 3600));
    f.proxy.arm(fault, 3, contrib_retire(&b));
    f.retire_through_faults(&b).await;
    assert_eq!(f.proxy.fired(), 3, "three chunks lost their replies");
    let now = f.clock.now();
    for (j, window) in oracle.config.windows().iter().enumerate() {
        let got = full_ranking(&f.boards, &b, &window.to_string()).await;
        assert_same(&got, &oracle.ranking(j, now), &format!("window {window}"));
    }
}

#[tokio::test]
async fn contributions_retired_with_cut_replies_end_exact() {
    contributions_retire_survive(Fault::Cut).await;
}

#[tokio::test]
async fn contributions_retired_with_held_replies_end_exact() {
    contributions_retire_survive(HOLD).await;
}
