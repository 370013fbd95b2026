//! Property test of max and min boards: random writes (single and batched, values of
//! any sign and zero, late and future times), clock advances, retirements and reads run
//! on the memory store and on Redis (a single node, and the cluster) in lockstep. Every
//! answer of the two stores must be identical; every read that claims to cover exactly
//! its window must equal a brute-force oracle that keeps every accepted event and takes
//! the max (min) of those whose slots are inside the window; and after a final
//! retirement every window must equal the oracle, and Redis's peak lists must be exactly
//! the live slots' values that no newer slot matches.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rollboard::{Aggregate, AroundOptions, BoardConfig, Clock, Created, Event, MemoryStore, Order};
use rollboard::{Layout, RedisStore, Span, Ties, Timestamp};

use crate::oracle::{ValueOracle, check_tallies};
use crate::support::{TestRedis, clock, ranking, triples, unique, with_clock};

const MEMBERS: [&str; 5] = ["ann", "bob", "cy", "dee", "eve"];

/// Slots the retirer converted into buckets, over every scenario run so far.
static COMPACTED: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, Clone)]
enum Op {
    /// Event for member `m` with `value`, at `now + offset` seconds.
    Write(usize, i64, i64),
    Batch(Vec<(usize, i64, i64)>),
    /// Two events of member `m` at the same millisecond, in two calls (a latest board's
    /// tie: the greater value is the newer).
    Tie(usize, i64, i64, i64),
    Advance(i64),
    Retire,
    /// Recompute of one window (`None`: every window), then every window read.
    Recompute(Option<usize>),
    /// A window of `k` times the largest added, built.
    Extend(u64),
    /// Member `m` removed.
    Remove(usize),
    /// Events at now (no `at`) under idempotency key `k`: a retry of an earlier write
    /// under the key (even after the clock moved), or another write reusing it.
    Keyed(usize, Vec<(usize, i64)>),
    /// Events answering their standing in every window.
    Standing(Vec<(usize, i64, i64)>),
    Read(usize),
    Bottom(usize, u64, u64),
    Score(usize, usize),
    Ranks(usize),
    Around(usize, usize, u64, bool, bool),
    /// A page of the values in `min..=min + span`.
    Range(usize, i64, i64),
    History(usize),
}

#[derive(Debug, Clone)]
struct Scenario {
    slot: u64,
    windows: Vec<u64>,
    aggregate: Aggregate,
    ties: Ties,
    ops: Vec<Op>,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    let config = (
        prop_oneof![Just(60u64), Just(300)],
        proptest::sample::subsequence(vec![1u64, 2, 3, 5, 12], 1..=3),
    );
    config.prop_flat_map(|(slot, multiples)| {
        let windows: Vec<u64> = multiples.iter().map(|k| k * slot).collect();
        let largest = *windows.last().unwrap() as i64;
        let n = windows.len();
        let m = MEMBERS.len();
        let offset = -(largest + 2 * slot as i64)..=(60 + slot as i64);
        let write = (0..m, -3i64..=6, offset);
        let op = prop_oneof![
            6 => write.clone().prop_map(|(m, v, o)| Op::Write(m, v, o)),
            2 => proptest::collection::vec(write.clone(), 1..6).prop_map(Op::Batch),
            1 => (write.clone(), -3i64..=6).prop_map(|((m, v, o), w)| Op::Tie(m, v, w, o)),
            3 => prop_oneof![0..=(2 * slot as i64), Just(largest), Just(3 * largest)]
                .prop_map(Op::Advance),
            2 => Just(Op::Retire),
            1 => proptest::option::of(0..n).prop_map(Op::Recompute),
            1 => (2u64..=3).prop_map(Op::Extend),
            1 => (0..m).prop_map(Op::Remove),
            2 => (0..2usize, proptest::collection::vec((0..m, -3i64..=6), 1..3))
                .prop_map(|(k, events)| Op::Keyed(k, events)),
            2 => proptest::collection::vec(write.clone(), 1..4).prop_map(Op::Standing),
            2 => (0..n).prop_map(Op::Read),
            1 => (0..n, 0u64..4, 1u64..4).prop_map(|(w, o, l)| Op::Bottom(w, o, l)),
            1 => (0..m, 0..n).prop_map(|(m, w)| Op::Score(m, w)),
            1 => (0..n).prop_map(Op::Ranks),
            1 => (0..m, 0..n, 0u64..3, any::<bool>(), any::<bool>())
                .prop_map(|(m, w, k, fill, asc)| Op::Around(m, w, k, fill, asc)),
            1 => (0..n, -3i64..=6, 0i64..=4).prop_map(|(w, min, span)| Op::Range(w, min, span)),
            1 => (0..m).prop_map(Op::History),
        ];
        let kind = prop_oneof![
            Just(Aggregate::Max),
            Just(Aggregate::Min),
            Just(Aggregate::Latest)
        ];
        let ties = prop_oneof![
            Just(Ties::Competition),
            Just(Ties::Dense),
            Just(Ties::Position)
        ];
        (proptest::collection::vec(op, 1..60), kind, ties).prop_map(
            move |(ops, aggregate, ties)| Scenario {
                slot,
                windows: windows.clone(),
                aggregate,
                ties,
                ops,
            },
        )
    })
}

