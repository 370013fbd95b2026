//! Rate windows: the conformance suite (every case on the memory store, on a real Redis
//! and on a local Redis Cluster, same exact answers), the Redis layout (key encoding, expiry, memory per busy
//! key) and the concurrency of `check`.

use std::collections::BTreeMap;
use std::time::Duration;

use rollboard::{Coverage, Error, Rollboard};

use crate::support::{Harness, START, TestRedis, clock, ts, unique, with_clock};

on_every_store!(
    a_hit_counts_in_every_window_while_its_slot_is_inside,
    out_of_order_hits_are_counted_exactly,
    a_silent_cycle_resets_the_tier,
    a_clock_going_backwards_never_corrupts_other_slots,
    late_hits_count_in_the_tiers_that_still_hold_them,
    hits_too_old_for_every_tier_are_too_late_and_change_nothing,
    future_hits_count_once_their_time_comes_and_beyond_the_skew_are_rejected,
    bad_input_is_rejected_with_its_code,
    check_allows_up_to_the_limit_and_says_when_to_retry,
    a_slot_counter_never_overflows,
    delete_forgets_a_key,
    keys_with_tags_separators_and_non_ascii_never_share_counts,
    a_batch_answers_each_hit,
    an_overflowing_hit_in_a_batch_changes_nothing_and_the_others_count,
    a_batch_of_one_key_longer_than_one_call_counts_every_hit_in_order,
    a_hit_leaves_the_ring_when_a_later_hit_of_its_batch_moves_the_head_past_it,
    full_coverage_counts_the_oldest_slot_whole,
    a_full_coverage_check_refuses_until_the_oldest_slot_leaves,
    full_coverage_a_tier_cannot_hold_goes_to_the_next_tier_or_is_refused,
    a_batch_mixing_keys_sums_duplicates_with_different_times_and_late_hits,
    concurrent_batches_to_the_same_keys_merged_in_flight_count_exactly,
);

/// The counts of `key` as `(window, count)` pairs.
async fn counts(h: &Harness, key: &str, windows: &[&str]) -> Vec<(String, u64)> {
    h.boards
        .rates()
        .counts(key, Some(windows), Default::default())
        .await
        .unwrap()
        .counts
        .into_iter()
        .map(|(w, c)| (w.to_string(), c))
        .collect()
}

fn pairs(items: &[(&str, u64)]) -> Vec<(String, u64)> {
    items.iter().map(|(w, c)| (w.to_string(), *c)).collect()
}

/// Each hit's answer to one `rate_hits` batch: the tiers that counted it, or its error code.
async fn hit_codes(
    h: &Harness,
    hits: &[(String, u64, Option<rollboard::Timestamp>)],
) -> Vec<Result<usize, &'static str>> {
    h.boards
        .rates()
        .hits(hits)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.map_err(|e| e.code()))
        .collect()
}

const ALL: [&str; 5] = ["5s", "5m", "5h", "5d", "180d"];

async fn a_hit_counts_in_every_window_while_its_slot_is_inside(h: Harness) {
    let key = unique("u");
    assert_eq!(h.boards.rates().hit(&key, 3, None).await.unwrap(), 4);
    let read = h
        .boards
        .rates()
        .counts(&key, None, Default::default())
        .await
        .unwrap();
    assert_eq!(read.at, ts(START));
    let all = |n| pairs(&[("5s", n), ("5m", n), ("5h", n), ("5d", n), ("180d", n)]);
    assert_eq!(counts(&h, &key, &ALL).await, all(3));
    h.at(4);
    assert_eq!(counts(&h, &key, &["5s"]).await, pairs(&[("5s", 3)]));
    h.at(5);
    assert_eq!(
        counts(&h, &key, &["5s", "5m"]).await,
        pairs(&[("5s", 0), ("5m", 3)])
    );
    h.at(300);
    assert_eq!(
        counts(&h, &key, &["5m", "5h"]).await,
        pairs(&[("5m", 0), ("5h", 3)])
    );
    h.at(5 * 3600);
    assert_eq!(
        counts(&h, &key, &["5h", "5d"]).await,
        pairs(&[("5h", 0), ("5d", 3)])
    );
}

async fn out_of_order_hits_are_counted_exactly(h: Harness) {
    let key = unique("u");
    h.at(10);
    for at in [9, 7, 10, 3, 8, 9] {
        h.boards
            .rates()
            .hit(&key, 1, Some(ts(START + at)))
            .await
            .unwrap();
    }
    // 5s at START+10 holds the seconds 6..=10: 9, 7, 10, 8, 9.
    assert_eq!(
        counts(&h, &key, &["5s", "10s", "5m"]).await,
        pairs(&[("5s", 5), ("10s", 6), ("5m", 6)])
    );
}

