//! rollboard's benchmark: `cargo bench --bench rollboard` (needs `redis-server` and
//! `redis-benchmark`, from Debian's redis-server and redis-tools).
//!
//! In one run it starts its own Redis and the service, measures the ceiling with
//! `redis-benchmark` on that Redis, and prints every figure beside its reference as a
//! ratio: HTTP ingest (uniform and Zipf batches, single events, and single events with
//! `?return=standing` beside plain ones on one board), the library path, the
//! source article's design, a lone event's latency, retirement of a 200k-member slot on
//! a two-window board, each window, plain and compact slots side by side (with the
//! longest Redis call and top-10 latency meanwhile), top-10 reads under
//! ingest, recompute of a drifted 200k-member board while writes go on (the longest
//! Redis call meanwhile, and exact totals after), recompute of a 180-day window of 1-hour
//! slots (4,320 slots) while writes go on, old slots included (the recompute's calls over
//! 2 ms, and exact totals after), deep pages against the first page
//! (300,000 members, with and without a 100,000-member tie group), counter increments/s
//! and stats records/s (against the source's `update_stats`), memory per entry for both
//! slot layouts (100k members x 24 slots, and 1k members per slot) with their ingest, and
//! a check that totals equal the acknowledged events.
//! `BENCH_SECONDS` sets the length of each load phase (default 5); `BENCH_ONLY` runs some
//! phases only (comma-separated: uniform, zipf, single, standing, library, huge, reads,
//! topreads (top-10 at 64 connections exact and cached beside `ZREVRANGE`, and their p99
//! during batch ingest), peer (each hot route beside the Node service of `benches/peer`,
//! in alternating `wrk` rounds; see `peer.rs`), retire,
//! recompute, longwindow, pages, ranks, memberdata, rates, counters, memory, bigwrite,
//! trendwrite, manyboards, maxboard, replicaacks, shards, moderation, contributors, changes);
//! `BENCH_LAYOUT=plain` keeps the boards the service and library phases create (those
//! that name no layout) in plain slots (default compact, the store's default).
//! Phase `manyboards`: 30,000 and 100,000 small boards (`BENCH_BOARDS` sets the counts)
//! retired at one boundary by the service's retirer, and the service's heap per board. Phase
//! `bigwrite`: writes to a 200,000-member `1h`/`24h` board with the call budget and
//! with the cap off (longest write call, Redis time per event beside plain `HINCRBY` +
//! `ZINCRBY` per window, ingest). Phase `trendwrite`: the longest call of a 10,000-event
//! batch of fresh members to a trending board beside the same batch to a windowed one.
//! Phase `maxboard`: a 200,000-member `1h`/`24h` max board beside a sum board: ingest
//! against the pipelined ceiling of each, and retirement of a slot of 200,000 bests
//! (members re-evaluated per second against pipelined `ZADD`, longest call).
//! Phase `replicaacks`: a lone event's latency and batch ingest with `min_replica_acks`
//! = 1 (one local replica) beside the same without.
//! Phase `shards`: on a local cluster of three masters, a board of 3 shards beside an
//! unsharded one under the same load: the busiest master's share of Redis time, top-10
//! and member-rank read p50/p99 while writes go on, ingest, and exact totals.
//! Phase `moderation`: a 100,000-member board hiding 1,000 members beside the same board
//! hiding none: top-10 reads while likes go on, and single likes (`moderation.rs`).
//! Phase `changes`: a watched board's rank changes delivered over SSE to 100 consumers
//! while likes go on (`changes.rs`).
//! Phase `ranks`: a
//! friends' ranks read (100 members) and a member read with percentile on a
//! 1,000,000-member board beside `ZREVRANK`. Phase `memberdata`: Redis memory per member
//! of ~100-byte member data on 100,000 members, and batch writes carrying data beside the
//! same writes without. Phase `rates`: rate-window
//! hits in batches and checks against the `HINCRBY` ceiling, check p99, memory per busy
//! key.

mod baseline;
mod bigwrite;
mod changes;
mod compact;
mod contributors;
mod counters;
mod hot_reads;
mod huge;
mod load;
mod longwindow;
mod manyboards;
mod maxboard;
mod member_data;
mod moderation;
mod pages;
mod peer;
mod ranks;
mod rates;
mod raw_http;
mod recompute;
mod replica_acks;
mod report;
mod setup;
mod shards;
mod slowlog;
mod trendwrite;

