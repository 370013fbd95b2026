//! Bounded write calls: a batch is applied in `write.lua` calls of at most the board's
//! cap of pairs, sized from the calls' measured cost against `IngestOptions::call_budget`.
//! Each call is exact on its own; a request whose events span calls and fails half-way
//! reports what it applied, and under an idempotency key a retry applies exactly the
//! missing calls (fault proxy on real Redis). The memory store ignores the budget and
//! must agree with Redis on every total.

use std::sync::Arc;
use std::time::Duration;

use rollboard::{Error, Event, IngestOptions, Layout, RedisOptions, RedisStore, Rollboard, Span};

use crate::proxy::{Fault, FaultProxy, Request};
use crate::support::{Harness, START, TestRedis, clock, pairs, ranking, unique, with_clock};

/// Redis options whose calls carry one pair each (a zero budget) or the default budget.
/// Boards that name no layout get `layout`.
fn options(call_budget: Duration, layout: Layout) -> RedisOptions {
    RedisOptions {
        ingest: IngestOptions {
            call_budget,
            ..IngestOptions::default()
        },
        default_layout: layout,
        ..RedisOptions::default()
    }
}

/// How many scripts Redis has run (EVALSHA and EVAL, less those that failed: a first
/// `EVALSHA` refused with `NOSCRIPT`), from `INFO commandstats` (on a server of the
/// test's own: `TestRedis::spawn`).
pub(crate) async fn script_calls(redis: &TestRedis) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
    info.lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .map(|l| stat(l, "calls=") - stat(l, "failed_calls="))
        .sum()
}

/// The number after `name` in an `INFO commandstats` line.
fn stat(line: &str, name: &str) -> u64 {
    let value = line.split(name).nth(1).unwrap();
    value.split(',').next().unwrap().parse().unwrap()
}

pub(crate) async fn top(boards: &Rollboard, board: &str, window: &str) -> Vec<(String, i64)> {
    let window = Some(Span::parse(window).unwrap());
    ranking(&boards.windowed(board).top(window, 0, 1000).await.unwrap())
}

/// Events of 7 members over two slots, members repeated: 40 events, 12 distinct
/// (slot, member) pairs, one event too late for every window.
pub(crate) fn mixed_events() -> Vec<Event> {
    let mut events: Vec<Event> = (0..36)
        .map(|i| {
            let e = Event::new(format!("m{}", i % 7), 1 + i % 5);
            if i % 9 == 0 {
                // The previous hour's slot: counted in 3h only.
                e.at(crate::support::ts(START + 600))
            } else {
                e
            }
        })
        .collect();
    events.push(Event::new("late", 4).at(crate::support::ts(START - 5 * 3600)));
    events.extend((0..3).map(|i| Event::new(format!("m{i}"), -1)));
    events
}

/// The totals of `mixed_events` (m0..m6) in the `1h` and `3h` windows, ranked.
pub(crate) fn mixed_totals() -> [Vec<(String, i64)>; 2] {
    let mut hour = [0i64; 7];
    let mut both = [0i64; 7];
    for i in 0..36 {
        both[i % 7] += 1 + (i as i64) % 5;
        if i % 9 != 0 {
            hour[i % 7] += 1 + (i as i64) % 5;
        }
    }
    for m in 0..3 {
        hour[m] -= 1;
        both[m] -= 1;
    }
    [hour, both].map(|totals| {
        let mut v: Vec<(String, i64)> = (0..7).map(|m| (format!("m{m}"), totals[m])).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    })
}

async fn apply_mixed(h: &Harness, board: &str) -> rollboard::BatchOutcome {
    h.at(3600 + 1800);
    h.boards
        .windowed(board)
        .incr_batch(&mixed_events())
        .await
        .unwrap()
}

/// With a zero budget every pair is its own call: 40 events, 12 pairs (7 members in the
/// current slot, 4 in the previous one, the late event, which is rejected before it
/// reaches Redis), 11 calls (a script's first `EVALSHA`, refused with `NOSCRIPT`, is not
/// counted); the totals equal the memory store's, which ignores the budget, and the
/// hand-computed ones.
#[tokio::test]
async fn a_batch_is_split_into_one_call_per_pair_and_both_stores_agree() {
    split_per_pair(Layout::Plain).await;
}

