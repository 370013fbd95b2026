//! Write calls stop at their time budget: `write.lua` reads the clock every
//! `IngestOptions::call_check_every` pairs (or events) and stops once the call has run
//! `call_budget`, having applied at least one group; the rest goes in the next call.
//! Here calls are sized for a long target (one call would carry the whole batch) while
//! the budget is zero, so every call stops after its first group: totals, slot values
//! and per-event statuses must still equal the memory store's, in mode `sums` and in
//! mode `events`, on both layouts; under an idempotency key a retry after a lost reply
//! half-way counts every event exactly once.

use std::sync::Arc;
use std::time::Duration;

use rollboard::{
    BatchOutcome, Error, Event, IngestOptions, Layout, MAX_ABS, RedisOptions, RedisStore,
    Rollboard, TrendingConfig,
};

use crate::bounded_writes::{mixed_events, mixed_totals, script_calls, top};
use crate::proxy::{Fault, FaultProxy};
use crate::support::{Harness, START, TestRedis, clock, pairs, ts, unique, with_clock};

/// Redis options whose calls are sized for a second (the whole batch) but stop once
/// they ran `budget`, reading the clock every `every` pairs.
fn stopping(budget: Duration, every: usize, layout: Layout) -> RedisOptions {
    RedisOptions {
        ingest: IngestOptions {
            call_budget: budget,
            call_target: Some(Duration::from_secs(1)),
            call_check_every: every,
            ..IngestOptions::default()
        },
        default_layout: layout,
        ..RedisOptions::default()
    }
}

/// A Harness on a Redis of its own (`url`: the server's, or a fault proxy's), after a
/// write of its own board (so the write scripts a test counts are mostly loaded).
pub(crate) async fn on(url: &str, options: RedisOptions) -> Harness {
    let store = RedisStore::connect_with(url, options).await.unwrap();
    let clock = clock();
    let h = Harness {
        boards: with_clock(Arc::new(store), &clock),
        clock,
        redis: None,
        in_memory: false,
    };
    let warm = h.board("1h", &["1h"]).await;
    h.boards.windowed(&warm).incr("w", 1, None).await.unwrap();
    h
}

/// (index, code) of each rejected event.
fn rejected(outcome: &BatchOutcome) -> Vec<(usize, &'static str)> {
    outcome
        .rejected
        .iter()
        .map(|r| (r.index, r.error.code()))
        .collect()
}

/// Applies `setup` (one batch each, at START + 1:30 h) then `events` to a `1h`/`3h`
/// board of the memory store and of `h`, and checks that both answer the same and hold
/// the same totals in both windows; answers Redis's outcome of `events`, its board and
/// how many script calls `events` took.
async fn like_memory(
    h: &Harness,
    redis: &TestRedis,
    setup: &[Vec<Event>],
    events: &[Event],
) -> (BatchOutcome, String, u64) {
    let memory = Harness::memory().await;
    let mb = memory.board("1h", &["1h", "3h"]).await;
    let rb = h.board("1h", &["1h", "3h"]).await;
    memory.at(3600 + 1800);
    h.at(3600 + 1800);
    for batch in setup {
        let want = memory.boards.windowed(&mb).incr_batch(batch).await.unwrap();
        assert_eq!(
            h.boards.windowed(&rb).incr_batch(batch).await.unwrap(),
            want
        );
    }
    let want = memory
        .boards
        .windowed(&mb)
        .incr_batch(events)
        .await
        .unwrap();
    let before = script_calls(redis).await;
    let got = h.boards.windowed(&rb).incr_batch(events).await.unwrap();
    let calls = script_calls(redis).await - before;
    assert_eq!(got, want);
    for window in ["1h", "3h"] {
        assert_eq!(
            top(&h.boards, &rb, window).await,
            top(&memory.boards, &mb, window).await,
            "{window}"
        );
    }
    (got, rb, calls)
}

/// Mode `sums`: 40 events, 12 distinct pairs (11 reach Redis: the late event is
/// rejected before), calls that stop after every 5 pairs: 3 calls (5, 5, 1 pairs)
/// where one would do, the same statuses and totals.
#[tokio::test]
async fn calls_that_stop_early_apply_summed_pairs_exactly() {
    sums_stop(Layout::Plain).await;
}

#[tokio::test]
async fn calls_that_stop_early_apply_summed_pairs_exactly_on_compact_slots() {
    sums_stop(Layout::Compact).await;
}

