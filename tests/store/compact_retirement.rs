//! Retirement of compact slots (buckets `<stage>:<i>`, see `compact_slots.rs`) on a
//! two-window board: a slot split into 69 buckets, late writes into its second stage
//! before window 1 retires it (so some buckets merge and the others move by RENAME, and
//! some grow past 4 x the bucket fill, retired by HSCAN steps), two retirers at once,
//! and a drop that leaves no key of the board. Totals equal the oracle exactly.

use std::collections::BTreeSet;

use rollboard::{Clock, RetireOptions, Rollboard, Ties};

use crate::compact_fixture::{
    FILL, LATE_BUCKETS, LISTPACK, MEMBERS, SPLIT, bucket_len, split_slot_board, stage_keys,
};
use crate::oracle::{Oracle, check_redis_invariants};
use crate::support::{START, TestRedis, clock, ranking, ts, with_clock};

/// A window's whole ranking, in ranking order.
async fn full_ranking(boards: &Rollboard, board: &str, window: &str) -> Vec<(String, i64)> {
    let mut all = Vec::new();
    loop {
        let page = boards
            .windowed(board)
            .top(Some(window.parse().unwrap()), all.len() as u64, 1000)
            .await
            .unwrap();
        let n = page.entries.len();
        all.extend(ranking(&page));
        if n < 1000 {
            return all;
        }
    }
}

async fn assert_exact(
    boards: &Rollboard,
    raw: &mut redis::aio::MultiplexedConnection,
    board: &str,
    oracle: &Oracle,
) {
    let now = boards.now();
    for (j, window) in oracle.config.windows().iter().enumerate() {
        let got = full_ranking(boards, board, &window.to_string()).await;
        assert_eq!(got, oracle.ranking(j, now), "window {window}");
    }
    check_redis_invariants(raw, board, &oracle.config, Some(now)).await;
}

/// Every key whose name holds `{board}`.
async fn board_keys(raw: &mut redis::aio::MultiplexedConnection, board: &str) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut cursor = 0u64;
    loop {
        let (next, found): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("*{{{board}}}*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(raw)
            .await
            .unwrap();
        keys.extend(found);
        if next == 0 {
            return keys;
        }
        cursor = next;
    }
}

const SMALL_CHUNKS: RetireOptions = RetireOptions {
    chunk_size: 100,
    chunk_budget: std::time::Duration::from_micros(1500),
    max_chunks: None,
    compact: true,
    swap_fields: 600,
};

