//! Phase `replicaacks`: what `min_replica_acks` = 1 costs, with one replica of the
//! benchmark's Redis on this machine (a real replica is a network round trip away: add
//! it to the latencies). Through the library on a `1h`/`24h` board: a lone event's
//! latency p50 / p99 (2,000 sequential events), and batches of 100 (Zipf-skewed, 8 tasks)
//! in events/s, each with the option beside the same without it, alternated twice; the
//! board's totals join the run's exactness check.

use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rollboard::{BoardConfig, Event, RedisOptions, RedisStore, ReplicaAcks, Rollboard};

use crate::load::{self, Load, Spread};
use crate::report::{Row, rate};
use crate::setup::{self, Redis};

const BOARD: &str = "bench-acks";

/// A replica of `redis`, in sync, killed when dropped.
struct Replica(Child);

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_replica(redis: &Redis) -> Replica {
    let (mut command, port) = setup::redis_server("bench-replica");
    let child = command
        .args(["--repl-diskless-sync-delay", "0"])
        .args(["--replicaof", "127.0.0.1", &redis.port.to_string()])
        .spawn()
        .expect("redis-server");
    let replica = Replica(child);
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
    for _ in 0..400 {
        if let Ok(mut c) = client.get_connection()
            && let Ok(info) = redis::cmd("INFO")
                .arg("replication")
                .query::<String>(&mut c)
            && info.contains("master_link_status:up")
        {
            return replica;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("the benchmark's replica did not sync");
}

async fn library(url: &str, acks: ReplicaAcks) -> Rollboard {
    let options = RedisOptions {
        replica_acks: acks,
        ..setup::store_options()
    };
    Rollboard::new(Arc::new(
        RedisStore::connect_with(url, options).await.unwrap(),
    ))
}

/// A lone event's latency, 2,000 in a row.
async fn lone(boards: &Rollboard) -> Load {
    let mut load = Load::default();
    for i in 0..2000 {
        let t = Instant::now();
        boards
            .windowed(BOARD)
            .incr(&format!("lone:{}", i % 100), 1, None)
            .await
            .unwrap();
        load.latencies.push(t.elapsed());
    }
    load
}

/// The rows, and the board with the events it acknowledged (for the exactness check).
pub async fn replica_acks(redis: &Redis, phase: Duration) -> (Vec<Row>, (String, u64)) {
    let _replica = start_replica(redis);
    let plain = library(&redis.url, ReplicaAcks::default()).await;
    let acked = library(
        &redis.url,
        ReplicaAcks {
            min: 1,
            timeout: Duration::from_secs(1),
        },
    )
    .await;
    plain
        .create(BOARD, BoardConfig::parse("1h", &["1h", "24h"]).unwrap())
        .await
        .unwrap();
    let batches: Arc<Vec<Vec<Event>>> = Arc::new(
        (0..200)
            .map(|b| {
                load::member_ids(Spread::Zipf, 100, 7000 + b)
                    .into_iter()
                    .map(|m| Event::new(format!("post:{m}"), 1))
                    .collect()
            })
            .collect(),
    );
    // [without, with] for each figure, over two alternations.
    let (mut lones, mut ingest) = ([Load::default(), Load::default()], [0.0f64; 2]);
    let mut done = 0;
    for _ in 0..2 {
        for (i, boards) in [&plain, &acked].into_iter().enumerate() {
            let alone = lone(boards).await;
            done += alone.latencies.len() as u64;
            lones[i].merge(alone);
            let load =
                load::library_batches(boards.clone(), BOARD, batches.clone(), 8, phase / 2).await;
            ingest[i] += load.per_second() / 2.0;
            done += load.done;
        }
    }
    let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1000.0);
    let mut rows = Vec::new();
    for (p, name) in [(50.0, "p50"), (99.0, "p99")] {
        let (without, with) = (lones[0].percentile(p), lones[1].percentile(p));
        rows.push(Row {
            figure: format!("a lone event, min_replica_acks 1 (local replica), {name}"),
            measured: ms(with),
            reference: format!("without {}", ms(without)),
            ratio: Some(with.as_secs_f64() / without.as_secs_f64()),
            target: None,
        });
    }
    rows.push(Row {
        figure: "batches of 100, Zipf, 8 tasks, min_replica_acks 1".into(),
        measured: rate(ingest[1], "ev/s"),
        reference: format!("without {}", rate(ingest[0], "ev/s")),
        ratio: Some(ingest[1] / ingest[0]),
        target: None,
    });
    (rows, (BOARD.to_owned(), done))
}
