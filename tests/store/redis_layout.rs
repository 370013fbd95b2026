//! Redis-only behaviour: the exact key layout, chunked retirement of big slots, resuming
//! a retirement that stopped half-way, and scripts surviving `SCRIPT FLUSH`.

use std::collections::BTreeSet;

use rollboard::{BoardConfig, Event, RetireOptions, Span};

use crate::oracle::{Oracle, check_redis_invariants};
use crate::support::{Harness, START, pairs, ranking, ts, unique};

async fn keys_of(h: &Harness, board: &str) -> BTreeSet<String> {
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("*{{{board}}}*"))
        .query_async(&mut raw)
        .await
        .unwrap();
    keys.into_iter().collect()
}

fn set(keys: &[String]) -> BTreeSet<String> {
    keys.iter().cloned().collect()
}

#[tokio::test]
async fn keys_follow_the_documented_layout() {
    let h = Harness::redis_plain().await;
    let b = h.board("1h", &["1h", "24h"]).await;
    h.boards.windowed(&b).incr("post:1", 1, None).await.unwrap();
    assert_eq!(
        keys_of(&h, &b).await,
        set(&[
            format!("board_{{{b}}}"),
            format!("slots_{{{b}}}"),
            format!("stats_{{{b}}}"),
            format!("stats_{{{b}}}_86400"),
            format!("slot_{{{b}}}_{START}"),
        ])
    );
    // A late event after the 1h window froze the slot goes to the slot's second stage.
    h.at(3600);
    h.boards.windowed(&b).retire(None).await.unwrap();
    h.boards
        .windowed(&b)
        .incr("post:2", 1, Some(ts(START)))
        .await
        .unwrap();
    let keys = keys_of(&h, &b).await;
    assert!(keys.contains(&format!("slot_{{{b}}}_{START}_1")));
    assert!(
        !keys.contains(&format!("slot_{{{b}}}_{START}")),
        "stage 0 was consumed"
    );

    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let types: Vec<String> = redis::pipe()
        .cmd("TYPE")
        .arg(format!("board_{{{b}}}"))
        .cmd("TYPE")
        .arg(format!("slots_{{{b}}}"))
        .cmd("TYPE")
        .arg(format!("stats_{{{b}}}_86400"))
        .cmd("TYPE")
        .arg(format!("slot_{{{b}}}_{START}_1"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(types, ["hash", "zset", "zset", "hash"]);
    let registered: bool = redis::cmd("SISMEMBER")
        .arg("rollboard:boards")
        .arg(&b)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(registered);
    let totals: Vec<(String, i64)> = redis::cmd("ZRANGE")
        .arg(format!("stats_{{{b}}}_86400"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(totals, pairs(&[("post:1", 1), ("post:2", 1)]));
}

#[tokio::test]
async fn a_slot_is_deleted_once_its_largest_window_retired_it() {
    let h = Harness::redis_plain().await;
    let b = h.board("1h", &["1h", "3h"]).await;
    h.boards.windowed(&b).incr("a", 1, None).await.unwrap();
    h.at(2 * 3600);
    h.boards.windowed(&b).retire(None).await.unwrap();
    // The 1h window retired the slot and handed it on to the 3h window's stage.
    let keys = keys_of(&h, &b).await;
    assert!(
        keys.contains(&format!("slot_{{{b}}}_{START}_1")),
        "{keys:?}"
    );
    assert!(!keys.contains(&format!("slot_{{{b}}}_{START}")), "{keys:?}");
    h.at(3 * 3600);
    h.boards.windowed(&b).retire(None).await.unwrap();
    let keys = keys_of(&h, &b).await;
    assert!(keys.iter().all(|k| !k.starts_with("slot_")), "{keys:?}");
    assert!(
        !keys.contains(&format!("slots_{{{b}}}")),
        "the empty index is gone too"
    );
}

/// Writes `members` members with deltas 1..=3 into the current slot, in batches.
async fn fill_slot(h: &Harness, board: &str, members: usize, tag: &str, oracle: &mut Oracle) {
    let now = h.now();
    let slot = oracle.config.slot_start(now);
    let events: Vec<Event> = (0..members)
        .map(|i| Event::new(format!("{tag}{i}"), (i % 3) as i64 + 1))
        .collect();
    for batch in events.chunks(5_000) {
        let outcome = h.boards.windowed(board).incr_batch(batch).await.unwrap();
        assert_eq!(outcome.accepted, batch.len());
    }
    for e in &events {
        oracle.record(slot, &e.member, e.delta);
    }
}

#[tokio::test]
async fn a_big_slot_retires_in_bounded_chunks() {
    big_slot_retires_in_bounded_chunks(Harness::redis_plain().await).await;
}

#[tokio::test]
async fn a_big_compact_slot_retires_in_bounded_chunks() {
    big_slot_retires_in_bounded_chunks(Harness::redis_compact().await).await;
}

async fn big_slot_retires_in_bounded_chunks(h: Harness) {
    let b = h.board("1h", &["1h", "2h"]).await;
    let mut oracle = Oracle::new(h.boards.board(&b).await.unwrap().config);
    fill_slot(&h, &b, 5_000, "m", &mut oracle).await;
    h.at(3600);
    // The chunked path: window 1, one slot long, would swap (`retire_swap.rs`).
    let options = RetireOptions {
        chunk_size: 100,
        max_chunks: None,
        swap_fields: 0,
        ..Default::default()
    };
    let report = h.boards.windowed(&b).retire(Some(options)).await.unwrap();
    assert_eq!(report.fields_subtracted, 5_000);
    assert_eq!(report.members_zeroed, 5_000);
    // HSCAN's COUNT is a hint; whole buckets come back, so a chunk may hold a few more.
    assert!(
        report.chunks >= 25 && report.chunks <= 60,
        "{} chunks",
        report.chunks
    );
    let two = Some(Span::parse("2h").unwrap());
    let page = h.boards.windowed(&b).top(two, 0, 3).await.unwrap();
    assert_eq!(ranking(&page), oracle.ranking(1, h.now())[..3].to_vec());
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    check_redis_invariants(&mut raw, &b, &oracle.config, Some(h.now())).await;
}

#[tokio::test]
async fn a_retirement_stopped_after_some_chunks_resumes_exactly() {
    retirement_stopped_after_some_chunks_resumes_exactly(Harness::redis_plain().await).await;
}

#[tokio::test]
async fn a_compact_retirement_stopped_after_some_chunks_resumes_exactly() {
    retirement_stopped_after_some_chunks_resumes_exactly(Harness::redis_compact().await).await;
}

async fn retirement_stopped_after_some_chunks_resumes_exactly(h: Harness) {
    let b = h.board("1m", &["1m", "3m"]).await;
    let mut oracle = Oracle::new(h.boards.board(&b).await.unwrap().config);
    for minute in 0..4 {
        h.at(minute * 60);
        fill_slot(&h, &b, 700, &format!("s{minute}-"), &mut oracle).await;
        fill_slot(&h, &b, 300, "shared-", &mut oracle).await;
    }
    h.at(6 * 60);
    // "Crash" after a few chunks, again and again, with different chunk sizes and from a
    // different connection each time, with writes landing in between.
    let mut passes = 0;
    let mut chunk_size = 37;
    loop {
        let other = crate::support::with_clock(h.redis.as_ref().unwrap().store().await, &h.clock);
        let options = RetireOptions {
            chunk_size,
            max_chunks: Some(3),
            ..Default::default()
        };
        let report = other.windowed(&b).retire(Some(options)).await.unwrap();
        passes += 1;
        chunk_size = chunk_size * 3 % 211 + 10;
        fill_slot(&h, &b, 5, &format!("p{passes}-"), &mut oracle).await;
        let mut raw = h.redis.as_ref().unwrap().raw().await;
        check_redis_invariants(&mut raw, &b, &oracle.config, None).await;
        if report.complete {
            break;
        }
    }
    assert!(
        passes > 10,
        "the retirement really was interrupted ({passes} passes)"
    );
    for (j, w) in oracle.config.windows().iter().enumerate() {
        let page = h.boards.windowed(&b).top(Some(*w), 0, 1000).await.unwrap();
        assert_eq!(page.from, oracle.config.window_start(j, h.now()));
        assert_eq!(ranking(&page), oracle.ranking(j, h.now()), "window {w}");
    }
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    check_redis_invariants(&mut raw, &b, &oracle.config, Some(h.now())).await;
}

#[tokio::test]
async fn scripts_are_reloaded_after_script_flush() {
    let h = Harness::redis_plain().await;
    let b = h.board("1h", &["1h"]).await;
    h.boards.windowed(&b).incr("a", 2, None).await.unwrap();
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut raw)
        .await
        .unwrap();
    h.boards.windowed(&b).incr("a", 3, None).await.unwrap();
    assert_eq!(
        ranking(&h.boards.windowed(&b).top(None, 0, 10).await.unwrap()),
        pairs(&[("a", 5)])
    );
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut raw)
        .await
        .unwrap();
    h.at(3600);
    assert_eq!(
        h.boards
            .windowed(&b)
            .retire(None)
            .await
            .unwrap()
            .fields_subtracted,
        1
    );
}

#[tokio::test]
async fn a_dropped_board_rejects_in_flight_writers_and_a_second_drop_finishes() {
    let h = Harness::redis_plain().await;
    let b = h.board("1h", &["1h"]).await;
    h.boards.windowed(&b).incr("a", 1, None).await.unwrap();
    // A drop that stopped after marking the record: writes already fail...
    h.mark_dropping(&b).await;
    assert_eq!(
        h.boards
            .windowed(&b)
            .incr("a", 1, None)
            .await
            .unwrap_err()
            .code(),
        "board_not_found"
    );
    // ...and the next drop deletes everything.
    let other = crate::support::with_clock(h.redis.as_ref().unwrap().store().await, &h.clock);
    other.drop_board(&b).await.unwrap();
    assert!(keys_of(&h, &b).await.is_empty());
    let name = unique("after");
    other
        .create(&name, BoardConfig::parse("1h", &["1h"]).unwrap())
        .await
        .unwrap();
}

/// The field `field` of the board's record.
async fn record_field<T: redis::FromRedisValue>(h: &Harness, board: &str, field: &str) -> T {
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    redis::cmd("HGET")
        .arg(format!("board_{{{board}}}"))
        .arg(field)
        .query_async(&mut raw)
        .await
        .unwrap()
}

async fn abs_sum(h: &Harness, board: &str) -> i64 {
    record_field(h, board, "abs_sum").await
}

#[tokio::test]
async fn the_record_bounds_every_magnitude_until_a_huge_delta_makes_the_board_exact() {
    let h = Harness::redis_plain().await;
    let b = h.board("1h", &["1h"]).await;
    assert_eq!(abs_sum(&h, &b).await, 0);
    let events = [
        Event::new("a", 3),
        Event::new("a", -1),
        Event::new("b", 4),
        Event::new("b", -4),
        Event::new("c", -2),
    ];
    h.boards.windowed(&b).incr_batch(&events).await.unwrap();
    // Summed per member: a +2, b 0 (skipped), c -2.
    assert_eq!(abs_sum(&h, &b).await, 4);
    h.boards
        .windowed(&b)
        .incr("d", rollboard::MAX_ABS - 4, None)
        .await
        .unwrap();
    assert_eq!(abs_sum(&h, &b).await, rollboard::MAX_ABS);
    // From here every event is checked against the stored values, one by one.
    h.boards.windowed(&b).incr("d", -1, None).await.unwrap();
    assert_eq!(abs_sum(&h, &b).await, rollboard::MAX_ABS);
    assert_eq!(
        h.boards
            .windowed(&b)
            .incr("d", 6, None)
            .await
            .unwrap_err()
            .code(),
        "out_of_range"
    );
    h.boards.windowed(&b).incr("a", 1, None).await.unwrap();
    let page = h.boards.windowed(&b).top(None, 0, 10).await.unwrap();
    assert_eq!(
        ranking(&page),
        pairs(&[("d", rollboard::MAX_ABS - 5), ("a", 3)])
    );
}

/// Calls of `command` Redis has served (commands run by scripts included).
async fn command_calls(h: &Harness, command: &str) -> u64 {
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut raw)
        .await
        .unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

#[tokio::test]
async fn after_a_huge_delta_and_its_negation_batches_take_the_fast_path_again() {
    let h = Harness::redis_plain().await;
    if !h.redis.as_ref().unwrap().owned() {
        return; // counts commands: needs a server of its own
    }
    let b = h.board("1h", &["1h", "24h"]).await;
    h.boards
        .windowed(&b)
        .incr("huge", rollboard::MAX_ABS, None)
        .await
        .unwrap();
    h.boards
        .windowed(&b)
        .incr("huge", -rollboard::MAX_ABS, None)
        .await
        .unwrap();
    assert_eq!(abs_sum(&h, &b).await, rollboard::MAX_ABS);

    // An ordinary batch: summed entries, applied in bulk (no event-by-event HGETs).
    let events: Vec<Event> = (0..100).map(|i| Event::new(format!("m{i}"), 2)).collect();
    let hgets = command_calls(&h, "hget").await;
    h.boards.windowed(&b).incr_batch(&events).await.unwrap();
    assert_eq!(command_calls(&h, "hget").await, hgets);
    let page = h
        .boards
        .windowed(&b)
        .top(Some(Span::parse("24h").unwrap()), 0, 200)
        .await
        .unwrap();
    assert_eq!(page.entries.len(), 100);
    assert!(page.entries.iter().all(|e| e.score == 2));

    // Near the limit, each event is still checked in order: +5 would leave the range,
    // -5 is applied.
    h.boards
        .windowed(&b)
        .incr("edge", rollboard::MAX_ABS - 3, None)
        .await
        .unwrap();
    let outcome = h
        .boards
        .windowed(&b)
        .incr_batch(&[Event::new("edge", 5), Event::new("edge", -5)])
        .await
        .unwrap();
    assert_eq!(outcome.accepted, 1);
    assert_eq!(outcome.rejected.len(), 1);
    assert_eq!(outcome.rejected[0].index, 0);
    let edge = h
        .boards
        .windowed(&b)
        .score("edge", None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(edge.score, rollboard::MAX_ABS - 8);
    h.boards.windowed(&b).remove_member("edge").await.unwrap();

    // A member whose totals are 0 in every window but whose slot value is near the
    // limit: +X an hour ago, -X now, both in each window. A batch adding to that slot is
    // checked event by event: +5 does not fit.
    let b = h.board("1h", &["2h", "24h"]).await;
    let hour_ago = ts(START - 3600);
    let x = rollboard::MAX_ABS - 3;
    h.boards
        .windowed(&b)
        .incr("split", x, Some(hour_ago))
        .await
        .unwrap();
    h.boards.windowed(&b).incr("split", -x, None).await.unwrap();
    let outcome = h
        .boards
        .windowed(&b)
        .incr_batch(&[
            Event::new("split", 5).at(hour_ago),
            Event::new("other", 1).at(hour_ago),
        ])
        .await
        .unwrap();
    assert_eq!(outcome.accepted, 1);
    assert_eq!(outcome.rejected[0].index, 0);
    assert_eq!(outcome.rejected[0].error.code(), "out_of_range");
    // Nothing of the refused event stays behind.
    let history = h.boards.windowed(&b).history("split").await.unwrap();
    let points: Vec<(i64, i64)> = history.points.iter().map(|p| (p.slot, p.value)).collect();
    assert_eq!(points, [(START - 3600, x), (START, -x)]);

    // Events that sum to 0 in that slot: still checked one by one (+5 first: refused).
    let outcome = h
        .boards
        .windowed(&b)
        .incr_batch(&[
            Event::new("split", 5).at(hour_ago),
            Event::new("split", -5).at(hour_ago),
        ])
        .await
        .unwrap();
    assert_eq!(outcome.accepted, 1);
    assert_eq!(outcome.rejected[0].index, 0);
    let history = h.boards.windowed(&b).history("split").await.unwrap();
    assert_eq!(history.points[0].value, x - 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_share_script_calls() {
    // A server of this test's own: the test counts its script calls.
    let redis = crate::support::TestRedis::spawn().await;
    let clock = crate::support::clock();
    let boards = crate::support::with_clock(redis.store_plain().await, &clock);
    let b = unique("gc");
    boards
        .create(&b, BoardConfig::parse("1h", &["1h"]).unwrap())
        .await
        .unwrap();
    let mut raw = redis.raw().await;
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut raw)
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for t in 0..64 {
        let (boards, b) = (boards.clone(), b.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..20 {
                boards
                    .windowed(&b)
                    .incr(&format!("m{}", (t + i) % 10), 1, None)
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut raw)
        .await
        .unwrap();
    let calls: u64 = stats
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        calls > 0 && calls < 1280 / 2,
        "{calls} script calls for 1280 events"
    );
    let page = boards.windowed(&b).top(None, 0, 10).await.unwrap();
    assert_eq!(page.entries.iter().map(|e| e.score).sum::<i64>(), 1280);
    assert!(page.entries.iter().all(|e| e.score == 128));
}

/// The record's `quiet` field ('1' or absent).
async fn quiet(h: &Harness, board: &str) -> Option<String> {
    record_field(h, board, "quiet").await
}

#[tokio::test]
async fn a_record_is_quiet_only_while_it_hides_none_and_holds_none_and_an_older_one_becomes_quiet_when_written()
 {
    let h = Harness::redis_plain().await;
    let b = unique("quiet");
    let capped = BoardConfig::parse("1h", &["1h", "24h"]).unwrap();
    let capped = capped.with_contributor_cap(Some(1)).unwrap();
    h.boards.create(&b, capped).await.unwrap();
    let board = || h.boards.windowed(&b);
    let top = || async { ranking(&board().top(None, 0, 10).await.unwrap()) };
    let like = |member: &'static str, by: &'static str| async move {
        let event = [Event::new(member, 1).by(by)];
        board().incr_batch(&event).await.unwrap()
    };
    let note = rollboard::ModerationNote::default();
    board().incr("a", 5, None).await.unwrap();
    board().incr("b", 2, None).await.unwrap();
    assert_eq!(quiet(&h, &b).await.as_deref(), Some("1"));
    // Hiding a member takes 'quiet' away, and writes see the hidden member from then on.
    assert!(board().hide("a", &note).await.unwrap());
    assert_eq!(quiet(&h, &b).await, None);
    board().incr("a", 1, None).await.unwrap();
    assert_eq!(top().await, pairs(&[("b", 2)]));
    assert_eq!(quiet(&h, &b).await, None, "a member is still hidden");
    // Shown again, the board hides none: its next write makes the record quiet again.
    assert!(board().show("a", &note).await.unwrap());
    assert_eq!(quiet(&h, &b).await, None);
    board().incr("b", 1, None).await.unwrap();
    assert_eq!(quiet(&h, &b).await.as_deref(), Some("1"));
    assert_eq!(top().await, pairs(&[("a", 6), ("b", 3)]));

    // A held contributor takes it away too: its likes count nowhere until it is released.
    h.boards.quarantine("u1").await.unwrap();
    assert_eq!(quiet(&h, &b).await, None);
    like("c", "u1").await;
    like("c", "u2").await;
    assert_eq!(quiet(&h, &b).await, None, "u1 is still held");
    assert_eq!(top().await, pairs(&[("a", 6), ("b", 3), ("c", 1)]));
    h.boards.release("u1").await.unwrap();
    like("c", "u3").await;
    assert_eq!(quiet(&h, &b).await.as_deref(), Some("1"));
    assert_eq!(top().await, pairs(&[("a", 6), ("b", 3), ("c", 3)]));

    // A record written before 'quiet' existed (with the previous release's 'bare'): its
    // board's next write makes it quiet and drops 'bare'.
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let record = format!("board_{{{b}}}");
    let _: () = redis::pipe()
        .cmd("HDEL")
        .arg(&record)
        .arg("quiet")
        .cmd("HSET")
        .arg(&record)
        .arg("bare")
        .arg("1")
        .query_async(&mut raw)
        .await
        .unwrap();
    board().incr("d", 1, None).await.unwrap();
    assert_eq!(quiet(&h, &b).await.as_deref(), Some("1"));
    assert_eq!(record_field::<Option<String>>(&h, &b, "bare").await, None);
    assert_eq!(
        top().await,
        pairs(&[("a", 6), ("b", 3), ("c", 3), ("d", 1)])
    );
}
