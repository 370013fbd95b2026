//! The seam between a board and its family in memory: what a slot keeps per member and
//! how a write, a retirement, a rebuild, a removal and a history point use it:
//! [`sums`](super::sums) for sum boards, and one value per slot and member for the
//! others ([`maxima`](super::maxima): `MAXIMA`, and [`latest`](super::latest):
//! `LATEST`). A board's is picked once, when it is made (`board_state::family_of`).

use std::collections::{BTreeMap, HashMap};

use super::totals::Totals;
use crate::domain::RetireReport;
use crate::store::{SlotWrite, WriteStatus};

/// A board's slots: slot start → member → what the family keeps there (a sum board: one
/// stage value per window; a max board: the member's highest value; a latest board:
/// `[at, value]` of its newest event).
pub(super) type Slots = BTreeMap<i64, HashMap<String, Vec<i64>>>;

/// What a family does its own way on a board of `totals.len()` windows.
pub(super) trait Family: std::fmt::Debug + Send + Sync {
    /// Applies `w` to `slots` and to the windows that count it, `counting` (those from
    /// the first that has not frozen its slot, which is stage `stage`, on).
    fn write(
        &self,
        slots: &mut Slots,
        counting: &mut [Totals],
        stage: usize,
        n: usize,
        w: &SlotWrite,
    ) -> WriteStatus;

    /// Retires slot `slot` from window `j`, whose totals are `totals[j]`; adds what it
    /// did to `report` and returns the members that left the window.
    fn retire(
        &self,
        slots: &mut Slots,
        totals: &mut [Totals],
        j: usize,
        slot: i64,
        report: &mut RetireReport,
    ) -> Vec<String>;

    /// Rebuilds the (empty) `totals` of window `window`, which counts the slots from
    /// `from` on; returns the values read.
    fn rebuild(&self, slots: &Slots, window: usize, from: i64, totals: &mut Totals) -> u64;

    /// Takes `member` out of every slot and window; returns the slot values it held.
    fn remove(&self, slots: &mut Slots, totals: &mut [Totals], member: &str) -> u64;

    /// The point of a member's history in a slot where it holds `held`, if any.
    fn point(&self, held: &[i64]) -> Option<i64>;

    /// Makes room in every slot for the windows of a board extended to `n` windows.
    fn extend(&self, _slots: &mut Slots, _n: usize) {}
}
