//! Boards created, written to and dropped leave nothing behind: each board's write
//! committer ends with the board (and every committer with the store), so after 10,000
//! such boards the process has as many tasks as before and no more memory than after
//! the first half. This test has its own binary, so the tasks and memory are its own.

#[path = "common/tasks.rs"]
mod tasks;
#[path = "common/redis.rs"]
mod test_redis;

use std::sync::Arc;

use rollboard::{
    BoardConfig, IngestOptions, ManualClock, RedisOptions, Rollboard, Settings, Timestamp,
};
use tasks::{alive_tasks, settle};
use test_redis::{TestRedis, unique};

/// The resident set of this process now, in kB (`VmRSS`).
fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn ten_thousand_boards_created_written_and_dropped_leave_tasks_and_memory_flat() {
    let redis = TestRedis::start().await;
    // Committers that never idle: each ends with its board, or with the store.
    let store = redis
        .store_with(RedisOptions {
            ingest: IngestOptions {
                committer_idle: std::time::Duration::from_secs(3600),
                ..IngestOptions::default()
            },
            ..test_redis::test_options()
        })
        .await;
    let clock = ManualClock::new(Timestamp::from_unix_seconds(1_699_999_200).unwrap());
    let boards = Rollboard::with(store.clone(), Arc::new(clock), Settings::default());
    let config = BoardConfig::parse("1m", &["1m", "2m"]).unwrap();
    // The store's own connection task.
    let before = alive_tasks();
    let mut rss = Vec::new();
    for round in 0..2 {
        for i in 0..5_000 {
            let name = unique(&format!("c{round}-{i}-"));
            boards.create(&name, config.clone()).await.unwrap();
            boards.windowed(&name).incr("a", 1, None).await.unwrap();
            if i == 0 {
                // One committer per board written to, while the board lives.
                assert_eq!(alive_tasks(), before + 1);
            }
            boards.drop_board(&name).await.unwrap();
        }
        // Committers apply what they hold, then end: wait for the last one.
        settle(before).await;
        assert_eq!(alive_tasks(), before, "round {round}");
        rss.push(rss_kb());
    }
    // A committer left behind per board costs ~5.7 kB: 28 MB per round.
    eprintln!("resident memory after each half: {rss:?} kB");
    let grown = rss[1].saturating_sub(rss[0]);
    assert!(grown < 4_000, "memory grew by {grown} kB over 5,000 boards");

    // Boards that live on keep their committers until the store goes.
    for i in 0..3 {
        let name = unique(&format!("live-{i}-"));
        boards.create(&name, config.clone()).await.unwrap();
        boards.windowed(&name).incr("a", 1, None).await.unwrap();
    }
    assert_eq!(alive_tasks(), before + 3);
    drop(boards);
    drop(store);
    // Nothing else runs on this test's runtime.
    settle(0).await;
    assert_eq!(alive_tasks(), 0);
}
