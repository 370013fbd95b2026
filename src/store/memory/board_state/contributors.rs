//! A board's contributors in memory (a board with `per_contributor_member`): the events
//! with a contributor, kept apart from the slots' member values, per slot and (by,
//! member) in stages as a sum board's (`stages[k]`: written after `k` windows froze the
//! slot, plus what windows `< k` handed on), and per window each pair's sum inside it.
//! A window's total for a member holds each pair's sum clamped to the cap
//! ([`counted`]); the slots' member values hold the events without a contributor.

use std::collections::{BTreeMap, HashMap};

use crate::domain::{Contributor, MAX_ABS, RetireReport, Span, WindowContributions, counted};
use crate::store::memory::totals::Totals;
use crate::store::{SlotWrite, WriteStatus};

/// (contributor, member).
type Pair = (Contributor, String);

/// The contributions of one board.
#[derive(Debug, Default)]
pub(super) struct Contributions {
    /// The board's per-member cap.
    cap: Option<i64>,
    /// Live slots: slot start → pair → stage values (one per window).
    slots: BTreeMap<i64, HashMap<Pair, Vec<i64>>>,
    /// Per window: contributor → member → the sum of its deltas inside the window.
    sums: Vec<HashMap<Contributor, HashMap<String, i64>>>,
}

impl Contributions {
    pub fn new(cap: Option<i64>, windows: usize) -> Self {
        Contributions {
            cap,
            slots: BTreeMap::new(),
            sums: vec![HashMap::new(); windows],
        }
    }

    fn sum(&self, j: usize, by: &Contributor, member: &str) -> i64 {
        let members = self.sums[j].get(by);
        members.and_then(|m| m.get(member)).copied().unwrap_or(0)
    }

    /// Adds `delta` to the sum of (`by`, `member`) in window `j`, and what that changes
    /// of the member's counted part to `totals`; returns that change.
    fn add_sum(
        &mut self,
        j: usize,
        by: &Contributor,
        member: &str,
        delta: i64,
        totals: &mut Totals,
    ) -> i64 {
        let members = self.sums[j].entry(by.clone()).or_default();
        let old = members.get(member).copied().unwrap_or(0);
        let new = old + delta;
        if new == 0 {
            members.remove(member);
            if members.is_empty() {
                self.sums[j].remove(by);
            }
        } else {
            members.insert(member.to_owned(), new);
        }
        let change = counted(self.cap, new) - counted(self.cap, old);
        if change != 0 {
            totals.add(member, change);
        }
        change
    }

    /// Applies `w` (its `by` set) at stage `stage` to its slot and to the windows that
    /// count it, `counting` (windows `stage..n`): [`WriteStatus::Counted`] with what it
    /// counts in the largest window, or out of range when a pair's value or a total would
    /// leave ±(2^53 − 1).
    pub fn write(&mut self, counting: &mut [Totals], stage: usize, w: &SlotWrite) -> WriteStatus {
        let by = w.by.as_ref().expect("a contributor's write");
        let member = w.member.as_str();
        let n = self.sums.len();
        let pair = (by.clone(), member.to_owned());
        let slot_value: i64 = self
            .slots
            .get(&w.slot)
            .and_then(|s| s.get(&pair))
            .map_or(0, |stages| stages.iter().sum());
        let out_of_range = (slot_value + w.delta).abs() > MAX_ABS
            || (stage..n).zip(counting.iter()).any(|(j, totals)| {
                let old = self.sum(j, by, member);
                let change = counted(self.cap, old + w.delta) - counted(self.cap, old);
                (old + w.delta).abs() > MAX_ABS
                    || (totals.held(member).unwrap_or(0) + change).abs() > MAX_ABS
            });
        if out_of_range {
            return WriteStatus::OutOfRange;
        }
        let slot = self.slots.entry(w.slot).or_default();
        let stages = slot.entry(pair.clone()).or_insert_with(|| vec![0; n]);
        stages[stage] += w.delta;
        if stages.iter().all(|v| *v == 0) {
            slot.remove(&pair);
        }
        let mut last = 0;
        for (j, totals) in (stage..n).zip(counting.iter_mut()) {
            last = self.add_sum(j, by, member, w.delta, totals);
        }
        WriteStatus::Counted(last)
    }

    /// Retires slot `slot` from window `j` (totals `totals`): each pair's stage `j`
    /// leaves the window's sums and is handed on to stage `j + 1`; the members whose
    /// total reached 0 are added to `left`.
    pub fn retire(
        &mut self,
        totals: &mut Totals,
        j: usize,
        slot: i64,
        report: &mut RetireReport,
        left: &mut Vec<String>,
    ) {
        let Some(mut held) = self.slots.remove(&slot) else {
            return;
        };
        let handed_on = j + 1 < self.sums.len();
        for ((by, member), stages) in held.iter_mut() {
            let v = std::mem::take(&mut stages[j]);
            if v == 0 {
                continue;
            }
            report.fields_subtracted += 1;
            let change = self.add_sum(j, by, member, -v, totals);
            if change != 0 && totals.get(member).is_none() {
                report.members_zeroed += 1;
                left.push(member.clone());
            }
            if handed_on {
                stages[j + 1] += v;
            }
        }
        held.retain(|_, stages| stages.iter().any(|v| *v != 0));
        if handed_on && !held.is_empty() {
            self.slots.insert(slot, held);
        }
    }

    /// Takes `member`'s contributions out of every slot and window (`totals`, which
    /// lose their counted part); returns the slot values it held.
    pub fn remove(&mut self, totals: &mut [Totals], member: &str) -> u64 {
        let mut removed = 0;
        for slot in self.slots.values_mut() {
            slot.retain(|(_, m), stages| {
                if m == member {
                    removed += stages.iter().filter(|v| **v != 0).count() as u64;
                }
                m != member
            });
        }
        self.slots.retain(|_, slot| !slot.is_empty());
        for (j, window) in self.sums.iter_mut().enumerate() {
            for members in window.values_mut() {
                if let Some(sum) = members.remove(member) {
                    let c = counted(self.cap, sum);
                    if c != 0 {
                        totals[j].add(member, -c);
                    }
                }
            }
            window.retain(|_, members| !members.is_empty());
        }
        removed
    }

    /// The sum of `member`'s contributions per live slot from `from` on (its history's
    /// part of them).
    pub fn history(&self, from: i64, member: &str) -> BTreeMap<i64, i64> {
        let mut points = BTreeMap::new();
        for (slot, pairs) in self.slots.range(from..) {
            let v: i64 = pairs
                .iter()
                .filter(|((_, m), _)| m == member)
                .map(|(_, stages)| stages.iter().sum::<i64>())
                .sum();
            if v != 0 {
                points.insert(*slot, v);
            }
        }
        points
    }

    /// What `by` gave inside each window (`windows`).
    pub fn of(&self, windows: &[Span], by: &Contributor) -> Vec<WindowContributions> {
        windows
            .iter()
            .zip(&self.sums)
            .map(|(window, sums)| {
                let members = sums.get(by).map(|m| m.clone().into_iter().collect());
                WindowContributions::of(*window, self.cap, members.unwrap_or_default())
            })
            .collect()
    }
}
