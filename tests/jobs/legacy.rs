//! The legacy import: a board written by the source article's own code (`DyStats`) comes
//! across with the article's totals, once, however often the import runs or stops.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use rand::{Rng, SeedableRng};
use redis::aio::MultiplexedConnection;
use rollboard::jobs::legacy::{LegacyError, LegacyImport, LegacyReport, import_legacy};
use rollboard::{Rollboard, Span};

use crate::dystats::DyStats;
use crate::oracle::check_redis_invariants;
use crate::support::{START, TestRedis, boards, ranking, ts, unique};

/// The end of the legacy history: 40 hours after `START`, 20 minutes into the hour.
pub(crate) const END: i64 = START + 40 * 3600 + 1200;
const HOUR: i64 = 3600;

/// Likes (and a few double-likes) written through the article's code, every hour for
/// `hours` hours up to `END`, the last one at `END`.
pub(crate) async fn write_history(
    conn: &mut MultiplexedConnection,
    legacy: &DyStats,
    hours: i64,
    seed: u64,
) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let first = END - (hours - 1) * HOUR;
    for hour in 0..hours {
        let mut times: Vec<i64> = (0..40)
            .map(|_| first + hour * HOUR + rng.random_range(0..HOUR))
            .collect();
        times.sort_unstable();
        for t in times {
            // Skewed towards low ids, as likes are.
            let post = (rng.random::<f64>().powi(3) * 120.0) as u32;
            let amount = if rng.random_bool(0.1) { 2 } else { 1 };
            legacy
                .incr_stats(conn, &format!("post:{post}"), amount, t.min(END))
                .await;
        }
    }
    legacy.incr_stats(conn, "post:last", 1, END).await;
}