/// The rank of the member at `position` of `ranking`: 1 + the members strictly better
/// (competition), 1 + the distinct values strictly better (dense), or its 1-based place
/// (position).
fn rank_at(ranking: &[(String, i64)], position: usize, ties: Ties) -> u64 {
    let score = ranking[position].1;
    let better = ranking.iter().take_while(|(_, s)| *s != score);
    match ties {
        Ties::Position => position as u64 + 1,
        Ties::Dense => dense_rank(ranking, score),
        Ties::Competition => better.count() as u64 + 1,
    }
}

fn at_positions(
    ranking: &[(String, i64)],
    positions: impl Iterator<Item = usize>,
    ties: Ties,
) -> Vec<(u64, String, i64)> {
    positions
        .map(|p| {
            (
                rank_at(ranking, p, ties),
                ranking[p].0.clone(),
                ranking[p].1,
            )
        })
        .collect()
}

/// 1 + the distinct values in `ranking` better than `score`.
pub fn dense_rank(ranking: &[(String, i64)], score: i64) -> u64 {
    let better = ranking.iter().take_while(|(_, s)| *s != score);
    better.map(|(_, s)| s).collect::<BTreeSet<_>>().len() as u64 + 1
}

/// An event `offset` seconds from `now`, give or take a millisecond or two (so events
/// of one slot are ordered by time, and some share a millisecond: a latest board's tie).
fn event(now: Timestamp, (m, value, offset): (usize, i64, i64)) -> Event {
    let at = Timestamp::from_unix_millis(now.unix_millis() + offset * 1000 + value.rem_euclid(3))
        .unwrap();
    Event::value(MEMBERS[m], value).at(at)
}

