//! Property test of rate windows: random hits (late, future, out of order), clock moves
//! forwards (by a little, or by more than a whole cycle) and backwards, reads and checks
//! run on the memory store and on Redis in lockstep, against a brute-force oracle that
//! keeps every hit and recounts from the definition (no ring, no clearing). Hits come
//! one at a time and in batches mixing two keys (the batch path: both keys in one script
//! call on Redis), far from now or near it (where the script's one-BITFIELD path and its
//! fix-up of moved heads run). Reads and checks count with partial and with full
//! coverage. Twice: with tiers whose slot lengths are multiples of the finest one's (the
//! script then reads the finest head only and derives the others) and with tiers whose
//! are not (it reads every head).

use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rollboard::{
    Clock, Coverage, ManualClock, MemoryStore, RateTiers, Rollboard, Settings, Span, Timestamp,
};

use crate::support::{START, TestRedis, unique};

/// The tiers of a run, the windows read and checked with partial coverage, and those
/// the tiers answer with full coverage (one slot more).
struct Shape {
    tiers: &'static str,
    windows: &'static [&'static str],
    full_windows: &'static [&'static str],
}

/// Nested tiers: each slot length a multiple of the finest's. With full coverage `5s`
/// goes to the 5 s tier and `1m` to the minute tier.
const NESTED: Shape = Shape {
    tiers: "5x1s,4x5s,3x1m",
    windows: &[
        "1s", "2s", "4s", "5s", "10s", "15s", "20s", "1m", "2m", "3m",
    ],
    full_windows: &["1s", "2s", "4s", "5s", "10s", "15s", "1m", "2m"],
};

/// Tiers whose slot lengths are not multiples of the finest's (2 s, 3 s, 7 s): a head
/// cannot be told from another.
const UNNESTED: Shape = Shape {
    tiers: "5x2s,4x3s,3x7s",
    windows: &[
        "2s", "4s", "6s", "10s", "3s", "9s", "12s", "7s", "14s", "21s",
    ],
    full_windows: &["2s", "4s", "6s", "8s", "3s", "9s", "7s", "14s"],
};

#[derive(Debug, Clone)]
enum Op {
    /// A hit of `count` at now + `offset_ms`.
    Hit {
        count: u32,
        offset_ms: i64,
    },
    /// Moves the clock by `ms` (negative: backwards).
    Move(i64),
    /// Hits in one batch: per hit, the key (0 or 1), its count and its offset.
    Batch(Vec<(usize, u32, i64)>),
    Read,
    Check {
        window: usize,
        limit: u64,
        count: u32,
        full: bool,
    },
}

/// Ops on a run of `shape`.
fn op(shape: &Shape) -> impl Strategy<Value = Op> {
    let (windows, full_windows) = (shape.windows.len(), shape.full_windows.len());
    prop_oneof![
        5 => (1u32..4, -200_000i64..15_000).prop_map(|(count, offset_ms)| Op::Hit { count, offset_ms }),
        3 => (-30_000i64..40_000).prop_map(Op::Move),
        3 => proptest::collection::vec((0usize..2, 1u32..4, -200_000i64..15_000), 1..12).prop_map(Op::Batch),
        // Near now, after small moves: heads that stay or move a few slots (the script's
        // one-BITFIELD path and its fix-up).
        3 => proptest::collection::vec((0usize..2, 1u32..4, -6_000i64..3_000), 1..12).prop_map(Op::Batch),
        2 => (-2_000i64..3_000).prop_map(Op::Move),
        1 => (100_000i64..400_000).prop_map(Op::Move),
        2 => Just(Op::Read),
        2 => (0..windows, 0u64..8, 1u32..3).prop_map(|(window, limit, count)| Op::Check { window, limit, count, full: false }),
        2 => (0..full_windows, 0u64..8, 1u32..3).prop_map(|(window, limit, count)| Op::Check { window, limit, count, full: true }),
    ]
}

/// Every hit counted, with the tiers that counted it; the definition, recomputed.
struct Oracle {
    tiers: RateTiers,
    /// (at ms, count, counted per tier)
    hits: Vec<(i64, u64, Vec<bool>)>,
    /// Per tier, the newest slot any counted hit moved the tier to.
    heads: Vec<Option<i64>>,
}

impl Oracle {
    fn hit(&mut self, now: i64, at: i64, count: u64) -> usize {
        let plan: Vec<(bool, i64)> = self
            .tiers
            .tiers()
            .iter()
            .zip(&self.heads)
            .map(|(t, head)| {
                let g = t.slot.secs_i64() * 1000;
                let (n, s) = (now.div_euclid(g), at.div_euclid(g));
                let reach = head.map_or(n, |h| h.max(n));
                (s > reach - i64::from(t.slots), reach.max(s))
            })
            .collect();
        let counted = plan.iter().filter(|p| p.0).count();
        if counted > 0 {
            for (head, (_, target)) in self.heads.iter_mut().zip(&plan) {
                *head = Some(head.map_or(*target, |h| h.max(*target)));
            }
            self.hits
                .push((at, count, plan.iter().map(|p| p.0).collect()));
        }
        counted
    }

    fn count(&self, window: &str, now: i64, coverage: Coverage) -> u64 {
        let w = self.tiers.parse_window_with(window, coverage).unwrap();
        let t = self.tiers.tiers()[w.tier];
        let g = t.slot.secs_i64() * 1000;
        let Some(head) = self.heads[w.tier] else {
            return 0;
        };
        let n = now.div_euclid(g);
        self.hits
            .iter()
            .filter(|(at, _, counted)| {
                let s = at.div_euclid(g);
                counted[w.tier]
                    && s > n - i64::from(w.slots)
                    && s <= n
                    && s > head - i64::from(t.slots)
            })
            .map(|(_, c, _)| c)
            .sum()
    }
}