/// The legacy totals, as the article's `get_stats_list` reads them.
pub(crate) async fn legacy_stats(
    conn: &mut MultiplexedConnection,
    name: &str,
) -> BTreeMap<String, i64> {
    let entries: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(format!("stats_{name}"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(conn)
        .await
        .unwrap();
    entries
        .into_iter()
        .map(|(m, s)| (m, s as i64))
        .filter(|(_, s)| *s > 0)
        .collect()
}

/// The legacy slot hashes: start -> member -> value.
pub(crate) async fn legacy_slots(
    conn: &mut MultiplexedConnection,
    name: &str,
) -> BTreeMap<i64, BTreeMap<String, i64>> {
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("slot_{name}_*"))
        .query_async(conn)
        .await
        .unwrap();
    let mut slots = BTreeMap::new();
    for key in keys {
        // `slot_<name>_x_<ts>` belongs to the board `<name>_x`.
        let Ok(ts) = key[6 + name.len()..].parse() else {
            continue;
        };
        let values: BTreeMap<String, i64> = redis::cmd("HGETALL")
            .arg(&key)
            .query_async(conn)
            .await
            .unwrap();
        slots.insert(ts, values);
    }
    slots
}

/// The positive sums of the slots after `cutoff`.
fn sum_after(slots: &BTreeMap<i64, BTreeMap<String, i64>>, cutoff: i64) -> BTreeMap<String, i64> {
    let mut totals = BTreeMap::new();
    for (_, values) in slots.range(cutoff + 1..) {
        for (member, value) in values {
            *totals.entry(member.clone()).or_insert(0) += value;
        }
    }
    totals.retain(|_, v| *v > 0);
    totals
}

pub(crate) fn fields(slots: &BTreeMap<i64, BTreeMap<String, i64>>) -> u64 {
    slots.values().map(|v| v.len() as u64).sum()
}

pub(crate) fn job(legacy: &str, board: &str, windows: &[&str]) -> LegacyImport {
    let mut job = LegacyImport::new(
        legacy,
        board,
        Span::parse("1h").unwrap(),
        windows.iter().map(|w| Span::parse(w).unwrap()).collect(),
    );
    job.chunk = 16;
    job
}

async fn run(boards: &Rollboard, redis: &TestRedis, job: &LegacyImport) -> LegacyReport {
    import_legacy(boards, &redis.url, job, |_| {})
        .await
        .unwrap()
}

#[tokio::test]
async fn the_import_gives_the_articles_own_totals() {
    let redis = TestRedis::start().await;
    let (boards, clock) = boards(&redis).await;
    clock.set(ts(END));
    let mut conn = redis.raw().await;
    let name = unique("likes");
    write_history(&mut conn, &DyStats::new(&name, 24, 1), 40, 7).await;
    let stats = legacy_stats(&mut conn, &name).await;
    let slots = legacy_slots(&mut conn, &name).await;
    let hour = END - END % HOUR;
    // The article keeps the current hour and the 25 before it: 26 slots for "24 hours".
    assert_eq!(
        slots.keys().copied().collect::<Vec<_>>(),
        (0..26).map(|i| hour - (25 - i) * HOUR).collect::<Vec<_>>()
    );
    assert_eq!(
        stats,
        sum_after(&slots, 0),
        "the article's totals are its slots' sums"
    );

    // A board spanning every slot the article keeps has exactly the article's totals.
    let all = unique("all");
    let report = run(&boards, &redis, &job(&name, &all, &["1h", "26h"])).await;
    assert_eq!((report.slots, report.slots_too_late), (26, 0));
    assert_eq!(report.fields, fields(&slots));
    assert_eq!(
        (
            report.imported,
            report.too_late,
            report.rejected,
            report.empty
        ),
        (fields(&slots), 0, 0, 0)
    );
    assert_eq!(ranking(&boards, &all, "26h").await, stats);
    assert_eq!(
        ranking(&boards, &all, "1h").await,
        sum_after(&slots, hour - HOUR)
    );
    assert_eq!(report.config.offset(), 0);
    check_redis_invariants(&mut conn, &all, &report.config, None).await;

    // The issue's `--windows 24h`: exact 24 hours; the two older slots are skipped.
    let day = unique("day");
    let report = run(&boards, &redis, &job(&name, &day, &["24h"])).await;
    let older: u64 = slots
        .range(..=hour - 24 * HOUR)
        .map(|(_, v)| v.len() as u64)
        .sum();
    assert_eq!(
        (report.slots, report.slots_too_late, report.too_late),
        (26, 2, older)
    );
    assert_eq!(report.imported, fields(&slots) - older);
    assert_eq!(
        ranking(&boards, &day, "24h").await,
        sum_after(&slots, hour - 24 * HOUR)
    );

    // The legacy keys are untouched, and the board lives on: an hour later its 24 h
    // window drops the oldest hour it held, which the article never does exactly.
    assert_eq!(legacy_stats(&mut conn, &name).await, stats);
    assert_eq!(legacy_slots(&mut conn, &name).await, slots);
    clock.set(ts(END + HOUR));
    boards.windowed(&day).retire(None).await.unwrap();
    assert_eq!(
        ranking(&boards, &day, "24h").await,
        sum_after(&slots, hour - 23 * HOUR)
    );
}

#[tokio::test]
async fn a_stopped_repeated_or_doubled_import_counts_every_field_once() {
    let redis = TestRedis::start().await;
    let (boards, clock) = boards(&redis).await;
    clock.set(ts(END));
    let mut conn = redis.raw().await;
    let name = unique("likes");
    write_history(&mut conn, &DyStats::new(&name, 24, 1), 6, 11).await;
    let stats = legacy_stats(&mut conn, &name).await;
    let total = fields(&legacy_slots(&mut conn, &name).await);
    let board = unique("resumed");
    let job = job(&name, &board, &["24h"]);

    // Stopped after three chunks, as a crash would stop it.
    let chunks = Arc::new(AtomicUsize::new(0));
    let before_stop = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(tokio::sync::Notify::new());
    let (seen, imported, signal) = (chunks.clone(), before_stop.clone(), stop.clone());
    tokio::select! {
        _ = import_legacy(&boards, &redis.url, &job, move |report| {
            if seen.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                imported.store(report.imported, Ordering::SeqCst);
                signal.notify_one();
            }
        }) => panic!("the import should have been stopped"),
        _ = stop.notified() => {}
    }
    assert_eq!(chunks.load(Ordering::SeqCst), 3);
    let before_stop = before_stop.load(Ordering::SeqCst);
    assert!(before_stop > 0);
    let partial = ranking(&boards, &board, "24h").await;
    assert!(partial.values().sum::<i64>() < stats.values().sum::<i64>());

    let resumed = run(&boards, &redis, &job).await;
    // The chunk in flight when it stopped may or may not have landed.
    assert!(resumed.already_imported >= before_stop, "{resumed:?}");
    assert_eq!(resumed.imported + resumed.already_imported, total);
    assert_eq!(ranking(&boards, &board, "24h").await, stats);

    let again = run(&boards, &redis, &job).await;
    assert_eq!((again.imported, again.already_imported), (0, total));
    assert_eq!(ranking(&boards, &board, "24h").await, stats);

    // Two imports at once: every chunk is applied by exactly one of them.
    let twin = unique("twin");
    let job = crate::legacy::job(&name, &twin, &["24h"]);
    let (a, b) = tokio::join!(run(&boards, &redis, &job), run(&boards, &redis, &job));
    assert_eq!(a.imported + b.imported, total);
    assert_eq!(a.imported + a.already_imported, total);
    assert_eq!(ranking(&boards, &twin, "24h").await, stats);
}