/// One scenario on the memory store and `store`; `redis` (a single node) also has its
/// peak lists checked.
async fn run(
    redis: Option<&TestRedis>,
    store: Arc<RedisStore>,
    layout: Option<Layout>,
    s: Scenario,
) -> Result<(), TestCaseError> {
    let ties = s.ties;
    let clock = clock();
    let memory = with_clock(Arc::new(MemoryStore::new()), &clock);
    let on_redis = with_clock(store, &clock);
    let mut windows: Vec<Span> = s
        .windows
        .iter()
        .map(|w| Span::from_seconds(*w).unwrap())
        .collect();
    let mut config = BoardConfig::new(Span::from_seconds(s.slot).unwrap(), windows.clone())
        .unwrap()
        .with_ties(s.ties)
        .with_aggregate(s.aggregate)
        .with_layout(layout);
    let name = unique("agg");
    memory.create(&name, config.clone()).await.unwrap();
    on_redis.create(&name, config.clone()).await.unwrap();
    let mut oracle = ValueOracle::new(config.clone());
    let both = [&memory, &on_redis];
    for op in &s.ops {
        let now = clock.now();
        let exact = |from: i64, j: usize| from == config.window_start(j, now);
        match op {
            Op::Write(..) | Op::Batch(_) | Op::Tie(..) => {
                let calls: Vec<Vec<Event>> = match op {
                    Op::Write(m, v, o) => vec![vec![event(now, (*m, *v, *o))]],
                    Op::Batch(items) => vec![items.iter().map(|i| event(now, *i)).collect()],
                    Op::Tie(m, v, w, o) => {
                        let first = event(now, (*m, *v, *o));
                        let at = first.at.unwrap();
                        vec![vec![first], vec![Event::value(MEMBERS[*m], *w).at(at)]]
                    }
                    _ => unreachable!(),
                };
                for events in calls {
                    let a = memory.windowed(&name).incr_batch(&events).await.unwrap();
                    let b = on_redis.windowed(&name).incr_batch(&events).await.unwrap();
                    prop_assert_eq!(&a, &b);
                    for (i, e) in events.iter().enumerate() {
                        if !a.rejected.iter().any(|r| r.index == i) {
                            let slot = config.slot_start(e.at.unwrap());
                            let at = e.at.unwrap().unix_millis();
                            oracle.record(slot, &e.member, e.value.unwrap(), at);
                        }
                    }
                }
            }
            Op::Advance(seconds) => clock.advance_secs(*seconds),
            Op::Standing(items) => {
                let events: Vec<Event> = items.iter().map(|i| event(now, *i)).collect();
                let a = memory
                    .windowed(&name)
                    .incr_batch_standing(&events, None)
                    .await
                    .unwrap();
                let b = on_redis
                    .windowed(&name)
                    .incr_batch_standing(&events, None)
                    .await
                    .unwrap();
                prop_assert_eq!(&a, &b, "standing write");
                for (i, e) in events.iter().enumerate() {
                    if !a.outcome.rejected.iter().any(|r| r.index == i) {
                        let slot = config.slot_start(e.at.unwrap());
                        let at = e.at.unwrap().unix_millis();
                        oracle.record(slot, &e.member, e.value.unwrap(), at);
                    }
                }
                for s in &a.standings {
                    for w in &s.windows {
                        let j = windows.iter().position(|x| *x == w.window).unwrap();
                        let page = memory
                            .windowed(&name)
                            .top(Some(w.window), 0, 1000)
                            .await
                            .unwrap();
                        let entry = page.entries.iter().find(|e| e.member == s.member);
                        prop_assert_eq!(
                            (w.score, w.rank),
                            entry.map_or((0, None), |e| (e.score, Some(e.rank))),
                            "standing of {} in window {}",
                            s.member,
                            j
                        );
                    }
                }
            }
            Op::Keyed(k, items) => {
                let events: Vec<Event> = items
                    .iter()
                    .map(|(m, v)| Event::value(MEMBERS[*m], *v))
                    .collect();
                let key = rollboard::IdempotencyKey::parse(&format!("k{k}")).unwrap();
                let fingerprint = rollboard::Fingerprint::of_events(&events);
                let a = memory
                    .windowed(&name)
                    .write_keyed(&events, &key, &fingerprint)
                    .await;
                let b = on_redis
                    .windowed(&name)
                    .write_keyed(&events, &key, &fingerprint)
                    .await;
                prop_assert_eq!(format!("{a:?}"), format!("{b:?}"), "keyed write");
                if let Ok(outcome) = a
                    && !outcome.replayed
                {
                    for (i, (m, v)) in items.iter().enumerate() {
                        if !outcome.outcome.rejected.iter().any(|r| r.index == i) {
                            let slot = config.slot_start(now);
                            oracle.record(slot, MEMBERS[*m], *v, now.unix_millis());
                        }
                    }
                }
            }
            Op::Remove(m) => {
                let a = memory
                    .windowed(&name)
                    .remove_member(MEMBERS[*m])
                    .await
                    .unwrap();
                let b = on_redis
                    .windowed(&name)
                    .remove_member(MEMBERS[*m])
                    .await
                    .unwrap();
                prop_assert_eq!(a, b);
                oracle.remove(MEMBERS[*m]);
                for w in &windows {
                    let a = memory.windowed(&name).top(Some(*w), 0, 1000).await.unwrap();
                    prop_assert!(a.entries.iter().all(|e| e.member != MEMBERS[*m]));
                    let b = on_redis
                        .windowed(&name)
                        .top(Some(*w), 0, 1000)
                        .await
                        .unwrap();
                    prop_assert_eq!(&a, &b, "after removing {}", MEMBERS[*m]);
                }
            }
            // At most two windows added (a board has at most 8).
            Op::Extend(_) if windows.len() >= s.windows.len() + 2 => {}
            Op::Extend(k) => {
                let largest = windows.last().unwrap().seconds();
                windows.push(Span::from_seconds(largest * k).unwrap());
                let wider = BoardConfig::new(config.slot(), windows.clone())
                    .unwrap()
                    .with_ties(s.ties)
                    .with_aggregate(s.aggregate)
                    .with_layout(layout);
                for store in both {
                    let created = store.create(&name, wider.clone()).await.unwrap();
                    let extended = matches!(&created, Created::Extended(b) if b.windowed().unwrap().config == wider);
                    prop_assert!(extended, "{:?}", created);
                    store.windowed(&name).build_windows().await.unwrap();
                }
                oracle.extend(wider.clone());
                config = wider;
                let j = windows.len() - 1;
                let a = memory
                    .windowed(&name)
                    .top(Some(windows[j]), 0, 1000)
                    .await
                    .unwrap();
                let b = on_redis
                    .windowed(&name)
                    .top(Some(windows[j]), 0, 1000)
                    .await
                    .unwrap();
                prop_assert_eq!(&a, &b, "the added window");
            }
            Op::Recompute(j) => {
                let w = j.map(|j| windows[j]);
                let a = memory.windowed(&name).recompute(w).await.unwrap();
                let b = on_redis.windowed(&name).recompute(w).await.unwrap();
                prop_assert_eq!(
                    (&a.windows, a.fields_scanned),
                    (&b.windows, b.fields_scanned)
                );
                for (j, w) in windows.iter().enumerate() {
                    let a = memory.windowed(&name).top(Some(*w), 0, 1000).await.unwrap();
                    let b = on_redis
                        .windowed(&name)
                        .top(Some(*w), 0, 1000)
                        .await
                        .unwrap();
                    prop_assert_eq!(&a, &b, "after recompute, window {}", j);
                    if exact(a.from, j) {
                        let want = oracle.ranking(j, now);
                        let all = at_positions(&want, 0..want.len(), ties);
                        prop_assert_eq!(triples(&a.entries), all, "recomputed, window {}", j);
                    }
                }
            }
            Op::Retire => {
                let a = memory.windowed(&name).retire(None).await.unwrap();
                let b = on_redis.windowed(&name).retire(None).await.unwrap();
                COMPACTED.fetch_add(b.slots_compacted, Ordering::Relaxed);
                prop_assert_eq!(
                    (a.slots_retired, a.fields_subtracted, a.members_zeroed),
                    (b.slots_retired, b.fields_subtracted, b.members_zeroed)
                );
                for (j, w) in windows.iter().enumerate() {
                    let page = on_redis
                        .windowed(&name)
                        .top(Some(*w), 0, 1000)
                        .await
                        .unwrap();
                    prop_assert_eq!(
                        &page,
                        &memory.windowed(&name).top(Some(*w), 0, 1000).await.unwrap()
                    );
                    // A window added later holds the slots live when it was added: exact
                    // once its start has passed them.
                    if j >= s.windows.len() && !exact(page.from, j) {
                        continue;
                    }
                    prop_assert_eq!(
                        ranking(&page),
                        oracle.ranking(j, now),
                        "after retire, {}",
                        j
                    );
                }
            }
            Op::Read(j) => {
                let a = memory
                    .windowed(&name)
                    .top(Some(windows[*j]), 0, 1000)
                    .await
                    .unwrap();
                let b = on_redis
                    .windowed(&name)
                    .top(Some(windows[*j]), 0, 1000)
                    .await
                    .unwrap();
                prop_assert_eq!(&a, &b);
                if exact(a.from, *j) {
                    let want = oracle.ranking(*j, now);
                    let all = at_positions(&want, 0..want.len(), ties);
                    prop_assert_eq!(triples(&a.entries), all, "exact top, window {}", j);
                }
            }
            Op::Bottom(j, offset, limit) => {
                let w = Some(windows[*j]);
                let a = memory
                    .windowed(&name)
                    .bottom(w, *offset, *limit)
                    .await
                    .unwrap();
                let b = on_redis
                    .windowed(&name)
                    .bottom(w, *offset, *limit)
                    .await
                    .unwrap();
                prop_assert_eq!(&a, &b);
                if exact(a.from, *j) {
                    let want = oracle.ranking(*j, now);
                    let positions = (0..want.len())
                        .rev()
                        .skip(*offset as usize)
                        .take(*limit as usize);
                    prop_assert_eq!(
                        triples(&a.entries),
                        at_positions(&want, positions, ties),
                        "bottom"
                    );
                }
            }
            Op::Score(m, j) => {
                let w = Some(windows[*j]);
                let a = memory.windowed(&name).score(MEMBERS[*m], w).await.unwrap();
                let b = on_redis
                    .windowed(&name)
                    .score(MEMBERS[*m], w)
                    .await
                    .unwrap();
                prop_assert_eq!(&a, &b);
                if let Some(a) = a.filter(|a| exact(a.from, *j)) {
                    let want = oracle.ranking(*j, now);
                    let p = want.iter().position(|(r, _)| r == MEMBERS[*m]).unwrap();
                    prop_assert_eq!(
                        (a.score, a.rank),
                        (want[p].1, Some(rank_at(&want, p, ties)))
                    );
                    // Its percentile: the share of ranked members strictly worse.
                    let strictly_worse = want[p + 1..]
                        .iter()
                        .filter(|(_, v)| *v != want[p].1)
                        .count();
                    prop_assert_eq!(a.percentile, strictly_worse as f64 / want.len() as f64);
                }
            }
            Op::Ranks(j) => {
                let w = Some(windows[*j]);
                let asked = [&MEMBERS[..], &["zed"]].concat();
                let a = memory.windowed(&name).ranks(&asked, w).await.unwrap();
                let b = on_redis.windowed(&name).ranks(&asked, w).await.unwrap();
                prop_assert_eq!(&a, &b);
                if exact(a.from, *j) {
                    let want = oracle.ranking(*j, now);
                    let expected: Vec<(String, i64, Option<u64>)> = asked
                        .iter()
                        .map(|m| match want.iter().position(|(r, _)| r == m) {
                            Some(p) => (m.to_string(), want[p].1, Some(rank_at(&want, p, ties))),
                            None => (m.to_string(), 0, None),
                        })
                        .collect();
                    let got: Vec<(String, i64, Option<u64>)> = a
                        .entries
                        .iter()
                        .map(|e| (e.member.clone(), e.score, e.rank))
                        .collect();
                    prop_assert_eq!(got, expected, "exact ranks");
                }
            }
            Op::Around(m, j, k, fill, asc) => {
                let w = Some(windows[*j]);
                let order = if *asc { Order::Asc } else { Order::Desc };
                let options = AroundOptions { fill: *fill, order };
                let a = memory
                    .windowed(&name)
                    .around(MEMBERS[*m], w, *k, options)
                    .await
                    .unwrap();
                let b = on_redis
                    .windowed(&name)
                    .around(MEMBERS[*m], w, *k, options)
                    .await
                    .unwrap();
                prop_assert_eq!(&a, &b);
                if let Some(a) = a.filter(|a| exact(a.from, *j)) {
                    let want = oracle.ranking(*j, now);
                    let p = want.iter().position(|(r, _)| r == MEMBERS[*m]).unwrap();
                    let k = *k as usize;
                    let (start, end) = if *fill {
                        let size = (2 * k + 1).min(want.len());
                        let start = p.saturating_sub(k).min(want.len() - size);
                        (start, start + size)
                    } else {
                        (p.saturating_sub(k), (p + k + 1).min(want.len()))
                    };
                    let mut page = at_positions(&want, start..end, ties);
                    if *asc {
                        page.reverse();
                    }
                    prop_assert_eq!(triples(&a.entries), page, "exact around");
                }
            }
            Op::Range(j, min, span) => {
                let w = Some(windows[*j]);
                let range = rollboard::ScoreRange::new(Some(*min), Some(min + span)).unwrap();
                let a = memory
                    .windowed(&name)
                    .top_in_range(w, range, 0, 1000)
                    .await
                    .unwrap();
                let b = on_redis
                    .windowed(&name)
                    .top_in_range(w, range, 0, 1000)
                    .await
                    .unwrap();
                prop_assert_eq!(&a, &b);
                if exact(a.from, *j) {
                    let want = oracle.ranking(*j, now);
                    let inside =
                        (0..want.len()).filter(|p| (*min..=min + span).contains(&want[*p].1));
                    prop_assert_eq!(
                        triples(&a.entries),
                        at_positions(&want, inside, ties),
                        "range"
                    );
                }
            }
            Op::History(m) => {
                let a = memory.windowed(&name).history(MEMBERS[*m]).await.unwrap();
                let b = on_redis.windowed(&name).history(MEMBERS[*m]).await.unwrap();
                prop_assert_eq!(&a, &b);
            }
        }
    }

    let now = clock.now();
    for rb in both {
        rb.windowed(&name).retire(None).await.unwrap();
    }
    // Whether the largest window covers its whole span (a window added later does once
    // its start has passed the slots live when it was added), as history does.
    let mut covered = true;
    for (j, w) in windows.iter().enumerate() {
        let a = memory.windowed(&name).top(Some(*w), 0, 1000).await.unwrap();
        let b = on_redis
            .windowed(&name)
            .top(Some(*w), 0, 1000)
            .await
            .unwrap();
        prop_assert_eq!(&a, &b);
        if j >= s.windows.len() && a.from != config.window_start(j, now) {
            covered = false;
            continue;
        }
        prop_assert_eq!(a.from, config.window_start(j, now));
        let want = oracle.ranking(j, now);
        prop_assert_eq!(
            triples(&a.entries),
            at_positions(&want, 0..want.len(), ties),
            "final {}",
            j
        );
    }
    for m in MEMBERS {
        let history = on_redis.windowed(&name).history(m).await.unwrap();
        prop_assert_eq!(&history, &memory.windowed(&name).history(m).await.unwrap());
        let points: Vec<(i64, i64)> = history.points.iter().map(|p| (p.slot, p.value)).collect();
        if covered {
            prop_assert_eq!(points, oracle.history(m, now), "history of {}", m);
        }
    }
    if let Some(redis) = redis {
        check_peaks(redis, &name, s.aggregate).await?;
        check_tallies(&mut redis.raw().await, &name, s.ties == Ties::Dense).await;
    }
    on_redis.drop_board(&name).await.unwrap();
    Ok(())
}

