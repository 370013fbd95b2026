//! The totals of one window in memory: member → total, also kept in ranking order
//! (score descending, member ascending) so pages and ranks read in order. The ranked
//! totals (positive ones, or every non-zero one on a `"rank":"nonzero"` board) are a
//! prefix of that order. A dense board also keeps a tally of its ranked totals (total → members holding it), so a dense
//! rank is 1 + the number of distinct totals above; a position rank is the member's
//! 1-based place in that order.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::domain::{Entry, RankedTotals, Ties};

/// Member totals of one window. A member whose total reaches exactly zero is removed.
#[derive(Debug, Default, Clone)]
pub(super) struct Totals {
    scores: HashMap<String, i64>,
    /// The same entries as `scores`, in ranking order.
    order: BTreeSet<(Reverse<i64>, String)>,
    /// How many totals are ranked.
    ranked: u64,
    /// Which totals are ranked.
    rank: RankedTotals,
    /// How equal totals share ranks.
    ties: Ties,
    /// Dense boards only: ranked total → how many members hold it.
    tally: BTreeMap<i64, u64>,
    /// Hidden members (moderation) and their totals (`None`: none), kept out of
    /// `scores`, `order`, the ranked count and the tally: every ranking read leaves them
    /// out, and the ranks below close up. Writes and retirement keep them exact here.
    hidden: HashMap<String, Option<i64>>,
}

impl Totals {
    /// Empty totals ranking the totals `rank` says, ties by `ties`.
    pub fn new(rank: RankedTotals, ties: Ties) -> Self {
        Totals {
            rank,
            ties,
            ..Totals::default()
        }
    }

    /// Counts one more (`up`) or one fewer member holding `total`, when it is ranked.
    fn retally(&mut self, total: i64, up: bool) {
        if self.ties != Ties::Dense || !self.rank.ranks(total) {
            return;
        }
        let count = self.tally.entry(total).or_insert(0);
        if up {
            *count += 1;
        } else {
            *count -= 1;
            if *count == 0 {
                self.tally.remove(&total);
            }
        }
    }

    /// The member's total, if it has one.
    pub fn get(&self, member: &str) -> Option<i64> {
        self.scores.get(member).copied()
    }

    /// Members with a non-zero total.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Adds `delta` to the member's total and returns the new total (0 means removed).
    pub fn add(&mut self, member: &str, delta: i64) -> i64 {
        if let Some(total) = self.hidden.get_mut(member) {
            let new = total.unwrap_or(0) + delta;
            *total = (new != 0).then_some(new);
            return new;
        }
        let old = self.scores.get(member).copied();
        if let Some(old) = old {
            self.order.remove(&(Reverse(old), member.to_owned()));
            self.retally(old, false);
        }
        let new = old.unwrap_or(0) + delta;
        self.retally(new, true);
        self.ranked -= u64::from(old.is_some_and(|o| self.rank.ranks(o)));
        self.ranked += u64::from(self.rank.ranks(new));
        if new == 0 {
            self.scores.remove(member);
        } else {
            self.scores.insert(member.to_owned(), new);
            self.order.insert((Reverse(new), member.to_owned()));
        }
        new
    }

    /// Sets the member's value (a max board's), or removes it (`None`).
    pub fn set(&mut self, member: &str, value: Option<i64>) {
        if let Some(total) = self.hidden.get_mut(member) {
            *total = value;
            return;
        }
        let old = self.scores.get(member).copied();
        if old == value {
            return;
        }
        if let Some(old) = old {
            self.order.remove(&(Reverse(old), member.to_owned()));
            self.retally(old, false);
            self.ranked -= u64::from(self.rank.ranks(old));
        }
        match value {
            Some(new) => {
                self.retally(new, true);
                self.ranked += u64::from(self.rank.ranks(new));
                self.scores.insert(member.to_owned(), new);
                self.order.insert((Reverse(new), member.to_owned()));
            }
            None => {
                self.scores.remove(member);
            }
        }
    }

    /// Hides `member`: its total (if any) leaves the ranking and is kept apart, where
    /// writes and retirement go on adding to it. False when it was hidden already.
    pub fn hide(&mut self, member: &str) -> bool {
        if self.hidden.contains_key(member) {
            return false;
        }
        let total = self.get(member);
        self.set(member, None);
        self.hidden.insert(member.to_owned(), total);
        true
    }

    /// Shows a hidden `member` again at the rank its total gives. False when it was not
    /// hidden.
    pub fn show(&mut self, member: &str) -> bool {
        match self.hidden.remove(member) {
            Some(total) => {
                self.set(member, total);
                true
            }
            None => false,
        }
    }

