//! Aggregate statistics (the "Redis in Action" stats): a context and a kind name what is
//! measured (`/v1/counters/{name}`, `AccessTime`); per (context, kind) and hour, the
//! count, sum, min, max, a stable variance and a histogram. No I/O.
//!
//! **Variance**: Welford's update (`mean += d / n; m2 += d · (x − mean)`), merged across
//! parts with Chan's formula. The source's `sumsq − sum² / count` cancels catastrophically
//! for values near 1e7 with a small spread (it goes negative); Welford does not.
//!
//! **Percentiles**: a log-bucket histogram (the DDSketch mapping): a positive value `x`
//! falls in bucket `i = ceil(ln x / ln γ)` with `γ = (1 + α) / (1 − α)`, α = 0.02, and a
//! bucket answers `2 γ^i / (γ + 1)`, within α = 2 % of every value in it. Negative values
//! use the same buckets on `|x|`; zero has its own. Buckets merge by adding counts.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::error::Error;
use crate::domain::{BoardName, Timestamp};

/// The relative error of a percentile.
pub const RELATIVE_ERROR: f64 = 0.02;

/// Entries kept in a kind's list of slowest contexts (the source's 100).
pub const SLOWEST_KEPT: usize = 100;

/// What a stats context is (a route template, a page): 1–256 bytes of UTF-8 without
/// control characters. Any such text; [`key_part`](Self::key_part) encodes it for keys.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct StatsContext(String);

impl StatsContext {
    /// Longest accepted context, in bytes of UTF-8.
    pub const MAX_BYTES: usize = 256;

    /// Checks the length and that there is no control character.
    pub fn parse(context: &str) -> Result<Self, Error> {
        if context.is_empty() || context.len() > Self::MAX_BYTES {
            return Err(Error::InvalidQuery {
                reason: format!(
                    "a stats context must be 1 to {} bytes of UTF-8, got {}",
                    Self::MAX_BYTES,
                    context.len()
                ),
            });
        }
        if context.chars().any(char::is_control) {
            return Err(Error::InvalidQuery {
                reason: "a stats context must not hold control characters".into(),
            });
        }
        Ok(StatsContext(context.to_owned()))
    }

    /// The context as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The context as it sits in key names: every byte outside `A-Z a-z 0-9 _ . -` as
    /// `%XX` (`%` itself included). One-to-one, and free of `{`, `}`, `:` and spaces, so
    /// the result is a hash tag of its own and no two contexts share a key.
    pub fn key_part(&self) -> String {
        let mut out = String::with_capacity(self.0.len());
        for b in self.0.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-') {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    }
}

impl fmt::Display for StatsContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What is measured in a context (`AccessTime`): the board-name rules.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct StatsKind(String);

impl StatsKind {
    /// Checks `kind` against the board-name rules.
    pub fn parse(kind: &str) -> Result<Self, Error> {
        BoardName::parse(kind)
            .map(|k| StatsKind(k.as_str().to_owned()))
            .map_err(|e| Error::InvalidQuery {
                reason: format!("stats kind: {e}"),
            })
    }

    /// The kind as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for StatsKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks a recorded value: a finite number.
pub fn check_value(value: f64) -> Result<f64, Error> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(Error::InvalidQuery {
            reason: format!("a stats value must be a finite number, got {value}"),
        })
    }
}

/// The start of the hour holding `at`, unix seconds.
pub fn hour_of(at: Timestamp) -> i64 {
    at.unix_seconds().div_euclid(3600) * 3600
}

fn gamma() -> f64 {
    (1.0 + RELATIVE_ERROR) / (1.0 - RELATIVE_ERROR)
}

/// The histogram bucket of `value`, by its name (see [`Bucket`]).
pub fn bucket_of(value: f64) -> String {
    Bucket::of(value).to_string()
}

/// A histogram bucket: named `"z"` for zero, `"p<i>"` for a positive value and `"n<i>"`
/// for a negative one (bucket `i` of `|value|`). Values are counted by bucket before
/// the buckets are named, one name a bucket rather than one a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bucket {
    Zero,
    Positive(i64),
    Negative(i64),
}

impl Bucket {
    /// The bucket of `value`.
    pub fn of(value: f64) -> Bucket {
        if value == 0.0 {
            return Bucket::Zero;
        }
        let i = (value.abs().ln() / gamma().ln()).ceil() as i64;
        if value > 0.0 {
            Bucket::Positive(i)
        } else {
            Bucket::Negative(i)
        }
    }
}

impl fmt::Display for Bucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bucket::Zero => f.write_str("z"),
            Bucket::Positive(i) => write!(f, "p{i}"),
            Bucket::Negative(i) => write!(f, "n{i}"),
        }
    }
}

