//! [`Aggregate`]: what a board keeps of a member's events in a window, an option of the
//! board's config (`"aggregate"`).
//!
//! A sum board adds deltas; a `max` board keeps the highest value of the member's events
//! whose slots are inside the window, a `min` board the lowest, a `latest` board the
//! value of the newest (by time; of two at the same millisecond, the greater value). A max or a min cannot be
//! subtracted when a slot leaves a window: `docs/design.md`, "Max and min boards", says
//! how retirement recomputes them. The stores know two aggregates only, sums and maxima:
//! a min board is kept as the maximum of its negated values, and the library negates its
//! values on the way in and out ([`sign`](Aggregate::sign)), so its lowest value is its
//! first rank.

use serde::{Deserialize, Serialize};

use super::RankedTotals;

/// What a board keeps of a member's events in a window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub enum Aggregate {
    /// The sum of the deltas (likes, views): events carry `delta`.
    #[default]
    Sum,
    /// The highest value (a best score): events carry `value`; ranked highest first.
    Max,
    /// The lowest value (a fastest time): events carry `value`; ranked lowest first.
    Min,
    /// The value of the newest event (a rating): events carry `value`; ranked highest
    /// first. Of two events at the same millisecond the greater value is the newer.
    Latest,
}

impl Aggregate {
    /// The name stored in the board record and used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Aggregate::Sum => "sum",
            Aggregate::Max => "max",
            Aggregate::Min => "min",
            Aggregate::Latest => "latest",
        }
    }

    /// Parses a stored name; an absent one (a board created before the option) sums.
    pub fn from_stored(stored: Option<&str>) -> Option<Aggregate> {
        match stored {
            None | Some("sum") => Some(Aggregate::Sum),
            Some("max") => Some(Aggregate::Max),
            Some("min") => Some(Aggregate::Min),
            Some("latest") => Some(Aggregate::Latest),
            Some(_) => None,
        }
    }

    /// The totals a board of this aggregate ranks unless told otherwise: positive sums,
    /// every max or min value.
    pub fn default_rank(self) -> RankedTotals {
        if self.sums() {
            RankedTotals::Positive
        } else {
            RankedTotals::All
        }
    }

    /// Whether the board keeps the newest event's value (else a sum or a maximum).
    pub fn latest(&self) -> bool {
        *self == Aggregate::Latest
    }

    /// Whether the board sums deltas (else it keeps a maximum or the newest value).
    pub fn sums(&self) -> bool {
        *self == Aggregate::Sum
    }

    /// What a stored value is multiplied by to be the board's value, and a value to be
    /// stored: −1 on a min board (kept as the maximum of the negated values), else 1.
    pub fn sign(self) -> i64 {
        if self == Aggregate::Min { -1 } else { 1 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_names_round_trip_and_absent_is_sum() {
        for a in [
            Aggregate::Sum,
            Aggregate::Max,
            Aggregate::Min,
            Aggregate::Latest,
        ] {
            assert_eq!(Aggregate::from_stored(Some(a.as_str())), Some(a));
        }
        assert_eq!(Aggregate::from_stored(None), Some(Aggregate::Sum));
        assert_eq!(Aggregate::from_stored(Some("avg")), None);
        assert_eq!(
            [
                Aggregate::Sum,
                Aggregate::Max,
                Aggregate::Min,
                Aggregate::Latest
            ]
            .map(Aggregate::sign),
            [1, 1, -1, 1]
        );
    }
}