async fn a_silent_cycle_resets_the_tier(h: Harness) {
    let key = unique("u");
    for s in 0..60 {
        h.at(s);
        h.boards.rates().hit(&key, 1, None).await.unwrap();
    }
    assert_eq!(counts(&h, &key, &["60s"]).await, pairs(&[("1m", 60)]));
    // Silent for more than the second tier's whole cycle, then one hit.
    h.at(185);
    h.boards.rates().hit(&key, 2, None).await.unwrap();
    assert_eq!(
        counts(&h, &key, &["5s", "60s", "5m"]).await,
        pairs(&[("5s", 2), ("1m", 2), ("5m", 62)])
    );
}

async fn a_clock_going_backwards_never_corrupts_other_slots(h: Harness) {
    let key = unique("u");
    h.at(100);
    h.boards.rates().hit(&key, 1, None).await.unwrap();
    h.at(50);
    h.boards.rates().hit(&key, 2, None).await.unwrap();
    // At 50, the hit at 100 is still ahead.
    assert_eq!(
        counts(&h, &key, &["5s", "60s"]).await,
        pairs(&[("5s", 2), ("1m", 2)])
    );
    h.at(100);
    assert_eq!(
        counts(&h, &key, &["5s", "60s", "5m"]).await,
        pairs(&[("5s", 1), ("1m", 3), ("5m", 3)])
    );
    // Back by more than the second tier's cycle: too late there, counted in the others.
    h.at(20);
    assert_eq!(h.boards.rates().hit(&key, 4, None).await.unwrap(), 3);
    h.at(100);
    assert_eq!(
        counts(&h, &key, &["5s", "60s", "5m"]).await,
        pairs(&[("5s", 1), ("1m", 3), ("5m", 7)])
    );
}

async fn late_hits_count_in_the_tiers_that_still_hold_them(h: Harness) {
    let key = unique("u");
    h.at(1000);
    h.boards.rates().hit(&key, 1, None).await.unwrap();
    // Two minutes late: the second tier (60 s) no longer holds it.
    assert_eq!(
        h.boards
            .rates()
            .hit(&key, 5, Some(ts(START + 880)))
            .await
            .unwrap(),
        3
    );
    // 30 s late: every tier holds it.
    assert_eq!(
        h.boards
            .rates()
            .hit(&key, 7, Some(ts(START + 970)))
            .await
            .unwrap(),
        4
    );
    assert_eq!(
        counts(&h, &key, &["5s", "1m", "5m", "5h"]).await,
        pairs(&[("5s", 1), ("1m", 8), ("5m", 13), ("5h", 13)])
    );
}

async fn hits_too_old_for_every_tier_are_too_late_and_change_nothing(h: Harness) {
    let key = unique("u");
    h.boards.rates().hit(&key, 1, None).await.unwrap();
    let err = h
        .boards
        .rates()
        .hit(&key, 1, Some(ts(START - 367 * 86_400)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "too_late");
    assert_eq!(
        counts(&h, &key, &["5s", "180d"]).await,
        pairs(&[("5s", 1), ("180d", 1)])
    );
}

async fn future_hits_count_once_their_time_comes_and_beyond_the_skew_are_rejected(h: Harness) {
    let key = unique("u");
    let err = h
        .boards
        .rates()
        .hit(&key, 1, Some(ts(START + 61)))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InFuture {
                skew_seconds: 60,
                ..
            }
        ),
        "{err:?}"
    );
    h.boards
        .rates()
        .hit(&key, 1, Some(ts(START + 30)))
        .await
        .unwrap();
    assert_eq!(
        counts(&h, &key, &["5s", "5m"]).await,
        pairs(&[("5s", 0), ("5m", 1)])
    );
    h.at(30);
    assert_eq!(counts(&h, &key, &["5s"]).await, pairs(&[("5s", 1)]));
}

async fn bad_input_is_rejected_with_its_code(h: Harness) {
    let codes = [
        h.boards.rates().hit("", 1, None).await.unwrap_err().code(),
        h.boards
            .rates()
            .hit(&"k".repeat(257), 1, None)
            .await
            .unwrap_err()
            .code(),
        h.boards.rates().hit("k", 0, None).await.unwrap_err().code(),
        h.boards
            .rates()
            .hit("k", 1 << 32, None)
            .await
            .unwrap_err()
            .code(),
        h.boards
            .rates()
            .counts("k", Some(&["90s"]), Default::default())
            .await
            .unwrap_err()
            .code(),
        h.boards
            .rates()
            .counts("k", Some(&["soon"]), Default::default())
            .await
            .unwrap_err()
            .code(),
        h.boards
            .rates()
            .check("k", 10, "25h", 1, Default::default())
            .await
            .unwrap_err()
            .code(),
        h.boards
            .rates()
            .check("k", 1 << 60, "5s", 1, Default::default())
            .await
            .unwrap_err()
            .code(),
    ];
    assert_eq!(
        codes,
        [
            "invalid_rate_key",
            "invalid_rate_key",
            "invalid_delta",
            "invalid_delta",
            "invalid_rate_window",
            "invalid_rate_window",
            "invalid_rate_window",
            "invalid_query",
        ]
    );
    assert_eq!(counts(&h, "k", &["5s"]).await, pairs(&[("5s", 0)]));
}

