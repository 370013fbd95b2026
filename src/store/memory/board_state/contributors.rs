//! A board's contributors in memory (a board with `per_contributor_member` or
//! `per_contributor`): the events with a contributor, kept apart from the slots' member
//! values, per slot and (by, member) in stages as a sum board's (`stages[k]`: written
//! after `k` windows froze the slot, plus what windows `< k` handed on), and per window
//! each pair's sums inside it. Each event's part the budget admitted is fixed when it is
//! written ([`admitted`]); the rest is refused and kept apart, for the contributor's
//! view. A window's total for a member holds each pair's admitted sum clamped to the cap
//! ([`counted`]); the slots' member values hold the events without a contributor.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::RangeInclusive;

use crate::domain::{
    Contributor, Given, MAX_ABS, RetireReport, Retracted, Span, WindowContributions,
    WindowContributors, admitted, counted,
};
use crate::store::memory::totals::Totals;
use crate::store::{SlotWrite, WriteStatus};

/// (contributor, member).
type Pair = (Contributor, String);

/// A pair's sums in a stage or a window: of what the budget admitted of its events, and
/// of what it refused (0 without a budget).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Parts {
    admitted: i64,
    refused: i64,
}

impl Parts {
    const ZERO: Parts = Parts {
        admitted: 0,
        refused: 0,
    };

    fn plus(self, other: Parts) -> Parts {
        Parts {
            admitted: self.admitted + other.admitted,
            refused: self.refused + other.refused,
        }
    }

    fn negated(self) -> Parts {
        Parts {
            admitted: -self.admitted,
            refused: -self.refused,
        }
    }

    fn out_of_range(self) -> bool {
        self.admitted.abs() > MAX_ABS || self.refused.abs() > MAX_ABS
    }
}

/// A live slot's contributions.
#[derive(Debug, Default)]
struct Slot {
    /// Pair → stage parts (one per window).
    pairs: HashMap<Pair, Vec<Parts>>,
    /// Contributor → what their admitted likes in the slot use of the budget.
    used: HashMap<Contributor, i64>,
}

/// The contributions of one board.
#[derive(Debug, Default)]
pub(super) struct Contributions {
    /// The board's per-member cap.
    cap: Option<i64>,
    /// The board's per-contributor budget.
    budget: Option<i64>,
    /// Live slots by start.
    slots: BTreeMap<i64, Slot>,
    /// Per window: contributor → member → the pair's sums inside the window.
    sums: Vec<HashMap<Contributor, HashMap<String, Parts>>>,
    /// Contributor → what their admitted likes use in the slots the largest window has
    /// not retired.
    used: HashMap<Contributor, i64>,
    /// The contributors quarantined: their admitted sums count in no total.
    held: HashSet<Contributor>,
}

/// Adds `delta` to `map[key]`, removing it at 0.
fn add<K: std::hash::Hash + Eq + Clone>(map: &mut HashMap<K, i64>, key: &K, delta: i64) {
    let value = map.get(key).copied().unwrap_or(0) + delta;
    if value == 0 {
        map.remove(key);
    } else {
        map.insert(key.clone(), value);
    }
}

impl Contributions {
    pub fn new(cap: Option<i64>, budget: Option<i64>, windows: usize) -> Self {
        Contributions {
            cap,
            budget,
            slots: BTreeMap::new(),
            sums: vec![HashMap::new(); windows],
            used: HashMap::new(),
            held: HashSet::new(),
        }
    }

    fn sum(&self, j: usize, by: &Contributor, member: &str) -> Parts {
        let members = self.sums[j].get(by);
        members
            .and_then(|m| m.get(member))
            .copied()
            .unwrap_or(Parts::ZERO)
    }

    /// Adds `parts` to the sums of (`by`, `member`) in window `j`, and what that changes
    /// of the member's counted part to `totals` (nothing while `by` is quarantined);
    /// returns that change.
    fn add_sum(
        &mut self,
        j: usize,
        by: &Contributor,
        member: &str,
        parts: Parts,
        totals: &mut Totals,
    ) -> i64 {
        let members = self.sums[j].entry(by.clone()).or_default();
        let old = members.get(member).copied().unwrap_or(Parts::ZERO);
        let new = old.plus(parts);
        if new == Parts::ZERO {
            members.remove(member);
            if members.is_empty() {
                self.sums[j].remove(by);
            }
        } else {
            members.insert(member.to_owned(), new);
        }
        if self.held.contains(by) {
            return 0;
        }
        let change = counted(self.cap, new.admitted) - counted(self.cap, old.admitted);
        if change != 0 {
            totals.add(member, change);
        }
        change
    }

    /// What `by`'s admitted events use of the budget (0 without one) and gave `member`
    /// inside the largest window, without the slots `left` that left it but are not
    /// retired yet.
    fn standing(&self, by: &Contributor, member: &str, left: RangeInclusive<i64>) -> (i64, i64) {
        let pair = (by.clone(), member.to_owned());
        let last = self.sums.len() - 1;
        let mut used = self.used.get(by).copied().unwrap_or(0);
        let mut given = self.sum(last, by, member).admitted;
        if !left.is_empty() {
            for slot in self.slots.range(left).map(|(_, s)| s) {
                used -= slot.used.get(by).copied().unwrap_or(0);
                let stages = slot.pairs.get(&pair).into_iter().flatten();
                given -= stages.map(|p| p.admitted).sum::<i64>();
            }
        }
        (used, given)
    }

