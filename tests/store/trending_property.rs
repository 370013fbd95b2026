//! Property test of trending boards: random writes (late, too old, negative), clock
//! advances, maintenance passes (rescales forced often, in chunks of two) and reads, on
//! the memory store and a real Redis, both checked against the brute-force oracle
//! (Σ delta · 2^(−(now − at)/half_life)) within 1e-9 of the magnitude of the terms.

use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rollboard::{Clock, Event, MemoryStore, Span, Timestamp, TrendOptions, TrendingConfig};

use crate::support::{clock, unique, with_clock};
use crate::test_redis::TestRedis;
use crate::trending::{Oracle, check_page, close};

const MEMBERS: [&str; 5] = ["a", "b", "c", "d", "e"];

#[derive(Debug, Clone)]
enum Op {
    /// Member, delta, seconds from now (negative: late).
    Write(usize, i64, i64),
    Advance(u64),
    /// A maintenance pass: rescale after this many half-lives, at most this many steps.
    Maintain(u32, usize),
    Read,
}

fn scenario() -> impl Strategy<Value = (u64, Vec<Op>)> {
    prop_oneof![Just(60u64), Just(3600u64)].prop_flat_map(|hl| {
        let h = hl as i64;
        let op = prop_oneof![
            4 => (0..MEMBERS.len(), (-50i64..50).prop_filter("non-zero", |d| *d != 0), -11 * h..60)
                .prop_map(|(m, d, o)| Op::Write(m, d, o)),
            2 => (1..4 * hl).prop_map(Op::Advance),
            1 => (1u32..3, 1usize..4).prop_map(|(r, s)| Op::Maintain(r, s)),
            1 => Just(Op::Read),
        ];
        (Just(hl), proptest::collection::vec(op, 1..40))
    })
}

async fn run(redis: &TestRedis, (hl, ops): (u64, Vec<Op>)) -> Result<(), TestCaseError> {
    let clock = clock();
    let memory = with_clock(Arc::new(MemoryStore::new()), &clock);
    let on_redis = with_clock(redis.store().await, &clock);
    let config = TrendingConfig::new(Span::from_seconds(hl).unwrap())
        .unwrap()
        .with_floor(0.0)
        .unwrap();
    let name = unique("tp");
    memory.create(&name, config).await.unwrap();
    on_redis.create(&name, config).await.unwrap();
    let h = hl as i64;
    let mut oracle = Oracle::default();
    for op in &ops {
        let now = clock.now();
        let now_ms = now.unix_millis();
        match op {
            Op::Write(m, d, offset) => {
                let at = Timestamp::from_unix_millis(now_ms + offset * 1000).unwrap();
                let events = [Event::new(MEMBERS[*m], *d).at(at)];
                let a = memory.trending(&name).incr_batch(&events).await.unwrap();
                let b = on_redis.trending(&name).incr_batch(&events).await.unwrap();
                prop_assert_eq!(&a, &b);
                if a.accepted == 1 {
                    oracle.add(MEMBERS[*m], *d, at.unix_millis());
                }
            }
            Op::Advance(s) => clock.advance_secs(*s as i64),
            Op::Maintain(after, steps) => {
                let options = TrendOptions {
                    rescale_after: *after,
                    chunk: 2,
                    max_steps: *steps,
                };
                memory.trending(&name).maintain(options).await.unwrap();
                on_redis.trending(&name).maintain(options).await.unwrap();
            }
            Op::Read => {
                for boards in [&memory, &on_redis] {
                    let page = boards.trending(&name).top(0, 100).await.unwrap();
                    check_page(&page, &oracle, now_ms, h, 0);
                    prop_assert_eq!(page.entries.len(), oracle.ranking(now_ms, h).len());
                    let ranks = boards.trending(&name).ranks(&MEMBERS).await.unwrap();
                    for r in &ranks.entries {
                        let want = oracle.score(&r.member, now_ms, h);
                        match r.rank {
                            Some(_) => close(r.score, want, &r.member),
                            None => prop_assert!(want.0 <= 1e-9 * want.1, "{} unranked", r.member),
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

#[test]
fn both_stores_match_the_trending_oracle() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let redis = rt.block_on(TestRedis::start());
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(100);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&scenario(), |s| rt.block_on(run(&redis, s)));
    if let Err(e) = result {
        panic!("{e}");
    }
}
