//! A max board in memory (a min board too: the library negates its values): each slot
//! keeps a member's highest value there (as its only stage), each window's totals the
//! highest of the values it counts, and retiring a slot from a window gives each member
//! of the slot the highest value of the newer live slots, as `retire_max.lua` does from
//! its peak lists (docs/design.md, "Max and min boards").

use std::collections::{BTreeMap, HashMap};

use super::totals::Totals;

/// A board's slots: slot start → member → stage values; a max board's hold one value,
/// the member's highest in the slot.
pub(super) type Slots = BTreeMap<i64, HashMap<String, Vec<i64>>>;

/// Records `value` for `member` in slot `slot`, counted in `counting` (the totals of
/// the windows that have not frozen the slot).
pub(super) fn write(
    slots: &mut Slots,
    counting: &mut [Totals],
    slot: i64,
    member: &str,
    value: i64,
) {
    let held = slots.entry(slot).or_default();
    held.entry(member.to_owned())
        .and_modify(|v| v[0] = v[0].max(value))
        .or_insert_with(|| vec![value]);
    for totals in counting {
        let raised = totals.get(member).map_or(value, |v| v.max(value));
        totals.set(member, Some(raised));
    }
}

/// The member's highest value in the slots of `slots` from `from` on.
pub(super) fn highest(slots: &Slots, from: i64, member: &str) -> Option<i64> {
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
/// Returns how many members were re-evaluated and those that left.
pub(super) fn retire(
    slots: &Slots,
    slot: i64,
    totals: &mut Totals,
    value: ValueFn,
) -> (u64, Vec<String>) {
    let Some(held) = slots.get(&slot) else {
        return (0, Vec::new());
    };
    let mut left = Vec::new();
    for member in held.keys() {
        let newer = value(slots, slot + 1, member);
        if newer.is_none() && totals.get(member).is_some() {
            left.push(member.clone());
        }
        totals.set(member, newer);
    }
    (held.len() as u64, left)
}

/// Recomputes the (empty) `totals` of a window counting the slots from `from` on: each
/// member of those slots gets `value(slots, from, member)`, as `recompute_max_scan.lua`
/// derives it from a member's record. Returns the members read in every live slot (what
/// Redis's scan reads).
pub(super) fn rebuild(slots: &Slots, from: i64, totals: &mut Totals, value: ValueFn) -> u64 {
    for (_, held) in slots.range(from..) {
        for member in held.keys() {
            if totals.get(member).is_none() {
                totals.set(member, value(slots, from, member));
            }
        }
    }
    slots.values().map(|held| held.len() as u64).sum()
}