async fn check_allows_up_to_the_limit_and_says_when_to_retry(h: Harness) {
    let key = unique("u");
    let mut seen = Vec::new();
    for _ in 0..3 {
        let v = h
            .boards
            .rates()
            .check(&key, 3, "5s", 1, Default::default())
            .await
            .unwrap();
        seen.push((v.allowed, v.count, v.retry_after));
    }
    h.clock
        .set(rollboard::Timestamp::from_unix_millis(START * 1000 + 2500).unwrap());
    let denied = h
        .boards
        .rates()
        .check(&key, 3, "5s", 1, Default::default())
        .await
        .unwrap();
    seen.push((denied.allowed, denied.count, denied.retry_after));
    let never = h
        .boards
        .rates()
        .check(&key, 3, "5s", 4, Default::default())
        .await
        .unwrap();
    seen.push((never.allowed, never.count, never.retry_after));
    let zero = Some(Duration::ZERO);
    assert_eq!(
        seen,
        [
            (true, 1, zero),
            (true, 2, zero),
            (true, 3, zero),
            // The three hits of second 0 leave the window at START+5: 2.5 s away.
            (false, 3, Some(Duration::from_millis(2500))),
            (false, 3, None),
        ]
    );
    assert_eq!(denied.limit, 3);
    assert_eq!(
        counts(&h, &key, &["5s", "5m"]).await,
        pairs(&[("5s", 3), ("5m", 3)])
    );
    h.at(5);
    assert!(
        h.boards
            .rates()
            .check(&key, 3, "5s", 1, Default::default())
            .await
            .unwrap()
            .allowed
    );
}

async fn a_slot_counter_never_overflows(h: Harness) {
    let key = unique("u");
    h.boards
        .rates()
        .hit(&key, u64::from(u32::MAX), None)
        .await
        .unwrap();
    let err = h.boards.rates().hit(&key, 1, None).await.unwrap_err();
    assert_eq!(err.code(), "rate_overflow");
    assert_eq!(
        counts(&h, &key, &["5s", "180d"]).await,
        pairs(&[("5s", u64::from(u32::MAX)), ("180d", u64::from(u32::MAX))])
    );
    // The next second has a fresh counter; the 5-second window sums past 2^32.
    h.at(1);
    h.boards.rates().hit(&key, 1, None).await.unwrap_err();
    h.at(86_400);
    h.boards.rates().hit(&key, 5, None).await.unwrap();
    assert_eq!(
        counts(&h, &key, &["5s", "5d"]).await,
        pairs(&[("5s", 5), ("5d", u64::from(u32::MAX) + 5)])
    );
}

async fn delete_forgets_a_key(h: Harness) {
    let key = unique("u");
    h.boards.rates().hit(&key, 2, None).await.unwrap();
    assert!(h.boards.rates().delete(&key).await.unwrap());
    assert!(!h.boards.rates().delete(&key).await.unwrap());
    assert_eq!(counts(&h, &key, &["5s"]).await, pairs(&[("5s", 0)]));
    h.boards.rates().hit(&key, 1, None).await.unwrap();
    assert_eq!(counts(&h, &key, &["5s"]).await, pairs(&[("5s", 1)]));
}

const TRICKY: [&str; 10] = [
    "a",
    "{a}",
    "{a",
    "a}",
    "a:b",
    "a b",
    "%7Ba%7D",
    "用户:42",
    "}{",
    "a%3Ab",
];

async fn keys_with_tags_separators_and_non_ascii_never_share_counts(h: Harness) {
    let prefix = unique("k");
    for (i, k) in TRICKY.iter().enumerate() {
        let key = format!("{prefix}{k}");
        h.boards
            .rates()
            .hit(&key, i as u64 + 1, None)
            .await
            .unwrap();
    }
    for (i, k) in TRICKY.iter().enumerate() {
        let key = format!("{prefix}{k}");
        assert_eq!(
            counts(&h, &key, &["5s"]).await,
            pairs(&[("5s", i as u64 + 1)]),
            "{key}"
        );
    }
}