/// Redis's records per member: on a max (min) board its peak list, the pairs (slot,
/// value) of the live slots' hashes that no newer slot matches (values stored negated on
/// a min board); on a latest board its newest event, `<slot>:<at>:<value>`, the newest
/// of the live slots' `<at>:<value>`.
pub async fn check_peaks(
    redis: &TestRedis,
    name: &str,
    aggregate: Aggregate,
) -> Result<(), TestCaseError> {
    let mut raw = redis.raw().await;
    let slots: Vec<i64> = redis::cmd("ZRANGE")
        .arg(format!("slots_{{{name}}}"))
        .arg(0)
        .arg(-1)
        .query_async(&mut raw)
        .await
        .unwrap();
    let mut held: HashMap<String, Vec<(i64, String)>> = HashMap::new();
    for slot in &slots {
        // The slot's plain hash and, once converted, its buckets: a member's value is the
        // better of the two forms (both only while a conversion runs).
        let plain = format!("slot_{{{name}}}_{slot}");
        let mut forms: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{plain}:*"))
            .query_async(&mut raw)
            .await
            .unwrap();
        forms.push(plain);
        let mut best: HashMap<String, String> = HashMap::new();
        for form in forms {
            let values: HashMap<String, String> = redis::cmd("HGETALL")
                .arg(form)
                .query_async(&mut raw)
                .await
                .unwrap();
            for (member, value) in values {
                let order = |v: &str| -> (i64, i64) {
                    match v.split_once(':') {
                        Some((at, value)) => (at.parse().unwrap(), value.parse().unwrap()),
                        None => (v.parse().unwrap(), 0),
                    }
                };
                let better = best.get(&member).is_none_or(|b| order(&value) > order(b));
                if better {
                    best.insert(member, value);
                }
            }
        }
        for (member, value) in best {
            held.entry(member).or_default().push((*slot, value));
        }
    }
    let key = match aggregate {
        Aggregate::Latest => format!("newest_{{{name}}}"),
        _ => format!("peaks_{{{name}}}"),
    };
    let records: HashMap<String, String> = redis::cmd("HGETALL")
        .arg(key)
        .query_async(&mut raw)
        .await
        .unwrap();
    prop_assert_eq!(
        records.len(),
        held.len(),
        "one record per member of a live slot"
    );
    for (member, pairs) in held {
        let want = if aggregate == Aggregate::Latest {
            let newest = pairs
                .iter()
                .map(|(slot, held)| {
                    let (at, value) = held.split_once(':').unwrap();
                    (
                        (at.parse::<i64>().unwrap(), value.parse::<i64>().unwrap()),
                        *slot,
                    )
                })
                .max()
                .unwrap();
            let ((at, value), slot) = newest;
            format!("{slot}:{at}:{value}")
        } else {
            let mut pairs: Vec<(i64, i64)> = pairs
                .iter()
                .map(|(s, v)| (*s, v.parse().unwrap()))
                .collect();
            pairs.sort();
            let mut kept: Vec<(i64, i64)> = Vec::new();
            for (slot, value) in pairs.into_iter().rev() {
                if kept.last().is_none_or(|(_, v)| value > *v) {
                    kept.push((slot, value));
                }
            }
            kept.reverse();
            let list: Vec<String> = kept.iter().map(|(s, v)| format!("{s}:{v}")).collect();
            list.join(",")
        };
        prop_assert_eq!(
            records.get(&member),
            Some(&want),
            "record of {} ({:?})",
            member,
            aggregate
        );
    }
    Ok(())
}

