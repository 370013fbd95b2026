//! Phase `manyboards`: many small boards, as forums keep one per tag. For each N (30,000
//! and 100,000 by default; `BENCH_BOARDS` sets them, comma-separated), on a Redis
//! database of its own: a `Rollboard` and the service's `Scheduler` (its retirer, with
//! the metrics recorder installed) create N boards (slot `1m`, windows `1m` and `2m`)
//! and write 5 members to each through the library (group commit, as the service
//! does), 64 at a time. Then the manual clock moves past the slot boundary, and the
//! figure is the time until the retirer's round through it ended, every board's first
//! window retired (checked after: `ZCARD` of every first-window totals, pipelined).
//! Memory per board is the heap this process holds (a counting allocator around the
//! system's, see `main.rs`) after the boards were created and written and the retirer
//! tracks them, minus before, over N: once the boards' committers ended
//! (`committer_idle` after their last write), and with every board's committer alive
//! (as when every board was written within `committer_idle`): that much plus a live
//! committer's own heap, measured apart on 2,000 boards whose committers never idle.
//! Beside the heap, the process's resident memory (RSS, `/proc/self/statm`) grown over
//! the same span, over N: what an operator sees from outside, allocator overhead and
//! pages kept included. Pages freed by an earlier run (or phase) are reused before RSS
//! grows, so the first run of a phase run alone (`BENCH_ONLY=manyboards`) is the fair one.
//! Beside the time, what Redis spent in scripts over the round, and the commands they
//! ran, a board (`INFO commandstats`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rollboard::service::Scheduler;
use rollboard::{
    BoardConfig, Event, IngestOptions, ManualClock, RedisOptions, RedisStore, Rollboard, Settings,
    Timestamp,
};

use crate::report::{Row, thousands};
use crate::setup::Redis;

/// The targets: every first window empty within this long of the boundary…
const LAG_TARGET: Duration = Duration::from_secs(2);
/// …and at most this much service memory per board.
const BYTES_TARGET: f64 = 2048.0;

pub async fn many_boards(redis: &Redis) -> Vec<Row> {
    let counts: Vec<usize> = std::env::var("BENCH_BOARDS")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![30_000, 100_000]);
    rollboard::metrics::install_prometheus();
    let committer = live_committer(redis).await;
    let mut rows = Vec::new();
    for n in counts {
        eprintln!("many boards: {n} …");
        let (lag, idle, rss, empty) = run(redis, n).await;
        rows.push(Row {
            figure: format!(
                "{} boards (1m/2m, 5 members): first windows empty after the boundary",
                thousands(n as f64)
            ),
            measured: format!("{:.2} s", lag.as_secs_f64()),
            reference: format!(
                "{} of {} first windows empty",
                thousands(empty as f64),
                thousands(n as f64)
            ),
            ratio: None,
            target: Some((
                format!("<= {} s", LAG_TARGET.as_secs()),
                lag <= LAG_TARGET && empty == n,
            )),
        });
        let alive = idle + committer;
        rows.push(Row {
            figure: format!(
                "  service heap per board, {} boards just written (every committer alive)",
                thousands(n as f64)
            ),
            measured: format!("{} B", thousands(alive)),
            reference: format!("idled + a live committer ({} B)", thousands(committer)),
            ratio: None,
            target: Some((format!("<= {} B", BYTES_TARGET), alive <= BYTES_TARGET)),
        });
        rows.push(Row {
            figure: format!(
                "  service heap per board, {} boards, committers idled ({} ms)",
                thousands(n as f64),
                IngestOptions::default().committer_idle.as_millis()
            ),
            measured: format!("{} B", thousands(idle)),
            reference: "counting allocator, live bytes".into(),
            ratio: None,
            target: Some((format!("<= {} B", BYTES_TARGET), idle <= BYTES_TARGET)),
        });
        rows.push(Row {
            figure: format!(
                "  service RSS growth per board, {} boards, committers idled",
                thousands(n as f64)
            ),
            measured: format!("{} B", thousands(rss)),
            reference: "/proc/self/statm, resident".into(),
            ratio: None,
            target: Some((format!("<= {} B", BYTES_TARGET), rss <= BYTES_TARGET)),
        });
    }
    rows
}