async fn a_batch_answers_each_hit(h: Harness) {
    let (a, b) = (unique("a"), unique("b"));
    h.at(100);
    let hits = vec![
        (a.clone(), 2, None),
        (b.clone(), 0, None),
        (b.clone(), 1, Some(ts(START - 400 * 86_400 + 1))),
        (a.clone(), 3, Some(ts(START + 40))),
        ("".to_owned(), 1, None),
    ];
    let codes = hit_codes(&h, &hits).await;
    assert_eq!(
        codes,
        [
            Ok(4),
            Err("invalid_delta"),
            Err("too_late"),
            Ok(3),
            Err("invalid_rate_key")
        ]
    );
    assert_eq!(
        counts(&h, &a, &["5s", "5m"]).await,
        pairs(&[("5s", 2), ("5m", 5)])
    );
}

async fn an_overflowing_hit_in_a_batch_changes_nothing_and_the_others_count(h: Harness) {
    let (a, b) = (unique("a"), unique("b"));
    let max = u64::from(u32::MAX);
    h.at(30);
    h.boards.rates().hit(&a, max - 2, None).await.unwrap();
    let hits = vec![
        (a.clone(), 1, None),
        (b.clone(), 3, None),
        (a.clone(), 2, None),
        (a.clone(), 1, None),
        (a.clone(), 1, Some(ts(START + 29))),
        (a.clone(), 1, None),
        (b.clone(), 4, Some(ts(START + 29))),
    ];
    let codes = hit_codes(&h, &hits).await;
    // a's counter of second 30 reaches 2^32 - 1 exactly; the hit of second 29 has a
    // counter of its own on the 1 s tier but shares the minute's, which is full.
    assert_eq!(
        codes,
        [
            Ok(4),
            Ok(4),
            Err("rate_overflow"),
            Ok(4),
            Err("rate_overflow"),
            Err("rate_overflow"),
            Ok(4)
        ]
    );
    assert_eq!(
        counts(&h, &a, &["1s", "2s", "5m"]).await,
        pairs(&[("1s", max), ("2s", max), ("5m", max)])
    );
    assert_eq!(
        counts(&h, &b, &["1s", "2s", "5m"]).await,
        pairs(&[("1s", 3), ("2s", 7), ("5m", 7)])
    );
}

async fn a_batch_of_one_key_longer_than_one_call_counts_every_hit_in_order(h: Harness) {
    let (a, b) = (unique("a"), unique("b"));
    h.at(0);
    // 600 hits of a, one a second back from now, b's between them: more than one
    // script call's worth for a.
    let hits: Vec<(String, u64, Option<rollboard::Timestamp>)> = (0..600)
        .flat_map(|i| {
            [
                (a.clone(), 1, Some(ts(START - i))),
                (b.clone(), 2, Some(ts(START - 599 + i))),
            ]
        })
        .collect();
    let statuses = h.boards.rates().hits(&hits).await.unwrap();
    assert_eq!(statuses.iter().filter(|s| s.is_ok()).count(), 1200);
    // 5m at START holds its minute (second 0) and the 4 before (seconds -240..=-1).
    let want = pairs(&[("5s", 5), ("1m", 60), ("5m", 241), ("5h", 600)]);
    assert_eq!(counts(&h, &a, &["5s", "1m", "5m", "5h"]).await, want);
    let want = pairs(&[("5s", 10), ("1m", 120), ("5m", 482), ("5h", 1200)]);
    assert_eq!(counts(&h, &b, &["5s", "1m", "5m", "5h"]).await, want);
}

async fn a_hit_leaves_the_ring_when_a_later_hit_of_its_batch_moves_the_head_past_it(h: Harness) {
    let key = unique("u");
    h.at(120);
    // The second hit moves the 1 s tier's head to second 121, whose counter is the one
    // second 61 had: the first hit leaves that tier (it stays in the minute tier).
    let hits = vec![
        (key.clone(), 1, Some(ts(START + 61))),
        (key.clone(), 1, Some(ts(START + 121))),
        (key.clone(), 1, Some(ts(START + 62))),
    ];
    let statuses: Vec<usize> = h
        .boards
        .rates()
        .hits(&hits)
        .await
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(statuses, [4, 4, 4]);
    h.at(121);
    assert_eq!(
        counts(&h, &key, &["1s", "1m", "2m"]).await,
        pairs(&[("1s", 1), ("1m", 2), ("2m", 3)])
    );
}

