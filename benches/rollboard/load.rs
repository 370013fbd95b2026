//! Load generators: HTTP batches, HTTP single events, the library, top-10 readers.
//! Each runs `connections` loops for `duration` and counts what was acknowledged.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use rollboard::{Event, Rollboard};
use serde_json::{Value, json};

use crate::raw_http;

/// What a load run achieved.
#[derive(Debug, Default)]
pub struct Load {
    /// Events acknowledged (or reads answered).
    pub done: u64,
    pub elapsed: Duration,
    /// Per-request latencies.
    pub latencies: Vec<Duration>,
}

impl Load {
    pub fn per_second(&self) -> f64 {
        self.done as f64 / self.elapsed.as_secs_f64()
    }

    /// The `p`-th percentile latency (0..=100).
    pub fn percentile(&mut self, p: f64) -> Duration {
        self.latencies.sort_unstable();
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let at = ((p / 100.0) * (self.latencies.len() - 1) as f64).round() as usize;
        self.latencies[at]
    }

    pub fn merge(&mut self, other: Load) {
        self.done += other.done;
        self.latencies.extend(other.latencies);
    }
}

/// Members of the benchmark: 100,000 of them.
pub const MEMBERS: usize = 100_000;

/// Member ids drawn uniformly, or Zipf(s = 1.1) distributed (a few hot posts).
#[derive(Clone, Copy)]
pub enum Spread {
    Uniform,
    Zipf,
}

pub fn member_ids(spread: Spread, count: usize, seed: u64) -> Vec<usize> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    match spread {
        Spread::Uniform => (0..count).map(|_| rng.random_range(0..MEMBERS)).collect(),
        Spread::Zipf => {
            let zipf = Zipf::new(MEMBERS as f64, 1.1).unwrap();
            (0..count)
                .map(|_| zipf.sample(&mut rng) as usize - 1)
                .collect()
        }
    }
}

/// `bodies` request bodies of `per_body` events each (delta 1, now).
pub fn batch_bodies(spread: Spread, bodies: usize, per_body: usize) -> Vec<bytes::Bytes> {
    (0..bodies)
        .map(|b| {
            let events: Vec<Value> = member_ids(spread, per_body, b as u64)
                .into_iter()
                .map(|m| json!({"member": format!("post:{m}")}))
                .collect();
            bytes::Bytes::from(serde_json::to_vec(&json!({"events": events})).unwrap())
        })
        .collect()
}

/// An HTTP client for set-up requests (not for load).
pub fn client() -> reqwest::Client {
    reqwest::Client::new()
}

/// `connections` loops posting pre-built bodies (batches, or single events) for
/// `duration`.
pub async fn http_batches(
    url: &str,
    board: &str,
    bodies: Arc<Vec<bytes::Bytes>>,
    connections: usize,
    duration: Duration,
) -> Load {
    let host = url.trim_start_matches("http://").to_owned();
    let path = format!("/v1/boards/{board}/events");
    let requests: Arc<Vec<Vec<u8>>> = Arc::new(
        bodies
            .iter()
            .map(|b| raw_http::request("POST", &host, &path, b))
            .collect(),
    );
    run_connections(
        &host,
        connections,
        duration,
        move |c, round| requests[(c * 7919 + round) % requests.len()].clone(),
        |status, body| {
            assert_eq!(status, 200);
            let reply: Value = serde_json::from_slice(body).expect("JSON reply");
            // A batch's reply lists what it rejected; a single event's has no list.
            let rejected = reply.get("rejected").unwrap_or(&Value::Null);
            assert!(rejected.is_null() || *rejected == json!([]), "{reply}");
            reply["accepted"].as_u64().unwrap()
        },
    )
    .await
}

/// `connections` loops posting one event per request for `duration`.
pub async fn http_singles(url: &str, board: &str, connections: usize, duration: Duration) -> Load {
    http_singles_with(url, board, "", Spread::Uniform, connections, duration).await
}

/// [`http_singles`] with `query` after the path (`"?return=standing"`) and members
/// spread as `spread` says.
pub async fn http_singles_with(
    url: &str,
    board: &str,
    query: &str,
    spread: Spread,
    connections: usize,
    duration: Duration,
) -> Load {
    let host = url.trim_start_matches("http://").to_owned();
    let path = format!("/v1/boards/{board}/events{query}");
    let requests: Arc<Vec<Vec<u8>>> = Arc::new(
        member_ids(spread, 10_000, 99)
            .into_iter()
            .map(|m| {
                raw_http::request(
                    "POST",
                    &host,
                    &path,
                    format!("{{\"member\":\"post:{m}\"}}").as_bytes(),
                )
            })
            .collect(),
    );
    run_connections(
        &host,
        connections,
        duration,
        move |c, round| requests[(c * 131 + round) % requests.len()].clone(),
        |status, _| {
            assert_eq!(status, 200);
            1
        },
    )
    .await
}

