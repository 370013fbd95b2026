//! Batch jobs whose writes lose their replies (cut by a proxy, or held past the client's
//! timeout): the legacy import, run again, counts every field exactly once; a plain
//! import stops with the error, having applied every batch it sent at most once, and run
//! again with its run id applies the rest exactly once.

use std::sync::Arc;
use std::time::Duration;

use rollboard::jobs::import::{Format, ImportError, ImportOptions, import};
use rollboard::jobs::legacy::{LegacyError, import_legacy};
use rollboard::{Error, IngestOptions, ManualClock, RedisOptions, RedisStore, Rollboard, Settings};

use crate::dystats::DyStats;
use crate::legacy::{END, fields, job, legacy_slots, legacy_stats, write_history};
use crate::proxy::{Fault, FaultProxy, Request};
use crate::support::{START, TestRedis, board, oracle, ranking, ts, unique};

const TIMEOUT: Duration = Duration::from_millis(600);
const HOLD: Fault = Fault::Hold(Duration::from_millis(900));

/// A Rollboard on `redis` whose store goes through `proxy`.
async fn through(proxy: &FaultProxy) -> (Rollboard, ManualClock) {
    let store = RedisStore::connect_with(
        &proxy.url(),
        RedisOptions {
            response_timeout: TIMEOUT,
            // One write call per batch however loaded the machine, so the cut call is
            // the whole batch (bounded calls are tested in tests/store/bounded_writes.rs).
            ingest: IngestOptions {
                call_budget: Duration::from_secs(1),
                ..IngestOptions::default()
            },
            ..RedisOptions::default()
        },
    )
    .await
    .unwrap();
    let clock = ManualClock::new(ts(START));
    let boards = Rollboard::with(
        Arc::new(store),
        Arc::new(clock.clone()),
        Settings::default(),
    );
    (boards, clock)
}

/// A `write.lua` call of `board` carrying the argument `arg` (a member, a token).
fn write_with(board: &str, arg: String) -> impl Fn(&Request) -> bool + Send + Sync + 'static {
    let (index, log) = (
        format!("slots_{{{board}}}"),
        format!("rebuild_log_{{{board}}}"),
    );
    move |r| r.is_script_with_key(&index) && r.has_arg(&log) && r.has_arg(&arg)
}

async fn legacy_import_survives(fault: Fault) {
    let redis = TestRedis::start().await;
    let proxy = FaultProxy::start(&redis.url).await;
    let (boards, clock) = through(&proxy).await;
    clock.set(ts(END));
    let mut conn = redis.raw().await;
    let name = unique("likes");
    write_history(&mut conn, &DyStats::new(&name, 24, 1), 6, 5).await;
    let stats = legacy_stats(&mut conn, &name).await;
    let slots = legacy_slots(&mut conn, &name).await;
    let total = fields(&slots);
    let third = slots.keys().nth(2).unwrap();
    let board = unique("moved");
    let job = job(&name, &board, &["26h"]);
    // The first chunk of the third slot loses its reply.
    proxy.arm(
        fault,
        1,
        write_with(&board, format!("legacy:slot_{name}_{third}:0")),
    );

    let failed = import_legacy(&boards, &redis.url, &job, |_| {}).await;
    assert!(
        matches!(failed, Err(LegacyError::Store(Error::StoreUnavailable(_)))),
        "{failed:?}"
    );
    assert_eq!(proxy.fired(), 1);
    // Run again, as the operator would: the lost chunk is found in the journal.
    let report = import_legacy(&boards, &redis.url, &job, |_| {})
        .await
        .unwrap();
    let first_two_and_chunk: u64 = slots.values().take(2).map(|v| v.len() as u64).sum::<u64>()
        + slots[third].len().min(job.chunk) as u64;
    assert_eq!(report.already_imported, first_two_and_chunk, "{report:?}");
    assert_eq!(report.imported + report.already_imported, total);
    assert_eq!(ranking(&boards, &board, "26h").await, stats);
}

#[tokio::test]
async fn a_legacy_import_whose_chunk_reply_is_cut_counts_every_field_once() {
    legacy_import_survives(Fault::Cut).await;
}

#[tokio::test]
async fn a_legacy_import_whose_chunk_reply_is_held_counts_every_field_once() {
    legacy_import_survives(HOLD).await;
}

async fn import_survives(fault: Fault) {
    let redis = TestRedis::start().await;
    let proxy = FaultProxy::start(&redis.url).await;
    let (boards, _clock) = through(&proxy).await;
    let b = board(&boards, "1h", &["1h", "24h"]).await;
    // Five batches of 200 events; the third carries the member "marker".
    let mut text = String::from("member,delta,at\n");
    let (mut sent, mut all) = (Vec::new(), Vec::new());
    for i in 0..1000i64 {
        let member = if i == 450 {
            "marker".to_owned()
        } else {
            format!("post:{}", i % 37)
        };
        let (delta, at) = (1 + i % 3, START - (i % 5) * 3600);
        text.push_str(&format!("{member},{delta},{at}\n"));
        // Batches 1 to 3 reach Redis; the import stops at the third's error.
        if i < 600 {
            sent.push((at - at.rem_euclid(3600), member.clone(), delta));
        }
        all.push((at - at.rem_euclid(3600), member, delta));
    }
    proxy.arm(fault, 1, write_with(&b, "marker".to_owned()));
    let options = ImportOptions {
        format: Format::Csv,
        batch_size: 200,
        in_flight: 1,
        ..ImportOptions::default()
    };
    let input = text.into_bytes();
    let failed = import(
        &boards,
        &b,
        std::io::Cursor::new(input.clone()),
        options.clone(),
        |_| {},
    )
    .await;
    let Err(ImportError::Stopped {
        source: Error::StoreUnavailable(_),
        imported: 400,
        run_id,
    }) = failed
    else {
        panic!("{failed:?}")
    };
    assert_eq!(proxy.fired(), 1);
    // At most once: the lost batch counted once, nothing after it sent.
    assert_eq!(
        ranking(&boards, &b, "24h").await,
        oracle(&sent, START - 24 * 3600)
    );
    assert_eq!(
        ranking(&boards, &b, "1h").await,
        oracle(&sent, START - 3600)
    );

    // Run again with its run id, as the error says: the rest, exactly once.
    let again = import(
        &boards,
        &b,
        std::io::Cursor::new(input),
        ImportOptions {
            run_id: Some(run_id),
            ..options
        },
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!((again.already_imported, again.imported), (600, 400));
    assert_eq!(
        ranking(&boards, &b, "24h").await,
        oracle(&all, START - 24 * 3600)
    );
    assert_eq!(ranking(&boards, &b, "1h").await, oracle(&all, START - 3600));
}

#[tokio::test]
async fn an_import_whose_batch_reply_is_cut_finishes_exactly_when_run_again() {
    import_survives(Fault::Cut).await;
}

#[tokio::test]
async fn an_import_whose_batch_reply_is_held_finishes_exactly_when_run_again() {
    import_survives(HOLD).await;
}