/// The counts of `key` as `(window, count)` pairs, each window with full coverage.
async fn full_counts(h: &Harness, key: &str, windows: &[&str]) -> Vec<(String, u64)> {
    h.boards
        .rates()
        .counts(key, Some(windows), Coverage::Full)
        .await
        .unwrap()
        .counts
        .into_iter()
        .map(|(w, c)| (w.to_string(), c))
        .collect()
}

async fn full_coverage_counts_the_oldest_slot_whole(h: Harness) {
    let key = unique("u");
    h.at(50);
    h.boards.rates().hit(&key, 3, None).await.unwrap();
    // Read 4 min 19 s later: "5m" counts minutes 1..=5 and misses the 3 hits of minute
    // 0 (it covers only the last 4 min 9 s whole); with full coverage it counts them.
    h.at(50 + 259);
    assert_eq!(
        counts(&h, &key, &["5m", "6m"]).await,
        pairs(&[("5m", 0), ("6m", 3)])
    );
    assert_eq!(
        full_counts(&h, &key, &["5m", "5s", "1m"]).await,
        pairs(&[("5m", 3), ("5s", 0), ("1m", 0)])
    );
    // Default windows: the current slot and one more each.
    let read = h
        .boards
        .rates()
        .counts(&key, None, Coverage::Full)
        .await
        .unwrap();
    let got: Vec<(String, u64)> = read
        .counts
        .into_iter()
        .map(|(w, c)| (w.to_string(), c))
        .collect();
    assert_eq!(
        got,
        pairs(&[("5s", 0), ("5m", 3), ("5h", 3), ("5d", 3), ("180d", 3)])
    );
    // Once minute 0 is more than 5 minutes back, full coverage drops it too.
    h.at(360);
    assert_eq!(full_counts(&h, &key, &["5m"]).await, pairs(&[("5m", 0)]));
}

async fn a_full_coverage_check_refuses_until_the_oldest_slot_leaves(h: Harness) {
    let key = unique("u");
    let check = |at: i64| {
        h.at(at);
        let (boards, key) = (&h.boards, &key);
        async move {
            let v = boards
                .rates()
                .check(key, 3, "5m", 1, Coverage::Full)
                .await
                .unwrap();
            (v.allowed, v.count, v.retry_after)
        }
    };
    let zero = Some(Duration::ZERO);
    assert_eq!(check(50).await, (true, 1, zero));
    assert_eq!(check(51).await, (true, 2, zero));
    assert_eq!(check(59).await, (true, 3, zero));
    // 4 min 19 s after the first: the partial window would admit (minute 0 is out of
    // it), and 4 hits would then sit within 5 minutes; the full one refuses until minute
    // 0 leaves at START + 360.
    h.at(309);
    let partial = h
        .boards
        .rates()
        .counts(&key, Some(&["5m"]), Default::default())
        .await
        .unwrap();
    assert_eq!(partial.counts[0].1, 0);
    assert_eq!(check(309).await, (false, 3, Some(Duration::from_secs(51))));
    assert_eq!(check(359).await, (false, 3, Some(Duration::from_secs(1))));
    // At 6:00 the first admitted hit is 5 min 10 s back: at most one slot (1 min) late.
    assert_eq!(check(360).await, (true, 1, zero));
}

async fn full_coverage_a_tier_cannot_hold_goes_to_the_next_tier_or_is_refused(h: Harness) {
    let key = unique("u");
    h.at(50);
    h.boards.rates().hit(&key, 2, None).await.unwrap();
    // "60s" with full coverage needs 61 one-second slots: the minute tier answers it,
    // the current minute and the one before (at least 60 s, at most 120 s of the past).
    h.at(115);
    assert_eq!(counts(&h, &key, &["60s"]).await, pairs(&[("1m", 0)]));
    assert_eq!(full_counts(&h, &key, &["60s"]).await, pairs(&[("1m", 2)]));
    let v = h
        .boards
        .rates()
        .check(&key, 2, "60s", 1, Coverage::Full)
        .await
        .unwrap();
    assert_eq!(
        (v.allowed, v.count, v.retry_after),
        (false, 2, Some(Duration::from_secs(5)))
    );
    // No tier holds 367 days: refused, saying why.
    let err = h
        .boards
        .rates()
        .counts(&key, Some(&["366d"]), Coverage::Full)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "invalid_rate_window");
    assert_eq!(
        err.to_string(),
        "invalid rate window \"366d\": no tier answers it with full coverage, which needs \
         one slot more than the window (tiers: 60x1s,60x1m,24x1h,366x1d)"
    );
    let err = h
        .boards
        .rates()
        .check(&key, 2, "366d", 1, Coverage::Full)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "invalid_rate_window");
    assert_eq!(counts(&h, &key, &["366d"]).await, pairs(&[("366d", 2)]));
}

