//! Acknowledged means durable: a Redis with `appendonly yes` and `appendfsync always` is
//! killed with SIGKILL while writers post events, and started again on the same port
//! and files. Every acknowledged event is counted afterwards (a write answered
//! `store_unavailable` may or may not have been), and the store reconnects by itself:
//! the same writers get through again with nothing restarted on rollboard's side. The
//! board is watched: its changes, replayed from the first, give each watched top.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use rollboard::{BoardConfig, RedisOptions, RedisStore, Rollboard, Watch};

use crate::cluster_load::Load;
use crate::support::{clock, unique, with_clock};
use crate::test_cluster::free_ports;

/// A `redis-server` with an append-only file fsynced at every write, under a shell that
/// kills it when the test drops the keeper (or the test process ends).
fn durable_redis(port: u16, dir: &Path) -> Child {
    let script = format!(
        "redis-server --port {port} --bind 127.0.0.1 --dir {dir} --save '' \
         --appendonly yes --appendfsync always --loglevel warning \
         --logfile {dir}/redis.log & pid=$!; cat >/dev/null; kill -9 $pid 2>/dev/null",
        dir = dir.display()
    );
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start redis-server")
}

/// `redis-cli -p <port> args…`, its output, if it answered.
fn cli(port: u16, args: &[&str]) -> Option<String> {
    let out = Command::new("redis-cli")
        .arg("-p")
        .arg(port.to_string())
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        .filter(|t| !t.starts_with("Could not") && !t.starts_with("LOADING"))
}

/// Whether the Redis on `port` answers `PING` within `tries` × 50 ms.
async fn up(port: u16, tries: u32) -> bool {
    for _ in 0..tries {
        if cli(port, &["PING"]).is_some_and(|o| o.trim() == "PONG") {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

async fn wait_up(port: u16) {
    assert!(
        up(port, 600).await,
        "redis-server on {port} did not start within 30 s"
    );
}

/// Starts the durable Redis on `port` again once the port is free: a process killed with
/// SIGKILL lets its socket go as it dies, which a loaded machine can delay, and then a
/// new server fails to bind (`Address already in use`, seen in its log). Tries again
/// while a start loses that race.
async fn restart(port: u16, dir: &Path) -> Child {
    for _ in 0..10 {
        for _ in 0..600 {
            if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let mut keeper = durable_redis(port, dir);
        if up(port, 200).await {
            return keeper;
        }
        drop(keeper.stdin.take());
        keeper.wait().unwrap();
    }
    panic!(
        "redis-server on {port} did not start again: see {}/redis.log",
        dir.display()
    );
}

/// The pid of the Redis on `port` (`INFO server`).
fn pid(port: u16) -> String {
    let info = cli(port, &["INFO", "server"]).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .unwrap()
        .trim()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_events_survive_a_kill_of_redis_with_appendfsync_always() {
    let port = free_ports(1)[0];
    let dir: PathBuf = std::env::temp_dir().join(unique("rollboard-aof-"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut keeper = durable_redis(port, &dir);
    wait_up(port).await;
    let store = RedisStore::connect_with(
        &format!("redis://127.0.0.1:{port}/"),
        RedisOptions {
            response_timeout: std::time::Duration::from_secs(5),
            ..RedisOptions::default()
        },
    )
    .await
    .unwrap();
    let clock = clock();
    let boards: Rollboard = with_clock(Arc::new(store), &clock);
    let name = unique("durable");
    // Watched, so its changes are checked too.
    let top = |w: &str| Watch::new(w.parse().unwrap(), 5).unwrap();
    let config = BoardConfig::parse("1h", &["1h", "24h"]).unwrap();
    let config = config.with_watch(vec![top("1h"), top("24h")]).unwrap();
    boards.create(&name, config).await.unwrap();

    let load = Load::start(&boards, &name);
    load.more(100).await;
    // SIGKILL: no shutdown, no last save; only what the AOF fsynced survives.
    let killed = Command::new("kill")
        .args(["-9", &pid(port)])
        .status()
        .unwrap();
    assert!(killed.success());
    drop(keeper.stdin.take());
    keeper.wait().unwrap();
    let mut keeper = restart(port, &dir).await;
    // The same store, not reconnected by the test, gets writes through again.
    load.more(100).await;
    let seen = load.stop().await;
    eprintln!(
        "durability: {} batches acknowledged, {} store_unavailable to writers, {} reads, {} \
         store_unavailable to the reader",
        seen.batches, seen.writes_unavailable, seen.reads, seen.reads_unavailable
    );
    assert!(
        seen.writes_unavailable > 0,
        "the kill was felt by the writers"
    );
    for window in ["1h", "24h"] {
        let top = boards
            .windowed(&name)
            .top(Some(window.parse().unwrap()), 0, 100)
            .await
            .unwrap();
        let got: BTreeMap<String, i64> = top
            .entries
            .iter()
            .map(|e| (e.member.clone(), e.score))
            .collect();
        for (member, acknowledged) in &seen.oracle {
            let unsure = seen.maybe.get(member).copied().unwrap_or(0);
            let total = got.get(member).copied().unwrap_or(0);
            assert!(
                (*acknowledged..=acknowledged + unsure).contains(&total),
                "window {window}, {member}: {total} counted, {acknowledged} acknowledged, \
                 {unsure} more answered unavailable"
            );
        }
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            seen.oracle.keys().collect::<Vec<_>>()
        );
        // The changes the AOF kept, replayed from the first, give the watched top: each
        // was recorded in the same atomic step as the write that caused it.
        let (mut tops, mut after) = (crate::watch::Tops::new(), None);
        let changes = crate::watch::read_changes(&boards, &name, &mut after).await;
        crate::watch::apply(&mut tops, &changes, 0);
        let w = window.parse().unwrap();
        let watched: BTreeMap<String, u64> = top
            .entries
            .iter()
            .take(5)
            .map(|e| (e.member.clone(), e.rank))
            .collect();
        assert_eq!(tops[&w], watched, "window {window}: the replayed top");
    }
    drop(keeper.stdin.take());
    keeper.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