    /// The total of a hidden `member` (`Some(None)`: hidden, holding none); `None` when
    /// it is not hidden.
    pub fn hidden_total(&self, member: &str) -> Option<Option<i64>> {
        self.hidden.get(member).copied()
    }

    /// The member's total, hidden or not.
    pub fn held(&self, member: &str) -> Option<i64> {
        self.hidden_total(member)
            .unwrap_or_else(|| self.get(member))
    }

    /// The hidden members.
    pub fn hidden(&self) -> impl Iterator<Item = &str> {
        self.hidden.keys().map(String::as_str)
    }

    /// The ranked members and their totals, in ranking order.
    pub fn ranked_entries(&self) -> impl Iterator<Item = (i64, &str)> {
        let ranked = self.order.iter().take(self.ranked as usize);
        ranked.map(|(Reverse(score), member)| (*score, member.as_str()))
    }

    /// Members with a ranked total.
    pub fn ranked(&self) -> u64 {
        self.ranked
    }

    /// Which totals are ranked.
    pub fn rank_rule(&self) -> RankedTotals {
        self.rank
    }

    /// Ranked members ahead of `total` (held by `member`, when given): a strictly higher
    /// total, or the same one and a member before it. The ranked members are a prefix of
    /// the ranking order, so those are the entries before it, at most every ranked one.
    pub fn ahead(&self, total: i64, member: Option<&str>) -> u64 {
        let probe = (Reverse(total), member.unwrap_or_default().to_owned());
        (self.order.range(..probe).count() as u64).min(self.ranked)
    }

    /// Members whose total is in `min..=max` (0 when `max < min`).
    pub fn count_between(&self, min: i64, max: i64) -> u64 {
        if max < min {
            return 0;
        }
        let end = match min.checked_sub(1) {
            Some(below) => std::ops::Bound::Excluded((Reverse(below), String::new())),
            None => std::ops::Bound::Unbounded,
        };
        let start = std::ops::Bound::Included((Reverse(max), String::new()));
        self.order.range((start, end)).count() as u64
    }

    /// Rank of `member`, whose total is `score`: 1 + the number of members
    /// (competition) or of distinct totals (dense) higher, or its 1-based position
    /// (position).
    pub fn rank(&self, member: &str, score: i64) -> u64 {
        match self.ties {
            Ties::Competition => {
                self.order.range(..(Reverse(score), String::new())).count() as u64 + 1
            }
            Ties::Dense => self.tally.range(score.saturating_add(1)..).count() as u64 + 1,
            Ties::Position => self.position(member, score) + 1,
        }
    }

    /// The member's 0-based position in ranking order.
    pub fn position(&self, member: &str, score: i64) -> u64 {
        self.order
            .range(..(Reverse(score), member.to_owned()))
            .count() as u64
    }

