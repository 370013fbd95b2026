//! A latest board in memory: each slot keeps a member's newest event there as
//! `[at, value]` (its only "stage"), each window's totals the value of the member's
//! newest event among the slots it counts, and retiring a slot from a window gives each
//! member of the slot the value of its newest event in the newer live slots, as
//! `retire_max.lua` does from its records of newest events (docs/design.md, "Latest
//! boards"). Events are ordered by time, then value: of two at the same millisecond the
//! greater value is the newer.

use super::family::{Family, Slots};
use super::maxima;
use super::totals::Totals;
use crate::domain::RetireReport;
use crate::store::{SlotWrite, WriteStatus};

/// The latest family, whose slots hold one event per member, its newest there; retired,
/// rebuilt and removed as a max board is, by the value of the newest event.
#[derive(Debug)]
pub(super) struct Latest;

impl Family for Latest {
    fn write(
        &self,
        slots: &mut Slots,
        counting: &mut [Totals],
        _stage: usize,
        _n: usize,
        w: &SlotWrite,
    ) -> WriteStatus {
        write(slots, counting, w.slot, w.member.as_str(), w.at, w.delta);
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
        maxima::retire(slots, slot, &mut totals[j], newest_value, report)
    }

    fn rebuild(&self, slots: &Slots, _window: usize, from: i64, totals: &mut Totals) -> u64 {
        maxima::rebuild(slots, from, totals, newest_value)
    }

    fn remove(&self, slots: &mut Slots, totals: &mut [Totals], member: &str) -> u64 {
        maxima::remove(slots, totals, member)
    }

    fn point(&self, held: &[i64]) -> Option<i64> {
        maxima::point(held)
    }
}

/// The value of the member's newest event in the slots of `slots` from `from` on (how
/// retirement re-evaluates a latest board's members: `maxima::retire`).
fn newest_value(slots: &Slots, from: i64, member: &str) -> Option<i64> {
    newest(slots, from, member).map(|(_, value)| value)
}

/// The member's newest event (`(at, value)`) in the slots of `slots` from `from` on.
fn newest(slots: &Slots, from: i64, member: &str) -> Option<(i64, i64)> {
    slots
        .range(from..)
        .filter_map(|(_, held)| held.get(member).map(|v| (v[0], v[1])))
        .max()
}

/// Records the event (`at`, `value`) of `member` in slot `slot`; when it is the member's
/// newest, it is the value of each window of `counting` (those that have not frozen the
/// slot).
fn write(slots: &mut Slots, counting: &mut [Totals], slot: i64, member: &str, at: i64, value: i64) {
    let held = slots.entry(slot).or_default();
    held.entry(member.to_owned())
        .and_modify(|v| {
            if (at, value) > (v[0], v[1]) {
                *v = vec![at, value];
            }
        })
        .or_insert_with(|| vec![at, value]);
    if newest(slots, i64::MIN, member) == Some((at, value)) {
        for totals in counting {
            totals.set(member, Some(value));
        }
    }
}
