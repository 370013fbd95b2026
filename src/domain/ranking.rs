//! What reads answer: a page of a ranking, a member's standing, a member's history.
//! Every answer says which slots its totals cover (`from` inclusive, `to` exclusive,
//! unix seconds), so a caller sees when retirement is behind, and says so plainly:
//! `behind` and `lag_ms` (see [`TopPage::behind`]).

use serde::Serialize;

use super::coverage::covered;
use super::{BoardName, Coverage, MemberData, Span};

/// One ranked member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Entry {
    /// Competition rank: 1 + the number of members with a strictly higher score, so
    /// equal scores share a rank (1, 1, 3); on a board with `"ties":"dense"`, dense rank:
    /// 1 + the number of distinct scores strictly higher (1, 1, 2); on a board with
    /// `"ties":"position"`, the 1-based position in the ranking (1, 2, 3).
    pub rank: u64,
    /// The member.
    pub member: String,
    /// Its total in the window.
    pub score: i64,
    /// Read with `with=data` only (absent otherwise): the member's data, `null` when it
    /// has none (the library: `Some(None)`; `None` when not asked).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(value_type = MemberData))]
    pub data: Option<Option<MemberData>>,
    /// Only on a pinned member of the first page of a top (absent otherwise): shown at
    /// its pin's position, its `rank` the rank its counts give (0: not ranked).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
    /// Read with `with=movement` only, on a member inside its window's watched top
    /// (absent otherwise): its rank there at the read's `since`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub movement: Option<Movement>,
}

/// Where a member of a watched top stood at an earlier time, as the kept changes give
/// it (docs/api.md, "Movement"): the ▲2 / ▼1 / new badges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Movement {
    /// Its rank in the watched top then; `null` when it was outside it ("new").
    pub was: Option<u64>,
}

/// A page of a board's ranking: members with a positive total, highest first, equal
/// scores ordered by member name ascending (byte order); a page read from the bottom
/// (`order=asc`) lists the same ranking lowest first, equal scores by member
/// descending.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct TopPage {
    /// The board.
    pub board: BoardName,
    /// The window ranked.
    pub window: Span,
    /// Oldest slot the totals include (unix seconds, inclusive).
    pub from: i64,
    /// End of the newest slot the totals include (unix seconds, exclusive).
    pub to: i64,
    /// Retirement is behind: the totals still include the slots from `from` up to the
    /// window's start, which have left the window (they are subtracted by the next
    /// retirement pass). When `false` the totals are exactly the window.
    pub behind: bool,
    /// How long ago the oldest slot still included (`from`) left the window, in
    /// milliseconds; 0 when not behind.
    pub lag_ms: u64,
    /// How old the answer is, in milliseconds: 0 when read from the store now; when the
    /// read allowed it (`max_staleness_ms` above 0), the age of this process's cached
    /// answer, never above the read's bound.
    pub age_ms: u64,
    /// The entries, in ranking order (reversed when read from the bottom).
    pub entries: Vec<Entry>,
    /// Only on a first page that shows pins (absent otherwise): the `offset` of the next
    /// page, past every ranked member this one showed or its pins pushed off it, so that
    /// paging on misses none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
}

/// One member's standing in a window.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Standing {
    /// The member.
    pub member: String,
    /// Its total in the window, whatever its sign (never 0: a zero total is no total).
    pub score: i64,
    /// Its rank: competition (equal scores share a rank: 1, 1, 3), dense on a
    /// `"ties":"dense"` board (1, 1, 2) or its position on a `"ties":"position"` board
    /// (1, 2, 3), as `rank` of a top page's entries; `null` when the total is negative
    /// (only positive totals are ranked).
    #[cfg_attr(feature = "server", schema(required = true))]
    pub rank: Option<u64>,
    /// The share of ranked members (positive totals) whose total is strictly below the
    /// member's, in [0, 1): 0 for the lowest total (and for a member not ranked, which no
    /// ranked member is below), `(ranked − 1) / ranked` for a sole leader. Members tied with it are not below it, so a tie group shares one
    /// percentile (on a `"ties":"position"` board too, whose tied members have distinct
    /// ranks).
    pub percentile: f64,
    /// The window.
    pub window: Span,
    /// Oldest slot the total includes (unix seconds, inclusive).
    pub from: i64,
    /// End of the newest slot the total includes (unix seconds, exclusive).
    pub to: i64,
    /// Retirement is behind: the total still includes slots that have left the window,
    /// until the next retirement pass subtracts them (as `behind` of a top page).
    pub behind: bool,
    /// How long ago the oldest slot still included left the window, ms (0 when not
    /// behind).
    pub lag_ms: u64,
    /// How old the answer is, in milliseconds: 0 when read from the store now; when the
    /// read allowed it (`max_staleness_ms` above 0), the age of this process's cached
    /// answer, never above the read's bound.
    pub age_ms: u64,
    /// Read with `with=data` only (absent otherwise): the member's data, `null` when it
    /// has none (the library: `Some(None)`; `None` when not asked).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(value_type = MemberData))]
    pub data: Option<Option<MemberData>>,
    /// The member is hidden by a moderator (present only then, `true`): it keeps
    /// counting, but no ranking read lists it, and its `rank` is `null`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
}

impl TopPage {
    /// A page of `entries` of `board`, whose totals cover `coverage`.
    pub(crate) fn new(board: BoardName, coverage: Coverage, entries: Vec<Entry>) -> TopPage {
        covered!(coverage => TopPage { board, age_ms: 0, entries, next_offset: None })
    }
}

impl Standing {
    /// A member's standing: its `score`, `rank` (`None` when not ranked) and
    /// `percentile`, in totals covering `coverage`.
    pub(crate) fn new(
        member: String,
        score: i64,
        rank: Option<u64>,
        percentile: f64,
        coverage: Coverage,
    ) -> Standing {
        covered!(coverage => Standing { member, score, rank, percentile, age_ms: 0, data: None, hidden: false })
    }
}

/// The share of `ranked` members strictly below: `below / ranked`, 0 when none are
/// ranked (then the member is not ranked either).
pub fn percentile(below: u64, ranked: u64) -> f64 {
    if ranked == 0 {
        0.0
    } else {
        below as f64 / ranked as f64
    }
}

/// A member's value in one slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Point {
    /// The slot's start, unix seconds.
    pub slot: i64,
    /// The sum of the member's events in that slot.
    pub value: i64,
}

/// A member's per-slot values over the largest window (for a sparkline). Slots without
/// events are left out; a chart fills them with zero between `from` and `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct History {
    /// The member.
    pub member: String,
    /// The slot length.
    pub slot: Span,
    /// Start of the oldest slot of the largest window (unix seconds, inclusive).
    pub from: i64,
    /// End of the newest slot (unix seconds, exclusive).
    pub to: i64,
    /// Non-zero slots, oldest first.
    pub points: Vec<Point>,
}