/// The heap a board's live committer holds (its task, queue and bookkeeping), per board:
/// 2,000 boards are created, then each written once on a store whose committers never
/// idle, and the heap grown by the writes is divided by 2,000.
async fn live_committer(redis: &Redis) -> f64 {
    const BOARDS: usize = 2_000;
    let url = format!("{}2", redis.url);
    let mut raw = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let _: () = redis::cmd("FLUSHDB").query_async(&mut raw).await.unwrap();
    let options = RedisOptions {
        ingest: IngestOptions {
            committer_idle: Duration::from_secs(3600),
            ..IngestOptions::default()
        },
        ..crate::setup::store_options()
    };
    let store = Arc::new(RedisStore::connect_with(&url, options).await.unwrap());
    let boards = Rollboard::new(store);
    let config = BoardConfig::parse("1m", &["1m", "2m"]).unwrap();
    let names: Vec<String> = (0..BOARDS).map(|i| format!("live-{i}")).collect();
    for_each(&names, |name| {
        let (boards, config) = (boards.clone(), config.clone());
        async move {
            boards.create(&name, config).await.unwrap();
        }
    })
    .await;
    let before = crate::allocated();
    write_all(&boards, &names).await;
    let per_board = crate::allocated().saturating_sub(before) as f64 / BOARDS as f64;
    eprintln!("  a live committer: {per_board:.0} B");
    drop(boards);
    let _: () = redis::cmd("FLUSHDB").query_async(&mut raw).await.unwrap();
    per_board
}

/// Runs `op` on every name, 64 at a time.
async fn for_each<F, Fut>(names: &[String], op: F)
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let done = futures_util::stream::iter(names.iter().map(|name| op(name.clone())))
        .buffer_unordered(64)
        .count()
        .await;
    assert_eq!(done, names.len());
}

/// Writes 5 members to every board, 64 boards at a time.
async fn write_all(boards: &Rollboard, names: &[String]) {
    for_each(names, |name| {
        let boards = boards.clone();
        async move {
            let events: Vec<Event> = (0..5)
                .map(|m| Event::new(format!("post:{m}"), 1 + m))
                .collect();
            boards.windowed(&name).incr_batch(&events).await.unwrap();
        }
    })
    .await;
}

