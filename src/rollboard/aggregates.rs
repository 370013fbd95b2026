//! Max, min and latest boards as the library hands them to the stores, through its
//! store wrapper ([`InvalidatingStore`](super::invalidate::InvalidatingStore)):
//!
//! - A min board is kept as a max board of negated values (admission negates each value
//!   on the way in, see [`Aggregate`]). Each read passes through here, which negates the
//!   score ranges asked and every value answered, so callers only ever see a min
//!   board's own values. Orders need no change: the store's ranking of negated values is
//!   the min board's ranking (lowest value first, rank 1), and an
//!   [`Order`](crate::domain::Order) names an end of the ranking.
//! - What these boards do not take (`relayout`: such a board keeps its layout) is
//!   refused here ([`sums_only`]), the same on every store.

use crate::domain::AheadProbe;
use crate::domain::WrittenStanding;
use crate::domain::board::Board;
use crate::domain::{Aggregate, History, Ranks, ScoreRange, Snapshot, Standing, TopPage};
use crate::error::{Error, Result};

/// Refuses `what` on a max, min or latest board: [`Error::AggregateUnsupported`].
pub(super) fn sums_only(board: &Board, what: &'static str) -> Result<()> {
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

/// Whether `board` keeps its values negated.
fn negated(board: &Board) -> bool {
    board.config.aggregate() == Aggregate::Min
}

/// The range to ask the store for `range` of `board`'s values.
pub(super) fn range(board: &Board, range: ScoreRange) -> ScoreRange {
    if negated(board) {
        range.negated()
    } else {
        range
    }
}

/// The probes to ask the store for `probes` of `board`'s values.
pub(super) fn probes(board: &Board, probes: &[AheadProbe]) -> Vec<AheadProbe> {
    let sign = if negated(board) { -1 } else { 1 };
    probes
        .iter()
        .map(|p| AheadProbe {
            total: sign * p.total,
            member: p.member.clone(),
        })
        .collect()
}

/// A page read from the store, with `board`'s values.
pub(super) fn page(board: &Board, mut page: TopPage) -> TopPage {
    if negated(board) {
        page.entries.iter_mut().for_each(|e| e.score = -e.score);
    }
    page
}

/// A standing read from the store, with `board`'s value.
pub(super) fn standing(board: &Board, standing: Option<Standing>) -> Option<Standing> {
    standing.map(|mut s| {
        if negated(board) {
            s.score = -s.score;
        }
        s
    })
}

/// The standings a write answered, with `board`'s values.
pub(super) fn written(board: &Board, mut standings: Vec<WrittenStanding>) -> Vec<WrittenStanding> {
    if negated(board) {
        for w in standings.iter_mut().flat_map(|s| s.windows.iter_mut()) {
            w.score = -w.score;
            w.score_before = w.score_before.map(|s| -s);
        }
    }
    standings
}

/// Ranks read from the store, with `board`'s values.
pub(super) fn ranks(board: &Board, mut ranks: Ranks) -> Ranks {
    if negated(board) {
        ranks.entries.iter_mut().for_each(|e| e.score = -e.score);
    }
    ranks
}

/// A history read from the store, with `board`'s values.
pub(super) fn history(board: &Board, mut history: History) -> History {
    if negated(board) {
        history.points.iter_mut().for_each(|p| p.value = -p.value);
    }
    history
}

/// Snapshots read from the store, with `board`'s values.
pub(super) fn snapshots(board: &Board, mut snapshots: Vec<Snapshot>) -> Vec<Snapshot> {
    if negated(board) {
        for s in &mut snapshots {
            s.entries.iter_mut().for_each(|e| e.score = -e.score);
        }
    }
    snapshots
}