/// The value a bucket answers, `None` for a name that is not a bucket.
fn bucket_value(bucket: &str) -> Option<f64> {
    if bucket == "z" {
        return Some(0.0);
    }
    let (sign, i) = match bucket.split_at_checked(1)? {
        ("p", i) => (1.0, i),
        ("n", i) => (-1.0, i),
        _ => return None,
    };
    let i: i32 = i.parse().ok()?;
    Some(sign * 2.0 * gamma().powi(i) / (gamma() + 1.0))
}

/// count, sum, min, max and what Welford's variance needs, for one hour.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Moments {
    /// Values recorded.
    pub count: u64,
    /// Their sum.
    pub sum: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
    /// Their mean.
    pub mean: f64,
    /// The sum of squared differences from the mean.
    pub m2: f64,
    /// Histogram: bucket name → values in it.
    pub buckets: BTreeMap<String, u64>,
}

impl Moments {
    /// Adds one value (Welford).
    pub fn record(&mut self, value: f64) {
        self.count += 1;
        if self.count == 1 {
            self.min = value;
            self.max = value;
        } else {
            self.min = self.min.min(value);
            self.max = self.max.max(value);
        }
        self.sum += value;
        let delta = value - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (value - self.mean);
        *self.buckets.entry(bucket_of(value)).or_default() += 1;
    }

    /// Merges `other` into `self` (Chan et al.), as if every value had been recorded here.
    pub fn merge(&mut self, other: &Moments) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = other.clone();
            return;
        }
        let (na, nb) = (self.count as f64, other.count as f64);
        let n = na + nb;
        let delta = other.mean - self.mean;
        self.mean += delta * nb / n;
        self.m2 += other.m2 + delta * delta * na * nb / n;
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        for (b, c) in &other.buckets {
            *self.buckets.entry(b.clone()).or_default() += c;
        }
    }

    /// The sample standard deviation (n − 1); 0 for fewer than two values.
    pub fn stddev(&self) -> f64 {
        if self.count < 2 {
            0.0
        } else {
            (self.m2.max(0.0) / (self.count - 1) as f64).sqrt()
        }
    }

    /// The `q`-quantile (0 ≤ q ≤ 1) from the histogram, within 2 % of a recorded value of
    /// that rank (nearest rank), clamped to `[min, max]`; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let mut buckets: Vec<(f64, u64)> = self
            .buckets
            .iter()
            .filter_map(|(b, c)| bucket_value(b).map(|v| (v, *c)))
            .collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total: u64 = buckets.iter().map(|b| b.1).sum();
        let rank = (q.clamp(0.0, 1.0) * (total.saturating_sub(1)) as f64).round() as u64;
        let mut seen = 0;
        for (value, count) in buckets {
            seen += count;
            if seen > rank {
                return Some(value.clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }
}

/// One hour of one (context, kind), as a read answers it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct HourStats {
    /// The hour's start, unix seconds.
    pub hour: i64,
    /// Values recorded.
    pub count: u64,
    /// Their sum; JSON `null` when it overflows a double (values near ±1.8e308).
    #[cfg_attr(feature = "server", schema(value_type = Option<f64>))]
    pub sum: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
    /// The mean; JSON `null` when it overflows a double.
    #[cfg_attr(feature = "server", schema(value_type = Option<f64>))]
    pub mean: f64,
    /// The sample standard deviation (n − 1), computed stably; JSON `null` when it
    /// overflows a double.
    #[cfg_attr(feature = "server", schema(value_type = Option<f64>))]
    pub stddev: f64,
    /// Median, within 2 %.
    pub p50: f64,
    /// 95th percentile, within 2 %.
    pub p95: f64,
    /// 99th percentile, within 2 %.
    pub p99: f64,
}

impl HourStats {
    /// The answer for `moments` of `hour`; `None` when nothing was recorded.
    pub fn of(hour: i64, moments: &Moments) -> Option<HourStats> {
        Some(HourStats {
            hour,
            count: moments.count,
            sum: moments.sum,
            min: moments.min,
            max: moments.max,
            mean: moments.mean,
            stddev: moments.stddev(),
            p50: moments.quantile(0.50)?,
            p95: moments.quantile(0.95)?,
            p99: moments.quantile(0.99)?,
        })
    }
}

/// What a store holds for one (context, kind): its newest hour and the one before, each
/// with the hour it is of.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StoredStats {
    /// The newest hour recorded, and its moments.
    pub newest: Option<(i64, Moments)>,
    /// The hour before it, if it directly preceded it.
    pub before: Option<(i64, Moments)>,
}

