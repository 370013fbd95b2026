//! `rollboard serve` killed with SIGKILL in the middle of retiring a slot of 200,000
//! members, then started again: the retirement finishes, and the board is exact (every
//! member subtracted from the small window once, and handed on to the large one once).

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rollboard::{BoardConfig, Clock, Event, ManualClock, Rollboard, Settings, SystemClock};

use crate::test_redis::{TestRedis, unique};

const MEMBERS: usize = 200_000;

fn serve(redis: &TestRedis) -> Child {
    Command::new(env!("CARGO_BIN_EXE_rollboard"))
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("REDIS_URL", &redis.url)
        .env_remove("ROLLBOARD_WRITE_TOKEN")
        .env_remove("ROLLBOARD_ADMIN_TOKEN")
        .env_remove("ROLLBOARD_BIND")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

async fn zcard(raw: &mut redis::aio::MultiplexedConnection, key: &str) -> u64 {
    redis::cmd("ZCARD").arg(key).query_async(raw).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_killed_mid_retirement_finishes_it_exactly_when_started_again() {
    let redis = TestRedis::spawn().await;
    // Written two hours ago (a manual clock), so the service, on the real clock, finds
    // the slot overdue for the 1h window and still inside the 24h one.
    let now = SystemClock.now();
    let clock = ManualClock::new(
        rollboard::Timestamp::from_unix_seconds(now.unix_seconds() - 7200).unwrap(),
    );
    let boards = Rollboard::with(
        redis.store().await,
        Arc::new(clock.clone()),
        Settings::default(),
    );
    let name = unique("big");
    boards
        // Plain slots: the test reads a stage's one hash. Half-hour slots: window 1 is
        // two slots long, so it retires in chunks (one slot long, it would swap the slot
        // out in one atomic call, with no middle to kill it in).
        .create(
            &name,
            BoardConfig::parse("30m", &["1h", "24h"])
                .unwrap()
                .with_layout(Some(rollboard::Layout::Plain)),
        )
        .await
        .unwrap();
    let members: Vec<String> = (0..MEMBERS).map(|i| format!("m{i}")).collect();
    for chunk in members.chunks(10_000) {
        let events: Vec<Event> = chunk.iter().map(|m| Event::new(m.clone(), 1)).collect();
        let outcome = boards.windowed(&name).incr_batch(&events).await.unwrap();
        assert_eq!(outcome.accepted, chunk.len());
    }
    let small = format!("stats_{{{name}}}");
    let large = format!("stats_{{{name}}}_86400");
    let mut raw = redis.raw().await;
    assert_eq!(zcard(&mut raw, &small).await, MEMBERS as u64);

    // The service retires at start; kill it once half the slot is subtracted.
    let mut first = serve(&redis);
    let mut left = MEMBERS as u64;
    for _ in 0..20_000 {
        left = zcard(&mut raw, &small).await;
        if left < MEMBERS as u64 / 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Command::new("kill")
        .args(["-9", &first.id().to_string()])
        .status()
        .unwrap();
    first.wait().unwrap();
    let at_kill = zcard(&mut raw, &small).await;
    eprintln!("killed with {left} then {at_kill} of {MEMBERS} members left in the 1h window");
    assert!(
        at_kill > 0 && at_kill < MEMBERS as u64,
        "the kill came in the middle of the retirement: {at_kill} left"
    );

    let mut second = serve(&redis);
    let mut finished = false;
    for _ in 0..600 {
        if zcard(&mut raw, &small).await == 0 {
            finished = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Command::new("kill")
        .args(["-TERM", &second.id().to_string()])
        .status()
        .unwrap();
    second.wait().unwrap();
    assert!(
        finished,
        "the second service finished the retirement within 30 s"
    );

    // Exact: nothing left (or negative) in the 1h totals, every member once in the 24h
    // totals and in the slot's stage for the 24h window.
    let boards = Rollboard::redis(&redis.url).await.unwrap();
    let status = boards.describe_board(&name).await.unwrap();
    assert_eq!(status.live_slots, 1);
    assert_eq!(zcard(&mut raw, &small).await, 0);
    assert_eq!(zcard(&mut raw, &large).await, MEMBERS as u64);
    let ones: u64 = redis::cmd("ZCOUNT")
        .arg(&large)
        .arg(1)
        .arg(1)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(ones, MEMBERS as u64, "every 24h total is 1");
    let slot = clock.now().unix_seconds() / 1800 * 1800;
    let stage0: u64 = redis::cmd("HLEN")
        .arg(format!("slot_{{{name}}}_{slot}"))
        .query_async(&mut raw)
        .await
        .unwrap();
    // The stage's field count and the sum of its values, in one script.
    let (fields, sum): (u64, i64) = redis::cmd("EVAL")
        .arg(
            "local n, s = 0, 0 for _, v in ipairs(redis.call('HVALS', KEYS[1])) do \
             n = n + 1 s = s + tonumber(v) end return {n, s}",
        )
        .arg(1)
        .arg(format!("slot_{{{name}}}_{slot}_1"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(stage0, 0, "the 1h stage is handed on entirely");
    assert_eq!(
        (fields, sum),
        (MEMBERS as u64, MEMBERS as i64),
        "each member handed on once"
    );
}
