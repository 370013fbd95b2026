//! The full-coverage limiter on every store: seeded random check times (the clock moving
//! on by a little or a lot) and plain hits between them (now or up to 50 s late); each
//! verdict equals a brute-force oracle's (every hit kept, the window recounted from the
//! definition: the current slot and the W/L before it), and in every span of W the hits
//! the checks admitted never exceed the limit (checked over every span that starts at an
//! admitted hit, the only ones that can hold the most).

use rand::{Rng, SeedableRng};
use rollboard::{Coverage, Timestamp};

use crate::support::{Harness, START, unique};

on_every_store!(a_full_coverage_limiter_never_admits_more_than_its_limit_within_the_window);

/// (window, its length in ms, the slot length of the tier that answers it with full
/// coverage, in ms, and the slots it then counts), for the default tiers.
const WINDOWS: [(&str, i64, i64, i64); 3] = [
    ("5s", 5_000, 1_000, 6),
    ("10s", 10_000, 1_000, 11),
    ("1m", 60_000, 60_000, 2),
];

/// The most hits (by count) the admitted hits hold in any span `[t, t + w)`.
fn busiest_span(admitted: &[(i64, u64)], w: i64) -> u64 {
    admitted
        .iter()
        .map(|&(start, _)| {
            admitted
                .iter()
                .filter(|(t, _)| *t >= start && *t < start + w)
                .map(|(_, c)| c)
                .sum()
        })
        .max()
        .unwrap_or(0)
}

async fn a_full_coverage_limiter_never_admits_more_than_its_limit_within_the_window(h: Harness) {
    let (mut admitted_total, mut refused_total) = (0, 0);
    for seed in 0..24u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let (window, w_ms, g, slots) = WINDOWS[seed as usize % WINDOWS.len()];
        let limit = rng.random_range(1..6u64);
        let key = unique("lim");
        let mut now = START * 1000 + rng.random_range(0..60_000);
        // Every hit counted (plain and admitted), and the admitted ones.
        let mut all: Vec<(i64, u64)> = Vec::new();
        let mut admitted: Vec<(i64, u64)> = Vec::new();
        for _ in 0..40 {
            now += match rng.random_range(0..10) {
                0 => rng.random_range(0..200_000),
                1..=3 => rng.random_range(0..w_ms),
                _ => rng.random_range(0..1_500),
            };
            h.clock.set(Timestamp::from_unix_millis(now).unwrap());
            if rng.random_range(0..4) == 0 {
                let at = now - rng.random_range(0..50_000);
                let count = rng.random_range(1..3u64);
                let at_ts = Some(Timestamp::from_unix_millis(at).unwrap());
                h.boards.rates().hit(&key, count, at_ts).await.unwrap();
                all.push((at, count));
                continue;
            }
            let count = rng.random_range(1..3u64);
            let n = now.div_euclid(g);
            let held: u64 = all
                .iter()
                .filter(|(t, _)| (n - slots + 1..=n).contains(&t.div_euclid(g)))
                .map(|(_, c)| c)
                .sum();
            let allowed = held + count <= limit;
            let v = h
                .boards
                .rates()
                .check(&key, limit, window, count, Coverage::Full)
                .await
                .unwrap();
            let after = if allowed { held + count } else { held };
            assert_eq!(
                (v.allowed, v.count),
                (allowed, after),
                "seed {seed}, {window} limit {limit}, at {}",
                now - START * 1000
            );
            if allowed {
                all.push((now, count));
                admitted.push((now, count));
                admitted_total += 1;
            } else {
                refused_total += 1;
            }
        }
        let busiest = busiest_span(&admitted, w_ms);
        assert!(
            busiest <= limit,
            "seed {seed}: {busiest} admitted within {window}, limit {limit}"
        );
    }
    // The runs exercise both verdicts.
    assert_eq!((admitted_total, refused_total), (298, 438));
}

#[test]
fn the_brute_force_finds_the_busiest_span() {
    let admitted = [(0, 1), (4_000, 2), (4_999, 1), (5_000, 3), (9_999, 1)];
    assert_eq!(busiest_span(&admitted, 5_000), 6);
    assert_eq!(busiest_span(&admitted, 1_000), 4);
    assert_eq!(busiest_span(&[], 5_000), 0);
}
