//! Phase `rates`: rate windows through the library on Redis: hits in batches of 1000
//! over 100k keys (Zipf-skewed, s = 1.1, as users are: about 480 keys a batch; and
//! uniform, about 995 keys a batch), 8 batches in flight, against the `HINCRBY` ceiling;
//! where the time of each went (Redis's script time and CPU, the client's CPU, per hit);
//! checks (64 in flight) with their p99, with partial and with full coverage (the
//! limiter that counts the window's oldest slot whole), and the memory of one busy key
//! with every tier populated.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use rollboard::{Coverage, RedisStore, Rollboard, Timestamp};

use crate::load::Load;
use crate::report::{Row, rate};

const KEYS: usize = 100_000;

async fn library(url: &str) -> Rollboard {
    Rollboard::new(Arc::new(RedisStore::connect(url).await.unwrap()))
}

/// Where a phase's time went: Redis's script time and CPU (`INFO`), and this
/// process's CPU (`/proc/self/stat`, the load generator and the library together).
#[derive(Debug, Default, Clone, Copy)]
struct Meter {
    evalsha_calls: u64,
    evalsha_usec: u64,
    /// Calls of the commands the scripts run: BITFIELD, SETRANGE, PEXPIRE, SET (a
    /// fresh key written whole).
    inner: [u64; 4],
    redis_cpu: f64,
    client_cpu: f64,
}

impl Meter {
    async fn read(conn: &mut redis::aio::MultiplexedConnection) -> Meter {
        let info: String = redis::cmd("INFO")
            .arg("all")
            .query_async(conn)
            .await
            .unwrap();
        let stat_of = |command: &str, name: &str| -> u64 {
            info.lines()
                .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:")))
                .unwrap_or("")
                .split(',')
                .find_map(|kv| kv.strip_prefix(name))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        let stat = |name: &str| stat_of("evalsha", name);
        let cpu = |name: &str| -> f64 {
            info.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0.0)
        };
        Meter {
            evalsha_calls: stat("calls="),
            evalsha_usec: stat("usec="),
            inner: ["bitfield", "setrange", "pexpire", "set"].map(|c| stat_of(c, "calls=")),
            redis_cpu: cpu("used_cpu_user") + cpu("used_cpu_sys"),
            client_cpu: own_cpu_seconds(),
        }
    }

    /// "µs of script time per hit, hits per call, the scripts' commands per hit, Redis
    /// CPU % of wall, client CPU µs per hit".
    fn since(&self, before: &Meter, load: &Load) -> String {
        let hits = load.done.max(1) as f64;
        let wall = load.elapsed.as_secs_f64();
        let calls = (self.evalsha_calls - before.evalsha_calls).max(1) as f64;
        let per_hit = |i: usize| (self.inner[i] - before.inner[i]) as f64 / hits;
        format!(
            "Redis {:.2} µs/hit in scripts ({:.0} hits/call; per hit {:.2} BITFIELD, \
             {:.2} SETRANGE, {:.2} PEXPIRE, {:.2} SET), Redis CPU {:.0}% of wall; \
             client CPU {:.2} µs/hit",
            (self.evalsha_usec - before.evalsha_usec) as f64 / hits,
            hits / calls,
            per_hit(0),
            per_hit(1),
            per_hit(2),
            per_hit(3),
            100.0 * (self.redis_cpu - before.redis_cpu) / wall,
            1e6 * (self.client_cpu - before.client_cpu) / hits,
        )
    }
}

/// This process's user + system CPU seconds (0 where `/proc` is missing).
fn own_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces): utime and stime are the
    // 12th and 13th, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (tick(11) + tick(12)) / 100.0
}

/// Batches of 1000 hits, 8 batches in flight, for `phase`; keys Zipf-skewed or uniform.
/// With the breakdown of [`Meter::since`].
async fn hits(url: &str, phase: Duration, skewed: bool) -> (Load, String) {
    let boards = library(url).await;
    let mut conn = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let before = Meter::read(&mut conn).await;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..8u64 {
        let boards = boards.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(t);
            let zipf = Zipf::new(KEYS as f64, 1.1).unwrap();
            let mut load = Load::default();
            while start.elapsed() < phase {
                let batch: Vec<(String, u64, Option<Timestamp>)> = (0..1000)
                    .map(|_| {
                        let user = if skewed {
                            zipf.sample(&mut rng) as usize - 1
                        } else {
                            rng.random_range(0..KEYS)
                        };
                        (format!("user:{user}"), 1, None)
                    })
                    .collect();
                let done = boards.rates().hits(&batch).await.unwrap();
                load.done += done.iter().filter(|r| r.is_ok()).count() as u64;
            }
            load
        }));
    }
    let mut total = Load::default();
    for t in tasks {
        total.done += t.await.unwrap().done;
    }
    total.elapsed = start.elapsed();
    let after = Meter::read(&mut conn).await;
    let breakdown = after.since(&before, &total);
    (total, breakdown)
}