/// The process's resident memory, in bytes.
fn resident() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// One run with `n` boards: (time until the round through the boundary ended, heap
/// bytes per board once committers idled, RSS growth per board then, first windows
/// found empty after).
async fn run(redis: &Redis, n: usize) -> (Duration, f64, f64, usize) {
    let url = format!("{}2", redis.url);
    let mut raw = crate::setup::patient_connection(&url).await;
    let _: () = redis::cmd("FLUSHDB").query_async(&mut raw).await.unwrap();
    // Half a minute into a minute: the boundary is 30 s of clock time ahead.
    let now = Timestamp::now_utc().unix_seconds();
    let start = now - now % 60 + 30;
    let clock = ManualClock::new(Timestamp::from_unix_seconds(start).unwrap());
    let store = crate::setup::store(&url).await;
    let boards = Rollboard::with(store, Arc::new(clock.clone()), Settings::default());
    let scheduler = Scheduler::new(boards.clone());
    let (before, rss_before) = (crate::allocated(), resident());
    scheduler.start(Duration::from_secs(3600)).await.unwrap();

    let config = BoardConfig::parse("1m", &["1m", "2m"]).unwrap();
    let setup = Instant::now();
    let names: Vec<String> = (0..n).map(|i| format!("forum-tag-{i}")).collect();
    for_each(&names, |name| {
        let (boards, config) = (boards.clone(), config.clone());
        async move {
            boards.create(&name, config).await.unwrap();
        }
    })
    .await;
    let created = crate::allocated();
    eprintln!("  created: {} B/board", created.saturating_sub(before) / n);
    write_all(&boards, &names).await;
    eprintln!(
        "  written: {:+} B/board (committers of the boards written last still alive)",
        (crate::allocated() as i64 - created as i64) / n as i64
    );
    eprintln!(
        "  created and written in {:.1} s",
        setup.elapsed().as_secs_f64()
    );
    // The retirer has listed every board (a round after the last creation).
    let mut status = scheduler.retirer_status().await.unwrap();
    // Creating an existing board again tells the retirer to list the boards again.
    let rounds = status.borrow().rounds;
    boards.create(&names[0], config.clone()).await.unwrap();
    status.wait_for(|s| s.rounds > rounds).await.unwrap();
    eprintln!(
        "  listed by the retirer after {:.1} s",
        setup.elapsed().as_secs_f64()
    );
    // Background work of the last round (metric reads) settles, and committers end
    // `committer_idle` after their board's last write.
    let idle_after = IngestOptions::default().committer_idle;
    tokio::time::sleep(Duration::from_secs(1).max(idle_after) + Duration::from_secs(1)).await;
    let idle = crate::allocated().saturating_sub(before) as f64 / n as f64;
    // As `serve` does every 10 s.
    rollboard::service::heap_trim::trim();
    let rss = resident().saturating_sub(rss_before) as f64 / n as f64;
    eprintln!("  held once committers idled: {idle:.0} B/board, RSS {rss:.0} B/board");
    let series = rollboard::metrics::install_prometheus()
        .render()
        .lines()
        .filter(|l| l.starts_with("rollboard_") && l.contains("board=\""))
        .count();
    eprintln!("  Prometheus series with a board label: {series}");

    let boundary = Timestamp::from_unix_seconds(start + 30).unwrap();
    let stats_before = command_stats(&mut raw).await;
    let moved = Instant::now();
    clock.set(boundary);
    // The service's retirer, told by the clock's move: the first round through the
    // boundary in which no pass failed (a failed pass is retried `retry_after` later).
    let mut failed_rounds = 0;
    loop {
        let round = *status
            .wait_for(|s| s.as_of.is_some_and(|t| t >= boundary))
            .await
            .unwrap();
        if round.failed == 0 {
            break;
        }
        failed_rounds += 1;
        eprintln!(
            "  a round through the boundary had {} failed passes",
            round.failed
        );
        status.changed().await.unwrap();
    }
    let lag = moved.elapsed();
    // What Redis did meanwhile, a board: the scripts (`EVALSHA`, `EVAL`: their commands
    // included), and each command they ran.
    let mut spent: Vec<(String, u64, u64)> = command_stats(&mut raw)
        .await
        .into_iter()
        .map(|(name, calls, usec)| {
            let (c0, u0) = stats_before
                .iter()
                .find(|s| s.0 == name)
                .map_or((0, 0), |s| (s.1, s.2));
            (name, calls.saturating_sub(c0), usec.saturating_sub(u0))
        })
        .filter(|(name, calls, _)| *calls > 0 && name != "info")
        .collect();
    spent.sort_by_key(|(_, _, usec)| std::cmp::Reverse(*usec));
    let (scripts, commands): (Vec<_>, Vec<_>) = spent
        .into_iter()
        .partition(|(name, _, _)| name == "evalsha" || name == "eval");
    let scripts: u64 = scripts.iter().map(|(_, _, usec)| usec).sum();
    let per_board = |x: u64| x as f64 / n as f64;
    let listed: Vec<String> = commands
        .iter()
        .map(|(name, calls, usec)| {
            format!(
                "{name} {:.2} ({:.2} µs)",
                per_board(*calls),
                per_board(*usec)
            )
        })
        .collect();
    eprintln!("  commands a board: {}", listed.join(", "));
    eprintln!(
        "  retired in {:.2} s ({failed_rounds} rounds with failed passes before); Redis ran \
         scripts {:.2} s of it, {:.1} µs a board",
        lag.as_secs_f64(),
        scripts as f64 / 1e6,
        scripts as f64 / n as f64
    );

    let mut empty = 0;
    for part in names.chunks(1000) {
        let mut pipe = redis::pipe();
        for name in part {
            pipe.cmd("ZCARD").arg(format!("stats_{{{name}}}"));
        }
        let cards: Vec<u64> = pipe.query_async(&mut raw).await.unwrap();
        empty += cards.iter().filter(|&&c| c == 0).count();
    }
    scheduler.shutdown(Duration::from_secs(10)).await;
    let _: () = redis::cmd("FLUSHDB").query_async(&mut raw).await.unwrap();
    (lag, idle, rss, empty)
}

/// `INFO commandstats`: per command (lower case), its calls and the µs Redis spent in it
/// (a script's commands counted in the script's too).
async fn command_stats(raw: &mut redis::aio::MultiplexedConnection) -> Vec<(String, u64, u64)> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(raw)
        .await
        .unwrap();
    info.lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let field = |k: &str| rest.split(k).nth(1)?.split(',').next()?.parse().ok();
            Some((name.to_owned(), field("calls=")?, field("usec=")?))
        })
        .collect()
}