impl StoredStats {
    /// The current and previous hour as seen at `now`: the stored hours roll over as a
    /// record at `now` would roll them.
    pub fn view(&self, now: Timestamp) -> (Option<HourStats>, Option<HourStats>) {
        let current = hour_of(now);
        let pick = |hour: i64| {
            [&self.newest, &self.before]
                .into_iter()
                .flatten()
                .find(|(h, _)| *h == hour)
                .and_then(|(h, m)| HourStats::of(*h, m))
        };
        (pick(current), pick(current - 3600))
    }
}

/// One context in a kind's slowest list.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct SlowEntry {
    /// The context.
    pub context: String,
    /// The mean of its newest hour.
    pub mean: f64,
    /// Values in that hour.
    pub count: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(values: &[f64]) -> Moments {
        let mut m = Moments::default();
        values.iter().for_each(|v| m.record(*v));
        m
    }

    #[test]
    fn contexts_encode_to_distinct_tag_safe_key_parts() {
        let parts: Vec<String> = ["/v1/counters/{name}", "a b", "a:b", "é", "%2F", "/"]
            .iter()
            .map(|c| StatsContext::parse(c).unwrap().key_part())
            .collect();
        assert_eq!(
            parts,
            [
                "%2Fv1%2Fcounters%2F%7Bname%7D",
                "a%20b",
                "a%3Ab",
                "%C3%A9",
                "%252F",
                "%2F"
            ]
        );
        assert!(StatsContext::parse("").is_err());
        assert!(StatsContext::parse("a\nb").is_err());
        assert!(StatsContext::parse(&"x".repeat(257)).is_err());
    }

    #[test]
    fn moments_keep_count_sum_min_max_and_sample_stddev() {
        let m = moments(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(
            (m.count, m.sum, m.min, m.max, m.mean),
            (8, 40.0, 2.0, 9.0, 5.0)
        );
        // Sum of squared differences 32, over n - 1 = 7.
        assert!((m.stddev() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(moments(&[3.0]).stddev(), 0.0);
    }

    #[test]
    fn stddev_stays_exact_near_1e7_where_sum_of_squares_fails() {
        let values: Vec<f64> = (0..1000).map(|i| 1e7 + (i % 100) as f64 * 1e-4).collect();
        let mean = values.iter().sum::<f64>() / 1000.0;
        let truth = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 999.0).sqrt();
        let m = moments(&values);
        assert!((m.stddev() - truth).abs() / truth < 0.01);
        // The source's formula, for the record: nowhere near.
        let (sum, sumsq) = (m.sum, values.iter().map(|v| v * v).sum::<f64>());
        let naive = ((sumsq - sum * sum / 1000.0) / 999.0).max(0.0).sqrt();
        assert!((naive - truth).abs() / truth > 0.5);
    }

    #[test]
    fn merging_equals_recording_everything_in_one() {
        let all: Vec<f64> = (1..=50).map(|i| i as f64 * 0.37).collect();
        let mut a = moments(&all[..20]);
        a.merge(&moments(&all[20..]));
        let one = moments(&all);
        assert_eq!(
            (a.count, a.min, a.max, &a.buckets),
            (one.count, one.min, one.max, &one.buckets)
        );
        assert!((a.mean - one.mean).abs() < 1e-12);
        assert!((a.stddev() - one.stddev()).abs() < 1e-12);
    }

    #[test]
    fn percentiles_are_within_two_percent() {
        let values: Vec<f64> = (1..=10_000).map(|i| i as f64 * 0.001).collect();
        let m = moments(&values);
        for (q, truth) in [(0.5, 5.0), (0.95, 9.5), (0.99, 9.9)] {
            let got = m.quantile(q).unwrap();
            assert!((got - truth).abs() / truth <= RELATIVE_ERROR, "q{q}: {got}");
        }
        let mixed = moments(&[-4.0, 0.0, 3.0]);
        assert_eq!(mixed.quantile(0.5), Some(0.0));
        assert!((mixed.quantile(0.0).unwrap() + 4.0).abs() <= 4.0 * RELATIVE_ERROR);
    }

    #[test]
    fn a_read_rolls_the_stored_hours_over() {
        let m = moments(&[1.0]);
        let stored = StoredStats {
            newest: Some((7200, m.clone())),
            before: Some((3600, m)),
        };
        let at = |s| Timestamp::from_unix_seconds(s).unwrap();
        let (cur, prev) = stored.view(at(7300));
        assert_eq!((cur.unwrap().hour, prev.unwrap().hour), (7200, 3600));
        let (cur, prev) = stored.view(at(10_900));
        assert_eq!((cur, prev.unwrap().hour), (None, 7200));
        assert_eq!(stored.view(at(20_000)), (None, None));
    }
}