#[tokio::test]
async fn delete_legacy_unlinks_that_boards_keys_only_once_all_came_across() {
    let redis = TestRedis::start().await;
    let (boards, clock) = boards(&redis).await;
    clock.set(ts(END));
    let mut conn = redis.raw().await;
    let name = unique("likes");
    // A board whose name extends this one's: `slot_<name>_x_<ts>` is not ours.
    let cousin = format!("{name}_x");
    write_history(&mut conn, &DyStats::new(&name, 24, 1), 5, 3).await;
    write_history(&mut conn, &DyStats::new(&cousin, 24, 1), 5, 4).await;
    let stats = legacy_stats(&mut conn, &name).await;
    let cousin_slots = legacy_slots(&mut conn, &cousin).await;
    let slots = legacy_slots(&mut conn, &name).await;
    assert_eq!(slots.len(), 5);

    let mut job = job(&name, &name, &["24h"]);
    job.delete_legacy = true;
    let report = run(&boards, &redis, &job).await;
    assert_eq!(report.deleted_keys, 5 + 2);
    assert_eq!(ranking(&boards, &name, "24h").await, stats);
    let left: Vec<String> = redis::cmd("KEYS")
        .arg(format!("*{name}*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(
        left.iter().all(|k| k.contains('{') || k.contains(&cousin)),
        "only the new board's keys and the cousin's remain: {left:?}"
    );
    assert_eq!(legacy_slots(&mut conn, &cousin).await, cousin_slots);
    let cousin_stats: bool = redis::cmd("EXISTS")
        .arg(format!("stats_{cousin}"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(cousin_stats);

    // A field the board cannot take keeps the legacy keys, and says why.
    let odd = unique("odd");
    let legacy = DyStats::new(&odd, 24, 1);
    legacy.incr_stats(&mut conn, "post:1", 3, END).await;
    legacy.incr_stats(&mut conn, &"x".repeat(300), 1, END).await;
    let mut job = crate::legacy::job(&odd, &odd, &["24h"]);
    job.delete_legacy = true;
    let report = run(&boards, &redis, &job).await;
    assert_eq!(
        (report.imported, report.rejected, report.deleted_keys),
        (1, 1, 0)
    );
    assert_eq!(report.problems.len(), 1);
    assert!(
        report.problems[0].starts_with(&format!("slot_{odd}_{}", END - END % HOUR))
            && report.problems[0]
                .ends_with("invalid member: must be 1 to 256 bytes of UTF-8, got 300 bytes"),
        "{:?}",
        report.problems
    );
    assert_eq!(legacy_slots(&mut conn, &odd).await.len(), 1);
    assert_eq!(
        ranking(&boards, &odd, "24h").await,
        BTreeMap::from([("post:1".to_owned(), 3)])
    );
}

#[tokio::test]
async fn slots_off_the_boards_boundaries_stop_the_import_before_it_writes() {
    let redis = TestRedis::start().await;
    let (boards, clock) = boards(&redis).await;
    clock.set(ts(END));
    let mut conn = redis.raw().await;
    let name = unique("shifted");
    let hour = END - END % HOUR;
    // Written on a machine at UTC+5:30: slots start at half past.
    for ts in [hour - 2 * HOUR + 1800, hour - HOUR + 1800] {
        let _: () = redis::cmd("HSET")
            .arg(format!("slot_{name}_{ts}"))
            .arg("post:1")
            .arg(2)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    let board = unique("aligned");
    let report = run(&boards, &redis, &job(&name, &board, &["24h"])).await;
    assert_eq!((report.config.offset(), report.imported), (1800, 2));
    assert_eq!(
        ranking(&boards, &board, "24h").await,
        BTreeMap::from([("post:1".to_owned(), 4)])
    );

    // A slot a quarter past does not start a 1 h slot of that board.
    let _: () = redis::cmd("HSET")
        .arg(format!("slot_{name}_{}", hour + 900))
        .arg("post:1")
        .arg(1)
        .query_async(&mut conn)
        .await
        .unwrap();
    let other = unique("refused");
    let error = import_legacy(&boards, &redis.url, &job(&name, &other, &["24h"]), |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&error, LegacyError::Layout(m) if m.contains(&format!("slot_{name}_{}", hour + 900))),
        "{error}"
    );
    assert_eq!(
        boards.board(&other).await.unwrap_err().code(),
        "board_not_found"
    );
    // A value that is not an integer is not the article's layout either.
    let bad = unique("bad");
    let _: () = redis::cmd("HSET")
        .arg(format!("slot_{bad}_{hour}"))
        .arg("post:1")
        .arg("many")
        .query_async(&mut conn)
        .await
        .unwrap();
    let error = import_legacy(&boards, &redis.url, &job(&bad, &bad, &["24h"]), |_| {})
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("\"many\" is not an integer"),
        "{error}"
    );
}