async fn a_batch_mixing_keys_sums_duplicates_with_different_times_and_late_hits(h: Harness) {
    let (a, b, c) = (unique("a"), unique("b"), unique("c"));
    h.at(130);
    let at = |s: i64| Some(ts(START + s));
    let hits = vec![
        (a.clone(), 1, None),
        (b.clone(), 2, at(129)),
        (a.clone(), 2, at(129)),           // same minute, another second
        (a.clone(), 4, at(130)),           // same second as the first
        (c.clone(), 1, at(70)),            // late: out of the 1 s tier, in the minute's
        (a.clone(), 8, at(65)),            // late, minute 1: only the coarser tiers
        (b.clone(), 16, at(125)),          // another second of b's minute
        (a.clone(), 32, at(-90_000)),      // a day and more back: only the day tier
        (c.clone(), 64, at(131)),          // a second ahead: its own slot, from then on
        (a.clone(), 1, at(-400 * 86_400)), // too late for every tier
    ];
    let codes = hit_codes(&h, &hits).await;
    assert_eq!(
        codes,
        [
            Ok(4),
            Ok(4),
            Ok(4),
            Ok(4),
            Ok(3),
            Ok(3),
            Ok(4),
            Ok(1),
            Ok(4),
            Err("too_late")
        ]
    );
    let windows = ["1s", "2s", "1m", "2m", "3m", "2d"];
    assert_eq!(
        counts(&h, &a, &windows).await,
        pairs(&[
            ("1s", 5),
            ("2s", 7),
            ("1m", 7),
            ("2m", 15),
            ("3m", 15),
            ("2d", 47)
        ])
    );
    assert_eq!(
        counts(&h, &b, &windows).await,
        pairs(&[
            ("1s", 0),
            ("2s", 2),
            ("1m", 18),
            ("2m", 18),
            ("3m", 18),
            ("2d", 18)
        ])
    );
    assert_eq!(
        counts(&h, &c, &windows).await,
        // The hit of second 131 is in the current minute and day already.
        pairs(&[
            ("1s", 0),
            ("2s", 0),
            ("1m", 0),
            ("2m", 65),
            ("3m", 65),
            ("2d", 65)
        ])
    );
    h.at(131);
    assert_eq!(
        counts(&h, &c, &["1s", "1m", "2m"]).await,
        pairs(&[("1s", 64), ("1m", 64), ("2m", 65)])
    );
    assert_eq!(
        full_counts(&h, &a, &["1s", "1m"]).await,
        pairs(&[("1s", 5), ("1m", 15)])
    );
}

/// Batch `b` of [`concurrent_batches_to_the_same_keys_merged_in_flight_count_exactly`]:
/// 60 hits over `keys`, at seconds 100, 101 and 102, with counts that differ from hit to
/// hit and from batch to batch, and one hit too late for every tier.
fn merged_batch(keys: &[String], b: u64) -> Vec<(String, u64, Option<rollboard::Timestamp>)> {
    let mut hits: Vec<_> = (0..60u64)
        .map(|j| {
            let key = keys[(j % 3) as usize].clone();
            (
                key,
                1 + (b * 7 + j) % 5,
                Some(ts(START + 100 + (j % 3 + b) as i64 % 3)),
            )
        })
        .collect();
    hits.insert(30, (keys[0].clone(), 9, Some(ts(START - 400 * 86_400))));
    hits
}

/// Eight batches to the same three keys sent at once (on Redis they are merged in
/// flight: the queued batches of one second go as one), four at second 102 and four at
/// 103 (two slots of the 1 s tier, which are not merged together): each batch is
/// answered hit by hit, and the totals are the sums, as when sent one by one.
async fn concurrent_batches_to_the_same_keys_merged_in_flight_count_exactly(h: Harness) {
    let keys: Vec<String> = (0..3).map(|k| unique(&format!("m{k}"))).collect();
    h.at(102);
    let mut tasks = Vec::new();
    for b in 0..8u64 {
        if b == 4 {
            // Let the first four read second 102 and queue before the clock moves on.
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
            h.at(103);
        }
        let (boards, hits) = (h.boards.clone(), merged_batch(&keys, b));
        tasks.push(tokio::spawn(
            async move { boards.rates().hits(&hits).await },
        ));
    }
    for task in tasks {
        let codes: Vec<Result<usize, &str>> = task
            .await
            .unwrap()
            .unwrap()
            .into_iter()
            .map(|r| r.map_err(|e| e.code()))
            .collect();
        let mut expected = vec![Ok(4); 61];
        expected[30] = Err("too_late");
        assert_eq!(codes, expected);
    }
    h.at(103);
    // Per key: what every batch added at each second.
    for (k, key) in keys.iter().enumerate() {
        let mut at_second = [0u64; 3];
        for b in 0..8 {
            for (hit_key, count, at) in merged_batch(&keys, b) {
                let second = at.unwrap().unix_seconds() - START;
                if hit_key == keys[k] && second >= 100 {
                    at_second[(second - 100) as usize] += count;
                }
            }
        }
        let total: u64 = at_second.iter().sum();
        assert!(total > 100, "{total}");
        assert_eq!(
            counts(&h, key, &["1s", "2s", "4s", "1m", "5d"]).await,
            pairs(&[
                ("1s", 0),
                ("2s", at_second[2]),
                ("4s", total),
                ("1m", total),
                ("5d", total)
            ])
        );
    }
}

