//! Counters (the "Redis in Action" time-series counters): a counter's name, the
//! precisions it counts at, slice arithmetic, which precisions a clean-up pass visits,
//! and how stored samples become the answer to a read. No I/O.
//!
//! A counter counts at several *precisions* at once (1 s, 5 s, 1 min, ...): for each,
//! one sample per *slice* of that length, keyed by the slice's start (unix seconds, a
//! multiple of the precision). Clean-up keeps the newest [`CleanPlan::keep`] slices of
//! time per precision and forgets a counter once every precision is empty.

use std::fmt;

use serde::Serialize;

use super::error::Error;
use crate::domain::{BoardName, Span, Timestamp};

/// A counter's name: the board-name rules (1–64 characters of `A-Z a-z 0-9 _ . : -`),
/// so it sits inside a `{<name>}` hash tag as it is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct CounterName(String);

impl CounterName {
    /// Checks `name` against the board-name rules.
    pub fn parse(name: &str) -> Result<Self, Error> {
        match BoardName::parse(name) {
            Ok(valid) => Ok(CounterName(valid.as_str().to_owned())),
            Err(Error::InvalidBoardName { name, reason }) => {
                Err(Error::InvalidCounterName { name, reason })
            }
            Err(other) => Err(other),
        }
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CounterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The precisions every counter counts at unless configured otherwise: 1 s, 5 s, 1 min,
/// 5 min, 1 h, 5 h, 1 day (the source's).
pub const DEFAULT_PRECISIONS: [u64; 7] = [1, 5, 60, 300, 3_600, 18_000, 86_400];

/// Samples kept per precision by default (the source's 120).
pub const DEFAULT_KEEP: u32 = 120;

/// The default precisions as spans.
pub fn default_precisions() -> Vec<Span> {
    DEFAULT_PRECISIONS
        .iter()
        .map(|s| Span::from_seconds(*s).expect("the default precisions are valid spans"))
        .collect()
}

/// Checks a list of precisions: 1 to 16 distinct spans, returned sorted, finest first.
pub fn check_precisions(precisions: &[Span]) -> Result<Vec<Span>, Error> {
    let mut sorted = precisions.to_vec();
    sorted.sort();
    sorted.dedup();
    if sorted.is_empty() || sorted.len() > 16 || sorted.len() != precisions.len() {
        return Err(Error::InvalidConfig {
            reason: "counter precisions must be 1 to 16 distinct durations".into(),
        });
    }
    Ok(sorted)
}

/// The start of the slice of `precision` that holds `at`.
pub fn slice_start(at: Timestamp, precision: Span) -> i64 {
    let p = precision.secs_i64();
    at.unix_seconds().div_euclid(p) * p
}

/// What a batch adds: per precision, `(slice_start, sum)` pairs, slices ascending.
pub type SliceSums = Vec<(Span, Vec<(i64, i64)>)>;

/// Per precision, the `(slice_start, sum)` of the increments `(count, at)` that land in
/// each slice, slices ascending: what a batch adds, one entry per touched sample. `None`
/// when a sum leaves ±(2^53 − 1).
pub fn slice_sums(precisions: &[Span], increments: &[(i64, Timestamp)]) -> Option<SliceSums> {
    precisions
        .iter()
        .map(|p| {
            let mut sums = std::collections::BTreeMap::<i64, i64>::new();
            for (count, at) in increments {
                let sum = sums.entry(slice_start(*at, *p)).or_default();
                *sum = sum
                    .checked_add(*count)
                    .filter(|s| s.abs() <= crate::domain::MAX_ABS)?;
            }
            Some((*p, sums.into_iter().collect()))
        })
        .collect()
}

/// What one clean-up pass does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanPlan {
    /// Slices of time kept per precision: the current one and the `keep - 1` before it.
    pub keep: u32,
    /// The pass number: a precision of `p` seconds is visited on passes that are a
    /// multiple of `max(1, p / 60)`, so with a pass a minute the 1-day precision is
    /// visited once a day (as the source does). Pass 0 visits every precision.
    pub pass: u64,
}

impl Default for CleanPlan {
    fn default() -> Self {
        CleanPlan {
            keep: DEFAULT_KEEP,
            pass: 0,
        }
    }
}

impl CleanPlan {
    /// Whether this pass visits `precision`.
    pub fn visits(&self, precision: Span) -> bool {
        self.pass.is_multiple_of((precision.seconds() / 60).max(1))
    }

