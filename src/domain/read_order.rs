//! [`Order`] and [`AroundOptions`]: which way a page of a ranking is read, and the shape
//! of the page around a member; with the position arithmetic every store shares (a page
//! is always a run of consecutive ranking positions, counted from the top).

use crate::domain::Member;
use serde::{Deserialize, Serialize};

/// Which end of the ranking a page is read from: `desc` the top, `asc` the bottom. On a
/// min board (`"aggregate":"min"`), whose rank 1 is its lowest value, the top lists the
/// lowest values first; the HTTP `order` names values instead (`asc`: lowest first),
/// and the library's `Rollboard::ranking_end` turns one into the other.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub enum Order {
    /// From rank 1: highest first (lowest first on a min board), equal totals in the
    /// board's tie order (the default).
    #[default]
    Desc,
    /// From the bottom ("bottom N"): lowest first (highest first on a min board), equal
    /// totals in the reverse of the board's tie order;
    /// an offset counts from the bottom. Ranks stay the board's ranks: the bottom member
    /// of 1,000 ranked has rank 1,000 (competition and position ranks).
    Asc,
}

/// The part of a ranking a store read asks for: the members whose values are in
/// `range` (a [`ScoreRange`](super::ScoreRange) of totals, a
/// [`TrendRange`](super::TrendRange) of scores), from the `offset`-th of them counted in
/// `order` (from the bottom when ascending), at most `limit`, in that order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageQuery<R> {
    /// The values asked for.
    pub range: R,
    /// Which end the page is counted from.
    pub order: Order,
    /// Members of the range skipped first.
    pub offset: u64,
    /// Members answered at most.
    pub limit: u64,
}

impl<R> PageQuery<R> {
    /// `limit` members of `range` from the `offset`-th, counted in `order`.
    pub fn new(range: R, order: Order, offset: u64, limit: u64) -> Self {
        PageQuery {
            range,
            order,
            offset,
            limit,
        }
    }

    /// Its range, order, offset and limit.
    pub fn parts(self) -> (R, Order, u64, u64) {
        (self.range, self.order, self.offset, self.limit)
    }
}

impl PageQuery<super::ScoreRange> {
    /// `limit` members from the `offset`-th of the whole ranking, from rank 1.
    pub fn top(offset: u64, limit: u64) -> Self {
        PageQuery::new(super::ScoreRange::ALL, Order::Desc, offset, limit)
    }
}

impl Order {
    /// The name used on the wire and in the store's scripts.
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Desc => "desc",
            Order::Asc => "asc",
        }
    }
}

/// The shape of the page around a member.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AroundOptions {
    /// A full page of `2n + 1` entries when the ranking holds that many: shifted down
    /// near the top (the page starts at the first ranked member) and up near the bottom
    /// (it ends at the last); without it, up to `n` on each side, fewer at the ends.
    pub fill: bool,
    /// The order the entries come in (the same entries either way).
    pub order: Order,
}

/// The page around a member a store read asks for: up to `n` entries on each side of
/// `member`, shaped by `options`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AroundQuery<'a> {
    /// The member in the middle.
    pub member: &'a Member,
    /// Entries on each side at most.
    pub n: u64,
    /// The page's shape.
    pub options: AroundOptions,
}

/// The ranking positions `(start, count)` of a page: `offset` and `limit` counted in
/// `order` inside a run of `run` consecutive positions starting at position `first`
/// (the whole ranking, or the members of a score range).
pub fn page_positions(first: u64, run: u64, order: Order, offset: u64, limit: u64) -> (u64, u64) {
    let count = limit.min(run.saturating_sub(offset));
    match order {
        Order::Desc => (first + offset, count),
        Order::Asc => (first + run.saturating_sub(offset + count), count),
    }
}

/// The ranking positions `(start, count)` of the page around the member at `position`
/// of `ranked` members, `n` on each side.
pub fn around_positions(position: u64, ranked: u64, n: u64, fill: bool) -> (u64, u64) {
    if fill {
        let size = (2 * n + 1).min(ranked);
        let start = position.saturating_sub(n).min(ranked - size);
        return (start, size);
    }
    let start = position.saturating_sub(n);
    let end = (position + n + 1).min(ranked);
    (start, end - start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_from_the_bottom_count_their_offset_from_the_last_position() {
        assert_eq!(page_positions(0, 10, Order::Desc, 2, 3), (2, 3));
        assert_eq!(page_positions(0, 10, Order::Asc, 0, 3), (7, 3));
        assert_eq!(page_positions(0, 10, Order::Asc, 8, 5), (0, 2));
        assert_eq!(page_positions(0, 10, Order::Asc, 10, 5), (0, 0));
        assert_eq!(page_positions(4, 3, Order::Asc, 1, 10), (4, 2));
        assert_eq!(page_positions(4, 3, Order::Desc, 1, 10), (5, 2));
    }

    #[test]
    fn a_filled_page_shifts_at_the_ends_and_shrinks_only_to_the_ranking() {
        assert_eq!(around_positions(0, 10, 2, true), (0, 5));
        assert_eq!(around_positions(1, 10, 2, true), (0, 5));
        assert_eq!(around_positions(5, 10, 2, true), (3, 5));
        assert_eq!(around_positions(9, 10, 2, true), (5, 5));
        assert_eq!(around_positions(2, 3, 2, true), (0, 3));
        assert_eq!(around_positions(0, 1, 0, true), (0, 1));
        assert_eq!(around_positions(0, 10, 2, false), (0, 3));
        assert_eq!(around_positions(9, 10, 2, false), (7, 3));
        assert_eq!(around_positions(5, 10, 2, false), (3, 5));
    }
}
