//! Counters and stats: counter increments/s (batches of 1,000 over the 7 default
//! precisions, and single increments) beside the `HINCRBY` ceiling; stats records/s
//! (single records from 8 and from 64 tasks, batches of 100) beside the source's
//! `update_stats`, ported here as the baseline; Redis memory per
//! (counter, precision, sample).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rollboard::{RedisStore, Rollboard, Span, Timestamp};

use crate::load::{Load, run_loops};
use crate::report::{Row, rate};

/// Runs the phase; `hincrby` is the ceiling measured right before it.
pub async fn counters(redis_url: &str, hincrby: f64, phase: Duration) -> Vec<Row> {
    let boards = Rollboard::new(Arc::new(RedisStore::connect(redis_url).await.unwrap()));
    let mut rows = Vec::new();

    // Batches of 1,000 increments, spread over the last minute (up to 60 one-second
    // slices, 12 five-second ones, ...), so a batch is ~80 HINCRBYs in one script.
    let batched = {
        let boards = boards.clone();
        run_loops(8, phase, move |task, _| {
            let boards = boards.clone();
            async move {
                let now = Timestamp::now_utc().unix_millis();
                let batch: Vec<(i64, Option<Timestamp>)> = (0..1000)
                    .map(|i| {
                        let at = Timestamp::from_unix_millis(now - (i % 60) * 1000).unwrap();
                        (1, Some(at))
                    })
                    .collect();
                let name = format!("bench-counter-{task}");
                boards.counters().incr_batch(&name, &batch).await.unwrap();
                1000
            }
        })
        .await
    };
    let ratio = batched.per_second() / hincrby;
    rows.push(Row {
        figure: "counter increments, batches of 1000 over 7 precisions (8 tasks)".into(),
        measured: rate(batched.per_second(), "incr/s"),
        reference: format!("HINCRBY ceiling {}", rate(hincrby, "/s")),
        ratio: Some(ratio),
        target: Some((">= 0.5".into(), ratio >= 0.5)),
    });
    let single = {
        let boards = boards.clone();
        run_loops(8, phase, move |task, _| {
            let boards = boards.clone();
            async move {
                let name = format!("bench-counter-{task}");
                boards.counters().incr(&name, 1, None).await.unwrap();
                1
            }
        })
        .await
    };
    rows.push(Row {
        figure: "counter increments, one per call, 7 precisions (8 tasks)".into(),
        measured: rate(single.per_second(), "incr/s"),
        reference: format!("HINCRBY ceiling {}", rate(hincrby, "/s")),
        ratio: Some(single.per_second() / hincrby),
        target: None,
    });

    // Stats: the source's update_stats on one connection, then rollboard's records.
    let url = redis_url.to_owned();
    let base = tokio::task::spawn_blocking(move || update_stats_baseline(&url, phase))
        .await
        .unwrap();
    rows.push(Row {
        figure: "source's update_stats (WATCH, 2 temp zsets, 2 ZUNIONSTORE), 1 conn".into(),
        measured: rate(base.per_second(), "rec/s"),
        reference: String::new(),
        ratio: None,
        target: None,
    });
    // Single records (one value per call), from 8 tasks and from 64 (a service's
    // concurrent requests, each recording its access time): group commit gathers the
    // records in flight into one script call.
    let mut conn = redis::Client::open(redis_url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    for tasks in [8, 64] {
        let (calls_before, usec_before) = evalsha_calls(&mut conn).await;
        let records = {
            let boards = boards.clone();
            run_loops(tasks, phase, move |task, round| {
                let boards = boards.clone();
                async move {
                    let context = format!("/bench/{}", (task * 7919 + round) % 100);
                    let value = 0.001 * (1 + round % 500) as f64;
                    boards
                        .stats()
                        .record(&context, "BenchTime", value)
                        .await
                        .unwrap();
                    1
                }
            })
            .await
        };
        let (calls, usec) = evalsha_calls(&mut conn).await;
        let (calls, usec) = (calls - calls_before, usec - usec_before);
        let ratio = records.per_second() / base.per_second();
        rows.push(Row {
            figure: format!(
                "stats records, one per call ({tasks} tasks; {:.1} per script call, Redis {:.1} µs per record)",
                records.done as f64 / calls.max(1) as f64,
                usec as f64 / records.done.max(1) as f64
            ),
            measured: rate(records.per_second(), "rec/s"),
            reference: format!("update_stats {}", rate(base.per_second(), "rec/s")),
            ratio: Some(ratio),
            target: (tasks == 64).then(|| (">= 20".into(), ratio >= 20.0)),
        });
    }
    let batches = {
        let boards = boards.clone();
        run_loops(8, phase, move |task, round| {
            let boards = boards.clone();
            async move {
                let context = format!("/bench/{}", (task * 7919 + round) % 100);
                let values: Vec<f64> = (0..100)
                    .map(|i| 0.001 * (1 + (round * 100 + i) % 500) as f64)
                    .collect();
                boards
                    .stats()
                    .record_many(&context, "BenchTime", &values)
                    .await
                    .unwrap();
                100
            }
        })
        .await
    };
    let ratio = batches.per_second() / base.per_second();
    rows.push(Row {
        figure: "stats records, batches of 100 per context (8 tasks)".into(),
        measured: rate(batches.per_second(), "rec/s"),
        reference: format!("update_stats {}", rate(base.per_second(), "rec/s")),
        ratio: Some(ratio),
        target: Some((">= 20".into(), ratio >= 20.0)),
    });
    rows.push(memory(&boards, redis_url).await);
    rows
}

/// `EVALSHA` calls Redis has run so far, and the microseconds it spent in them.
async fn evalsha_calls(conn: &mut redis::aio::MultiplexedConnection) -> (i64, i64) {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .unwrap();
    let line = info
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:"))
        .unwrap_or_default();
    let field = |name: &str| {
        line.split(',')
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
            .unwrap_or(0)
    };
    (field("calls"), field("usec"))
}

/// The source's `update_stats`, ported: per value, `WATCH` the start key, read it, then
/// in `MULTI`: roll the hour over if needed, two uuid-named temporary zsets, two
/// `ZUNIONSTORE`s (min, max), delete them, and three `ZINCRBY`s (count, sum, sumsq).
fn update_stats_baseline(redis_url: &str, duration: Duration) -> Load {
    let client = redis::Client::open(redis_url).unwrap();
    let mut conn = client.get_connection().unwrap();
    let start = Instant::now();
    let mut load = Load::default();
    while start.elapsed() < duration {
        let n = load.done;
        let destination = format!("stats:/bench/{}:BenchTime", n % 100);
        let start_key = format!("{destination}:start");
        let value = 0.001 * (1 + n % 500) as f64;
        let hour = Timestamp::now_utc().unix_seconds() / 3600 * 3600;
        let _: () = redis::cmd("WATCH")
            .arg(&start_key)
            .query(&mut conn)
            .unwrap();
        let existing: Option<i64> = redis::cmd("GET").arg(&start_key).query(&mut conn).unwrap();
        let mut pipe = redis::pipe();
        pipe.atomic();
        if existing.is_some_and(|e| e < hour) {
            pipe.cmd("RENAME")
                .arg(&destination)
                .arg(format!("{destination}:last"))
                .ignore()
                .cmd("RENAME")
                .arg(&start_key)
                .arg(format!("{destination}:pstart"))
                .ignore();
        }
        let (t1, t2) = (format!("tmp:{n}:a"), format!("tmp:{n}:b"));
        pipe.cmd("SET").arg(&start_key).arg(hour).ignore();
        pipe.cmd("ZADD").arg(&t1).arg(value).arg("min").ignore();
        pipe.cmd("ZADD").arg(&t2).arg(value).arg("max").ignore();
        pipe.cmd("ZUNIONSTORE")
            .arg(&destination)
            .arg(2)
            .arg(&destination)
            .arg(&t1)
            .arg("AGGREGATE")
            .arg("MIN")
            .ignore();
        pipe.cmd("ZUNIONSTORE")
            .arg(&destination)
            .arg(2)
            .arg(&destination)
            .arg(&t2)
            .arg("AGGREGATE")
            .arg("MAX")
            .ignore();
        pipe.cmd("DEL").arg(&t1).arg(&t2).ignore();
        pipe.cmd("ZINCRBY")
            .arg(&destination)
            .arg(1)
            .arg("count")
            .ignore();
        pipe.cmd("ZINCRBY")
            .arg(&destination)
            .arg(value)
            .arg("sum")
            .ignore();
        pipe.cmd("ZINCRBY")
            .arg(&destination)
            .arg(value * value)
            .arg("sumsq")
            .ignore();
        let _: () = pipe.query(&mut conn).unwrap();
        load.done += 1;
    }
    load.elapsed = start.elapsed();
    load
}

/// Redis memory per (counter, precision, sample): 1,000 counters, each incremented at
/// every second of the last 120 (the record hashes and the index included).
async fn memory(boards: &Rollboard, redis_url: &str) -> Row {
    let mut conn = redis::Client::open(redis_url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let before = crate::used_memory(&mut conn).await;
    let now = Timestamp::now_utc().unix_millis();
    let batch: Vec<(i64, Option<Timestamp>)> = (0..120)
        .map(|s| {
            (
                1,
                Some(Timestamp::from_unix_millis(now - s * 1000).unwrap()),
            )
        })
        .collect();
    for c in 0..1000 {
        boards
            .counters()
            .incr_batch(&format!("bench-memory-{c}"), &batch)
            .await
            .unwrap();
    }
    let after = crate::used_memory(&mut conn).await;
    let mut samples = 0;
    for c in 0..1000 {
        for p in rollboard::DEFAULT_PRECISIONS {
            let p = Span::from_seconds(p).unwrap();
            samples += boards
                .counters()
                .samples(&format!("bench-memory-{c}"), p, Default::default())
                .await
                .unwrap()
                .len();
        }
    }
    for c in 0..1000 {
        boards
            .counters()
            .delete(&format!("bench-memory-{c}"))
            .await
            .unwrap();
    }
    Row {
        figure: "Redis memory per (counter, precision, sample)".into(),
        measured: format!("{:.1} bytes", (after - before) as f64 / samples as f64),
        reference: format!(
            "1,000 counters, {} samples",
            crate::report::thousands(samples as f64)
        ),
        ratio: None,
        target: None,
    }
}
