//! `min_replica_acks` on one Redis with one replica: a write is acknowledged once the
//! replica has it; while the replica is stopped and its link cut, a write is applied on
//! the master but answered [`Error::WriteUncertain`] (sum boards, max boards, counters
//! alike), and sent again under its idempotency key once the replica is back, it is
//! acknowledged and counted once. The replica, promoted, holds every acknowledged write.

use std::sync::Arc;
use std::time::Duration;

use rollboard::{
    Aggregate, BoardConfig, Error, Event, RedisOptions, RedisStore, ReplicaAcks, Span,
};

use crate::support::{TestRedis, clock, ranking, unique, with_clock};

/// `redis-cli`-like: one command on `redis`, its reply.
async fn cmd<T: redis::FromRedisValue>(redis: &TestRedis, args: &[&str]) -> T {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query_async(&mut redis.raw().await).await.unwrap()
}

/// `INFO replication` of `redis`, waited on until it says `ready`.
async fn wait_replication(redis: &TestRedis, ready: &str) {
    for _ in 0..400 {
        let info: String = cmd(redis, &["INFO", "replication"]).await;
        if info.contains(ready) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("replication never said {ready}");
}

/// The process id of the server.
async fn pid(redis: &TestRedis) -> String {
    let info: String = cmd(redis, &["INFO", "server"]).await;
    info.lines()
        .find_map(|l| l.trim().strip_prefix("process_id:"))
        .unwrap()
        .to_owned()
}

fn signal(pid: &str, signal: &str) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid)
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_waits_for_its_replica_and_is_uncertain_while_the_replica_is_away() {
    let master = TestRedis::spawn().await;
    let replica = TestRedis::spawn().await;
    let port = master.url.rsplit(':').next().unwrap().trim_end_matches('/');
    let _: () = cmd(&replica, &["REPLICAOF", "127.0.0.1", port]).await;
    wait_replication(&replica, "master_link_status:up").await;

    let acks = ReplicaAcks {
        min: 1,
        timeout: Duration::from_millis(150),
    };
    let options = RedisOptions {
        replica_acks: acks,
        ..RedisOptions::default()
    };
    let store = RedisStore::connect_with(&master.url, options)
        .await
        .unwrap();
    let clock = clock();
    let boards = with_clock(Arc::new(store), &clock);
    let (sums, maxima) = (unique("acks-sum"), unique("acks-max"));
    let config = BoardConfig::parse("1h", &["1h", "24h"]).unwrap();
    boards.create_board(&sums, config.clone()).await.unwrap();
    boards
        .create_board(&maxima, config.with_aggregate(Aggregate::Max))
        .await
        .unwrap();

    // With the replica up: acknowledged.
    let first = [Event::new("a", 3), Event::new("b", 5)];
    assert_eq!(boards.incr_batch(&sums, &first).await.unwrap().accepted, 2);
    let best = boards.incr_batch(&maxima, &[Event::value("a", 40)]).await;
    assert_eq!(best.unwrap().accepted, 1);
    boards.incr_counter("acks-views", 7, None).await.unwrap();

    // The replica stopped and its link cut: every kind of write is applied on the
    // master and answered uncertain, after the timeout.
    let replica_pid = pid(&replica).await;
    signal(&replica_pid, "STOP");
    let _: i64 = cmd(&master, &["CLIENT", "KILL", "TYPE", "replica"]).await;
    let message = "write uncertain: Redis applied it, but only 0 of the 1 replicas asked \
                   for (min_replica_acks) confirmed it within 150 ms, so a failover could \
                   still lose it; send it again with the same Idempotency-Key to have it \
                   counted once (without a key it may count twice)";
    let second = [Event::new("a", 10)];
    let started = std::time::Instant::now();
    assert_eq!(
        boards.write_idempotent(&sums, &second, "k-2").await,
        Err(Error::WriteUncertain(message.into()))
    );
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(
        boards.incr_batch(&maxima, &[Event::value("a", 90)]).await,
        Err(Error::WriteUncertain(message.into()))
    );
    assert_eq!(
        boards.incr_counter("acks-views", 1, None).await,
        Err(Error::WriteUncertain(message.into()))
    );
    let day = Some(Span::parse("24h").unwrap());
    assert_eq!(
        ranking(&boards.top(&sums, day, 0, 10).await.unwrap()),
        [("a".into(), 13), ("b".into(), 5)],
        "applied on the master"
    );

    // The replica back: the same key again is a replay, acknowledged, counted once.
    signal(&replica_pid, "CONT");
    wait_replication(&replica, "master_link_status:up").await;
    assert_eq!(
        boards
            .write_idempotent(&sums, &second, "k-2")
            .await
            .unwrap()
            .accepted,
        1
    );

    // The replica, promoted, has every acknowledged write (and the uncertain ones, which
    // reached it once it was back).
    let _: () = cmd(&replica, &["REPLICAOF", "NO", "ONE"]).await;
    let promoted = with_clock(
        Arc::new(RedisStore::connect(&replica.url).await.unwrap()),
        &clock,
    );
    assert_eq!(
        ranking(&promoted.top(&sums, day, 0, 10).await.unwrap()),
        [("a".into(), 13), ("b".into(), 5)]
    );
    assert_eq!(
        ranking(&promoted.top(&maxima, day, 0, 10).await.unwrap()),
        [("a".into(), 90)]
    );
}

#[tokio::test]
async fn without_the_option_a_write_is_acknowledged_with_no_replica_at_all() {
    let master = TestRedis::spawn().await;
    let store = RedisStore::connect(&master.url).await.unwrap();
    let boards = with_clock(Arc::new(store), &clock());
    let board = unique("acks-off");
    boards
        .create_board(&board, BoardConfig::parse("1h", &["1h"]).unwrap())
        .await
        .unwrap();
    let outcome = boards.incr_batch(&board, &[Event::new("a", 2)]).await;
    assert_eq!(outcome.unwrap().accepted, 1);
}