use std::alloc::GlobalAlloc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use std::time::{Duration, Instant};

use load::{Load, Spread};
use report::{Row, rate};
use rollboard::service::allocator::Mimalloc;
use rollboard::{Event, Rollboard};
use serde_json::json;

fn main() {
    let seconds: u64 = std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let phase = Duration::from_secs(seconds);
    let redis = setup::start_redis();
    let service = setup::start_service(&redis);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("load")
        .enable_all()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    let mut ceilings = Vec::new();
    // The ceiling, measured right before the phase it is the reference of.
    let mut ceiling_now = |phase: &str| {
        eprintln!("ceiling before {phase} …");
        let c = setup::ceiling(&redis);
        ceilings.push((phase.to_owned(), c.hincrby, c.zincrby));
        c
    };
    let vs = |c: &setup::Ceiling| format!("ceiling {}", rate(c.combined(), "ev/s"));
    let mut acknowledged: Vec<(String, u64)> = Vec::new();
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let run = |phase: &str| only.is_empty() || only.split(',').any(|p| p.trim() == phase);

    rt.block_on(async {
        let http = load::client();
        let create = |board: &str, slot: &str, windows: &[&str]| {
            let (http, url, board) = (http.clone(), service.url.clone(), board.to_owned());
            let body = json!({"slot": slot, "windows": windows});
            async move {
                let r = http
                    .put(format!("{url}/v1/boards/{board}"))
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().is_success());
            }
        };

        // HTTP batches of 1000 events, uniform and Zipf.
        for (spread, board, name, target) in [
            (
                Spread::Uniform,
                "bench-uniform",
                "HTTP batches of 1000, uniform over 100k",
                0.8,
            ),
            (
                Spread::Zipf,
                "bench-zipf",
                "HTTP batches of 1000, Zipf(1.1) over 100k",
                2.0,
            ),
        ] {
            if !run(if board == "bench-uniform" {
                "uniform"
            } else {
                "zipf"
            }) {
                continue;
            }
            eprintln!("{name} …");
            create(board, "1h", &["24h"]).await;
            let bodies = Arc::new(load::batch_bodies(spread, 200, 1000));
            let ceiling = ceiling_now(board);
            let load = load::http_batches(&service.url, board, bodies, 8, phase).await;
            let ratio = load.per_second() / ceiling.combined();
            rows.push(Row {
                figure: format!("{name} (8 connections)"),
                measured: rate(load.per_second(), "ev/s"),
                reference: vs(&ceiling),
                ratio: Some(ratio),
                target: Some((format!(">= {target}"), ratio >= target)),
            });
            acknowledged.push((board.to_owned(), load.done));
        }

        // The article's design, then single-event requests over 64 connections.
        if run("single") {
            eprintln!("the article's design …");
            let url = redis.url.clone();
            let base = tokio::task::spawn_blocking(move || baseline::article_design(&url, phase))
                .await
                .unwrap();
            rows.push(Row {
                figure: "article design: GET + HINCRBY + ZINCRBY per event, 1 connection".into(),
                measured: rate(base.per_second(), "ev/s"),
                reference: String::new(),
                ratio: None,
                target: None,
            });
            eprintln!("single events …");
            create("bench-single", "1h", &["24h"]).await;
            let mut single = load::http_singles(&service.url, "bench-single", 64, phase).await;
            let ratio = single.per_second() / base.per_second();
            rows.push(Row {
                figure: "HTTP single events (64 keep-alive connections)".into(),
                measured: rate(single.per_second(), "ev/s"),
                reference: format!("article design {}", rate(base.per_second(), "ev/s")),
                ratio: Some(ratio),
                target: Some((">= 15".into(), ratio >= 15.0)),
            });
            rows.push(Row {
                figure: "  latency of a single-event request p50 / p99".into(),
                measured: format!(
                    "{} / {}",
                    ms(single.percentile(50.0)),
                    ms(single.percentile(99.0))
                ),
                reference: String::new(),
                ratio: None,
                target: None,
            });
            acknowledged.push(("bench-single".into(), single.done));
        }

        // Single events answering their standing beside plain ones, same board, same run.
        if run("standing") {
            eprintln!("single events, plain and return=standing …");
            let board = "bench-standing";
            create(board, "1m", &["1h", "24h"]).await;
            let (url, zipf) = (&service.url, Spread::Zipf);
            let mut plain = load::http_singles_with(url, board, "", zipf, 64, phase).await;
            let query = "?return=standing";
            let mut standing = load::http_singles_with(url, board, query, zipf, 64, phase).await;
            let ratio = standing.per_second() / plain.per_second();
            rows.push(Row {
                figure: "HTTP single events, Zipf, 1h/24h (64 connections)".into(),
                measured: rate(plain.per_second(), "ev/s"),
                reference: format!(
                    "p50 / p99 {} / {}",
                    ms(plain.percentile(50.0)),
                    ms(plain.percentile(99.0))
                ),
                ratio: None,
                target: None,
            });
            rows.push(Row {
                figure: "  the same with ?return=standing (both windows)".into(),
                measured: rate(standing.per_second(), "ev/s"),
                reference: format!(
                    "p50 / p99 {} / {}",
                    ms(standing.percentile(50.0)),
                    ms(standing.percentile(99.0))
                ),
                ratio: Some(ratio),
                target: None,
            });
            acknowledged.push((board.into(), plain.done + standing.done));
        }

        // The library path, and a lone event's latency through it.
        if run("library") {
            eprintln!("library …");
            let boards = Rollboard::new(setup::store(&redis.url).await);
            create("bench-library", "1h", &["24h"]).await;
            let batches: Arc<Vec<Vec<Event>>> = Arc::new(
                (0..200)
                    .map(|b| {
                        load::member_ids(Spread::Uniform, 1000, 1000 + b)
                            .into_iter()
                            .map(|m| Event::new(format!("post:{m}"), 1))
                            .collect()
                    })
                    .collect(),
            );
            let ceiling = ceiling_now("library");
            let library =
                load::library_batches(boards.clone(), "bench-library", batches, 8, phase).await;
            rows.push(Row {
                figure: "library incr_batch of 1000, uniform (8 tasks)".into(),
                measured: rate(library.per_second(), "ev/s"),
                reference: vs(&ceiling),
                ratio: Some(library.per_second() / ceiling.combined()),
                target: None,
            });
            acknowledged.push(("bench-library".into(), library.done));
            let (lone, raw) = lone_event(&boards, &redis.url).await;
            let added = lone.saturating_sub(raw);
            rows.push(Row {
                figure: "a lone event under no load, p50 (library)".into(),
                measured: us(lone),
                reference: format!("HINCRBY+ZINCRBY round trip {}", us(raw)),
                ratio: None,
                target: Some((
                    format!("< 1 ms added ({})", us(added)),
                    added < Duration::from_millis(1),
                )),
            });
            acknowledged.push(("bench-library".into(), 2000));
        }

        // Ordinary batches before and after one huge delta and its negation.
        if run("huge") {
            eprintln!("huge delta …");
            let boards = Rollboard::new(setup::store(&redis.url).await);
            let (huge_rows, done) =
                huge::huge_delta(&boards, &redis.url, "bench-huge", phase).await;
            rows.extend(huge_rows);
            acknowledged.extend(done);
        }

        // Top-10 reads while uniform batches are written.
        if run("reads") {
            eprintln!("top-10 reads under ingest …");
            create("bench-uniform", "1h", &["24h"]).await;
            let stop = Arc::new(AtomicBool::new(false));
            let readers = tokio::spawn({
                let (url, stop) = (service.url.clone(), stop.clone());
                async move { load::top_readers(&url, "bench-uniform", 8, None, stop).await }
            });
            let bodies = Arc::new(load::batch_bodies(Spread::Uniform, 200, 1000));
            let ingest = load::http_batches(&service.url, "bench-uniform", bodies, 8, phase).await;
            stop.store(true, Ordering::SeqCst);
            let mut reads = readers.await.unwrap();
            acknowledged.push(("bench-uniform".into(), ingest.done));
            rows.push(Row {
                figure: "top-10 reads during uniform ingest (8 + 8 connections)".into(),
                measured: format!(
                    "{}, p99 {}",
                    rate(reads.per_second(), "reads/s"),
                    ms(reads.percentile(99.0))
                ),
                reference: format!("ingest meanwhile {}", rate(ingest.per_second(), "ev/s")),
                ratio: None,
                target: None,
            });
        }

        // Top-10 reads at 64 connections, exact and cached, beside ZREVRANGE.
        if run("topreads") {
            eprintln!("top-10 reads, exact and cached …");
            rows.extend(hot_reads::hot_reads(&redis, &service.url, phase).await);
        }

        // A board hiding 1,000 of its 100,000 members beside one hiding none.
        if run("moderation") {
            eprintln!("a board hiding 1,000 members …");
            rows.extend(moderation::moderation(&redis, &service.url, phase).await);
        }

        if run("contributors") {
            eprintln!("contributors …");
            rows.extend(contributors::contributors(&redis, &service.url, phase).await);
        }

        if run("changes") {
            eprintln!("rank changes over SSE …");
            rows.extend(changes::changes(&redis, &service.url, phase).await);
        }

        // Each hot route beside the Node service a forum would otherwise write.
        if run("peer") {
            eprintln!("beside the Node peer …");
            rows.extend(peer::peer(&redis, &service.url, phase).await);
        }

        // Retirement of one slot of 200k members on a two-window board, both layouts.
        if run("retire") {
            eprintln!("retirement …");
            rows.extend(compact::retirement(&redis, &service.url).await);
        }
        if run("recompute") {
            eprintln!("recompute …");
            rows.extend(recompute::recompute(&redis).await);
        }
        if run("longwindow") {
            eprintln!("long-window recompute …");
            rows.extend(longwindow::longwindow(&redis).await);
        }
        if run("trendwrite") {
            eprintln!("a trending batch of fresh members …");
            rows.extend(trendwrite::trendwrite(&redis).await);
        }
        if run("bigwrite") {
            eprintln!("writes to a big board …");
            rows.extend(bigwrite::bigwrite(&redis, phase).await);
        }
        if run("maxboard") {
            eprintln!("a max board beside a sum board …");
            rows.extend(maxboard::maxboard(&redis, phase).await);
        }
        if run("replicaacks") {
            eprintln!("writes acknowledged by a replica …");
            let (acks_rows, done) = replica_acks::replica_acks(&redis, phase).await;
            rows.extend(acks_rows);
            acknowledged.push(done);
        }
        if run("shards") {
            eprintln!("a sharded board on a cluster …");
            rows.extend(shards::shards(phase).await);
        }
        if run("pages") {
            eprintln!("deep pages …");
            rows.extend(pages::pages(&redis.url, phase).await);
        }
        if run("ranks") {
            eprintln!("ranks on a large board …");
            rows.extend(ranks::ranks(&redis.url, phase).await);
        }
        if run("memberdata") {
            eprintln!("member data …");
            rows.extend(member_data::member_data(&redis.url, phase).await);
        }
        if run("rates") {
            eprintln!("rate windows …");
            let hincrby = ceiling_now("rates").hincrby;
            rows.extend(rates::rates(&redis.url, hincrby, phase).await);
        }
        if run("counters") {
            eprintln!("counters and stats …");
            let hincrby = ceiling_now("counters").hincrby;
            rows.extend(counters::counters(&redis.url, hincrby, phase).await);
        }
        if run("manyboards") {
            rows.extend(manyboards::many_boards(&redis).await);
        }
        if run("memory") {
            eprintln!("memory …");
            rows.extend(compact::memory(&redis.url).await);
        }

        // Nothing lost, nothing counted twice.
        let mut totals = std::collections::BTreeMap::<String, u64>::new();
        for (board, n) in &acknowledged {
            *totals.entry(board.clone()).or_default() += n;
        }
        let mut exact = true;
        let mut events = 0;
        for (board, expected) in &totals {
            let sum = total_of(&redis.url, board).await;
            events += expected;
            if sum != *expected {
                exact = false;
                eprintln!("{board}: totals {sum} but {expected} events acknowledged");
            }
        }
        rows.push(Row {
            figure: "totals equal the acknowledged events".into(),
            measured: format!(
                "{} boards, {} events",
                totals.len(),
                report::thousands(events as f64)
            ),
            reference: String::new(),
            ratio: None,
            target: Some(("exact".into(), exact)),
        });
    });

    println!();
    println!(
        "rollboard benchmark: {} s per load phase; Redis at {}; {}",
        seconds,
        redis.url,
        if redis.pinned {
            "Redis's main thread pinned to CPU 0; service, load and redis-benchmark at nice 10 on any CPU"
        } else {
            "Redis, service, load and redis-benchmark share the CPUs"
        }
    );
    println!(
        "ceilings: redis-benchmark -P 64 -c 50 -r 100000 -n 1000000 on the same Redis, right before each phase;"
    );
    println!("          one event costs one HINCRBY and one ZINCRBY: ceiling = 1 / (1/h + 1/z)");
    for (phase, h, z) in &ceilings {
        println!(
            "  before {phase}: HINCRBY {}, ZINCRBY {}, ceiling {}",
            rate(*h, "ops/s"),
            rate(*z, "ops/s"),
            rate(1.0 / (1.0 / h + 1.0 / z), "events/s")
        );
    }
    println!();
    report::print(&rows);
    drop(service);
}

