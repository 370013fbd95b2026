//! A latest board in memory: each slot keeps a member's newest event there as
//! `[at, value]` (its only "stage"), each window's totals the value of the member's
//! newest event among the slots it counts, and retiring a slot from a window gives each
//! member of the slot the value of its newest event in the newer live slots, as
//! `retire_max.lua` does from its records of newest events (docs/design.md, "Latest
//! boards"). Events are ordered by time, then value: of two at the same millisecond the
//! greater value is the newer.

use super::family::Slots;
use super::maxima::OneValue;
use super::totals::Totals;
use crate::store::SlotWrite;

/// The latest family: a slot keeps each member's newest event there; retired, rebuilt
/// and removed as a max board is, by the value of the newest event.
pub(super) static LATEST: OneValue = OneValue {
    write,
    value: newest_value,
};

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

/// Records the write's event (`at`, value) for its member in its slot; when it is the
/// member's newest, it is the value of each window of `counting` (those that have not
/// frozen the slot).
fn write(slots: &mut Slots, counting: &mut [Totals], w: &SlotWrite) {
    let (member, at, value) = (w.member.as_str(), w.at, w.delta);
    let held = slots.entry(w.slot).or_default();
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
