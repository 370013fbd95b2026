//! `rollboard retract` of a brigade's 10,000 likes over 20 boards, killed with SIGKILL
//! half-way while six writers and two retirers go on, then run again: it takes back
//! exactly what was left, and every window of every board equals what the other
//! contributors' likes alone make (the brigade's never written), budgets included.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rollboard::{BoardConfig, Clock, Event, ManualClock, Rollboard, Settings, Span, Timestamp};

use crate::test_redis::{TestRedis, unique};

const BOARDS: usize = 20;
const POSTS: usize = 500;
const WINDOWS: [&str; 2] = ["1h", "24h"];

/// Index fields of the brigade's pairs left on `boards` (what a retraction walks).
async fn pairs_left(raw: &mut redis::aio::MultiplexedConnection, boards: &[String]) -> u64 {
    let mut left = 0;
    for board in boards {
        let count: u64 = redis::cmd("EVAL")
            .arg(
                "local n = 0 for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do \
                 if string.match(f, '^@%d+\\n') then n = n + 1 end end return n",
            )
            .arg(1)
            .arg(format!("board_{{{board}}}:ctr:brigade"))
            .query_async(raw)
            .await
            .unwrap();
        left += count;
    }
    left
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retraction_killed_half_way_and_run_again_leaves_every_board_exact() {
    let redis = TestRedis::spawn().await;
    let start = Timestamp::now_utc().unix_seconds() / 3600 * 3600 - 7200;
    let clock = ManualClock::new(Timestamp::from_unix_seconds(start + 3600 + 120).unwrap());
    let boards = Rollboard::with(
        redis.store().await,
        Arc::new(clock.clone()),
        Settings::default(),
    );
    // Half the boards cap each contributor at 1 per post, half give each a budget of 400
    // likes (the brigade's last 100 on such a board are refused).
    let names: Vec<String> = (0..BOARDS).map(|i| unique(&format!("brig{i}"))).collect();
    let mut configs = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let config = BoardConfig::parse("1h", &WINDOWS).unwrap();
        let config = if i % 2 == 0 {
            config.with_contributor_cap(Some(1)).unwrap()
        } else {
            config.with_contributor_budget(Some(400)).unwrap()
        };
        boards.create(name, config.clone()).await.unwrap();
        configs.push(config);
    }
    // The brigade: 500 likes a board, one per post, in one of two slots an hour apart.
    for (i, name) in names.iter().enumerate() {
        let at = Timestamp::from_unix_seconds(start + 60 + 3600 * (i as i64 / 2 % 2)).unwrap();
        let events: Vec<Event> = (0..POSTS)
            .map(|p| Event::new(format!("post:{p}"), 1).by("brigade").at(at))
            .collect();
        let outcome = boards.windowed(name).incr_batch(&events).await.unwrap();
        assert_eq!(outcome.accepted, POSTS);
    }
    let mut raw = redis.raw().await;
    assert_eq!(pairs_left(&mut raw, &names).await, (BOARDS * POSTS) as u64);

    // Six writers (each like by a contributor of its own, counted in full) and two
    // retirers, from before the first run to after the second; the clock crosses an hour
    // boundary meanwhile.
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..6u64 {
        let (boards, names, stop) = (boards.clone(), names.clone(), stop.clone());
        let clock = clock.clone();
        writers.push(tokio::spawn(async move {
            let mut written: Vec<(usize, String, i64)> = Vec::new();
            let mut n = w;
            while !stop.load(Ordering::Relaxed) {
                n = n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let board = (n >> 33) as usize % BOARDS;
                let member = format!("post:{}", (n >> 17) as usize % POSTS);
                let now = clock.now();
                let slot = now.unix_seconds() / 3600 * 3600;
                let by = format!("w{w}-{}", written.len());
                let event = Event::new(member.clone(), 1).by(by).at(now);
                let outcome = boards.windowed(&names[board]).incr_batch(&[event]).await;
                assert_eq!(outcome.unwrap().accepted, 1);
                written.push((board, member, slot));
            }
            written
        }));
    }
    let mut retirers = Vec::new();
    for _ in 0..2 {
        let (boards, names, stop) = (boards.clone(), names.clone(), stop.clone());
        retirers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                for name in &names {
                    boards.windowed(name).retire(None).await.unwrap();
                }
            }
        }));
    }

    let mut first = Command::new(env!("CARGO_BIN_EXE_rollboard"))
        .args(["retract", "brigade"])
        .env("REDIS_URL", &redis.url)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut left = (BOARDS * POSTS) as u64;
    for _ in 0..20_000 {
        left = pairs_left(&mut raw, &names).await;
        if left < (BOARDS * POSTS / 2) as u64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // SIGKILL, as `kill -9` sends it.
    first.kill().unwrap();
    first.wait().unwrap();
    let at_kill = pairs_left(&mut raw, &names).await;
    eprintln!(
        "killed with {left} then {at_kill} of {} pairs left",
        BOARDS * POSTS
    );
    assert!(
        at_kill > 0 && at_kill < (BOARDS * POSTS) as u64,
        "the kill came half-way: {at_kill} left"
    );
    clock.set(Timestamp::from_unix_seconds(start + 2 * 3600 + 60).unwrap());

    let second = Command::new(env!("CARGO_BIN_EXE_rollboard"))
        .args(["retract", "brigade"])
        .env("REDIS_URL", &redis.url)
        .output()
        .unwrap();
    assert!(second.status.success(), "{second:?}");
    let printed = String::from_utf8_lossy(&second.stdout).into_owned();
    assert!(
        printed.starts_with(&format!(
            "took back {at_kill} contributions ({at_kill} events)"
        )),
        "{printed}"
    );
    assert_eq!(pairs_left(&mut raw, &names).await, 0);

    stop.store(true, Ordering::Relaxed);
    for r in retirers {
        r.await.unwrap();
    }
    let mut written = Vec::new();
    for w in writers {
        written.extend(w.await.unwrap());
    }
    assert!(
        written.len() > 100,
        "{} likes written meanwhile",
        written.len()
    );
    for name in &names {
        boards.windowed(name).retire(None).await.unwrap();
    }

    // Every window of every board: the writers' likes inside it, each counted once.
    let now = clock.now();
    for (b, name) in names.iter().enumerate() {
        let config = &configs[b];
        for (j, window) in WINDOWS.iter().enumerate() {
            let cutoff = config.cutoff(j, now);
            let mut expected: BTreeMap<String, i64> = BTreeMap::new();
            for (_, member, _) in written
                .iter()
                .filter(|(board, _, slot)| *board == b && *slot > cutoff)
            {
                *expected.entry(member.clone()).or_default() += 1;
            }
            let w = Span::parse(window).unwrap();
            let top = boards.windowed(name).top(Some(w), 0, 1_000).await.unwrap();
            let read: BTreeMap<String, i64> = top
                .entries
                .into_iter()
                .map(|e| (e.member, e.score))
                .collect();
            assert_eq!(read, expected, "{name} {window}");
        }
    }
    let view = boards.contributions("brigade", None).await.unwrap();
    assert_eq!(view.boards.len(), BOARDS);
    for board in &view.boards {
        assert!(
            board.windows.iter().all(|w| w.members.is_empty()),
            "{board:?}"
        );
    }
    let ctrs: Vec<String> = redis::cmd("KEYS")
        .arg("*:ctr:brigade")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(ctrs, Vec::<String>::new(), "nothing of the brigade is kept");
}
