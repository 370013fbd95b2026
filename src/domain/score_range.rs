//! A range of scores for a page of the ranking (`top?min_score=&max_score=`): pure; no
//! I/O. [`ScoreBounds`] is what a caller asks, for a board of either kind;
//! [`ScoreRange`] the integer totals of a windowed board it means. A board ranks its
//! positive totals (the default), so the range is cut to them, or every non-zero total
//! (`"rank":"nonzero"`), so the range holds negative totals too
//! ([`ScoreRange::lowest`]).

use super::MAX_ABS;
use super::RankedTotals;
use super::TrendRange;
use super::error::Error;

/// Bounds on scores as a caller gives them, both inclusive, either open: numbers, since
/// a trending board's scores are. On a windowed board, whose totals are integers, they
/// mean the totals from `ceil(min)` to `floor(max)` ([`totals`](Self::totals)).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ScoreBounds {
    /// The lowest score wanted, if any.
    pub min: Option<f64>,
    /// The highest score wanted, if any.
    pub max: Option<f64>,
}

impl ScoreBounds {
    /// No bound: every ranked member.
    pub const ALL: ScoreBounds = ScoreBounds {
        min: None,
        max: None,
    };

    /// The integer totals these bounds hold: `ceil(min)` to `floor(max)`. Each bound is
    /// finite and within ±(2^53 − 1), `min` not above `max` ([`Error::InvalidQuery`]
    /// otherwise); bounds between two integers hold no total and page nothing.
    pub fn totals(self) -> Result<ScoreRange, Error> {
        self.check_magnitude()?;
        if let (Some(lo), Some(hi)) = (self.min, self.max)
            && lo > hi
        {
            return Err(invalid(format!(
                "min_score ({lo}) must not be above max_score ({hi})"
            )));
        }
        // Within ±2^53 every integer is a double: the casts are exact.
        let lowest = self.min.map_or(-MAX_ABS, |lo| lo.ceil() as i64);
        Ok(ScoreRange {
            min: lowest.max(1),
            lowest,
            max: self.max.map_or(MAX_ABS, |hi| hi.floor() as i64),
        })
    }

    /// The trending scores these bounds hold (each bound within ±(2^53 − 1), as on a
    /// windowed board, `min` not above `max`).
    pub fn scores(self) -> Result<TrendRange, Error> {
        self.check_magnitude()?;
        TrendRange::new(self.min, self.max)
    }

    /// Each bound is a number within ±(2^53 − 1), on boards of either kind.
    fn check_magnitude(&self) -> Result<(), Error> {
        for (name, value) in [("min_score", self.min), ("max_score", self.max)] {
            if let Some(v) = value
                && (v.is_nan() || v.abs() > MAX_ABS as f64)
            {
                return Err(invalid(format!(
                    "{name} must be a number within ±{MAX_ABS}, got {v}"
                )));
            }
        }
        Ok(())
    }
}

/// Totals from `min` to `max`, both inclusive, `1 <= min` (on a board that ranks every
/// non-zero total, from `lowest`). A range holding no ranked total is valid and pages
/// nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScoreRange {
    /// The lowest positive total asked for.
    min: i64,
    /// The lowest total asked for, whatever its sign (−(2^53 − 1) without a bound).
    lowest: i64,
    max: i64,
}

impl ScoreRange {
    /// Every ranked total: 1 to 2^53 − 1.
    pub const ALL: ScoreRange = ScoreRange {
        min: 1,
        lowest: -MAX_ABS,
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
            lowest,
            max: highest,
        })
    }

    /// The range in a read cache's key: `all` for [`ALL`](Self::ALL) (the read of nearly
    /// every request), else its bounds (the derived `Debug` cost a cached top-10 read
    /// ~4% of its instructions).
    pub(crate) fn key(&self) -> std::borrow::Cow<'static, str> {
        match *self == Self::ALL {
            true => "all".into(),
            false => format!("{}..{}..{}", self.min, self.lowest, self.max).into(),
        }
    }

    /// The lowest total in the range (at least 1).
    pub fn min(&self) -> i64 {
        self.min
    }

    /// The lowest total of the range that a board ranking `rank` ranks:
    /// [`min`](Self::min) on a board of positive totals, the bound asked for (−(2^53 − 1)
    /// without one) on a board of every non-zero total.
    pub fn lowest(&self, rank: RankedTotals) -> i64 {
        match rank {
            RankedTotals::Positive => self.min,
            RankedTotals::Nonzero | RankedTotals::All => self.lowest,
        }
    }

    /// The range of the negated values (how a min board's range is asked of the store,
    /// which keeps its values negated: see [`Aggregate`](crate::domain::Aggregate)).
    pub fn negated(&self) -> ScoreRange {
        ScoreRange {
            min: (-self.max).max(1),
            lowest: -self.max,
            max: -self.lowest,
        }
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
    fn trending_bounds_beyond_two_to_the_53_are_refused_as_on_windowed_boards() {
        let bounds = |min, max| ScoreBounds { min, max };
        let too_low = bounds(Some(-9_007_199_254_740_992.0), None);
        assert_eq!(
            too_low.scores().unwrap_err().to_string(),
            too_low.totals().unwrap_err().to_string()
        );
        assert!(matches!(
            bounds(None, Some(9_007_199_254_740_992.0)).scores(),
            Err(Error::InvalidQuery { .. })
        ));
        assert!(
            bounds(Some(-9_007_199_254_740_991.0), Some(0.5))
                .scores()
                .is_ok()
        );
    }

    #[test]
    fn a_board_of_nonzero_totals_keeps_the_negative_lower_bound() {
        let r = ScoreRange::new(Some(-5), Some(7)).unwrap();
        assert_eq!(r.lowest(RankedTotals::Positive), 1);
        assert_eq!(r.lowest(RankedTotals::Nonzero), -5);
        assert_eq!(ScoreRange::ALL.lowest(RankedTotals::Nonzero), -MAX_ABS);
        let b = ScoreBounds {
            min: Some(-3.5),
            max: None,
        };
        assert_eq!(b.totals().unwrap().lowest(RankedTotals::Nonzero), -3);
    }

    #[test]
    fn number_bounds_hold_the_integer_totals_between_them() {
        let bounds = |min, max| ScoreBounds { min, max }.totals().unwrap();
        assert_eq!(bounds(None, None), ScoreRange::ALL);
        let r = bounds(Some(0.5), Some(7.9));
        assert_eq!((r.min(), r.max()), (1, 7));
        let r = bounds(Some(2.0), Some(2.0));
        assert_eq!((r.min(), r.max()), (2, 2));
        let r = bounds(Some(-3.5), Some(-0.5));
        assert_eq!((r.min(), r.max()), (1, -1));
        // Between two integers: no total, an empty page, not an error.
        let r = bounds(Some(2.25), Some(2.75));
        assert_eq!((r.min(), r.max()), (3, 2));
        let r = bounds(None, Some(MAX_ABS as f64));
        assert_eq!((r.min(), r.max()), (1, MAX_ABS));
    }

    #[test]
    fn number_bounds_out_of_range_reversed_or_not_finite_are_invalid_queries() {
        let bounds = |min, max| reason(ScoreBounds { min, max }.totals());
        assert_eq!(
            bounds(Some(0.75), Some(0.5)),
            "min_score (0.75) must not be above max_score (0.5)"
        );
        assert_eq!(
            bounds(None, Some(1e16)),
            "max_score must be a number within ±9007199254740991, got 10000000000000000"
        );
        assert_eq!(
            bounds(Some(f64::NAN), None),
            "min_score must be a number within ±9007199254740991, got NaN"
        );
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
