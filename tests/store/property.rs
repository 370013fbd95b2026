//! Property test: random sequences of writes (single and batched, positive and negative
//! deltas, late and future times), clock advances, retirements, removals and reads run
//! on the memory store and on Redis in lockstep. Every answer of the two stores must be
//! identical, every read that claims to cover exactly its window must equal the
//! brute-force oracle (also on boards past the range bound, where Redis checks each
//! batch against the stored values; boards rank ties by competition, dense or position,
//! and rank positive totals or every non-zero one;
//! pages are read from the top and the bottom, around a member with and without fill), and after a final retirement every window must equal the oracle
//! and Redis must satisfy the data model's invariants. Boards of one shard and of 3
//! (`"shards": 3`, every shard checked) alike. The same runs on a Redis Cluster.

use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rollboard::{AroundOptions, BoardConfig, Clock, Event, MemoryStore, Order, RedisStore};
use rollboard::{RankedTotals, Span, Ties, Timestamp};

use crate::oracle::{Oracle, check_redis_invariants};
use crate::support::{TestRedis, clock, ranking, unique, with_clock};

const MEMBERS: [&str; 6] = ["ann", "bob", "cy", "dee", "eve", "fay"];

#[derive(Debug, Clone)]
enum Op {
    /// Event for member `m` with `delta`, at `now + offset` seconds.
    Write {
        m: usize,
        delta: i64,
        offset: i64,
    },
    Batch(Vec<(usize, i64, i64)>),
    Advance(i64),
    Retire,
    Read {
        window: usize,
    },
    Score {
        m: usize,
        window: usize,
    },
    Around {
        m: usize,
        window: usize,
        n: u64,
        fill: bool,
        asc: bool,
    },
    /// A page from the bottom of the ranking.
    Bottom {
        window: usize,
        offset: u64,
        limit: u64,
    },
    Remove {
        m: usize,
    },
    /// Every member and one never written, in one ranks read.
    Ranks {
        window: usize,
    },
    /// A page of the totals in `min..=min + span`.
    Range {
        window: usize,
        min: i64,
        span: i64,
        offset: u64,
    },
}

/// The oracle's rank of member `m`, whose total is `s`: 1 + the members (competition) or
/// the distinct totals (dense) strictly higher, or its 1-based place (position).
fn oracle_rank(ranking: &[(String, i64)], m: &str, s: i64, ties: Ties) -> u64 {
    if ties == Ties::Position {
        return ranking.iter().position(|(r, _)| r == m).unwrap() as u64 + 1;
    }
    let mut higher: Vec<i64> = ranking.iter().map(|(_, o)| *o).filter(|o| *o > s).collect();
    if ties == Ties::Dense {
        higher.dedup();
    }
    higher.len() as u64 + 1
}

/// The oracle's answer to a ranks read of `members`: `(member, score, rank)`, the
/// total whatever its sign (`totals`: every non-zero one), ranked when in the ranking.
fn oracle_ranks(
    ranking: &[(String, i64)],
    totals: &std::collections::BTreeMap<String, i64>,
    members: &[&str],
    ties: Ties,
) -> Vec<(String, i64, Option<u64>)> {
    members
        .iter()
        .map(|m| match ranking.iter().find(|(r, _)| r == m) {
            Some((_, s)) => (m.to_string(), *s, Some(oracle_rank(ranking, m, *s, ties))),
            None => (m.to_string(), totals.get(*m).copied().unwrap_or(0), None),
        })
        .collect()
}

/// The oracle's page of the totals in `min..=max` from `offset`: `(rank, member, score)`.
fn oracle_range(
    ranking: &[(String, i64)],
    min: i64,
    max: i64,
    offset: u64,
    ties: Ties,
) -> Vec<(u64, String, i64)> {
    ranking
        .iter()
        .filter(|(_, s)| (min..=max).contains(s))
        .skip(offset as usize)
        .map(|(m, s)| (oracle_rank(ranking, m, *s, ties), m.clone(), *s))
        .collect()
}

