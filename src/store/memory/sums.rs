//! A sum board in memory: per slot and member, `stages[k]` holds the events written after
//! `k` windows had frozen the slot, plus what windows `< k` handed on when they retired
//! it. Stage `k` is counted in the totals of windows `k..n`; retiring window `j`
//! subtracts `stages[j]` from its totals and moves it to `stages[j + 1]`.

use super::family::{Family, Slots};
use super::totals::Totals;
use crate::domain::{MAX_ABS, RetireReport};
use crate::store::{SlotWrite, WriteStatus};

/// The sum family.
#[derive(Debug)]
pub(super) struct Sums;

impl Family for Sums {
    fn write(
        &self,
        slots: &mut Slots,
        counting: &mut [Totals],
        stage: usize,
        n: usize,
        w: &SlotWrite,
    ) -> WriteStatus {
        let member = w.member.as_str();
        // The slot is live from the first event that is not too late (as in Redis).
        let slot = slots.entry(w.slot).or_default();
        let current: i64 = slot.get(member).map_or(0, |stages| stages.iter().sum());
        let out_of_range = (current + w.delta).abs() > MAX_ABS
            || counting
                .iter()
                .any(|t| (t.held(member).unwrap_or(0) + w.delta).abs() > MAX_ABS);
        if out_of_range {
            return WriteStatus::OutOfRange;
        }
        let stages = slot.entry(member.to_owned()).or_insert_with(|| vec![0; n]);
        stages[stage] += w.delta;
        if stages.iter().all(|v| *v == 0) {
            slot.remove(member);
        }
        for totals in counting {
            totals.add(member, w.delta);
        }
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
        let mut left = Vec::new();
        let Some(held) = slots.get_mut(&slot) else {
            return left;
        };
        let handed_on = j + 1 < totals.len();
        for (member, stages) in held.iter_mut() {
            let v = std::mem::take(&mut stages[j]);
            if v == 0 {
                continue;
            }
            report.fields_subtracted += 1;
            if totals[j].add(member, -v) == 0 {
                report.members_zeroed += 1;
                left.push(member.clone());
            }
            if handed_on {
                stages[j + 1] += v;
            }
        }
        held.retain(|_, stages| stages.iter().any(|v| *v != 0));
        left
    }

    fn rebuild(&self, slots: &Slots, window: usize, _from: i64, totals: &mut Totals) -> u64 {
        let mut scanned = 0;
        for slot in slots.values() {
            for (member, stages) in slot {
                for v in stages[..=window].iter().filter(|v| **v != 0) {
                    scanned += 1;
                    totals.add(member, *v);
                }
            }
        }
        scanned
    }

    fn remove(&self, slots: &mut Slots, totals: &mut [Totals], member: &str) -> u64 {
        let mut removed = 0;
        for slot in slots.values_mut() {
            let Some(stages) = slot.remove(member) else {
                continue;
            };
            for (k, v) in stages.into_iter().enumerate().filter(|(_, v)| *v != 0) {
                removed += 1;
                for totals in &mut totals[k..] {
                    totals.add(member, -v);
                }
            }
        }
        removed
    }

    fn point(&self, held: &[i64]) -> Option<i64> {
        let value: i64 = held.iter().sum();
        (value != 0).then_some(value)
    }

    fn extend(&self, slots: &mut Slots, n: usize) {
        for stages in slots.values_mut().flat_map(|slot| slot.values_mut()) {
            stages.resize(n, 0);
        }
    }
}
