//! A latest board in memory: each slot keeps a member's newest event there as
//! `[at, value]` (its only "stage"), each window's totals the value of the member's
//! newest event among the slots it counts, and retiring a slot from a window gives each
//! member of the slot the value of its newest event in the newer live slots, as
//! `retire_max.lua` does from its records of newest events (docs/design.md, "Latest
//! boards"). Events are ordered by time, then value: of two at the same millisecond the
//! greater value is the newer.

use super::maxima::Slots;
use super::totals::Totals;

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
pub(super) fn write(
    slots: &mut Slots,
    counting: &mut [Totals],
    slot: i64,
    member: &str,
    at: i64,
    value: i64,
) {
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

/// Retires slot `slot` from a window whose totals are `totals`: each member of the slot
/// gets the value of its newest event in a newer live slot, or leaves. Returns how many
/// members were re-evaluated and those that left.
pub(super) fn retire(slots: &Slots, slot: i64, totals: &mut Totals) -> (u64, Vec<String>) {
    let Some(held) = slots.get(&slot) else {
        return (0, Vec::new());
    };
    let mut left = Vec::new();
    for member in held.keys() {
        let value = newest(slots, slot + 1, member).map(|(_, v)| v);
        if value.is_none() && totals.get(member).is_some() {
            left.push(member.clone());
        }
        totals.set(member, value);
    }
    (held.len() as u64, left)
}