/// The calls of `EVALSHA` Redis has run (`INFO commandstats`).
async fn evalsha_calls(raw: &mut ::redis::aio::MultiplexedConnection) -> u64 {
    let info: String = ::redis::cmd("INFO")
        .arg("commandstats")
        .query_async(raw)
        .await
        .unwrap();
    let line = info
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .unwrap();
    line.split(',').next().unwrap().parse().unwrap()
}

/// Sixty-four batches of one hit to one key, sent at once from one task: merged in
/// flight into one script call, or a few on a loaded machine (the task's futures are
/// polled in turns, and the committer may take what is queued between two turns: 4
/// calls seen with two CPU burners beside the suite), never one call a batch.
#[tokio::test]
async fn sixty_four_concurrent_batches_of_one_key_are_one_script_call() {
    let redis = TestRedis::spawn().await;
    let boards = with_clock(redis.store().await, &clock());
    // The script loaded and the committer started.
    boards.rates().hit(&unique("warm"), 1, None).await.unwrap();
    let mut raw = redis.raw().await;
    let before = evalsha_calls(&mut raw).await;
    let key = unique("hot");
    let sends = (1..=64u64).map(|c| {
        let boards = boards.clone();
        let key = key.clone();
        async move { boards.rates().hits(&[(key, c, None)]).await }
    });
    let replies = futures_util::future::join_all(sends).await;
    for reply in replies {
        assert_eq!(
            reply
                .unwrap()
                .into_iter()
                .map(Result::unwrap)
                .collect::<Vec<_>>(),
            [4]
        );
    }
    let calls = evalsha_calls(&mut raw).await - before;
    assert!(
        (1..=8).contains(&calls),
        "{calls} script calls for 64 batches"
    );
    let sum = 64 * 65 / 2;
    let read = boards
        .rates()
        .counts(&key, Some(&["1s", "180d"]), Default::default())
        .await
        .unwrap();
    let got: Vec<u64> = read.counts.into_iter().map(|(_, c)| c).collect();
    assert_eq!(got, [sum, sum]);
}

/// The Redis keys of `pattern`, as an operator sees them.
async fn redis_keys(redis: &TestRedis, pattern: &str) -> Vec<String> {
    let mut raw = redis.raw().await;
    let mut keys: Vec<String> = ::redis::cmd("KEYS")
        .arg(pattern)
        .query_async(&mut raw)
        .await
        .unwrap();
    keys.sort();
    keys
}

#[tokio::test]
async fn each_rate_key_is_one_redis_key_whose_tag_is_the_whole_encoded_key() {
    let h = Harness::redis().await;
    let redis = h.redis.as_ref().unwrap();
    let prefix = unique("t");
    for k in TRICKY {
        h.boards
            .rates()
            .hit(&format!("{prefix}{k}"), 1, None)
            .await
            .unwrap();
    }
    let keys = redis_keys(redis, &format!("rate_{{{prefix}*")).await;
    assert_eq!(keys.len(), TRICKY.len());
    let fp = rollboard::RateTiers::default().to_string();
    assert_eq!(fp, "60x1s,60x1m,24x1h,366x1d");
    let mut tags = BTreeMap::new();
    for key in &keys {
        // One `{` and one `}`: the tag cannot move, and no `:` in it.
        assert_eq!(key.matches('{').count(), 1, "{key}");
        assert_eq!(key.matches('}').count(), 1, "{key}");
        let tag = &key[key.find('{').unwrap() + 1..key.find('}').unwrap()];
        assert!(!tag.contains(':') && !tag.contains(' '), "{key}");
        tags.insert(tag.to_owned(), key.clone());
    }
    assert_eq!(tags.len(), TRICKY.len());
    assert!(tags.contains_key(&format!("{prefix}%7Ba%7D")));
    assert!(tags.contains_key(&format!("{prefix}%257Ba%257D")));
    assert!(tags.contains_key(&format!("{prefix}%E7%94%A8%E6%88%B7%3A42")));
}

