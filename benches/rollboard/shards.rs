//! Phase `shards`: one busy board on a local Redis Cluster of three masters, unsharded
//! and with `"shards": 3`, under the same load: batches of 100 Zipf-skewed events from 8
//! tasks on a `1h`/`24h` board while two readers ask for the top 10 and two for a
//! member's rank (paced, one read per 2 ms each). For each board: the busiest master's
//! share of the Redis time spent (`INFO commandstats`, every command's `usec`, summed
//! per master; target ≤ 0.4 with 3 shards, against 1.0 unsharded), the reads' p50 and
//! p99 (target: the sharded board's at most 2× the unsharded one's), ingest, and whether
//! its totals equal the events acknowledged. On this 2-core machine the three masters
//! share the cores: ingest cannot grow with the shards here; the share of work per
//! master is what carries to hardware with a core per master.

#[path = "../../tests/common/cluster.rs"]
mod cluster;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rollboard::{BoardConfig, Event, RedisStore, Rollboard};

use crate::load::{self, Load, Spread};
use crate::report::{Row, rate};
use crate::setup;

/// Reads per reader: one each 2 ms, to measure latency without saturating the masters.
const PACE: Duration = Duration::from_millis(2);

/// What one board's run measured.
struct Run {
    /// The busiest master's share of the Redis time.
    busiest: f64,
    /// Each master's Redis time, ms.
    per_master: Vec<f64>,
    ingest: f64,
    top: Load,
    rank: Load,
    exact: bool,
}

/// Every master's Redis time since its last `CONFIG RESETSTAT`, µs: the `usec` of every
/// command in `INFO commandstats`.
fn redis_time(ports: &[u16]) -> Vec<f64> {
    ports
        .iter()
        .map(|port| {
            let mut conn = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                .unwrap()
                .get_connection()
                .unwrap();
            let info: String = redis::cmd("INFO")
                .arg("commandstats")
                .query(&mut conn)
                .unwrap();
            info.lines()
                .filter_map(|l| l.split("usec=").nth(1))
                .filter_map(|rest| rest.split(',').next()?.parse::<f64>().ok())
                .sum()
        })
        .collect()
}

fn reset_stats(ports: &[u16]) {
    for port in ports {
        let mut conn = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .unwrap()
            .get_connection()
            .unwrap();
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query(&mut conn)
            .unwrap();
    }
}

/// Paced readers running `read` until `stop`.
async fn readers<F, Fut>(tasks: usize, stop: Arc<AtomicBool>, read: F) -> Load
where
    F: Fn(u64) -> Fut + Send + Sync + Clone + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let mut handles = Vec::new();
    for t in 0..tasks {
        let (stop, read) = (stop.clone(), read.clone());
        handles.push(tokio::spawn(async move {
            let mut load = Load::default();
            let mut ticks = tokio::time::interval(PACE);
            let mut i = t as u64;
            while !stop.load(Ordering::SeqCst) {
                ticks.tick().await;
                let start = Instant::now();
                read(i).await;
                load.latencies.push(start.elapsed());
                load.done += 1;
                i += tasks as u64;
            }
            load
        }));
    }
    let mut total = Load::default();
    for h in handles {
        total.merge(h.await.unwrap());
    }
    total
}

/// The sum of every total of `board`'s first window, read page by page.
async fn total(boards: &Rollboard, board: &str) -> u64 {
    let mut sum = 0;
    let mut offset = 0;
    loop {
        let page = boards
            .windowed(board)
            .top(None, offset, 1000)
            .await
            .unwrap();
        if page.entries.is_empty() {
            return sum;
        }
        offset += page.entries.len() as u64;
        sum += page.entries.iter().map(|e| e.score as u64).sum::<u64>();
    }
}

