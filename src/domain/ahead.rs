//! [`AheadProbe`] and [`Ahead`]: how many members a window's ranking holds ahead of a
//! given total (and member). A sharded board's reads are built from these counts of each
//! shard: a member's rank is 1 plus the members ahead of it in every shard.

use super::coverage::{Coverage, covered};
use super::{Member, Span};

/// A place in a ranking: a total, and optionally a member holding it (then the members
/// tied with it and ordered before it in the tie order, member ascending, are ahead of
/// it too). The member need not be on the board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AheadProbe {
    /// The total, as the store keeps it (a min board's negated).
    pub total: i64,
    /// The member holding it, if any.
    pub member: Option<Member>,
}

/// For each probe asked, how many ranked members are ahead of it, read in one step,
/// and which slots the totals cover (as a [`TopPage`](super::TopPage) says).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ahead {
    /// One count per probe, in the order asked.
    pub counts: Vec<u64>,
    /// The window.
    pub window: Span,
    /// Oldest slot the totals include (unix seconds, inclusive).
    pub from: i64,
    /// End of the newest slot the totals include (unix seconds, exclusive).
    pub to: i64,
    /// The totals still include slots that have left the window.
    pub behind: bool,
    /// How long ago the oldest slot still included left the window, ms.
    pub lag_ms: u64,
}

impl Ahead {
    /// `counts`, in totals covering `coverage`.
    pub(crate) fn new(coverage: Coverage, counts: Vec<u64>) -> Ahead {
        covered!(coverage => Ahead { counts })
    }
}