/// The oracle's entries at `positions` of the ranking: `(rank, member, score)`.
fn oracle_at(
    ranking: &[(String, i64)],
    positions: impl Iterator<Item = usize>,
    ties: Ties,
) -> Vec<(u64, String, i64)> {
    positions
        .map(|p| {
            let (m, s) = &ranking[p];
            (oracle_rank(ranking, m, *s, ties), m.clone(), *s)
        })
        .collect()
}

/// The oracle's page around `m` (`None` when it is not ranked), `n` on each side or,
/// with `fill`, `2n + 1` shifted at the ends; lowest first when `asc`.
fn oracle_around(
    ranking: &[(String, i64)],
    m: &str,
    n: usize,
    fill: bool,
    asc: bool,
    ties: Ties,
) -> Option<Vec<(u64, String, i64)>> {
    let p = ranking.iter().position(|(r, _)| r == m)?;
    let (start, end) = if fill {
        let size = (2 * n + 1).min(ranking.len());
        let start = p.saturating_sub(n).min(ranking.len() - size);
        (start, start + size)
    } else {
        (p.saturating_sub(n), (p + n + 1).min(ranking.len()))
    };
    let mut page = oracle_at(ranking, start..end, ties);
    if asc {
        page.reverse();
    }
    Some(page)
}

/// `(rank, member, score)` of a page.
fn triples(page: &rollboard::TopPage) -> Vec<(u64, String, i64)> {
    page.entries
        .iter()
        .map(|e| (e.rank, e.member.clone(), e.score))
        .collect()
}

#[derive(Debug, Clone)]
struct Scenario {
    slot: u64,
    windows: Vec<u64>,
    /// Starts with one ±2^53 event and its negation, so Redis checks every later batch
    /// against the stored values (the bulk path of `write.lua`).
    past_bound: bool,
    /// How the board ranks ties.
    ties: Ties,
    /// Which totals the board ranks (every non-zero one: never with dense ties).
    rank: RankedTotals,
    /// Shards the board's members are spread over (1 with dense ties, which a sharded
    /// board does not take).
    shards: u32,
    ops: Vec<Op>,
}

fn delta() -> impl Strategy<Value = i64> + Clone {
    prop_oneof![1i64..=5, -3i64..=-1]
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
        let offset = -(largest + 2 * slot as i64)..=(60 + slot as i64);
        let write = (0..MEMBERS.len(), delta(), offset.clone());
        let op = prop_oneof![
            6 => write.clone().prop_map(|(m, delta, offset)| Op::Write { m, delta, offset }),
            2 => proptest::collection::vec(write, 1..6).prop_map(Op::Batch),
            3 => prop_oneof![0..=(2 * slot as i64), Just(largest), Just(3 * largest)].prop_map(Op::Advance),
            2 => Just(Op::Retire),
            2 => (0..n).prop_map(|window| Op::Read { window }),
            1 => (0..MEMBERS.len(), 0..n).prop_map(|(m, window)| Op::Score { m, window }),
            2 => (0..MEMBERS.len(), 0..n, 0u64..3, any::<bool>(), any::<bool>())
                .prop_map(|(m, window, n, fill, asc)| Op::Around { m, window, n, fill, asc }),
            1 => (0..n, 0u64..4, 1u64..4)
                .prop_map(|(window, offset, limit)| Op::Bottom { window, offset, limit }),
            1 => (0..MEMBERS.len()).prop_map(|m| Op::Remove { m }),
            1 => (0..n).prop_map(|window| Op::Ranks { window }),
            1 => (0..n, -2i64..=8, 0i64..=5, 0u64..3)
                .prop_map(|(window, min, span, offset)| Op::Range { window, min, span, offset }),
        ];
        let ranking = prop_oneof![
            Just((Ties::Competition, RankedTotals::Positive)),
            Just((Ties::Dense, RankedTotals::Positive)),
            Just((Ties::Position, RankedTotals::Positive)),
            Just((Ties::Competition, RankedTotals::Nonzero)),
            Just((Ties::Position, RankedTotals::Nonzero)),
        ];
        let shards = prop_oneof![Just(1u32), Just(3u32)];
        (proptest::collection::vec(op, 1..60), any::<bool>(), ranking, shards).prop_map(
            move |(ops, past_bound, (ties, rank), shards)| Scenario {
                slot,
                windows: windows.clone(),
                past_bound,
                ties,
                rank,
                shards: if ties == Ties::Dense { 1 } else { shards },
                ops,
            },
        )
    })
}

