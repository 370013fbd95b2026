//! A max board in memory (a min board too: the library negates its values): each slot
//! keeps a member's highest value there (as its only stage), each window's totals the
//! highest of the values it counts, and retiring a slot from a window gives each member
//! of the slot the highest value of the newer live slots, as `retire_max.lua` does from
//! its peak lists (docs/design.md, "Max and min boards").

use super::family::{Family, Slots};
use super::totals::Totals;
use crate::domain::RetireReport;
use crate::store::{SlotWrite, WriteStatus};

/// A family whose slots hold one value per member: max boards (min boards too,
/// [`MAXIMA`]) and latest boards (`latest::LATEST`), which differ in how a write keeps
/// a slot's value and how a member's value is found in the slots from a start on.
#[derive(Debug)]
pub(super) struct OneValue {
    /// Records a write in the slots and in the windows that count it.
    pub write: fn(&mut Slots, &mut [Totals], &SlotWrite),
    /// A member's value in the slots from a start on.
    pub value: ValueFn,
}

/// The max family: a slot keeps each member's highest value there.
pub(super) static MAXIMA: OneValue = OneValue {
    write,
    value: highest,
};

impl Family for OneValue {
    fn write(
        &self,
        slots: &mut Slots,
        counting: &mut [Totals],
        _stage: usize,
        _n: usize,
        w: &SlotWrite,
    ) -> WriteStatus {
        (self.write)(slots, counting, w);
        WriteStatus::Applied
    }

    fn retire(
        &self,
        slots: &mut Slots,
        totals: &mut [Totals],
        j: usize,
        slot: i64,
        report: &mut RetireReport,
    ) -> Vec<String> {
        retire(slots, slot, &mut totals[j], self.value, report)
    }

    fn rebuild(&self, slots: &Slots, _window: usize, from: i64, totals: &mut Totals) -> u64 {
        rebuild(slots, from, totals, self.value)
    }

    /// Takes `member` out of every slot and window.
    fn remove(&self, slots: &mut Slots, totals: &mut [Totals], member: &str) -> u64 {
        let mut removed = 0;
        for slot in slots.values_mut() {
            removed += u64::from(slot.remove(member).is_some());
        }
        for totals in totals {
            totals.set(member, None);
        }
        removed
    }

    /// A member's value in a slot (a latest board's, after its time), 0 included.
    fn point(&self, held: &[i64]) -> Option<i64> {
        held.last().copied()
    }
}

/// Records the write's value for its member in its slot, counted in `counting` (the
/// totals of the windows that have not frozen the slot).
fn write(slots: &mut Slots, counting: &mut [Totals], w: &SlotWrite) {
    let (member, value) = (w.member.as_str(), w.delta);
    let held = slots.entry(w.slot).or_default();
    held.entry(member.to_owned())
        .and_modify(|v| v[0] = v[0].max(value))
        .or_insert_with(|| vec![value]);
    for totals in counting {
        let raised = totals.held(member).map_or(value, |v| v.max(value));
        totals.set(member, Some(raised));
    }
}

/// The member's highest value in the slots of `slots` from `from` on.
fn highest(slots: &Slots, from: i64, member: &str) -> Option<i64> {
    slots
        .range(from..)
        .filter_map(|(_, held)| held.get(member).map(|v| v[0]))
        .max()
}

/// A member's value in the slots of `slots` from a start on: [`highest`], or a latest
/// board's `latest::newest_value`.
pub(super) type ValueFn = fn(&Slots, i64, &str) -> Option<i64>;

/// Retires slot `slot` from a window whose totals are `totals`: each member of the slot
/// gets its value in the newer live slots, `value(slots, from, member)`, or leaves.
/// Adds to `report` and returns the members that left.
fn retire(
    slots: &Slots,
    slot: i64,
    totals: &mut Totals,
    value: ValueFn,
    report: &mut RetireReport,
) -> Vec<String> {
    let Some(held) = slots.get(&slot) else {
        return Vec::new();
    };
    let mut left = Vec::new();
    for member in held.keys() {
        let newer = value(slots, slot + 1, member);
        if newer.is_none() && totals.held(member).is_some() {
            left.push(member.clone());
        }
        totals.set(member, newer);
    }
    report.fields_subtracted += held.len() as u64;
    report.members_zeroed += left.len() as u64;
    left
}

/// Recomputes the (empty) `totals` of a window counting the slots from `from` on: each
/// member of those slots gets `value(slots, from, member)`, as `recompute_max_scan.lua`
/// derives it from a member's record. Returns the members read in every live slot (what
/// Redis's scan reads).
fn rebuild(slots: &Slots, from: i64, totals: &mut Totals, value: ValueFn) -> u64 {
    for (_, held) in slots.range(from..) {
        for member in held.keys() {
            if totals.held(member).is_none() {
                totals.set(member, value(slots, from, member));
            }
        }
    }
    slots.values().map(|held| held.len() as u64).sum()
}