#[tokio::test]
async fn a_batch_is_split_into_one_call_per_pair_and_both_stores_agree_on_compact_slots() {
    split_per_pair(Layout::Compact).await;
}

async fn split_per_pair(layout: Layout) {
    let memory = Harness::memory().await;
    let b = memory.board("1h", &["1h", "3h"]).await;
    let want = apply_mixed(&memory, &b).await;

    let redis = TestRedis::spawn().await;
    let store = RedisStore::connect_with(&redis.url, options(Duration::ZERO, layout))
        .await
        .unwrap();
    let clock = clock();
    let h = Harness {
        boards: with_clock(Arc::new(store), &clock),
        clock,
        redis: None,
        in_memory: false,
    };
    let rb = h.board("1h", &["1h", "3h"]).await;
    let before = script_calls(&redis).await;
    let got = apply_mixed(&h, &rb).await;
    assert_eq!(script_calls(&redis).await - before, 11);
    assert_eq!(got, want);
    assert_eq!(got.accepted, 39);
    assert_eq!(got.rejected.len(), 1);
    assert_eq!(
        (got.rejected[0].index, got.rejected[0].error.code()),
        (36, "too_late")
    );

    let [hour, both] = mixed_totals();
    for (window, totals) in [("1h", hour), ("3h", both)] {
        let redis_top = top(&h.boards, &rb, window).await;
        assert_eq!(redis_top, totals, "redis {window}");
        assert_eq!(
            top(&memory.boards, &b, window).await,
            redis_top,
            "memory {window}"
        );
    }
}

/// A board of `members` members in its current slot (START, a `1h`/`24h` board), filled
/// with pipelined HSET/ZADD: member `m<i>` holds 1 in the slot and in both windows.
async fn big_board(redis: &TestRedis, boards: &Rollboard, members: usize) -> String {
    let b = unique("big");
    boards
        .create(
            &b,
            rollboard::BoardConfig::parse("1h", &["1h", "24h"]).unwrap(),
        )
        .await
        .unwrap();
    let mut raw = redis.raw().await;
    let slot = format!("slot_{{{b}}}_{START}");
    let totals = [format!("stats_{{{b}}}"), format!("stats_{{{b}}}_86400")];
    for from in (0..members).step_by(10_000) {
        let ids: Vec<usize> = (from..(from + 10_000).min(members)).collect();
        let mut pipe = redis::pipe();
        let mut hset = redis::cmd("HSET");
        hset.arg(&slot);
        for i in &ids {
            hset.arg(format!("m{i}")).arg(1);
        }
        pipe.add_command(hset).ignore();
        for key in &totals {
            let mut zadd = redis::cmd("ZADD");
            zadd.arg(key);
            for i in &ids {
                zadd.arg(1).arg(format!("m{i}"));
            }
            pipe.add_command(zadd).ignore();
        }
        let _: () = pipe.query_async(&mut raw).await.unwrap();
    }
    let _: () = redis::pipe()
        .cmd("ZADD")
        .arg(format!("slots_{{{b}}}"))
        .arg(START)
        .arg(START)
        .ignore()
        .cmd("HINCRBY")
        .arg(format!("board_{{{b}}}"))
        .arg("abs_sum")
        .arg(members)
        .ignore()
        .query_async(&mut raw)
        .await
        .unwrap();
    b
}

/// Writes batches `batches` (each of 1,000 distinct members, +1 each: batch `n` writes
/// `m<k>` for k = x * 37 % 200,000, x = 1000 n .. 1000 n + 999) and answers how many
/// script calls they took.
async fn calls_for(
    redis: &TestRedis,
    boards: &Rollboard,
    b: &str,
    batches: impl Iterator<Item = usize>,
) -> u64 {
    let before = script_calls(redis).await;
    for n in batches {
        let events: Vec<Event> = (0..1000)
            .map(|i| Event::new(format!("m{}", (n * 1000 + i) * 37 % 200_000), 1))
            .collect();
        let outcome = boards.windowed(b).incr_batch(&events).await.unwrap();
        assert_eq!(outcome.accepted, 1000);
    }
    script_calls(redis).await - before
}