/// The `rollboard` binary's allocator ([`Mimalloc`]), so the service measured is the one
/// users run, counting the bytes it holds (for phase `manyboards`'s memory per board):
/// one relaxed atomic add per allocation and free, on a counter of the thread's own
/// cache line (one shared counter, bounced between the cores on every allocation, cost
/// the service ~6 µs of CPU per request).
struct Counting;

/// A counter on a cache line of its own.
#[repr(align(128))]
struct Line(std::sync::atomic::AtomicIsize);

const LINES: usize = 64;
static ALLOCATED: [Line; LINES] = [const { Line(std::sync::atomic::AtomicIsize::new(0)) }; LINES];
static THREADS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

thread_local! {
    /// This thread's counter (threads beyond `LINES` share them round-robin).
    static LINE: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

fn count(bytes: isize) {
    let line = LINE.with(|l| {
        if l.get() == usize::MAX {
            l.set(THREADS.fetch_add(1, Ordering::Relaxed) % LINES);
        }
        l.get()
    });
    ALLOCATED[line].0.fetch_add(bytes, Ordering::Relaxed);
}

// SAFETY: every call is passed on to the binary's allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        count(layout.size() as isize);
        unsafe { GlobalAlloc::alloc(&Mimalloc, layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        count(-(layout.size() as isize));
        unsafe { GlobalAlloc::dealloc(&Mimalloc, ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        count(new as isize - layout.size() as isize);
        unsafe { GlobalAlloc::realloc(&Mimalloc, ptr, layout, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Heap bytes this process holds now (requested sizes, not the allocator's overhead).
pub fn allocated() -> usize {
    let sum: isize = ALLOCATED.iter().map(|l| l.0.load(Ordering::Relaxed)).sum();
    sum.max(0) as usize
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

/// p50 of 2000 sequential single-event `incr` calls, and of a pipelined HINCRBY+ZINCRBY
/// round trip (what Redis itself needs for one event).
async fn lone_event(boards: &Rollboard, redis_url: &str) -> (Duration, Duration) {
    let mut ours = Load::default();
    for i in 0..2000 {
        let t = Instant::now();
        boards
            .windowed("bench-library")
            .incr(&format!("lone:{}", i % 100), 1, None)
            .await
            .unwrap();
        ours.latencies.push(t.elapsed());
    }
    let mut conn = redis::Client::open(redis_url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let mut raw = Load::default();
    for i in 0..2000 {
        let t = Instant::now();
        let _: (i64, f64) = redis::pipe()
            .cmd("HINCRBY")
            .arg("bench:lone:h")
            .arg(i % 100)
            .arg(1)
            .cmd("ZINCRBY")
            .arg("bench:lone:z")
            .arg(1)
            .arg(i % 100)
            .query_async(&mut conn)
            .await
            .unwrap();
        raw.latencies.push(t.elapsed());
    }
    let _: i64 = redis::cmd("DEL")
        .arg("bench:lone:h")
        .arg("bench:lone:z")
        .query_async(&mut conn)
        .await
        .unwrap();
    (ours.percentile(50.0), raw.percentile(50.0))
}

/// Redis's `used_memory`, once the objects earlier phases unlinked are freed.
async fn used_memory(conn: &mut redis::aio::MultiplexedConnection) -> i64 {
    slowlog::settle(conn).await;
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(conn)
        .await
        .unwrap();
    slowlog::info_field(&info, "used_memory")
}

/// The sum of a board's first-window totals.
async fn total_of(redis_url: &str, board: &str) -> u64 {
    let mut conn = redis::Client::open(redis_url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let scores: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(format!("stats_{{{board}}}"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut conn)
        .await
        .unwrap();
    scores.iter().map(|(_, s)| *s as u64).sum()
}
