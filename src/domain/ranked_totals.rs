//! [`RankedTotals`]: which totals a board ranks, an option of the board's config
//! (`"rank"`).

use serde::{Deserialize, Serialize};

use super::MAX_ABS;

/// Which totals a board ranks. Every member with a non-zero total is a member of the
/// window (its score is answered whatever its sign); this option says which of them are
/// ranked, so listed by pages, `around` and snapshots and counted by percentiles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub enum RankedTotals {
    /// Positive totals only: a member at or below zero is answered but not ranked
    /// (likes, views).
    #[default]
    Positive,
    /// Every non-zero total, negative ones below every positive one (a net-vote board:
    /// likes minus dislikes).
    Nonzero,
    /// Every value a member holds, zero and negative ones too: the rule of max and min
    /// boards (the only one there), whose members hold a value, not a total that may
    /// come back to zero.
    All,
}

impl RankedTotals {
    /// The name stored in the board record and used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            RankedTotals::Positive => "positive",
            RankedTotals::Nonzero => "nonzero",
            RankedTotals::All => "all",
        }
    }

    /// Parses a stored name; an absent one (a board created before the option) ranks
    /// positive totals.
    pub fn from_stored(stored: Option<&str>) -> Option<RankedTotals> {
        match stored {
            None | Some("positive") => Some(RankedTotals::Positive),
            Some("nonzero") => Some(RankedTotals::Nonzero),
            Some("all") => Some(RankedTotals::All),
            Some(_) => None,
        }
    }

    /// Whether a member whose total is `total` is ranked (on a sum board a total of
    /// zero never is: the member has left the window).
    pub fn ranks(self, total: i64) -> bool {
        match self {
            RankedTotals::Positive => total > 0,
            RankedTotals::Nonzero => total != 0,
            RankedTotals::All => true,
        }
    }

    /// The lowest total ranked: 1, or −(2^53 − 1) (every total a board can hold).
    pub fn lowest(self) -> i64 {
        match self {
            RankedTotals::Positive => 1,
            RankedTotals::Nonzero | RankedTotals::All => -MAX_ABS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positive_ranks_totals_above_zero_and_nonzero_every_total_but_zero() {
        let ranked = |rule: RankedTotals| [-5, 0, 3].map(|t| rule.ranks(t));
        assert_eq!(ranked(RankedTotals::Positive), [false, false, true]);
        assert_eq!(ranked(RankedTotals::Nonzero), [true, false, true]);
        assert_eq!(ranked(RankedTotals::All), [true, true, true]);
        assert_eq!(RankedTotals::Positive.lowest(), 1);
        assert_eq!(RankedTotals::Nonzero.lowest(), -MAX_ABS);
        assert_eq!(RankedTotals::All.lowest(), -MAX_ABS);
    }

    #[test]
    fn stored_names_round_trip_and_absent_is_positive() {
        for rule in [
            RankedTotals::Positive,
            RankedTotals::Nonzero,
            RankedTotals::All,
        ] {
            assert_eq!(RankedTotals::from_stored(Some(rule.as_str())), Some(rule));
        }
        assert_eq!(
            RankedTotals::from_stored(None),
            Some(RankedTotals::Positive)
        );
        assert_eq!(RankedTotals::from_stored(Some("every")), None);
    }
}
