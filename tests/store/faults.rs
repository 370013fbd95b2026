//! Dropped and late replies: a proxy between the store and Redis forwards a chosen call
//! and then cuts the connection before its reply arrives, or holds the reply past the
//! client's timeout. After the caller retries as a real user would (or the next pass
//! runs), every total equals the oracle exactly: a call Redis ran is applied once.

use std::sync::Arc;
use std::time::Duration;

use rollboard::{
    BoardConfig, Clock, Error, Event, ManualClock, RedisOptions, RedisStore, Rollboard, Settings,
};

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
    async fn start() -> Faulty {
        let redis = TestRedis::start().await;
        let proxy = FaultProxy::start(&redis.url).await;
        let store = RedisStore::connect_with(
            &proxy.url(),
            RedisOptions {
                response_timeout: TIMEOUT,
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
        self.boards
            .create_board(&name, config.clone())
            .await
            .unwrap();
        (name, Oracle::new(config))
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
                self.boards.incr_batch(board, chunk).await.unwrap();
            }
            for e in &events {
                oracle.record(START + hour * 3600, &e.member, e.delta);
            }
        }
    }

    /// Every window's ranking equals the oracle's, and the keys keep their invariants.
    async fn assert_exact(&self, board: &str, oracle: &Oracle) {
        let now = self.clock.now();
        for (j, window) in oracle.config.windows().iter().enumerate() {
            let got = full_ranking(&self.boards, board, &window.to_string()).await;
            assert_same(&got, &oracle.ranking(j, now), &format!("window {window}"));
        }
        let mut raw = self.redis.raw().await;
        check_redis_invariants(&mut raw, board, &oracle.config, None).await;
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
            .top(board, Some(window.parse().unwrap()), all.len() as u64, 1000)
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

async fn recompute_scan_survives(fault: Fault) {
    let f = Faulty::start().await;
    let (b, mut oracle) = f.board("1h", &["3h"]).await;
    // Three slots of 5,000 members: every hash takes several scan calls.
    f.fill(&b, &mut oracle, 3, 5_000).await;
    f.proxy.arm(fault, 1, recompute_scan(&b));
    let report = f.boards.recompute(&b, None).await.unwrap();
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
    recompute_scan_survives(Fault::Cut).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recompute_scan_with_a_held_reply_adds_each_field_once() {
    recompute_scan_survives(HOLD).await;
}