struct Side {
    boards: Rollboard,
    clock: ManualClock,
}

fn side(store: Arc<dyn rollboard::Store>, tiers: &str) -> Side {
    let clock = ManualClock::new(Timestamp::from_unix_seconds(START).unwrap());
    let settings = Settings {
        rate_tiers: RateTiers::parse(tiers).unwrap(),
        max_future_skew: Span::parse("15s").unwrap(),
        ..Settings::default()
    };
    Side {
        boards: Rollboard::with(store, Arc::new(clock.clone()), settings),
        clock,
    }
}

async fn run_case(ops: Vec<Op>, redis: &TestRedis, shape: &Shape) -> Result<(), TestCaseError> {
    let sides = [
        side(Arc::new(MemoryStore::new()), shape.tiers),
        side(redis.store().await, shape.tiers),
    ];
    let oracle = || Oracle {
        tiers: RateTiers::parse(shape.tiers).unwrap(),
        hits: Vec::new(),
        heads: vec![None; 3],
    };
    let mut oracles = [oracle(), oracle()];
    let keys = [unique("p{:} "), unique("q}")];
    let key = keys[0].clone();
    let mut now = START * 1000;
    for op in ops {
        match op {
            Op::Hit { count, offset_ms } => {
                let at = now + offset_ms;
                let expected = oracles[0].hit(now, at, u64::from(count));
                for s in &sides {
                    let got = s
                        .boards
                        .rates()
                        .hit(
                            &key,
                            u64::from(count),
                            Some(Timestamp::from_unix_millis(at).unwrap()),
                        )
                        .await
                        .map_err(|e| e.code());
                    let want = if expected == 0 {
                        Err("too_late")
                    } else {
                        Ok(expected)
                    };
                    prop_assert_eq!(
                        got,
                        want,
                        "hit at {} (now {})",
                        at - START * 1000,
                        now - START * 1000
                    );
                }
            }
            Op::Move(ms) => {
                now += ms;
                for s in &sides {
                    s.clock.set(Timestamp::from_unix_millis(now).unwrap());
                }
            }
            Op::Batch(hits) => {
                let want: Vec<Result<usize, &str>> = hits
                    .iter()
                    .map(|&(k, count, offset_ms)| {
                        match oracles[k].hit(now, now + offset_ms, u64::from(count)) {
                            0 => Err("too_late"),
                            counted => Ok(counted),
                        }
                    })
                    .collect();
                let batch: Vec<(String, u64, Option<Timestamp>)> = hits
                    .iter()
                    .map(|&(k, count, offset_ms)| {
                        let at = Timestamp::from_unix_millis(now + offset_ms).unwrap();
                        (keys[k].clone(), u64::from(count), Some(at))
                    })
                    .collect();
                for s in &sides {
                    let got: Vec<Result<usize, &str>> = s
                        .boards
                        .rates()
                        .hits(&batch)
                        .await
                        .unwrap()
                        .into_iter()
                        .map(|r| r.map_err(|e| e.code()))
                        .collect();
                    prop_assert_eq!(&got, &want, "batch at {}", now - START * 1000);
                }
            }
            Op::Read => {
                let both = [
                    (shape.windows, Coverage::Partial),
                    (shape.full_windows, Coverage::Full),
                ];
                for ((key, oracle), (windows, coverage)) in keys
                    .iter()
                    .zip(&oracles)
                    .flat_map(|k| both.iter().map(move |c| (k, *c)))
                {
                    let want: Vec<u64> = windows
                        .iter()
                        .map(|w| oracle.count(w, now, coverage))
                        .collect();
                    for s in &sides {
                        let got: Vec<u64> = s
                            .boards
                            .rates()
                            .counts(key, Some(windows), coverage)
                            .await
                            .unwrap()
                            .counts
                            .iter()
                            .map(|(_, c)| *c)
                            .collect();
                        prop_assert_eq!(&got, &want, "{} read at {}", coverage, now - START * 1000);
                    }
                }
            }
            Op::Check {
                window,
                limit,
                count,
                full,
            } => {
                let (window, coverage) = if full {
                    (shape.full_windows[window], Coverage::Full)
                } else {
                    (shape.windows[window], Coverage::Partial)
                };
                let current = oracles[0].count(window, now, coverage);
                let allowed = current + u64::from(count) <= limit;
                if allowed {
                    oracles[0].hit(now, now, u64::from(count));
                }
                let after = oracles[0].count(window, now, coverage);
                let mut verdicts = Vec::new();
                for s in &sides {
                    let v = s
                        .boards
                        .rates()
                        .check(&key, limit, window, u64::from(count), coverage)
                        .await
                        .unwrap();
                    prop_assert_eq!((v.allowed, v.count), (allowed, after));
                    verdicts.push(v);
                }
                prop_assert_eq!(verdicts[0], verdicts[1]);
            }
        }
    }
    let _ = sides[0].clock.now();
    Ok(())
}

/// Runs 48 random cases of `shape` on the memory store and Redis against the oracle.
fn agree_with_the_oracle(shape: &Shape) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let redis = rt.block_on(TestRedis::start());
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&proptest::collection::vec(op(shape), 1..60), |ops| {
            rt.block_on(run_case(ops, &redis, shape))
        })
        .unwrap();
}

#[test]
fn memory_and_redis_agree_with_the_brute_force_oracle() {
    agree_with_the_oracle(&NESTED);
}

#[test]
fn memory_and_redis_agree_with_the_brute_force_oracle_on_tiers_not_multiples_of_the_finest() {
    agree_with_the_oracle(&UNNESTED);
}