    /// The oldest slice start kept at `now` for `precision`: everything older goes.
    pub fn cutoff(&self, precision: Span, now: Timestamp) -> i64 {
        slice_start(now, precision) - i64::from(self.keep.max(1) - 1) * precision.secs_i64()
    }
}

/// One sample of a counter at one precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sample {
    /// The slice's start, unix seconds.
    pub slice_start: i64,
    /// What was counted in the slice.
    pub count: i64,
    /// The slice is the current one: still open, its count may still grow.
    pub open: bool,
}

/// Which samples a read wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SampleQuery {
    /// Only the slice holding this time and later ones.
    pub from: Option<Timestamp>,
    /// Only the slice holding this time and earlier ones.
    pub to: Option<Timestamp>,
    /// Answer empty slices between the first and the last asked for with a zero count.
    pub fill_gaps: bool,
}

/// Most slices one read with gap filling may answer.
pub const MAX_FILLED: i64 = 10_000;

/// Turns stored `(slice_start, count)` pairs (any order) into the answer to `query`:
/// oldest first, zero counts dropped unless filling gaps, the current slice flagged.
pub fn select_samples(
    stored: &[(i64, i64)],
    precision: Span,
    now: Timestamp,
    query: SampleQuery,
) -> Result<Vec<Sample>, Error> {
    let current = slice_start(now, precision);
    let from = query.from.map(|t| slice_start(t, precision));
    let to = query.to.map(|t| slice_start(t, precision));
    if let (Some(f), Some(t)) = (from, to)
        && f > t
    {
        return Err(Error::InvalidQuery {
            reason: "from must not be after to".into(),
        });
    }
    let mut kept: Vec<(i64, i64)> = stored
        .iter()
        .copied()
        .filter(|(s, c)| *c != 0 && from.is_none_or(|f| *s >= f) && to.is_none_or(|t| *s <= t))
        .collect();
    kept.sort_unstable();
    let sample = |(slice_start, count): (i64, i64)| Sample {
        slice_start,
        count,
        open: slice_start == current,
    };
    if !query.fill_gaps {
        return Ok(kept.into_iter().map(sample).collect());
    }
    let first = from.or(kept.first().map(|s| s.0));
    let last = to.or(kept.last().map(|s| s.0.max(current)));
    let (Some(first), Some(last)) = (first, last) else {
        return Ok(Vec::new());
    };
    let p = precision.secs_i64();
    if (last - first) / p >= MAX_FILLED {
        return Err(Error::InvalidQuery {
            reason: format!("filling gaps would answer more than {MAX_FILLED} slices"),
        });
    }
    let mut stored = kept.into_iter().peekable();
    let mut out = Vec::new();
    let mut slice = first;
    while slice <= last {
        let count = match stored.peek() {
            Some((s, c)) if *s == slice => {
                let c = *c;
                stored.next();
                c
            }
            _ => 0,
        };
        out.push(sample((slice, count)));
        slice += p;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: i64) -> Timestamp {
        Timestamp::from_unix_seconds(s).unwrap()
    }

    fn span(s: u64) -> Span {
        Span::from_seconds(s).unwrap()
    }

    #[test]
    fn counter_names_follow_the_board_name_rules() {
        assert_eq!(
            CounterName::parse("hits:home").unwrap().as_str(),
            "hits:home"
        );
        for bad in ["", "a{b}", "a/b", "é"] {
            assert_eq!(
                CounterName::parse(bad).unwrap_err().code(),
                "invalid_counter_name"
            );
        }
    }

    #[test]
    fn slices_start_at_multiples_of_the_precision() {
        assert_eq!(slice_start(ts(1_000_007), span(5)), 1_000_005);
        assert_eq!(slice_start(ts(1_000_007), span(60)), 999_960);
        assert_eq!(
            slice_start(Timestamp::from_unix_millis(1_999).unwrap(), span(1)),
            1
        );
    }

    #[test]
    fn a_batch_adds_one_sum_per_touched_slice() {
        let sums = slice_sums(
            &[span(1), span(5)],
            &[(2, ts(7)), (3, ts(8)), (1, ts(7)), (-4, ts(12))],
        )
        .unwrap();
        assert_eq!(
            sums,
            [
                (span(1), vec![(7, 3), (8, 3), (12, -4)]),
                (span(5), vec![(5, 6), (10, -4)]),
            ]
        );
        let max = crate::domain::MAX_ABS;
        assert_eq!(slice_sums(&[span(1)], &[(max, ts(1)), (1, ts(1))]), None);
    }

    #[test]
    fn precisions_are_sorted_and_distinct() {
        assert_eq!(
            check_precisions(&[span(60), span(1)]).unwrap(),
            [span(1), span(60)]
        );
        assert!(check_precisions(&[]).is_err());
        assert!(check_precisions(&[span(5), span(5)]).is_err());
        assert_eq!(default_precisions().len(), 7);
    }

    #[test]
    fn coarse_precisions_are_visited_less_often() {
        let visits = |pass, p| CleanPlan { keep: 3, pass }.visits(span(p));
        assert!(visits(0, 86_400) && visits(7, 1) && visits(7, 60));
        assert!(!visits(7, 300) && visits(10, 300));
        assert!(!visits(60, 18_000) && visits(300, 18_000));
    }

    #[test]
    fn cleanup_keeps_the_newest_slices_of_time() {
        let plan = CleanPlan { keep: 3, pass: 0 };
        assert_eq!(plan.cutoff(span(5), ts(1_012)), 1_000);
        assert_eq!(plan.cutoff(span(1), ts(1_012)), 1_010);
    }

    #[test]
    fn samples_are_sorted_filtered_and_flag_the_open_slice() {
        let stored = [(20, 2), (10, 1), (30, 0), (40, 4)];
        let got = select_samples(&stored, span(10), ts(45), SampleQuery::default()).unwrap();
        let pairs: Vec<_> = got
            .iter()
            .map(|s| (s.slice_start, s.count, s.open))
            .collect();
        assert_eq!(pairs, [(10, 1, false), (20, 2, false), (40, 4, true)]);
        let query = SampleQuery {
            from: Some(ts(15)),
            to: Some(ts(39)),
            fill_gaps: false,
        };
        let got = select_samples(&stored, span(10), ts(45), query).unwrap();
        assert_eq!(
            got.iter().map(|s| s.slice_start).collect::<Vec<_>>(),
            [10, 20]
        );
    }

    #[test]
    fn gap_filling_answers_every_slice_up_to_the_current_one() {
        let stored = [(20, 2), (50, 5)];
        let query = SampleQuery {
            fill_gaps: true,
            ..SampleQuery::default()
        };
        let got = select_samples(&stored, span(10), ts(71), query).unwrap();
        let pairs: Vec<_> = got.iter().map(|s| (s.slice_start, s.count)).collect();
        assert_eq!(
            pairs,
            [(20, 2), (30, 0), (40, 0), (50, 5), (60, 0), (70, 0)]
        );
        assert!(got[5].open && !got[4].open);
        let too_many = SampleQuery {
            from: Some(ts(0)),
            to: Some(ts(1_000_000)),
            fill_gaps: true,
        };
        assert_eq!(
            select_samples(&stored, span(1), ts(71), too_many)
                .unwrap_err()
                .code(),
            "invalid_query"
        );
    }
}