/// A runner of `PROPTEST_CASES` cases (`default` without it), at most `most`.
fn runner(default: u32, most: u32) -> TestRunner {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse::<u32>().ok())
        .map_or(default, |c| c.min(most));
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

#[test]
fn max_and_min_boards_match_on_both_stores_and_the_oracle() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let redis = rt.block_on(TestRedis::start());
    let store = rt.block_on(redis.store());
    let result = runner(200, u32::MAX).run(&scenario(), |s| {
        rt.block_on(run(Some(&redis), store.clone(), Some(Layout::Plain), s))
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The same scenarios on the Redis Cluster this binary shares. Fewer cases: the
/// single-node run covers the logic, this one the cluster client under it.
#[test]
fn max_and_min_boards_on_a_cluster_match_the_memory_store_and_the_oracle() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let cluster = crate::test_cluster::TestCluster::shared();
    let store = Arc::new(
        rt.block_on(RedisStore::connect_cluster(&cluster.urls))
            .unwrap(),
    );
    let result = runner(40, 40).run(&scenario(), |s| {
        rt.block_on(run(None, store.clone(), None, s))
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The same scenarios on compact boards of a Redis whose hashes stay listpacks up to 2
/// fields (buckets of 1): a closed slot of 2 members or more is converted into buckets
/// by the retirer, and every read, write, removal and recompute meets both forms.
#[test]
fn max_and_min_boards_on_compact_slots_match_the_memory_store_and_the_oracle() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    // A server of its own: the listpack limit is server-wide.
    let redis = rt.block_on(TestRedis::spawn());
    rt.block_on(redis.config_set("hash-max-listpack-entries", "2"));
    let store = rt.block_on(redis.store());
    let before = COMPACTED.load(Ordering::Relaxed);
    let result = runner(200, u32::MAX).run(&scenario(), |s| {
        rt.block_on(run(Some(&redis), store.clone(), Some(Layout::Compact), s))
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let converted = COMPACTED.load(Ordering::Relaxed) - before;
    assert!(converted > 0, "no slot was converted into buckets");
    println!("{converted} slots converted into buckets");
}