async fn sums_stop(layout: Layout) {
    let redis = TestRedis::spawn().await;
    let h = on(&redis.url, stopping(Duration::ZERO, 5, layout)).await;
    let (got, rb, calls) = like_memory(&h, &redis, &[], &mixed_events()).await;
    assert_eq!(calls, 3);
    assert_eq!(got.accepted, 39);
    assert_eq!(rejected(&got), [(36, "too_late")]);
    let [hour, both] = mixed_totals();
    assert_eq!(top(&h.boards, &rb, "1h").await, hour);
    assert_eq!(top(&h.boards, &rb, "3h").await, both);
    // abs_sum grew by what each call applied: the sum of |delta| of the 39 accepted
    // events, summed per pair (m0..m2 lose 1 in the pairs that gained).
    let mut raw = redis.raw().await;
    let abs_sum: i64 = redis::cmd("HGET")
        .arg(format!("board_{{{rb}}}"))
        .arg("abs_sum")
        .query_async(&mut raw)
        .await
        .unwrap();
    let summed: i64 = both.iter().map(|(_, v)| v).sum();
    assert_eq!(abs_sum, summed);
}

/// A trending board's calls stop at the budget too (`trend_write.lua`): 23 events in
/// calls that stop after every 5 take 5 calls where one would do, and score as the
/// memory store does; a call of at most 5 events cannot stop and reads no clock.
#[tokio::test]
async fn trending_calls_that_stop_early_apply_events_exactly() {
    let redis = TestRedis::spawn().await;
    let h = on(&redis.url, stopping(Duration::ZERO, 5, Layout::Plain)).await;
    let memory = Harness::memory().await;
    let name = unique("tstop");
    for boards in [&h.boards, &memory.boards] {
        let config = TrendingConfig::parse("1h").unwrap();
        boards.create(&name, config).await.unwrap();
    }
    let events: Vec<Event> = (0..23)
        .map(|i| Event::new(format!("m{}", i % 7), 1 + i % 3))
        .collect();
    let want = memory.boards.trending(&name).incr_batch(&events).await;
    let before = script_calls(&redis).await;
    let got = h.boards.trending(&name).incr_batch(&events).await;
    assert_eq!(script_calls(&redis).await - before, 5);
    assert_eq!(got.unwrap(), want.unwrap());
    let got = trend_scores(&h.boards, &name).await;
    assert_eq!(got, trend_scores(&memory.boards, &name).await);
    assert_eq!(got.len(), 7);
    let before = script_calls(&redis).await;
    let five = h.boards.trending(&name).incr_batch(&events[..5]).await;
    assert_eq!(five.unwrap().accepted, 5);
    assert_eq!(script_calls(&redis).await - before, 1);
}

/// The trending board's top 10: members and scores to 9 decimals.
async fn trend_scores(boards: &Rollboard, name: &str) -> Vec<(String, i64)> {
    let page = boards.trending(name).top(0, 10).await.unwrap();
    let entries = page.entries.iter();
    entries
        .map(|e| (e.member.clone(), (e.score * 1e9).round() as i64))
        .collect()
}

/// Mode `events`: on a board past its bound (a total at the limit), the batch goes
/// event by event in calls that stop after every 5 events: one call in mode `sums`
/// that applies nothing, then 8 calls for the 40 events that reach Redis (of 41: the
/// late one is rejected before); an event that would take the total past the limit is
/// out of range, as in the memory store.
#[tokio::test]
async fn calls_that_stop_early_apply_events_exactly() {
    events_stop(Layout::Plain).await;
}

#[tokio::test]
async fn calls_that_stop_early_apply_events_exactly_on_compact_slots() {
    events_stop(Layout::Compact).await;
}

async fn events_stop(layout: Layout) {
    let redis = TestRedis::spawn().await;
    let h = on(&redis.url, stopping(Duration::ZERO, 5, layout)).await;
    let mut events = mixed_events();
    events.push(Event::new("huge", 1));
    let setup = [vec![Event::new("huge", MAX_ABS)]];
    let (got, rb, calls) = like_memory(&h, &redis, &setup, &events).await;
    assert_eq!(calls, 1 + 8);
    assert_eq!(got.accepted, 39);
    assert_eq!(rejected(&got), [(36, "too_late"), (40, "out_of_range")]);
    let [hour, _] = mixed_totals();
    let mut want = vec![("huge".to_string(), MAX_ABS)];
    want.extend(hour);
    assert_eq!(top(&h.boards, &rb, "1h").await, want);
}

/// Past the bound, with room: each group is checked before it is applied, and a call
/// stops before a group that lacks room (here the late event of `x`, whose slot of two
/// hours before holds the limit while its totals are 0), having applied the first
/// group; the next call, whose first group it is, applies nothing and the caller's
/// remaining events go one by one: `x`'s is out of range, as in the memory store. The
/// budget is never spent here (a second): only the check stops the first call.
#[tokio::test]
async fn a_call_stops_before_a_group_without_room() {
    group_without_room(Layout::Plain).await;
}