/// With the default budget (1 ms), the estimate follows each board's measured cost: on a
/// 200,000-member two-window board a 1,000-pair batch takes several calls, on a small
/// board fewer; every event is counted once either way. (Bounds loose enough for a
/// loaded or a fast machine: the estimator's arithmetic is unit-tested in budget.rs.)
#[tokio::test]
async fn the_cap_adapts_to_the_board_size() {
    let redis = TestRedis::spawn().await;
    let store =
        RedisStore::connect_with(&redis.url, options(Duration::from_millis(1), Layout::Plain))
            .await
            .unwrap();
    let clock = clock();
    let boards = with_clock(Arc::new(store), &clock);
    clock.set(crate::support::ts(START + 1800));

    let big = big_board(&redis, &boards, 200_000).await;
    calls_for(&redis, &boards, &big, 0..3).await; // the estimate learns the board
    let big_calls = calls_for(&redis, &boards, &big, 3..8).await;
    // Bounded: a 1,000-pair batch never goes in one call (it costs several ms there).
    assert!(
        big_calls >= 5 * 2,
        "{big_calls} calls for 5 batches on the big board"
    );

    // The small board: the same 1,000 members, batch after batch.
    let small = boards_small(&boards).await;
    calls_for(&redis, &boards, &small, std::iter::repeat_n(0, 10)).await;
    let small_calls = calls_for(&redis, &boards, &small, std::iter::repeat_n(0, 5)).await;
    // The prior (16 µs a pair) gives 17 calls a batch; a small board costs a few µs a
    // pair (11 on a slow machine under a full test run: 55 calls), the big one about 12.
    // Fewer calls than the prior would make: the estimate learned the board is cheap.
    assert!(
        small_calls < 5 * 17,
        "{small_calls} calls for 5 batches on a small board ({big_calls} on the big one)"
    );
    // Measured here: 31-37 calls on the big board (6-7 µs a pair), 15-16 on the small
    // one, idle or with both cores busy; the ratio is what the estimate is for.
    assert!(
        big_calls > small_calls,
        "{big_calls} calls on the big board, {small_calls} on the small one"
    );

    // Exact: 8,000 members of the big board hold 2 (in the slot and both windows), the
    // others 1; the small board's 1,000 members hold 15.
    let mut raw = redis.raw().await;
    raw.set_response_timeout(Duration::from_secs(60));
    for (b, members, more, by) in [(&big, 200_000, 8_000, 1), (&small, 1000, 1000, 14)] {
        let keys = [
            format!("slot_{{{b}}}_{START}"),
            format!("stats_{{{b}}}"),
            format!("stats_{{{b}}}_86400"),
        ];
        // Counted in Redis (200,000 fields are slow to ship to a debug build): fields,
        // their sum, how many hold 1 + by, and totals that differ from the slot value.
        let (fields, sum, raised, wrong): (usize, i64, usize, usize) = redis::Script::new(
            "local h = redis.call('HGETALL', KEYS[1])
             local sum, raised, wrong = 0, 0, 0
             for i = 1, #h, 2 do
               local v = tonumber(h[i + 1])
               sum = sum + v
               if v == tonumber(ARGV[1]) then raised = raised + 1 end
               for k = 2, 3 do
                 if tonumber(redis.call('ZSCORE', KEYS[k], h[i])) ~= v then wrong = wrong + 1 end
               end
             end
             for k = 2, 3 do
               if redis.call('ZCARD', KEYS[k]) ~= #h / 2 then wrong = wrong + 1 end
             end
             return {#h / 2, sum, raised, wrong}",
        )
        .key(&keys[0])
        .key(&keys[1])
        .key(&keys[2])
        .arg(1 + by)
        .invoke_async(&mut raw)
        .await
        .unwrap();
        assert_eq!((fields, raised, wrong), (members, more, 0), "{b}");
        assert_eq!(sum, (members + more * by as usize) as i64);
    }
}

/// A fresh `1h`/`24h` board with no members yet.
async fn boards_small(boards: &Rollboard) -> String {
    let b = unique("small");
    boards
        .create(
            &b,
            rollboard::BoardConfig::parse("1h", &["1h", "24h"]).unwrap(),
        )
        .await
        .unwrap();
    b
}

/// A `write.lua` call of `board` carrying the member `member`.
fn write_of(board: &str, member: &str) -> impl Fn(&Request) -> bool + Send + Sync + 'static {
    let (index, member) = (format!("slots_{{{board}}}"), member.to_owned());
    move |r| r.is_script_with_key(&index) && r.has_arg(&member)
}

