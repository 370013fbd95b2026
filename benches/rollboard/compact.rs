//! Both slot layouts side by side (`docs/compact-slots.md`, "Compact slots"): retirement of a
//! 200,000-member slot on a two-window board, each window against the `ZINCRBY` ceiling
//! (phase `retire`), and Redis memory per live (slot, member) with the ingest that
//! filled it (phase `memory`). Every board is written through the library's write path,
//! so compact slots get their real geometry and splits.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use rollboard::{
    BoardConfig, Event, Layout, ManualClock, RedisStore, Rollboard, Settings, Timestamp, Watch,
};

use crate::report::{self, Row, rate};
use crate::{load, setup, slowlog};

fn name(layout: Layout) -> &'static str {
    match layout {
        Layout::Plain => "plain",
        Layout::Compact => "compact",
    }
}

async fn raw(redis_url: &str) -> MultiplexedConnection {
    redis::Client::open(redis_url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// A library on its own manual clock, starting at `start`.
async fn library(redis_url: &str, start: Timestamp) -> (Rollboard, ManualClock) {
    let clock = ManualClock::new(start);
    let store = Arc::new(RedisStore::connect(redis_url).await.unwrap());
    let boards = Rollboard::with(store, Arc::new(clock.clone()), Settings::default());
    (boards, clock)
}

/// Writes `members` members (`post:<i>`, deltas 1..7) into the current slot of `board`,
/// `in_flight` batches of 1,000 at once.
async fn fill(boards: &Rollboard, board: &str, members: usize, in_flight: usize) -> Duration {
    let events: Vec<Event> = (0..members)
        .map(|m| Event::new(format!("post:{m}"), 1 + (m % 7) as i64))
        .collect();
    let t = Instant::now();
    crate::load::write_all(boards, board, &events, in_flight).await;
    t.elapsed()
}

/// One retirement case: a layout, the board's slot and its two windows.
struct Case {
    layout: Layout,
    slot: &'static str,
    /// Seconds from the end of the filled slot to its leaving window 1 (0 when the slot
    /// is window 1: it leaves the moment it closes).
    closed_for: i64,
    /// Whether window 1 may retire by swap (`RetireOptions::swap_fields`): on a board
    /// whose first window is one slot long it does; off, the chunked path's figure.
    swap: bool,
    /// Whether the board watches the top 10 of both windows (issue 50: it retires in
    /// chunks, its changes recorded by the last): compared with the chunked plain case.
    watched: bool,
}

/// Retirement of one 200,000-member slot of a two-window `1h`/`2h` board, per layout (and
/// on a board watching its tops) and window, while readers hammer the board's top 10; each window against the `ZINCRBY`
/// ceiling measured right before it (this machine's speed drifts over a phase). The slot
/// is written while it is open, as users write: on compact boards the open slot is plain
/// and the retirer compacts it once closed (`docs/compact-slots.md`, "Compact slots"). With
/// hourly slots the slot leaves window 1 the moment it closes, so window 1 retires it
/// plain and the compaction follows (converting what window 2 will retire); with
/// half-hour slots it is compacted half an hour before window 1 retires it. Each
/// compaction is timed apart, with its Redis time (`INFO commandstats`).
pub async fn retirement(redis: &setup::Redis, service_url: &str) -> Vec<Row> {
    let redis_url = redis.url.as_str();
    let members = 200_000;
    let options = rollboard::RetireOptions {
        chunk_size: std::env::var("BENCH_RETIRE_CHUNK")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(rollboard::RetireOptions::default().chunk_size),
        max_chunks: None,
        compact: false,
        ..Default::default()
    };
    let compaction = rollboard::RetireOptions {
        compact: true,
        ..options
    };
    let cases = [
        Case {
            layout: Layout::Plain,
            slot: "1h",
            closed_for: 0,
            swap: true,
            watched: false,
        },
        Case {
            layout: Layout::Plain,
            slot: "1h",
            closed_for: 0,
            swap: false,
            watched: false,
        },
        Case {
            layout: Layout::Plain,
            slot: "1h",
            closed_for: 0,
            swap: true,
            watched: true,
        },
        Case {
            layout: Layout::Compact,
            slot: "1h",
            closed_for: 0,
            swap: true,
            watched: false,
        },
        Case {
            layout: Layout::Compact,
            slot: "30m",
            closed_for: 1800,
            swap: true,
            watched: false,
        },
    ];
    let mut conn = raw(redis_url).await;
    let mut rows = Vec::new();
    // Each window's fields/s of the chunked plain case, which the watched case follows.
    let mut unwatched = [f64::NAN; 2];
    for case in cases {
        let label = format!(
            "{}, slot {}{}",
            name(case.layout),
            case.slot,
            match (case.swap, case.watched) {
                (_, true) => ", watched top 10",
                (false, _) => ", swap off",
                _ => "",
            }
        );
        let board = format!(
            "bench-retire-{}-{}{}",
            name(case.layout),
            case.slot,
            match (case.swap, case.watched) {
                (_, true) => "-watched",
                (false, _) => "-chunked",
                _ => "",
            }
        );
        let (options, compaction) = if case.swap {
            (options, compaction)
        } else {
            let off = |o: rollboard::RetireOptions| rollboard::RetireOptions {
                swap_fields: 0,
                ..o
            };
            (off(options), off(compaction))
        };
        // A watched board does not swap: it retires in chunks.
        let swaps = case.swap && case.closed_for == 0 && !case.watched;
        // Starts at a slot boundary, so the filled slot closes after one slot length.
        let slot_secs = BoardConfig::parse(case.slot, &["2h"])
            .unwrap()
            .slot()
            .seconds() as i64;
        let now = Timestamp::now_utc().unix_seconds();
        let (boards, clock) = library(
            redis_url,
            Timestamp::from_unix_seconds(now - now % slot_secs).unwrap(),
        )
        .await;
        let config = BoardConfig::parse(case.slot, &["1h", "2h"])
            .unwrap()
            .with_layout(Some(case.layout));
        let top = |w: &str| Watch::new(w.parse().unwrap(), 10).unwrap();
        let watches = if case.watched {
            vec![top("1h"), top("2h")]
        } else {
            Vec::new()
        };
        let config = config.with_watch(watches).unwrap();
        boards.create(&board, config).await.unwrap();
        fill(&boards, &board, members, 8).await;

        slowlog::reset(&mut conn).await;
        let mut chunks = 0;
        let mut compacted = Vec::new();
        let mut reads = load::Load::default();
        if case.closed_for > 0 {
            clock.advance_secs(slot_secs);
            compacted.push(compact_now(&boards, &board, compaction, &mut conn).await);
            clock.advance_secs(case.closed_for);
        } else {
            clock.advance_secs(slot_secs);
        }
        for (j, window) in ["1h", "2h"].iter().enumerate() {
            let zincrby = tokio::task::block_in_place(|| setup::zincrby_ceiling(redis));
            tokio::time::sleep(Duration::from_millis(100)).await;
            if j == 1 {
                clock.advance_secs(3600);
            }
            // Readers only while a window retires, so that a compaction's Redis time
            // is its own.
            let stop = Arc::new(AtomicBool::new(false));
            let readers = tokio::spawn({
                let (url, board, stop) = (service_url.to_owned(), board.clone(), stop.clone());
                async move {
                    load::top_readers(&url, &board, 4, Some(Duration::from_millis(4)), stop).await
                }
            });
            // Writes go on into the new slot meanwhile: 50 events every 10 ms over 500
            // members (a swap's cost follows the new slot's size).
            let writer = tokio::spawn({
                let (boards, board, stop) = (boards.clone(), board.clone(), stop.clone());
                async move {
                    let mut k = 0usize;
                    let mut written = 0u64;
                    while !stop.load(Ordering::SeqCst) {
                        let events: Vec<Event> = (0..50)
                            .map(|i| Event::new(format!("new:{}", (k * 50 + i) % 500), 1))
                            .collect();
                        let outcome = boards.windowed(&board).incr_batch(&events).await.unwrap();
                        assert!(outcome.rejected.is_empty());
                        written += events.len() as u64;
                        k += 1;
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    written
                }
            });
            tokio::time::sleep(Duration::from_millis(200)).await;
            let t = Instant::now();
            let report = boards.windowed(&board).retire(Some(options)).await.unwrap();
            let elapsed = t.elapsed();
            stop.store(true, Ordering::SeqCst);
            let written = writer.await.unwrap();
            let window_reads = readers.await.unwrap();
            reads.latencies.extend(window_reads.latencies);
            reads.done += window_reads.done;
            // Window 2's pass also retires the slot written during window 1's from
            // window 1 (its 500 members).
            let extra = if j == 1 { 500 } else { 0 };
            assert_eq!(report.fields_subtracted, members as u64 + extra);
            chunks += report.chunks;
            let per_second = members as f64 / elapsed.as_secs_f64();
            if !case.swap {
                unwatched[j] = per_second;
            }
            let ratio = per_second / zincrby;
            let swapped = j == 0 && report.slots_swapped == 1;
            if j == 0 {
                assert_eq!(swapped, swaps, "{label}: window 1 by swap");
            }
            let how = if swapped {
                format!(
                    ", by swap in {:.1} ms: its cost follows the new slot ({} events written \
                     over 500 members meanwhile), not the closed slot",
                    elapsed.as_secs_f64() * 1000.0,
                    written
                )
            } else {
                format!(", {written} events written to the new slot meanwhile")
            };
            rows.push(Row {
                figure: format!(
                    "retirement, {label}, {} members, window {} ({window} of 1h/2h){how}",
                    report::thousands(members as f64),
                    j + 1
                ),
                measured: rate(per_second, "fields/s"),
                reference: format!("ZINCRBY ceiling {}", rate(zincrby, "ops/s")),
                ratio: Some(ratio),
                target: Some((">= 0.5".into(), ratio >= 0.5)),
            });
            if case.watched {
                let ratio = per_second / unwatched[j];
                rows.push(Row {
                    figure: format!(
                        "  watched top 10, window {}: against the same unwatched",
                        j + 1
                    ),
                    measured: rate(per_second, "fields/s"),
                    reference: format!("plain, swap off {}", rate(unwatched[j], "fields/s")),
                    ratio: Some(ratio),
                    target: Some((">= 0.7".into(), ratio >= 0.7)),
                });
            }
            if j == 0 && case.layout == Layout::Compact && case.closed_for == 0 {
                compacted.push(compact_now(&boards, &board, compaction, &mut conn).await);
            }
        }
        for c in compacted {
            rows.push(Row {
                figure: format!("  {label}: compaction of the closed slot by the retirer"),
                measured: format!(
                    "{} fields in {:.2} s",
                    report::thousands(c.fields as f64),
                    c.elapsed.as_secs_f64()
                ),
                reference: format!(
                    "Redis {:.2} us per field (commandstats: scripts, HSCAN, HLEN, HGET)",
                    c.redis_us as f64 / c.fields.max(1) as f64
                ),
                ratio: None,
                target: None,
            });
        }
        // rollboard's calls are scripts: the retirement's own, and the writers' and the
        // readers' meanwhile; the others are the ceiling's redis-benchmark between the
        // windows (a single ZINCRBY over 2 ms: Redis was preempted).
        let logged = slowlog::slow_calls(&mut conn).await;
        let (scripts, others): (Vec<_>, Vec<_>) = logged
            .iter()
            .partition(|call| call.args.first().is_some_and(|c| c == "EVALSHA"));
        let (retirement, other_scripts): (Vec<_>, Vec<_>) =
            scripts.iter().partition(|call| call.is_retirement());
        let slow: Vec<&slowlog::SlowCall> = over(&scripts);
        rows.push(Row {
            figure: format!(
                "  {}: script calls over 2 ms meanwhile (SLOWLOG; chunks of <= {} fields, <= {} ms), by script",
                label,
                options.chunk_size,
                options.chunk_budget.as_secs_f64() * 1000.0
            ),
            measured: format!(
                "retirement {}; writers and readers {}",
                slowlog::describe(over(&retirement).into_iter()),
                slowlog::describe(over(&other_scripts).into_iter())
            ),
            reference: format!(
                "{chunks} chunk calls; by script: {}; other commands over 2 ms: {}",
                slowlog::per_script(scripts.iter().copied(), 2000),
                slowlog::describe(over(&others))
            ),
            ratio: None,
            target: Some(("none".into(), slow.is_empty())),
        });
        rows.push(Row {
            figure: format!("  {label}: top-10 latency meanwhile (4 x 250 reads/s), p50 / p99"),
            measured: format!(
                "{:.2} ms / {:.2} ms",
                reads.percentile(50.0).as_secs_f64() * 1000.0,
                reads.percentile(99.0).as_secs_f64() * 1000.0
            ),
            reference: format!("{} reads", reads.done),
            ratio: None,
            target: Some((
                "p99 <= 20 ms".into(),
                reads.percentile(99.0) <= Duration::from_millis(20),
            )),
        });
        boards.drop_board(&board).await.unwrap();
    }
    rows
}

/// What one compaction (a retire pass that only compacted) did.
struct Compaction {
    fields: u64,
    elapsed: Duration,
    /// Redis's time in script calls meanwhile, µs.
    redis_us: i64,
}

/// Runs the retirer's compaction of `board`'s closed slot (a pass with nothing due).
async fn compact_now(
    boards: &Rollboard,
    board: &str,
    options: rollboard::RetireOptions,
    conn: &mut MultiplexedConnection,
) -> Compaction {
    let before = script_usec(conn).await;
    let t = Instant::now();
    let report = boards.windowed(board).retire(Some(options)).await.unwrap();
    let elapsed = t.elapsed();
    assert_eq!(report.fields_subtracted, 0);
    Compaction {
        fields: report.fields_compacted,
        elapsed,
        redis_us: script_usec(conn).await - before,
    }
}

/// Redis's time so far (`INFO commandstats`), µs, in what a compaction sends: its script
/// calls and its reads (`HSCAN` of the plain hash, `HLEN`, the geometry's `HGET`).
async fn script_usec(conn: &mut MultiplexedConnection) -> i64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut *conn)
        .await
        .unwrap();
    ["evalsha", "hscan", "hlen", "hget"]
        .iter()
        .filter_map(|c| {
            info.lines()
                .find_map(|l| l.strip_prefix(&format!("cmdstat_{c}:")))
                .and_then(|l| l.split(',').find_map(|f| f.strip_prefix("usec=")))
                .and_then(|v| v.parse::<i64>().ok())
        })
        .sum()
}

/// What one layout's memory run measured.
struct Footprint {
    /// Bytes of `used_memory` per live (slot, member), totals included.
    per_entry: f64,
    /// Events written per second while filling.
    ingest: f64,
}

/// `boards` boards of `members` members in each of 24 hourly slots (a `1h`/`24h` board),
/// written through the library, each slot while it is open, with a retire pass at each
/// boundary (which compacts the closed slot of a compact board); `used_memory` before
/// and after. The newest slot is still open (plain on either layout), as on a live board.
async fn footprint(redis_url: &str, layout: Layout, boards_n: usize, members: usize) -> Footprint {
    let now = Timestamp::now_utc().unix_seconds();
    let start = now - now % 3600;
    let (boards, clock) = library(
        redis_url,
        Timestamp::from_unix_seconds(start - 23 * 3600).unwrap(),
    )
    .await;
    let mut conn = raw(redis_url).await;
    let names: Vec<String> = (0..boards_n)
        .map(|i| format!("bench-memory-{}-{members}-{i}", name(layout)))
        .collect();
    let before = crate::used_memory(&mut conn).await;
    let config = BoardConfig::parse("1h", &["24h"])
        .unwrap()
        .with_layout(Some(layout));
    for board in &names {
        boards.create(board, config.clone()).await.unwrap();
    }
    let mut writing = Duration::ZERO;
    for hour in 0..24 {
        for board in &names {
            writing += fill(&boards, board, members, 8).await;
        }
        if hour < 23 {
            // The slot closes; the retirer's pass compacts it on a compact board (the
            // open slot is plain): its time counts as the writing's. The newest slot
            // stays open, as a live board's does.
            clock.advance_secs(3600);
            let t = Instant::now();
            for board in &names {
                let report = boards.windowed(board).retire(None).await.unwrap();
                assert_eq!(report.fields_subtracted, 0);
            }
            writing += t.elapsed();
        }
    }
    let after = crate::used_memory(&mut conn).await;
    let entries = (boards_n * members * 24) as f64;
    for board in &names {
        boards.drop_board(board).await.unwrap();
    }
    Footprint {
        per_entry: (after - before) as f64 / entries,
        ingest: entries / writing.as_secs_f64(),
    }
}

/// Redis memory per live (slot, member), both layouts: 100,000 members x 24 slots, and
/// 1,000 members per slot (20 boards x 24 slots); and the ingest that wrote them.
pub async fn memory(redis_url: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    let big_plain = footprint(redis_url, Layout::Plain, 1, load::MEMBERS).await;
    let big_compact = footprint(redis_url, Layout::Compact, 1, load::MEMBERS).await;
    let small_plain = footprint(redis_url, Layout::Plain, 20, 1_000).await;
    let small_compact = footprint(redis_url, Layout::Compact, 20, 1_000).await;
    let bytes = |f: &Footprint| format!("{:.1} bytes", f.per_entry);
    rows.push(Row {
        figure: format!(
            "Redis memory per live (slot, member), {} members x 24 slots, plain",
            report::thousands(load::MEMBERS as f64)
        ),
        measured: bytes(&big_plain),
        reference: "totals included (used_memory)".into(),
        ratio: None,
        target: None,
    });
    rows.push(Row {
        figure: "  the same, compact".into(),
        measured: bytes(&big_compact),
        reference: format!("plain {}", bytes(&big_plain)),
        ratio: Some(big_compact.per_entry / big_plain.per_entry),
        target: Some(("<= 30 bytes".into(), big_compact.per_entry <= 30.0)),
    });
    rows.push(Row {
        figure: "Redis memory per live (slot, member), 1,000 members per slot (20 boards x 24 slots), plain".into(),
        measured: bytes(&small_plain),
        reference: "totals included (used_memory)".into(),
        ratio: None,
        target: None,
    });
    rows.push(Row {
        figure: "  the same, compact".into(),
        measured: bytes(&small_compact),
        reference: format!("plain {}", bytes(&small_plain)),
        ratio: Some(small_compact.per_entry / small_plain.per_entry),
        target: Some((
            "<= plain".into(),
            small_compact.per_entry <= small_plain.per_entry,
        )),
    });
    for (size, plain, compact) in [
        (
            format!("{} members", report::thousands(load::MEMBERS as f64)),
            &big_plain,
            &big_compact,
        ),
        ("1,000 members".to_owned(), &small_plain, &small_compact),
    ] {
        let ratio = compact.ingest / plain.ingest;
        rows.push(Row {
            figure: format!("  ingest filling them ({size} per slot, library batches of 1000, 8 in flight), compact"),
            measured: rate(compact.ingest, "ev/s"),
            reference: format!("plain {}", rate(plain.ingest, "ev/s")),
            ratio: Some(ratio),
            target: Some((">= 0.9 (unchanged or better)".into(), ratio >= 0.9)),
        });
    }
    rows
}

/// The calls of `calls` over 2 ms.
fn over<'a>(calls: &[&'a slowlog::SlowCall]) -> Vec<&'a slowlog::SlowCall> {
    calls.iter().copied().filter(|c| c.micros > 2000).collect()
}