#[tokio::test]
async fn a_call_stops_before_a_group_without_room_on_compact_slots() {
    group_without_room(Layout::Compact).await;
}

async fn group_without_room(layout: Layout) {
    let redis = TestRedis::spawn().await;
    let h = on(&redis.url, stopping(Duration::from_secs(1), 5, layout)).await;
    // Now is START + 1:30 h: the slot of START - 1 h counts in 3h only, as does START's.
    let earlier = |delta| Event::new("x", delta).at(ts(START - 3000));
    let setup = [
        vec![earlier(MAX_ABS)],
        vec![Event::new("x", -MAX_ABS).at(ts(START + 600))],
    ];
    let mut events: Vec<Event> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|m| Event::new(*m, 2))
        .collect();
    events.push(earlier(1));
    events.push(Event::new("f", 3));
    let (got, rb, calls) = like_memory(&h, &redis, &setup, &events).await;
    // 5 pairs applied, then {2}, then 2 events one by one in one call.
    assert_eq!(calls, 3);
    assert_eq!(got.accepted, 6);
    assert_eq!(rejected(&got), [(5, "out_of_range")]);
    let want = pairs(&[("f", 3), ("a", 2), ("b", 2), ("c", 2), ("d", 2), ("e", 2)]);
    assert_eq!(top(&h.boards, &rb, "1h").await, want);
    // x's total over 3h is 0 (its two slots cancel), so it is absent.
    assert_eq!(top(&h.boards, &rb, "3h").await, want);
}

/// Six events, `a` twice at the start (so the first call can only stop after `a b a`):
/// the calls of the keyed write apply `a b a`, `c`, `d`, `e`; the reply of the third
/// (`d`) is lost. The retry follows the records (3 events, 1, 1) and applies `e`
/// only: every event counts once. A record holding the events a call carried instead
/// of those it applied would make the retry skip `c`, `d` and `e`.
#[tokio::test]
async fn a_keyed_write_whose_calls_stop_early_is_retried_exactly() {
    keyed_stops(Layout::Plain).await;
}

#[tokio::test]
async fn a_keyed_write_whose_calls_stop_early_is_retried_exactly_on_compact_slots() {
    keyed_stops(Layout::Compact).await;
}

async fn keyed_stops(layout: Layout) {
    let redis = TestRedis::spawn().await;
    let proxy = FaultProxy::start(&redis.url).await;
    let h = on(&proxy.url(), stopping(Duration::ZERO, 1, layout)).await;
    h.at(1800);
    let b = h.board("1h", &["1h", "24h"]).await;
    let events: Vec<Event> = [("a", 1), ("b", 2), ("a", 4), ("c", 8), ("d", 16), ("e", 32)]
        .iter()
        .map(|(m, d)| Event::new(*m, *d))
        .collect();
    let index = format!("slots_{{{b}}}");
    proxy.arm(Fault::Cut, 1, move |r| {
        r.is_script_with_key(&index) && r.has_arg("d") && !r.has_arg("c")
    });
    let before = script_calls(&redis).await;
    let lost = h
        .boards
        .windowed(&b)
        .write_idempotent(&events, "stops")
        .await;
    assert!(matches!(lost, Err(Error::StoreUnavailable(_))), "{lost:?}");
    assert_eq!(proxy.fired(), 1);
    assert_eq!(script_calls(&redis).await - before, 3);
    let applied = pairs(&[("d", 16), ("c", 8), ("a", 5), ("b", 2)]);
    assert_eq!(top(&h.boards, &b, "24h").await, applied);

    let before = script_calls(&redis).await;
    let again = h
        .boards
        .windowed(&b)
        .write_idempotent(&events, "stops")
        .await
        .unwrap();
    // Three replayed calls (at 0, 3 and 4), one call for `e`.
    assert_eq!(script_calls(&redis).await - before, 4);
    assert_eq!((again.accepted, again.rejected.len()), (6, 0));
    let want = pairs(&[("e", 32), ("d", 16), ("c", 8), ("a", 5), ("b", 2)]);
    assert_eq!(top(&h.boards, &b, "24h").await, want);
    assert_eq!(top(&h.boards, &b, "1h").await, want);

    // A third try replays every call and applies nothing.
    let third = h
        .boards
        .windowed(&b)
        .write_idempotent(&events, "stops")
        .await
        .unwrap();
    assert_eq!(third, again);
    assert_eq!(top(&h.boards, &b, "24h").await, want);
}