    /// Applies `w` (its `by` set) at stage `stage` to its slot and to the windows that
    /// count it, `counting` (windows `stage..n`), what the budget admits of it reckoned
    /// without the slots `left` (see [`standing`](Self::standing)):
    /// [`WriteStatus::Counted`] with what it changes of the member's counted part in the
    /// largest window, or out of range when a pair's value or a total would leave
    /// ±(2^53 − 1).
    pub fn write(
        &mut self,
        counting: &mut [Totals],
        stage: usize,
        w: &SlotWrite,
        left: RangeInclusive<i64>,
    ) -> WriteStatus {
        let by = w.by.as_ref().expect("a contributor's write");
        let member = w.member.as_str();
        let n = self.sums.len();
        let (used, given) = self.standing(by, member, left);
        let admitted = admitted(self.budget, used, given, w.delta);
        let parts = Parts {
            admitted,
            refused: w.delta - admitted,
        };
        let pair = (by.clone(), member.to_owned());
        let slot_value = self
            .slots
            .get(&w.slot)
            .and_then(|s| s.pairs.get(&pair))
            .map_or(Parts::ZERO, |stages| {
                stages.iter().fold(Parts::ZERO, |a, p| a.plus(*p))
            });
        let out_of_range = slot_value.plus(parts).out_of_range()
            || (stage..n).zip(counting.iter()).any(|(j, totals)| {
                let old = self.sum(j, by, member);
                let new = old.plus(parts);
                let change = counted(self.cap, new.admitted) - counted(self.cap, old.admitted);
                new.out_of_range() || (totals.held(member).unwrap_or(0) + change).abs() > MAX_ABS
            });
        if out_of_range {
            return WriteStatus::OutOfRange;
        }
        let slot = self.slots.entry(w.slot).or_default();
        let stages = slot
            .pairs
            .entry(pair.clone())
            .or_insert_with(|| vec![Parts::ZERO; n]);
        stages[stage] = stages[stage].plus(parts);
        if stages.iter().all(|p| *p == Parts::ZERO) {
            slot.pairs.remove(&pair);
        }
        if parts.admitted > 0 && self.budget.is_some() {
            add(&mut slot.used, by, parts.admitted);
            add(&mut self.used, by, parts.admitted);
        }
        for (j, totals) in (stage..n).zip(counting.iter_mut()) {
            self.add_sum(j, by, member, parts, totals);
        }
        WriteStatus::Counted(counted(self.cap, given + admitted) - counted(self.cap, given))
    }