fn event(clock_now: Timestamp, (m, delta, offset): (usize, i64, i64)) -> Event {
    let at = Timestamp::from_unix_millis(clock_now.unix_millis() + offset * 1000).unwrap();
    Event::new(MEMBERS[m], delta).at(at)
}

/// One scenario on the memory store and `store`; `redis` (a single node) also has its
/// keys checked against the data model's invariants.
async fn run(
    redis: Option<&TestRedis>,
    store: Arc<RedisStore>,
    s: Scenario,
) -> Result<(), TestCaseError> {
    let ties = s.ties;
    let clock = clock();
    let memory = with_clock(Arc::new(MemoryStore::new()), &clock);
    let on_redis = with_clock(store, &clock);
    let windows: Vec<Span> = s
        .windows
        .iter()
        .map(|w| Span::from_seconds(*w).unwrap())
        .collect();
    let config = BoardConfig::new(Span::from_seconds(s.slot).unwrap(), windows.clone())
        .unwrap()
        .with_ties(s.ties)
        .with_rank(s.rank)
        .unwrap()
        .with_shards(s.shards)
        .unwrap();
    let name = unique("p");
    memory.create(&name, config.clone()).await.unwrap();
    on_redis.create(&name, config.clone()).await.unwrap();
    let mut oracle = Oracle::new(config.clone());
    let both = [&memory, &on_redis];
    if s.past_bound {
        for delta in [rollboard::MAX_ABS, -rollboard::MAX_ABS] {
            for rb in both {
                rb.windowed(&name).incr("huge", delta, None).await.unwrap();
            }
            oracle.record(config.slot_start(clock.now()), "huge", delta);
        }
    }

    for op in &s.ops {
        let now = clock.now();
        match op {
            Op::Write { .. } | Op::Batch(_) => {
                let events: Vec<Event> = match op {
                    Op::Write { m, delta, offset } => vec![event(now, (*m, *delta, *offset))],
                    Op::Batch(items) => items.iter().map(|i| event(now, *i)).collect(),
                    _ => unreachable!(),
                };
                let a = memory.windowed(&name).incr_batch(&events).await.unwrap();
                let b = on_redis.windowed(&name).incr_batch(&events).await.unwrap();
                prop_assert_eq!(&a, &b);
                for (i, e) in events.iter().enumerate() {
                    if !a.rejected.iter().any(|r| r.index == i) {
                        oracle.record(config.slot_start(e.at.unwrap()), &e.member, e.delta);
                    }
                }
            }
            Op::Advance(seconds) => clock.advance_secs(*seconds),
            Op::Retire => {
                let a = memory.windowed(&name).retire(None).await.unwrap();
                let b = on_redis.windowed(&name).retire(None).await.unwrap();
                prop_assert_eq!(
                    (a.slots_retired, a.fields_subtracted, a.members_zeroed),
                    (b.slots_retired, b.fields_subtracted, b.members_zeroed)
                );
                for (j, w) in windows.iter().enumerate() {
                    let page = memory.windowed(&name).top(Some(*w), 0, 1000).await.unwrap();
                    prop_assert_eq!(
                        ranking(&page),
                        oracle.ranking(j, now),
                        "after retire, window {}",
                        j
                    );
                }
            }
            Op::Read { window } => {
                let a = memory
                    .windowed(&name)
                    .top(Some(windows[*window]), 0, 1000)
                    .await
                    .unwrap();
                let b = on_redis
                    .windowed(&name)
                    .top(Some(windows[*window]), 0, 1000)
                    .await
                    .unwrap();
                prop_assert_eq!(&a, &b);
                if a.from == config.window_start(*window, now) {
                    prop_assert_eq!(
                        ranking(&a),
                        oracle.ranking(*window, now),
                        "exact read, window {}",
                        window
                    );
                }
            }
            Op::Score { m, window } => {
                let w = Some(windows[*window]);
                let a = memory.windowed(&name).score(MEMBERS[*m], w).await.unwrap();
                let b = on_redis
                    .windowed(&name)
                    .score(MEMBERS[*m], w)
                    .await
                    .unwrap();
                prop_assert_eq!(a, b);
            }
            Op::Around {
                m,
                window,
                n,
                fill,
                asc,
            } => {
                let w = Some(windows[*window]);
                let order = if *asc { Order::Asc } else { Order::Desc };
                let options = AroundOptions { fill: *fill, order };
                let a = memory
                    .windowed(&name)
                    .around(MEMBERS[*m], w, *n, options)
                    .await
                    .unwrap();
                let b = on_redis
                    .windowed(&name)
                    .around(MEMBERS[*m], w, *n, options)
                    .await
                    .unwrap();
                prop_assert_eq!(&a, &b);
                if a.as_ref()
                    .is_some_and(|a| a.from == config.window_start(*window, now))
                {
                    let ranking = oracle.ranking(*window, now);
                    let expected =
                        oracle_around(&ranking, MEMBERS[*m], *n as usize, *fill, *asc, ties);
                    prop_assert_eq!(a.as_ref().map(triples), expected, "exact around");
                }
            }
            Op::Bottom {
                window,
                offset,
                limit,
            } => {
                let w = Some(windows[*window]);
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
                if a.from == config.window_start(*window, now) {
                    let ranking = oracle.ranking(*window, now);
                    let positions = (0..ranking.len())
                        .rev()
                        .skip(*offset as usize)
                        .take(*limit as usize);
                    let expected = oracle_at(&ranking, positions, ties);
                    prop_assert_eq!(triples(&a), expected, "exact bottom, window {}", window);
                }
            }
            Op::Ranks { window } => {
                let w = Some(windows[*window]);
                let asked = [&MEMBERS[..], &["zed"]].concat();
                let a = memory.windowed(&name).ranks(&asked, w).await.unwrap();
                let b = on_redis.windowed(&name).ranks(&asked, w).await.unwrap();
                prop_assert_eq!(&a, &b);
                if a.from == config.window_start(*window, now) {
                    let got: Vec<(String, i64, Option<u64>)> = a
                        .entries
                        .iter()
                        .map(|e| (e.member.clone(), e.score, e.rank))
                        .collect();
                    let expected = oracle_ranks(
                        &oracle.ranking(*window, now),
                        &oracle.totals(*window, now),
                        &asked,
                        s.ties,
                    );
                    prop_assert_eq!(got, expected, "exact ranks, window {}", window);
                }
            }
            Op::Range {
                window,
                min,
                span,
                offset,
            } => {
                let w = Some(windows[*window]);
                let range = rollboard::ScoreRange::new(Some(*min), Some(min + span)).unwrap();
                let a = memory
                    .windowed(&name)
                    .top_in_range(w, range, *offset, 1000)
                    .await
                    .unwrap();
                let b = on_redis
                    .windowed(&name)
                    .top_in_range(w, range, *offset, 1000)
                    .await
                    .unwrap();
                prop_assert_eq!(&a, &b);
                if a.from == config.window_start(*window, now) {
                    let got: Vec<(u64, String, i64)> = a
                        .entries
                        .iter()
                        .map(|e| (e.rank, e.member.clone(), e.score))
                        .collect();
                    let ranking = oracle.ranking(*window, now);
                    let expected = oracle_range(&ranking, *min, min + span, *offset, s.ties);
                    prop_assert_eq!(got, expected, "exact range, window {}", window);
                }
            }
            Op::Remove { m } => {
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
            }
        }
    }

    let now = clock.now();
    for rb in both {
        rb.windowed(&name).retire(None).await.unwrap();
    }
    for (j, w) in windows.iter().enumerate() {
        let a = memory.windowed(&name).top(Some(*w), 0, 1000).await.unwrap();
        let b = on_redis
            .windowed(&name)
            .top(Some(*w), 0, 1000)
            .await
            .unwrap();
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(a.from, config.window_start(j, now));
        let expected = oracle.ranking(j, now);
        prop_assert_eq!(ranking(&a), expected.clone(), "final, window {}", j);
        let ranks: Vec<u64> = a.entries.iter().map(|e| e.rank).collect();
        let want: Vec<u64> = expected
            .iter()
            .map(|(m, s)| oracle_rank(&expected, m, *s, ties))
            .collect();
        prop_assert_eq!(ranks, want, "final ranks, window {}", j);
        // Percentiles: the share of ranked members strictly below, on both stores.
        for (m, s) in &expected {
            let below = expected.iter().filter(|(_, o)| o < s).count() as f64;
            let want = below / expected.len() as f64;
            for rb in both {
                let standing = rb
                    .windowed(&name)
                    .score(m, Some(*w))
                    .await
                    .unwrap()
                    .unwrap();
                prop_assert_eq!(
                    standing.percentile,
                    want,
                    "percentile of {} in window {}",
                    m,
                    j
                );
            }
        }
        for m in MEMBERS {
            let history = memory.windowed(&name).history(m).await.unwrap();
            prop_assert_eq!(
                &history,
                &on_redis.windowed(&name).history(m).await.unwrap()
            );
        }
    }
    if let Some(redis) = redis {
        let mut raw = redis.raw().await;
        check_redis_invariants(&mut raw, &name, &config, Some(now)).await;
        // A sharded board's other shards: boards of one shard named `<board>#…`.
        let records: Vec<String> = redis::cmd("KEYS")
            .arg(format!("board_{{{name}#*}}"))
            .query_async(&mut raw)
            .await
            .unwrap();
        prop_assert_eq!(records.len() as u32, s.shards - 1);
        let shard = config.clone().with_shards(1).unwrap();
        for record in records {
            let shard_name = &record["board_{".len()..record.len() - 1];
            check_redis_invariants(&mut raw, shard_name, &shard, Some(now)).await;
        }
    }
    on_redis.drop_board(&name).await.unwrap();
    Ok(())
}

