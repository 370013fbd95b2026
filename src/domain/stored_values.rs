//! A board's values as the stores keep them. A min board is kept as a max board of
//! negated values (admission negates each value on the way in: [`Aggregate::sign`](super::Aggregate::sign)), so
//! whatever a store answers about one is negated back ([`own_values`]) and a score range
//! asked of it is negated on the way in ([`stored_range`]): callers only ever see a min
//! board's own values. Orders need no change: the stores' ranking of negated values is
//! the min board's ranking (lowest value first, rank 1), and an
//! [`Order`] names an end of the ranking ([`ranking_end`] maps an order of values to one). What max, min and latest boards
//! do not take is refused by [`sums_only`], the same on every store.

use super::WrittenStanding;
use super::board::Board;
use super::error::{Error, Result};
use super::{History, Order, Ranks, ScoreRange, Snapshot, Standing, TopPage};

/// An answer holding values of a board.
pub(crate) trait Values {
    /// Negates every value it holds.
    fn negate(&mut self);
}

impl Values for TopPage {
    fn negate(&mut self) {
        self.entries.iter_mut().for_each(|e| e.score = -e.score);
    }
}

impl Values for Ranks {
    fn negate(&mut self) {
        self.entries.iter_mut().for_each(|e| e.score = -e.score);
    }
}

impl Values for Standing {
    fn negate(&mut self) {
        self.score = -self.score;
    }
}

impl Values for History {
    fn negate(&mut self) {
        self.points.iter_mut().for_each(|p| p.value = -p.value);
    }
}

impl Values for Snapshot {
    fn negate(&mut self) {
        self.entries.iter_mut().for_each(|e| e.score = -e.score);
    }
}

impl Values for WrittenStanding {
    fn negate(&mut self) {
        for w in &mut self.windows {
            w.score = -w.score;
            w.score_before = w.score_before.map(|s| -s);
        }
    }
}

impl<T: Values> Values for Option<T> {
    fn negate(&mut self) {
        self.iter_mut().for_each(Values::negate);
    }
}

impl<T: Values> Values for Vec<T> {
    fn negate(&mut self) {
        self.iter_mut().for_each(Values::negate);
    }
}

/// Whether the stores keep `board`'s values negated (a min board).
fn negated(board: &Board) -> bool {
    board.config.aggregate().sign() < 0
}

/// `answer`, read from the store, with `board`'s own values.
pub(crate) fn own_values<T: Values>(board: &Board, mut answer: T) -> T {
    if negated(board) {
        answer.negate();
    }
    answer
}

/// The range to ask the store for `range` of `board`'s values.
pub(crate) fn stored_range(board: &Board, range: ScoreRange) -> ScoreRange {
    if negated(board) {
        range.negated()
    } else {
        range
    }
}

/// The end of `board`'s ranking a read starts from for the order of values `asked`
/// (`desc` highest first, `asc` lowest first): the same order, but on a min board,
/// whose rank 1 is its lowest value, the reverse ([`Order::Desc`] names the top of a
/// ranking).
pub(crate) fn ranking_end(board: &Board, asked: Order) -> Order {
    match (negated(board), asked) {
        (true, Order::Desc) => Order::Asc,
        (true, Order::Asc) => Order::Desc,
        (false, order) => order,
    }
}

/// Refuses `what` on a max, min or latest board: [`Error::AggregateUnsupported`].
pub(crate) fn sums_only(board: &Board, what: &'static str) -> Result<()> {
    let aggregate = board.config.aggregate();
    if aggregate.sums() {
        return Ok(());
    }
    Err(Error::AggregateUnsupported {
        board: board.name.to_string(),
        aggregate: aggregate.as_str(),
        what,
    })
}