async fn run(
    boards: &Rollboard,
    ports: &[u16],
    board: &str,
    shards: u32,
    batches: Arc<Vec<Vec<Event>>>,
    phase: Duration,
) -> Run {
    let config = BoardConfig::parse("1h", &["1h", "24h"])
        .unwrap()
        .with_shards(shards)
        .unwrap();
    boards.create(board, config).await.unwrap();
    reset_stats(ports);
    let stop = Arc::new(AtomicBool::new(false));
    let tops = {
        let (boards, board) = (boards.clone(), board.to_owned());
        tokio::spawn(readers(2, stop.clone(), move |_| {
            let (boards, board) = (boards.clone(), board.clone());
            async move {
                boards.windowed(&board).top(None, 0, 10).await.unwrap();
            }
        }))
    };
    let ranks = {
        let (boards, board) = (boards.clone(), board.to_owned());
        let members = Arc::new(load::member_ids(Spread::Zipf, 1000, 4242));
        tokio::spawn(readers(2, stop.clone(), move |i| {
            let (boards, board, members) = (boards.clone(), board.clone(), members.clone());
            async move {
                let member = format!("post:{}", members[i as usize % members.len()]);
                boards.windowed(&board).score(&member, None).await.unwrap();
            }
        }))
    };
    let ingest = load::library_batches(boards.clone(), board, batches, 8, phase).await;
    stop.store(true, Ordering::SeqCst);
    let (top, rank) = (tops.await.unwrap(), ranks.await.unwrap());
    let per_master = redis_time(ports);
    let busiest = per_master.iter().cloned().fold(0.0, f64::max) / per_master.iter().sum::<f64>();
    let exact = total(boards, board).await == ingest.done;
    Run {
        busiest,
        per_master: per_master.iter().map(|us| us / 1000.0).collect(),
        ingest: ingest.per_second(),
        top,
        rank,
        exact,
    }
}

pub async fn shards(phase: Duration) -> Vec<Row> {
    let cluster = cluster::TestCluster::start(3);
    let store = RedisStore::connect_cluster_with(&cluster.urls, setup::store_options())
        .await
        .unwrap();
    let boards = Rollboard::new(Arc::new(store));
    let batches: Arc<Vec<Vec<Event>>> = Arc::new(
        (0..200)
            .map(|b| {
                load::member_ids(Spread::Zipf, 100, 9100 + b)
                    .into_iter()
                    .map(|m| Event::new(format!("post:{m}"), 1))
                    .collect()
            })
            .collect(),
    );
    let mut flat = run(
        &boards,
        &cluster.ports,
        "bench-flat",
        1,
        batches.clone(),
        phase,
    )
    .await;
    let mut sharded = run(&boards, &cluster.ports, "bench-sharded", 3, batches, phase).await;

    let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1000.0);
    let split = |r: &Run| {
        let parts: Vec<String> = r.per_master.iter().map(|t| format!("{t:.0}")).collect();
        format!("{:.2} (ms per master {})", r.busiest, parts.join(" / "))
    };
    let mut rows = vec![
        Row {
            figure: "busiest master's share of Redis time, 1 shard (3-master cluster)".into(),
            measured: split(&flat),
            reference: String::new(),
            ratio: None,
            target: None,
        },
        Row {
            figure: "busiest master's share of Redis time, 3 shards".into(),
            measured: split(&sharded),
            reference: format!("1 shard {:.2}", flat.busiest),
            ratio: Some(sharded.busiest / flat.busiest),
            target: Some(("≤ 0.4".into(), sharded.busiest <= 0.4)),
        },
    ];
    for (name, pick) in [
        (
            "top-10",
            (|r: &mut Run| &mut r.top) as fn(&mut Run) -> &mut Load,
        ),
        ("member rank", |r: &mut Run| &mut r.rank),
    ] {
        for p in [50.0, 99.0] {
            let (one, three) = (
                pick(&mut flat).percentile(p),
                pick(&mut sharded).percentile(p),
            );
            let ratio = three.as_secs_f64() / one.as_secs_f64();
            rows.push(Row {
                figure: format!("{name} read p{p:.0} under writes, 3 shards"),
                measured: ms(three),
                reference: format!("1 shard {}", ms(one)),
                ratio: Some(ratio),
                target: Some(("≤ 2×".into(), ratio <= 2.0)),
            });
        }
    }
    rows.push(Row {
        figure: "batches of 100, Zipf, 8 tasks, 3 shards (cores shared by the masters)".into(),
        measured: rate(sharded.ingest, "ev/s"),
        reference: format!("1 shard {}", rate(flat.ingest, "ev/s")),
        ratio: Some(sharded.ingest / flat.ingest),
        target: None,
    });
    rows.push(Row {
        figure: "totals equal the acknowledged events, both boards".into(),
        measured: format!("{} and {}", flat.exact, sharded.exact),
        reference: String::new(),
        ratio: None,
        target: Some(("exact".into(), flat.exact && sharded.exact)),
    });
    rows
}