/// A Rollboard on Redis through a fault proxy, one pair per call.
async fn through(
    proxy: &FaultProxy,
    budget: Duration,
    layout: Layout,
) -> (Rollboard, rollboard::ManualClock) {
    let store = RedisStore::connect_with(&proxy.url(), options(budget, layout))
        .await
        .unwrap();
    let clock = clock();
    clock.set(crate::support::ts(START + 1800));
    (with_clock(Arc::new(store), &clock), clock)
}

/// The events of the half-way tests: four members, `b`'s call the second.
fn four() -> Vec<Event> {
    vec![
        Event::new("a", 1),
        Event::new("b", 2),
        Event::new("c", 3),
        Event::new("a", 4),
        Event::new("d", 5),
    ]
}

/// Without a key, a batch whose second call loses its reply reports the first call's
/// events accepted and the others rejected as `store_unavailable`; Redis ran the second
/// call (it counts) and the third and fourth were never sent.
#[tokio::test]
async fn a_batch_cut_half_way_says_what_it_applied() {
    cut_half_way(Layout::Plain).await;
}

#[tokio::test]
async fn a_batch_cut_half_way_says_what_it_applied_on_compact_slots() {
    cut_half_way(Layout::Compact).await;
}

async fn cut_half_way(layout: Layout) {
    let redis = TestRedis::spawn().await;
    let proxy = FaultProxy::start(&redis.url).await;
    let (boards, _clock) = through(&proxy, Duration::ZERO, layout).await;
    let b = boards_small(&boards).await;
    proxy.arm(Fault::Cut, 1, write_of(&b, "b"));
    let outcome = boards.windowed(&b).incr_batch(&four()).await.unwrap();
    assert_eq!(proxy.fired(), 1);
    assert_eq!(
        outcome.accepted, 2,
        "a's two events, summed in the first call"
    );
    let rejected: Vec<_> = outcome
        .rejected
        .iter()
        .map(|r| (r.index, r.error.code()))
        .collect();
    assert_eq!(
        rejected,
        [
            (1, "store_unavailable"),
            (2, "store_unavailable"),
            (4, "store_unavailable")
        ]
    );
    assert!(
        outcome.rejected[0].error.to_string().contains("part-way"),
        "{}",
        outcome.rejected[0].error
    );
    assert_eq!(top(&boards, &b, "24h").await, pairs(&[("a", 5), ("b", 2)]));
}

/// Under an idempotency key, the retry of a write whose second call lost its reply
/// applies exactly the calls that are missing, even with another cap (here a store with
/// the default budget, so the rest goes in one call); a third try replays everything.
#[tokio::test]
async fn a_keyed_write_cut_half_way_is_completed_exactly_by_its_retry() {
    keyed_cut_half_way(Layout::Plain).await;
}

#[tokio::test]
async fn a_keyed_write_cut_half_way_is_completed_exactly_by_its_retry_on_compact_slots() {
    keyed_cut_half_way(Layout::Compact).await;
}

