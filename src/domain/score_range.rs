//! A range of totals for a page of the ranking (`top?min_score=&max_score=`): pure; no
//! I/O. Only positive totals are ranked, so the range is cut to them.

use super::MAX_ABS;
use crate::error::Error;

/// Totals from `min` to `max`, both inclusive, `1 <= min`. A range holding no positive
/// total is valid and pages nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScoreRange {
    min: i64,
    max: i64,
}

impl ScoreRange {
    /// Every ranked total: 1 to 2^53 − 1.
    pub const ALL: ScoreRange = ScoreRange {
        min: 1,
        max: MAX_ABS,
    };

    /// The totals from `min` (default: no bound) to `max` (default: no bound), each
    /// within ±(2^53 − 1), `min <= max`; totals below 1 are not ranked, so `min` is
    /// raised to 1.
    pub fn new(min: Option<i64>, max: Option<i64>) -> Result<Self, Error> {
        for (name, value) in [("min_score", min), ("max_score", max)] {
            if let Some(v) = value
                && v.unsigned_abs() > MAX_ABS as u64
            {
                return Err(invalid(format!(
                    "{name} must be within ±{MAX_ABS}, got {v}"
                )));
            }
        }
        let (lowest, highest) = (min.unwrap_or(-MAX_ABS), max.unwrap_or(MAX_ABS));
        if lowest > highest {
            return Err(invalid(format!(
                "min_score ({lowest}) must not be above max_score ({highest})"
            )));
        }
        Ok(ScoreRange {
            min: lowest.max(1),
            max: highest,
        })
    }

    /// The lowest total in the range (at least 1).
    pub fn min(&self) -> i64 {
        self.min
    }

    /// The highest total in the range (below [`min`](Self::min) when it holds none).
    pub fn max(&self) -> i64 {
        self.max
    }
}

fn invalid(reason: String) -> Error {
    Error::InvalidQuery { reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(result: Result<ScoreRange, Error>) -> String {
        match result {
            Err(Error::InvalidQuery { reason }) => reason,
            other => panic!("expected an invalid query, got {other:?}"),
        }
    }

    #[test]
    fn bounds_default_to_every_ranked_total_and_min_is_raised_to_one() {
        assert_eq!(ScoreRange::new(None, None).unwrap(), ScoreRange::ALL);
        let r = ScoreRange::new(Some(-5), Some(7)).unwrap();
        assert_eq!((r.min(), r.max()), (1, 7));
        let none = ScoreRange::new(Some(-5), Some(0)).unwrap();
        assert_eq!((none.min(), none.max()), (1, 0));
        let below = ScoreRange::new(None, Some(-1)).unwrap();
        assert_eq!((below.min(), below.max()), (1, -1));
        let one = ScoreRange::new(Some(3), Some(3)).unwrap();
        assert_eq!((one.min(), one.max()), (3, 3));
    }

    #[test]
    fn reversed_or_out_of_range_bounds_are_invalid_queries() {
        assert_eq!(
            reason(ScoreRange::new(Some(5), Some(4))),
            "min_score (5) must not be above max_score (4)"
        );
        assert_eq!(
            reason(ScoreRange::new(Some(MAX_ABS + 1), None)),
            "min_score must be within ±9007199254740991, got 9007199254740992"
        );
        assert_eq!(
            reason(ScoreRange::new(None, Some(-MAX_ABS - 1))),
            "max_score must be within ±9007199254740991, got -9007199254740992"
        );
    }
}