#[test]
fn both_stores_match_each_other_and_the_oracle() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let redis = rt.block_on(TestRedis::start());
    let store = rt.block_on(redis.store());
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(200);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&scenario(), |s| {
        rt.block_on(run(Some(&redis), store.clone(), s))
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The same scenarios on compact slots (boards that name no layout get compact), with
/// listpacks of at most 2 entries (a bucket fill of 1), so that a slot of a few members
/// splits into several buckets and late events merge into handed-on ones.
#[test]
fn compact_slots_match_the_memory_store_and_the_oracle() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let redis = rt.block_on(TestRedis::spawn());
    rt.block_on(redis.config_set("hash-max-listpack-entries", "2"));
    let options = rollboard::RedisOptions {
        default_layout: rollboard::Layout::Compact,
        ..rollboard::RedisOptions::default()
    };
    let store = rt.block_on(redis.store_with(options));
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse::<u32>().ok())
        .map_or(100, |c| c.min(100));
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&scenario(), |s| {
        rt.block_on(run(Some(&redis), store.clone(), s))
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The same scenarios on a Redis Cluster (three masters; each case's board lands on
/// whichever master owns its name's hash slot). Fewer cases: the single-node run above
/// covers the logic, this one the cluster client under it.
#[test]
fn a_cluster_matches_the_memory_store_and_the_oracle() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let cluster = crate::test_cluster::TestCluster::shared();
    let store = Arc::new(
        rt.block_on(RedisStore::connect_cluster(&cluster.urls))
            .unwrap(),
    );
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse::<u32>().ok())
        .map_or(40, |c| c.min(40));
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&scenario(), |s| rt.block_on(run(None, store.clone(), s)));
    if let Err(e) = result {
        panic!("{e}");
    }
}