async fn keyed_cut_half_way(layout: Layout) {
    let redis = TestRedis::spawn().await;
    let proxy = FaultProxy::start(&redis.url).await;
    let (boards, _clock) = through(&proxy, Duration::ZERO, layout).await;
    let b = boards_small(&boards).await;
    proxy.arm(Fault::Cut, 1, write_of(&b, "b"));
    let lost = boards.windowed(&b).write_idempotent(&four(), "half").await;
    assert!(matches!(lost, Err(Error::StoreUnavailable(_))), "{lost:?}");
    assert_eq!(proxy.fired(), 1);
    // a (1) and b (2) are in; c, a (4) and d were never sent.
    assert_eq!(top(&boards, &b, "24h").await, pairs(&[("b", 2), ("a", 1)]));

    let (other, _clock) = through(&proxy, Duration::from_secs(1), layout).await;
    let before = script_calls(&redis).await;
    let again = other
        .windowed(&b)
        .write_idempotent(&four(), "half")
        .await
        .unwrap();
    // Two replayed calls (at 0 and 1), then one call for events 2..5.
    assert_eq!(script_calls(&redis).await - before, 3);
    assert_eq!((again.accepted, again.rejected.len()), (5, 0));
    let want = pairs(&[("a", 5), ("d", 5), ("c", 3), ("b", 2)]);
    assert_eq!(top(&boards, &b, "24h").await, want);
    assert_eq!(top(&boards, &b, "1h").await, want);

    let key = rollboard::IdempotencyKey::parse("half").unwrap();
    let fingerprint = rollboard::Fingerprint::of_events(&four());
    let third = boards
        .windowed(&b)
        .write_keyed(&four(), &key, &fingerprint)
        .await
        .unwrap();
    assert!(third.replayed);
    assert_eq!(third.outcome, again);
    assert_eq!(top(&boards, &b, "24h").await, want);
}

/// A batch whose calls a new version of its board cuts half-way (a window added while
/// it is applied, one pair per call): the calls after the change are refused before
/// they apply anything, so their events are answered `board_changed` (known not
/// applied, not "unconfirmed"); on a sharded board they are sent again through the
/// board as stored, so every event is counted once.
#[tokio::test]
async fn a_batch_cut_by_a_new_version_says_what_it_left_and_a_sharded_board_resends_it() {
    let redis = TestRedis::spawn().await;
    let store = RedisStore::connect_with(&redis.url, options(Duration::ZERO, Layout::Plain))
        .await
        .unwrap();
    let clock = clock();
    let boards = with_clock(Arc::new(store), &clock);
    let events: Vec<Event> = (0..400).map(|m| Event::new(format!("m{m}"), 1)).collect();
    // The board's accepted and `board_changed` events when a window is added `wait` µs
    // into the batch; what it counts is exactly what it accepted.
    let cut_at = |shards: u32, wait: u64| {
        let (boards, events) = (&boards, &events);
        async move {
            let board = unique("cut");
            let config = |windows: &[&str]| {
                let config = rollboard::BoardConfig::parse("1h", windows).unwrap();
                config.with_shards(shards).unwrap()
            };
            boards.create(&board, config(&["1h"])).await.unwrap();
            let extend = async {
                tokio::time::sleep(Duration::from_micros(wait)).await;
                boards.create(&board, config(&["1h", "2h"])).await.unwrap();
            };
            let (outcome, ()) = tokio::join!(boards.windowed(&board).incr_batch(events), extend);
            let outcome = outcome.unwrap();
            let ranked = top(boards, &board, "1h").await;
            assert_eq!(ranked.len(), outcome.accepted, "{shards} shards, {wait} µs");
            assert!(ranked.iter().all(|(_, score)| *score == 1));
            let codes = outcome.rejected.iter().map(|r| r.error.code());
            assert!(codes.clone().all(|c| c == "board_changed"), "{outcome:?}");
            (outcome.accepted, codes.count())
        }
    };
    let mut cut = None;
    for wait in [2_000, 1_000, 500, 200, 100, 50] {
        let (accepted, changed) = cut_at(1, wait).await;
        assert_eq!(accepted + changed, events.len());
        if accepted > 0 && changed > 0 {
            cut = Some(wait);
            break;
        }
    }
    let wait = cut.expect("a window added inside the batch");
    for wait in [wait, wait / 2, wait * 2] {
        assert_eq!(cut_at(2, wait).await, (events.len(), 0), "{wait} µs");
    }
}