    /// Entries with a ranked total at positions `offset..offset + limit`.
    pub fn page(&self, offset: u64, limit: u64) -> Vec<Entry> {
        let mut entries = Vec::new();
        let mut rank = 0;
        let mut distinct = 0;
        let mut previous = None;
        for (position, (Reverse(score), member)) in self.order.iter().enumerate() {
            let position = position as u64;
            if !self.rank.ranks(*score) || position >= offset + limit {
                break;
            }
            if previous != Some(*score) {
                distinct += 1;
                rank = match self.ties {
                    Ties::Competition | Ties::Position => position + 1,
                    Ties::Dense => distinct,
                };
                previous = Some(*score);
            }
            if self.ties == Ties::Position {
                rank = position + 1;
            }
            if position >= offset {
                entries.push(Entry {
                    rank,
                    member: member.clone(),
                    score: *score,
                    data: None,
                    pinned: false,
                    movement: None,
                });
            }
        }
        entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_rank_ties_together_and_order_them_by_name() {
        let mut t = Totals::default();
        for (m, s) in [("b", 5), ("a", 5), ("c", 3), ("d", -1), ("e", 7)] {
            t.add(m, s);
        }
        let page: Vec<(u64, String, i64)> = t
            .page(0, 10)
            .into_iter()
            .map(|e| (e.rank, e.member, e.score))
            .collect();
        let expected = [(1, "e", 7), (2, "a", 5), (2, "b", 5), (4, "c", 3)]
            .map(|(r, m, s)| (r, m.to_owned(), s));
        assert_eq!(page, expected);
        assert_eq!(t.page(2, 1)[0].rank, 2);
        assert_eq!(t.rank("b", 5), 2);
        assert_eq!(t.position("b", 5), 2);
        assert_eq!(t.ranked(), 4);
        assert_eq!(t.count_between(3, 5), 3);
        assert_eq!(t.count_between(6, 7), 1);
        assert_eq!(t.count_between(i64::MIN, 0), 1);
        assert_eq!(t.count_between(5, 4), 0);
    }

    #[test]
    fn dense_totals_rank_ties_one_one_two() {
        let mut t = Totals::new(RankedTotals::Positive, Ties::Dense);
        for (m, s) in [("b", 5), ("a", 5), ("c", 3), ("d", -1), ("e", 7), ("f", 9)] {
            t.add(m, s);
        }
        t.add("f", -9);
        let ranks: Vec<(u64, String)> = t
            .page(0, 10)
            .into_iter()
            .map(|e| (e.rank, e.member))
            .collect();
        let expected = [(1, "e"), (2, "a"), (2, "b"), (3, "c")].map(|(r, m)| (r, m.to_owned()));
        assert_eq!(ranks, expected);
        assert_eq!(t.page(3, 1)[0].rank, 3);
        assert_eq!(t.rank("b", 5), 2);
        assert_eq!(t.rank("c", 3), 3);
        t.add("e", -2);
        assert_eq!(t.rank("c", 3), 2);
        assert_eq!(t.tally, BTreeMap::from([(3, 1), (5, 3)]));
    }

    #[test]
    fn position_totals_number_ties_in_member_order() {
        let mut t = Totals::new(RankedTotals::Positive, Ties::Position);
        for (m, s) in [("b", 5), ("a", 5), ("c", 3), ("d", -1), ("e", 7)] {
            t.add(m, s);
        }
        let ranks: Vec<(u64, String)> = t
            .page(0, 10)
            .into_iter()
            .map(|e| (e.rank, e.member))
            .collect();
        let expected = [(1, "e"), (2, "a"), (3, "b"), (4, "c")].map(|(r, m)| (r, m.to_owned()));
        assert_eq!(ranks, expected);
        assert_eq!(t.page(2, 1)[0].rank, 3);
        assert_eq!((t.rank("a", 5), t.rank("b", 5)), (2, 3));
    }

    #[test]
    fn nonzero_totals_rank_negative_totals_below_positive_ones() {
        let mut t = Totals::new(RankedTotals::Nonzero, Ties::Competition);
        for (m, s) in [
            ("a", 3),
            ("b", 1),
            ("c", -2),
            ("d", -5),
            ("e", 4),
            ("e", -4),
        ] {
            t.add(m, s);
        }
        let page: Vec<(u64, String, i64)> = t
            .page(0, 10)
            .into_iter()
            .map(|e| (e.rank, e.member, e.score))
            .collect();
        let expected = [(1, "a", 3), (2, "b", 1), (3, "c", -2), (4, "d", -5)]
            .map(|(r, m, s)| (r, m.into(), s));
        assert_eq!(page, expected);
        assert_eq!((t.ranked(), t.len()), (4, 4));
        assert_eq!(t.rank("d", -5), 4);
        assert_eq!(t.count_between(-5, -2), 2);
        t.add("c", 2);
        assert_eq!((t.ranked(), t.len()), (3, 3));
    }

    #[test]
    fn a_hidden_member_keeps_counting_out_of_the_ranking_and_comes_back_exact() {
        let mut totals = Totals::new(RankedTotals::Positive, Ties::Dense);
        totals.add("a", 5);
        totals.add("b", 3);
        totals.add("c", 5);
        assert!(totals.hide("a"));
        assert!(!totals.hide("a"));
        assert_eq!(totals.add("a", 2), 7);
        assert_eq!(totals.get("a"), None);
        assert_eq!(totals.hidden_total("a"), Some(Some(7)));
        assert_eq!(totals.ranked(), 2);
        let page = totals.page(0, 10);
        let ranks: Vec<(&str, u64)> = page.iter().map(|e| (e.member.as_str(), e.rank)).collect();
        assert_eq!(ranks, [("c", 1), ("b", 2)]);
        // Hidden while holding nothing, then written to: the total stays apart.
        assert!(totals.hide("d"));
        totals.add("d", 9);
        assert_eq!(totals.page(0, 10).len(), 2);
        assert!(totals.show("a"));
        assert!(!totals.show("a"));
        let page = totals.page(0, 10);
        let ranks: Vec<(&str, i64, u64)> = page
            .iter()
            .map(|e| (e.member.as_str(), e.score, e.rank))
            .collect();
        assert_eq!(ranks, [("a", 7, 1), ("c", 5, 2), ("b", 3, 3)]);
        assert_eq!(totals.held("d"), Some(9));
        totals.add("d", -9);
        assert_eq!(totals.hidden_total("d"), Some(None));
    }

    #[test]
    fn a_total_of_zero_removes_the_member() {
        let mut t = Totals::default();
        t.add("a", 2);
        assert_eq!(t.add("a", -2), 0);
        assert_eq!(t.len(), 0);
        assert_eq!(t.get("a"), None);
    }
}