/// `connections` keep-alive connections sending `request(connection, round)` in a loop
/// for `duration`; `count` reads each response and says how many events it acknowledged.
async fn run_connections(
    host: &str,
    connections: usize,
    duration: Duration,
    request: impl Fn(usize, usize) -> Vec<u8> + Send + Sync + Clone + 'static,
    count: impl Fn(u16, &[u8]) -> u64 + Send + Sync + Clone + 'static,
) -> Load {
    let start = Instant::now();
    let mut handles = Vec::new();
    for c in 0..connections {
        let (host, request, count) = (host.to_owned(), request.clone(), count.clone());
        handles.push(tokio::spawn(async move {
            let mut connection = raw_http::Connection::open(&host).await;
            let mut load = Load::default();
            let mut round = 0;
            while start.elapsed() < duration {
                let bytes = request(c, round);
                let t = Instant::now();
                let (status, body) = connection.send(&bytes).await;
                load.latencies.push(t.elapsed());
                load.done += count(status, &body);
                round += 1;
            }
            load
        }));
    }
    let mut total = Load::default();
    for h in handles {
        total.merge(h.await.unwrap());
    }
    total.elapsed = start.elapsed();
    total
}

/// `tasks` loops calling `incr_batch` with pre-built batches for `duration`.
pub async fn library_batches(
    boards: Rollboard,
    board: &str,
    batches: Arc<Vec<Vec<Event>>>,
    tasks: usize,
    duration: Duration,
) -> Load {
    let board = board.to_owned();
    run_loops(tasks, duration, move |c, round| {
        let (boards, board, batches) = (boards.clone(), board.clone(), batches.clone());
        async move {
            let batch = &batches[(c * 7919 + round) % batches.len()];
            let outcome = boards.windowed(&board).incr_batch(batch).await.unwrap();
            assert!(outcome.rejected.is_empty());
            outcome.accepted as u64
        }
    })
    .await
}

/// `connections` loops reading the top 10 until `stop` is set, each as fast as it can,
/// or, with `pace`, one read per `pace` (to measure latency without saturating Redis).
pub async fn top_readers(
    url: &str,
    board: &str,
    connections: usize,
    pace: Option<Duration>,
    stop: Arc<AtomicBool>,
) -> Load {
    let host = url.trim_start_matches("http://").to_owned();
    let request = raw_http::request(
        "GET",
        &host,
        &format!("/v1/boards/{board}/top?limit=10"),
        b"",
    );
    let start = Instant::now();
    let mut handles = Vec::new();
    for _ in 0..connections {
        let (host, request, stop) = (host.clone(), request.clone(), stop.clone());
        handles.push(tokio::spawn(async move {
            let mut connection = raw_http::Connection::open(&host).await;
            let mut load = Load::default();
            let mut ticks = pace.map(tokio::time::interval);
            while !stop.load(Ordering::SeqCst) {
                if let Some(ticks) = &mut ticks {
                    ticks.tick().await;
                }
                let t = Instant::now();
                let (status, _) = connection.send(&request).await;
                assert_eq!(status, 200);
                load.latencies.push(t.elapsed());
                load.done += 1;
            }
            load
        }));
    }
    let mut total = Load::default();
    for h in handles {
        total.merge(h.await.unwrap());
    }
    total.elapsed = start.elapsed();
    total
}

/// Runs `loops` concurrent loops of `step(loop, round)` for `duration`; each step returns
/// how many events it got acknowledged.
pub async fn run_loops<F, Fut>(loops: usize, duration: Duration, step: F) -> Load
where
    F: Fn(usize, usize) -> Fut + Send + Sync + Clone + 'static,
    Fut: std::future::Future<Output = u64> + Send,
{
    let start = Instant::now();
    let mut handles = Vec::new();
    for c in 0..loops {
        let step = step.clone();
        handles.push(tokio::spawn(async move {
            let mut load = Load::default();
            let mut round = 0;
            while start.elapsed() < duration {
                let t = Instant::now();
                load.done += step(c, round).await;
                load.latencies.push(t.elapsed());
                round += 1;
            }
            load
        }));
    }
    let mut total = Load::default();
    for h in handles {
        total.merge(h.await.unwrap());
    }
    total.elapsed = start.elapsed();
    total
}

/// Writes `events` to `board` through `boards` in batches of 1,000, `in_flight` batches at
/// once, each accepted whole (how the phases fill their boards).
pub async fn write_all(boards: &Rollboard, board: &str, events: &[Event], in_flight: usize) {
    for group in events.chunks(1000 * in_flight) {
        let writes: Vec<_> = group
            .chunks(1000)
            .map(|c| boards.windowed(board).incr_batch(c))
            .collect();
        for w in futures_util::future::join_all(writes).await {
            assert!(w.unwrap().rejected.is_empty());
        }
    }
}