async fn split_slot_retires_exactly(ties: Ties) {
    // A server of its own: the listpack limit is server-wide.
    let redis = TestRedis::spawn().await;
    redis
        .config_set("hash-max-listpack-entries", LISTPACK)
        .await;
    let clock = clock();
    let boards = with_clock(redis.store_plain().await, &clock);
    let mut raw = redis.raw().await;
    let (b, oracle) = split_slot_board(&boards, &clock, &mut raw, ties).await;
    let [stage1, stage2]: [String; 2] = stage_keys(&b, START, 2).try_into().unwrap();
    let late_sizes: Vec<i64> = {
        let mut sizes = Vec::new();
        for i in 0..LATE_BUCKETS {
            sizes.push(bucket_len(&mut raw, &stage2, i).await);
        }
        sizes
    };
    assert!(late_sizes.iter().all(|n| *n > 0), "{late_sizes:?}");
    assert_eq!(bucket_len(&mut raw, &stage2, LATE_BUCKETS).await, 0);
    let renamed = bucket_len(&mut raw, &stage1, 30).await;
    assert!(renamed > 0);

    // Window 1 retires slot START (3,000 fields: stage 1 gone, stage 2 whole) and the
    // plain slot (500).
    let report = boards
        .windowed(&b)
        .retire(Some(SMALL_CHUNKS))
        .await
        .unwrap();
    assert!(report.complete);
    assert_eq!(report.fields_subtracted, MEMBERS as u64 + 500);
    assert_eq!(report.slots_retired, 2);
    for i in 0..SPLIT.buckets() {
        assert_eq!(bucket_len(&mut raw, &stage1, i).await, 0, "bucket {i}");
    }
    assert_eq!(bucket_len(&mut raw, &stage2, 30).await, renamed);
    let biggest = {
        let mut biggest = 0;
        for i in 0..LATE_BUCKETS {
            biggest = biggest.max(bucket_len(&mut raw, &stage2, i).await);
        }
        biggest
    };
    assert!(
        biggest > 4 * FILL as i64,
        "a merged bucket of {biggest} fields is retired by HSCAN steps"
    );
    assert_exact(&boards, &mut raw, &b, &oracle).await;

    // Window 2 retires slot START (HSCAN steps for the big buckets): it is gone, with its
    // geometry.
    clock.set(ts(START + 3 * 3600));
    let stage2_fields: i64 = {
        let mut n = 0;
        for i in 0..SPLIT.buckets() {
            n += bucket_len(&mut raw, &stage2, i).await;
        }
        n
    };
    let report = boards
        .windowed(&b)
        .retire(Some(SMALL_CHUNKS))
        .await
        .unwrap();
    assert_eq!(report.fields_subtracted, stage2_fields as u64);
    assert_eq!(report.slots_retired, 1);
    let geometries: i64 = redis::cmd("EXISTS")
        .arg(format!("slotgeo_{{{b}}}"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(geometries, 0);
    assert_exact(&boards, &mut raw, &b, &oracle).await;
    let window2 = full_ranking(&boards, &b, "3h").await;
    assert_eq!(window2.len(), 500);
    assert!(window2.iter().all(|(m, s)| m.starts_with('p') && *s == 2));

    clock.set(ts(START + 4 * 3600));
    boards.windowed(&b).retire(None).await.unwrap();
    assert_exact(&boards, &mut raw, &b, &oracle).await;
    let left: Vec<String> = board_keys(&mut raw, &b)
        .await
        .into_iter()
        .filter(|k| k.starts_with("slot"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn a_split_compact_slot_retires_exactly_through_two_windows() {
    split_slot_retires_exactly(Ties::Competition).await;
}

#[tokio::test]
async fn a_split_compact_slot_on_a_dense_board_retires_exactly() {
    split_slot_retires_exactly(Ties::Dense).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_retirers_at_once_retire_a_compact_slot_exactly() {
    let redis = TestRedis::start().await;
    let clock = clock();
    let replicas = [
        with_clock(redis.store_plain().await, &clock),
        with_clock(redis.store_plain().await, &clock),
    ];
    let mut raw = redis.raw().await;
    let (b, oracle) = split_slot_board(&replicas[0], &clock, &mut raw, Ties::Competition).await;
    for hours in [2, 3, 4] {
        clock.set(ts(START + hours * 3600));
        let run = |r: usize| {
            let (rb, b) = (replicas[r].clone(), b.clone());
            let options = RetireOptions {
                chunk_size: 7 + r * 16,
                ..SMALL_CHUNKS
            };
            tokio::spawn(async move { rb.windowed(&b).retire(Some(options)).await.unwrap() })
        };
        let (first, second) = (run(0), run(1));
        let (first, second) = (first.await.unwrap(), second.await.unwrap());
        assert!(first.complete && second.complete);
        if hours == 2 {
            // Between them, each field of both slots subtracted once.
            assert_eq!(
                first.fields_subtracted + second.fields_subtracted,
                MEMBERS as u64 + 500
            );
            assert!(first.chunks > 0 && second.chunks > 0);
        }
        assert_exact(&replicas[0], &mut raw, &b, &oracle).await;
    }
    assert_eq!(replicas[0].now(), clock.now());
}

#[tokio::test]
async fn dropping_a_board_with_a_split_compact_slot_leaves_no_key() {
    let redis = TestRedis::start().await;
    let clock = clock();
    let boards = with_clock(redis.store_plain().await, &clock);
    let mut raw = redis.raw().await;
    let (b, _) = split_slot_board(&boards, &clock, &mut raw, Ties::Dense).await;
    let before = board_keys(&mut raw, &b).await;
    let buckets = before.iter().filter(|k| k.contains(':')).count();
    assert!(
        buckets > SPLIT.buckets() as usize,
        "both stages have buckets: {buckets}"
    );
    assert!(before.contains(&format!("slotgeo_{{{b}}}")));
    boards.drop_board(&b).await.unwrap();
    assert_eq!(board_keys(&mut raw, &b).await, BTreeSet::new());
}