/// Checks against a limit of 100 per minute with `coverage`, 64 in flight, for `phase`.
async fn checks(url: &str, phase: Duration, coverage: Coverage) -> (Load, u64) {
    let boards = library(url).await;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..64u64 {
        let boards = boards.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(100 + t);
            let (mut load, mut allowed) = (Load::default(), 0);
            while start.elapsed() < phase {
                let key = format!("check:{coverage}:{}", rng.random_range(0..1000));
                let began = Instant::now();
                let verdict = boards
                    .rates()
                    .check(&key, 100, "1m", 1, coverage)
                    .await
                    .unwrap();
                load.latencies.push(began.elapsed());
                load.done += 1;
                allowed += u64::from(verdict.allowed);
            }
            (load, allowed)
        }));
    }
    let (mut total, mut allowed) = (Load::default(), 0);
    for t in tasks {
        let (load, a) = t.await.unwrap();
        total.done += load.done;
        total.latencies.extend(load.latencies);
        allowed += a;
    }
    total.elapsed = start.elapsed();
    (total, allowed)
}

/// `MEMORY USAGE` of one key with every slot of every tier holding a count.
async fn busy_key_bytes(url: &str) -> u64 {
    let boards = library(url).await;
    let now = boards.now().unix_seconds();
    let at = |back: i64| Some(Timestamp::from_unix_seconds(now - back).unwrap());
    let mut batch = Vec::new();
    for back in (0..60)
        .chain((1..60).map(|m| m * 60))
        .chain((1..24).map(|h| h * 3600))
    {
        batch.push(("busy".to_owned(), 1_000_000, at(back)));
    }
    for d in 1..366 {
        batch.push(("busy".to_owned(), 1_000_000, at(d * 86_400)));
    }
    boards.rates().hits(&batch).await.unwrap();
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("rate_{busy}_*")
        .query_async(&mut conn)
        .await
        .unwrap();
    redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(&keys[0])
        .query_async(&mut conn)
        .await
        .unwrap()
}

pub async fn rates(url: &str, hincrby: f64, phase: Duration) -> Vec<Row> {
    let (hit, hit_breakdown) = hits(url, phase, true).await;
    let ratio = hit.per_second() / hincrby;
    let (uniform, uniform_breakdown) = hits(url, phase, false).await;
    let (mut check, allowed) = checks(url, phase, Coverage::Partial).await;
    let p99 = check.percentile(99.0);
    let p50 = check.percentile(50.0);
    let (mut full, full_allowed) = checks(url, phase, Coverage::Full).await;
    let (full_p50, full_p99) = (full.percentile(50.0), full.percentile(99.0));
    let bytes = busy_key_bytes(url).await;
    vec![
        Row {
            figure: "rate hits: library batches of 1000, 100k keys Zipf 1.1 (8 in flight)".into(),
            measured: rate(hit.per_second(), "hits/s"),
            reference: format!("HINCRBY {}", rate(hincrby, "ops/s")),
            ratio: Some(ratio),
            target: Some((">= 0.5".into(), ratio >= 0.5)),
        },
        Row {
            figure: "rate hits: library batches of 1000, 100k keys uniform (8 in flight)".into(),
            measured: rate(uniform.per_second(), "hits/s"),
            reference: format!("HINCRBY {}", rate(hincrby, "ops/s")),
            ratio: Some(uniform.per_second() / hincrby),
            target: None,
        },
        Row {
            figure: "rate hits Zipf: where the time went".into(),
            measured: hit_breakdown,
            reference: String::new(),
            ratio: None,
            target: None,
        },
        Row {
            figure: "rate hits uniform: where the time went".into(),
            measured: uniform_breakdown,
            reference: String::new(),
            ratio: None,
            target: None,
        },
        Row {
            figure: format!(
                "rate checks (limit 100/1m, 1000 keys, 64 in flight; {allowed} allowed)"
            ),
            measured: rate(check.per_second(), "checks/s"),
            reference: format!("HINCRBY {}", rate(hincrby, "ops/s")),
            ratio: Some(check.per_second() / hincrby),
            target: None,
        },
        Row {
            figure: "rate check latency p50 / p99 under that load".into(),
            measured: format!("{:.2} / {:.2} ms", ms(p50), ms(p99)),
            reference: String::new(),
            ratio: None,
            target: None,
        },
        Row {
            figure: format!(
                "rate checks, coverage full (limit 100/1m: this minute and the last; \
                 1000 keys, 64 in flight; {full_allowed} allowed)"
            ),
            measured: rate(full.per_second(), "checks/s"),
            reference: format!("HINCRBY {}", rate(hincrby, "ops/s")),
            ratio: Some(full.per_second() / hincrby),
            target: None,
        },
        Row {
            figure: "rate check (full coverage) latency p50 / p99".into(),
            measured: format!("{:.2} / {:.2} ms", ms(full_p50), ms(full_p99)),
            reference: String::new(),
            ratio: None,
            target: None,
        },
        Row {
            figure: "memory per busy rate key (every slot of every tier set)".into(),
            measured: format!("{bytes} B"),
            reference: "4096 B".into(),
            ratio: Some(bytes as f64 / 4096.0),
            target: Some(("<= 1".into(), bytes <= 4096)),
        },
    ]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