    /// Retires slot `slot` from window `j` (totals `totals`): each pair's stage `j`
    /// leaves the window's sums and is handed on to stage `j + 1`, and the largest
    /// window gives back the budget the slot used; the members whose total reached 0 are
    /// added to `left`.
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
        for ((by, member), stages) in held.pairs.iter_mut() {
            let v = std::mem::take(&mut stages[j]);
            if v == Parts::ZERO {
                continue;
            }
            report.fields_subtracted += 1;
            let change = self.add_sum(j, by, member, v.negated(), totals);
            if change != 0 && totals.get(member).is_none() {
                report.members_zeroed += 1;
                left.push(member.clone());
            }
            if handed_on {
                stages[j + 1] = stages[j + 1].plus(v);
            }
        }
        held.pairs
            .retain(|_, stages| stages.iter().any(|p| *p != Parts::ZERO));
        if handed_on {
            if !held.pairs.is_empty() || !held.used.is_empty() {
                self.slots.insert(slot, held);
            }
        } else {
            for (by, used) in &held.used {
                add(&mut self.used, by, -used);
            }
        }
    }

    /// Takes `member`'s contributions out of every slot and window (`totals`, which
    /// lose their counted part); returns the slot values it held (admitted and refused
    /// apart). The budget they used stays used.
    pub fn remove(&mut self, totals: &mut [Totals], member: &str) -> u64 {
        let mut removed = 0;
        for slot in self.slots.values_mut() {
            slot.pairs.retain(|(_, m), stages| {
                if m == member {
                    let fields = stages
                        .iter()
                        .map(|p| (p.admitted != 0) as u64 + (p.refused != 0) as u64);
                    removed += fields.sum::<u64>();
                }
                m != member
            });
        }
        self.slots
            .retain(|_, slot| !slot.pairs.is_empty() || !slot.used.is_empty());
        for (j, window) in self.sums.iter_mut().enumerate() {
            for (by, members) in window.iter_mut() {
                if let Some(sum) = members.remove(member) {
                    let c = counted(self.cap, sum.admitted);
                    if c != 0 && !self.held.contains(by) {
                        totals[j].add(member, -c);
                    }
                }
            }
            window.retain(|_, members| !members.is_empty());
        }
        removed
    }

    /// Takes `by`'s contributions in the slots from `from` on (every slot when `None`)
    /// out of every window (`totals` lose what that changes of the members' counted
    /// parts) and gives back the budget they used, as if never written; returns the
    /// members whose total it changed, and adds what it took back to `retracted`.
    pub fn retract(
        &mut self,
        totals: &mut [Totals],
        by: &Contributor,
        from: Option<i64>,
        retracted: &mut Retracted,
    ) -> Vec<String> {
        let mut taken: Vec<(String, Vec<Parts>)> = Vec::new();
        for slot in self
            .slots
            .range_mut(from.unwrap_or(i64::MIN)..)
            .map(|(_, s)| s)
        {
            slot.pairs.retain(|(b, member), stages| {
                if b == by {
                    taken.push((member.clone(), std::mem::take(stages)));
                }
                b != by
            });
            if let Some(used) = slot.used.remove(by) {
                add(&mut self.used, by, -used);
            }
        }
        self.slots
            .retain(|_, slot| !slot.pairs.is_empty() || !slot.used.is_empty());
        let mut changed = Vec::new();
        for (member, stages) in taken {
            retracted.contributions += 1;
            for (k, parts) in stages.into_iter().enumerate() {
                retracted.events += parts.admitted.unsigned_abs() + parts.refused.unsigned_abs();
                for (j, totals) in totals.iter_mut().enumerate().skip(k) {
                    if self.add_sum(j, by, &member, parts.negated(), totals) != 0 {
                        changed.push(member.clone());
                    }
                }
            }
        }
        changed
    }

    /// Quarantines `by` (`hold`) or releases it: its admitted sums leave the totals, or
    /// come back. Returns how many window sums that moved (none when it already was
    /// so) and the members whose totals changed.
    pub fn quarantine(
        &mut self,
        totals: &mut [Totals],
        by: &Contributor,
        hold: bool,
    ) -> (u64, Vec<String>) {
        if hold == self.held.contains(by) {
            return (0, Vec::new());
        }
        let (mut moved, mut changed) = (0, Vec::new());
        for (sums, totals) in self.sums.iter().zip(totals.iter_mut()) {
            for (member, parts) in sums.get(by).into_iter().flatten() {
                moved += u64::from(parts.admitted != 0);
                let c = counted(self.cap, parts.admitted);
                if c != 0 {
                    totals.add(member, if hold { -c } else { c });
                    changed.push(member.clone());
                }
            }
        }
        if hold {
            self.held.insert(by.clone());
        } else {
            self.held.remove(by);
        }
        (moved, changed)
    }

    /// What those of `writers` that are quarantined gave each member inside window `j`,
    /// as it would count were they not (members they gave nothing that counts left out).
    pub fn held_parts(&self, j: usize, writers: &[&Contributor]) -> HashMap<String, i64> {
        let mut parts = HashMap::new();
        for by in writers.iter().filter(|by| self.held.contains(**by)) {
            for (member, sums) in self.sums[j].get(*by).into_iter().flatten() {
                add(&mut parts, member, counted(self.cap, sums.admitted));
            }
        }
        parts
    }

    /// A pair's sums as a view reads them: a quarantined contributor's admitted sum is
    /// held.
    fn given(&self, by: &Contributor, p: Parts) -> Given {
        let held = self.held.contains(by);
        Given {
            admitted: if held { 0 } else { p.admitted },
            refused: p.refused,
            held: if held { p.admitted } else { 0 },
        }
    }

    /// The sum of `member`'s contributions (admitted or not) per live slot from `from`
    /// on (its history's part of them).
    pub fn history(&self, from: i64, member: &str) -> BTreeMap<i64, i64> {
        let mut points = BTreeMap::new();
        for (slot, held) in self.slots.range(from..) {
            let v: i64 = held
                .pairs
                .iter()
                .filter(|((_, m), _)| m == member)
                .flat_map(|(_, stages)| stages.iter().map(|p| p.admitted + p.refused))
                .sum();
            if v != 0 {
                points.insert(*slot, v);
            }
        }
        points
    }

    /// Who gave to `member` inside each window (`windows`), the first `limit` of each.
    pub fn given_to(
        &self,
        windows: &[Span],
        member: &str,
        limit: usize,
    ) -> Vec<WindowContributors> {
        windows
            .iter()
            .zip(&self.sums)
            .map(|(window, sums)| {
                let given = sums.iter().filter_map(|(by, members)| {
                    Some((by.to_string(), self.given(by, *members.get(member)?)))
                });
                WindowContributors::of(*window, self.cap, given.collect(), limit)
            })
            .collect()
    }

    /// What `by` gave inside each window (`windows`).
    pub fn of(&self, windows: &[Span], by: &Contributor) -> Vec<WindowContributions> {
        windows
            .iter()
            .zip(&self.sums)
            .map(|(window, sums)| {
                let members = sums.get(by).into_iter().flatten();
                let members = members.map(|(m, p)| (m.clone(), self.given(by, *p)));
                WindowContributions::of(*window, self.cap, members.collect())
            })
            .collect()
    }
}