#[tokio::test]
async fn a_rate_key_expires_when_its_newest_slot_leaves_its_longest_tier() {
    let h = Harness::redis().await;
    let redis = h.redis.as_ref().unwrap();
    let key = unique("x");
    h.boards.rates().hit(&key, 1, None).await.unwrap();
    let name = redis_keys(redis, &format!("rate_{{{key}}}_*"))
        .await
        .remove(0);
    let mut raw = redis.raw().await;
    let pttl: i64 = ::redis::cmd("PTTL")
        .arg(&name)
        .query_async(&mut raw)
        .await
        .unwrap();
    // Until the hit's day (START's, 2 h before its end) leaves the 366-day tier.
    let expected = 366 * 86_400_000 + 2 * 3_600_000;
    assert!(pttl > expected - 60_000 && pttl <= expected, "{pttl}");
    let len: usize = ::redis::cmd("STRLEN")
        .arg(&name)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(len, 2072);
}

#[tokio::test]
async fn a_batch_sent_after_a_script_flush_reloads_and_counts_each_hit_once() {
    let h = Harness::redis().await;
    let redis = h.redis.as_ref().unwrap();
    let (a, b) = (unique("a"), unique("b"));
    h.boards.rates().hit(&a, 1, None).await.unwrap();
    let mut raw = redis.raw().await;
    let _: () = ::redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut raw)
        .await
        .unwrap();
    // Every call of the pipeline is refused with NOSCRIPT (ran nothing), then sent again.
    let hits = vec![
        (a.clone(), 2, None),
        (b.clone(), 3, None),
        (a.clone(), 4, None),
    ];
    let statuses: Vec<usize> = h
        .boards
        .rates()
        .hits(&hits)
        .await
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(statuses, [4, 4, 4]);
    assert_eq!(counts(&h, &a, &["5s"]).await, pairs(&[("5s", 7)]));
    assert_eq!(counts(&h, &b, &["5s"]).await, pairs(&[("5s", 3)]));
}

#[tokio::test]
async fn a_busy_key_with_every_tier_populated_takes_under_4_kb() {
    let h = Harness::redis().await;
    let redis = h.redis.as_ref().unwrap();
    let key = unique("m");
    // Every slot of every tier: 366 days, 24 hours, 60 minutes, 60 seconds back.
    let end = START + 400 * 86_400;
    h.clock.set(ts(end));
    let mut hits = Vec::new();
    for back in (0..60)
        .chain((1..60).map(|m| m * 60))
        .chain((1..24).map(|x| x * 3600))
    {
        hits.push((key.clone(), 1_000_000, Some(ts(end - back))));
    }
    for d in 1..366 {
        hits.push((key.clone(), 1_000_000, Some(ts(end - d * 86_400))));
    }
    assert!(
        h.boards
            .rates()
            .hits(&hits)
            .await
            .unwrap()
            .iter()
            .all(|r| r.is_ok())
    );
    let name = redis_keys(redis, &format!("rate_{{{key}}}_*"))
        .await
        .remove(0);
    let mut raw = redis.raw().await;
    let bytes: u64 = ::redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(&name)
        .query_async(&mut raw)
        .await
        .unwrap();
    eprintln!("memory per busy key: {bytes} bytes");
    assert!(bytes <= 4096, "{bytes}");
    let read = h
        .boards
        .rates()
        .counts(
            &key,
            Some(&["60s", "60m", "24h", "366d"]),
            Default::default(),
        )
        .await
        .unwrap();
    let got: Vec<u64> = read.counts.iter().map(|(_, c)| *c).collect();
    assert_eq!(got, [60_000_000, 119_000_000, 142_000_000, 507_000_000]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_clients_sending_400_checks_against_a_limit_of_100_get_exactly_100() {
    let redis = TestRedis::start().await;
    let clock = clock();
    let key = unique("c");
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let boards: Rollboard = with_clock(redis.store().await, &clock);
        let key = key.clone();
        tasks.push(tokio::spawn(async move {
            let mut allowed = 0;
            for _ in 0..50 {
                if boards
                    .rates()
                    .check(&key, 100, "1m", 1, Default::default())
                    .await
                    .unwrap()
                    .allowed
                {
                    allowed += 1;
                }
            }
            allowed
        }));
    }
    let mut allowed = 0;
    for t in tasks {
        allowed += t.await.unwrap();
    }
    assert_eq!(allowed, 100);
    let boards = with_clock(redis.store().await, &clock);
    let read = boards
        .rates()
        .counts(&key, Some(&["1m"]), Default::default())
        .await
        .unwrap();
    assert_eq!(read.counts[0].1, 100);
}
