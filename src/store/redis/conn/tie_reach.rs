//! Tie reach: what a top page's transaction reads past its edges (`board/read_top.rs`),
//! learned per window's totals.
//!
//! A tie group cut by a page's edge is ordered by member ascending, which `ZREVRANGE`
//! reverses, so reading one entry past an edge only tells that a group is cut, and
//! `read_ranking.lua` then reads the page in a second round trip. Boards whose totals
//! are small integers (likes) are full of ties, and a hot board's top page is cut
//! through one on every read. So each window learns two things:
//! - **Its last groups' scores.** A page whose last group goes on past it needs that
//!   group's first members in member order: `ZRANGE totals s s BYSCORE LIMIT`, once the
//!   group's score `s` is known. A read that finds its last group cut keeps the score
//!   for the next read of a page ending at the same position (up to [`EDGES`] such
//!   pages a window), which reads the group that way in the same transaction, however
//!   large it is; a read whose last group has another score by then (writes moved the
//!   edge) and is cut goes to the script once, and keeps the new score.
//! - **Its reach**, the entries read before a page and after it (after it one, enough
//!   to tell whether its last group goes on, when that group is read by its score), for
//!   the pages that cut other groups. A read that did not find where its groups end
//!   makes the window's next reads read further, until they hold them; a window whose
//!   groups outgrow [`MOST`] is read by the script, as before, for [`RESTING`] reads
//!   before it tries again. The reach shrinks
//!   only after [`SPARE`] reads in a row needed far less of it, so pages of one window
//!   that need different reaches do not pull it back and forth, and groups that grow and
//!   shrink by a few members as writes go on do not move it.
//!
//! A window with neither (one entry before, no cut group) leaves the map. What is
//! learned is a hint, never part of an answer: a wrong one costs a longer read or a
//! second round trip.

use foldhash::HashMap;
use std::sync::{Arc, Mutex};

/// The most entries read past each edge of a page.
pub(crate) const MOST: u64 = 128;

/// Reads of a window whose groups outgrew [`MOST`] left to the script before it tries
/// again.
const RESTING: u32 = 256;

/// Reads in a row that needed far less than the reach (at most half of it, less 4)
/// before it shrinks.
const SPARE: u32 = 64;

/// Pages of a window (by where they end) whose last group's score is kept.
pub(crate) const EDGES: usize = 4;

/// What was learned, keyed by the window's totals key.
#[derive(Debug, Clone, Default)]
pub(crate) struct TieReach {
    windows: Arc<Mutex<HashMap<String, Window>>>,
}

/// What one window's reads learned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Window {
    /// Entries read before a page, when more than one.
    reach: Option<Reach>,
    /// The score of the last tie group that pages ending at a position cut, as
    /// (position, score), newest first; position 0 (no page ends there): none.
    edges: [(u64, i64); EDGES],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reach {
    /// Entries to read before a page.
    entries: u64,
    /// Reads left to the script (at one entry) before trying again.
    resting: u32,
    /// Reads in a row that needed far less.
    spare: u32,
}

/// How a read of a page reads past its edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Entries before the page (as many as there are).
    pub(crate) reach: u64,
    /// The score of the group that the last read of a page ending where this one ends
    /// found cut by its last entry: this read reads that group's first members.
    pub(crate) edge: Option<i64>,
}

impl TieReach {
    /// How the next read of `totals`'s page ending at position `end` (offset + limit)
    /// reads: one entry before it and no group unless reads learned more.
    pub(crate) fn plan(&self, totals: &str, end: u64) -> Plan {
        let mut windows = self.lock();
        let Some(window) = windows.get_mut(totals) else {
            return Plan {
                reach: 1,
                edge: None,
            };
        };
        let edge = window.edges.iter().find(|e| e.0 == end).map(|e| e.1);
        let reach = match &mut window.reach {
            Some(reach) if reach.resting > 0 => {
                reach.resting -= 1;
                1
            }
            Some(reach) => reach.entries,
            None => 1,
        };
        Plan { reach, edge }
    }

    /// Takes in a read of `totals`'s page ending at `end`, read as `plan`: it needed
    /// `needed` entries before the page to see where its first tie group starts (`None`:
    /// the group went on past what it read), and its last group, of score `cut`, went
    /// on past the page (`None`: it did not).
    pub(crate) fn learn(
        &self,
        totals: &str,
        end: u64,
        plan: Plan,
        needed: Option<u64>,
        cut: Option<i64>,
    ) {
        let plain = needed.is_some_and(|n| n <= 1 && plan.reach <= 1);
        if plain && cut.is_none() && plan.edge.is_none() {
            // No tie cut, none learned: the common read takes no lock.
            return;
        }
        let mut windows = self.lock();
        // Changed in place: a window read through a tie on every read names no new key.
        if let Some(window) = windows.get_mut(totals) {
            window.learn(end, plan.reach, needed, cut);
            if *window == Window::default() {
                windows.remove(totals);
            }
        } else {
            let mut window = Window::default();
            window.learn(end, plan.reach, needed, cut);
            if window != Window::default() {
                windows.insert(totals.to_owned(), window);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Window>> {
        self.windows.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Window {
    fn learn(&mut self, end: u64, used: u64, needed: Option<u64>, cut: Option<i64>) {
        self.reach = next(self.reach, used, needed);
        // This page's edge first, the others after it in their order; one dropped when
        // all are taken.
        let kept = self.edges.iter().filter(|e| e.0 != end && e.0 != 0);
        let mut edges = [(0, 0); EDGES];
        let new = cut.map(|score| (end, score));
        for (slot, edge) in edges.iter_mut().zip(new.iter().chain(kept)) {
            *slot = *edge;
        }
        self.edges = edges;
    }
}

/// What a window's reach becomes after a read (see [`TieReach::learn`]); `None`: back to
/// one entry, out of the map.
fn next(now: Option<Reach>, used: u64, needed: Option<u64>) -> Option<Reach> {
    if now.is_some_and(|r| r.resting > 0) {
        return now;
    }
    let Some(needed) = needed else {
        // Its groups went on past the read: further next time, or rest at the most. (A
        // read that used less than the window's reach, from before it grew or while it
        // rested, shows nothing new.)
        let (entries, resting) = match used >= MOST {
            true => (MOST, RESTING),
            false => ((4 * used + 4).min(MOST), 0),
        };
        return Some(Reach {
            entries: now.map_or(entries, |r| r.entries.max(entries)),
            resting,
            spare: 0,
        });
    };
    // Read at one entry (no reach kept), its groups held: nothing to learn.
    let mut reach = now?;
    if 2 * needed + 8 >= reach.entries && needed > 1 {
        reach.spare = 0;
        return Some(reach);
    }
    reach.spare += 1;
    if reach.spare < SPARE {
        return Some(reach);
    }
    // Far more than needed for long: half as far, down to one and a half times the need,
    // and gone at one entry.
    reach.entries = (reach.entries / 2).max(needed + needed / 2);
    reach.spare = 0;
    (reach.entries > 1).then_some(reach)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "stats_{b}_86400";

    /// A read of the page ending at 10 that used `used` entries before it and needed
    /// `needed`, its last group not cut.
    fn learn(reach: &TieReach, used: u64, needed: Option<u64>) {
        let plan = Plan {
            reach: used,
            edge: None,
        };
        reach.learn(T, 10, plan, needed, None);
    }

    #[test]
    fn a_window_read_without_ties_keeps_one_entry_and_no_record() {
        let reach = TieReach::default();
        learn(&reach, 1, Some(1));
        learn(&reach, 1, Some(0));
        assert_eq!(reach.plan(T, 10).reach, 1);
        assert!(reach.lock().is_empty());
    }

    #[test]
    fn a_cut_group_is_read_further_until_its_end_is_found_then_kept() {
        let reach = TieReach::default();
        // A group of 20 before the page: 1, then 8, then 36 entries.
        learn(&reach, 1, None);
        assert_eq!(reach.plan(T, 10).reach, 8);
        learn(&reach, 8, None);
        assert_eq!(reach.plan(T, 10).reach, 36);
        learn(&reach, 36, Some(21));
        assert_eq!(reach.plan(T, 10).reach, 36);
        // Kept while the group grows or shrinks a little.
        learn(&reach, 36, Some(14));
        assert_eq!(reach.plan(T, 10).reach, 36);
    }

    #[test]
    fn pages_that_need_different_reaches_keep_the_larger() {
        let reach = TieReach::default();
        learn(&reach, 8, None);
        // The first page cut through a group of 20, the second through one of 2.
        for _ in 0..4 * SPARE {
            learn(&reach, 36, Some(21));
            learn(&reach, 36, Some(3));
            assert_eq!(reach.plan(T, 10).reach, 36);
        }
    }

    #[test]
    fn a_reach_far_larger_than_needed_for_long_shrinks_then_goes() {
        let reach = TieReach::default();
        learn(&reach, 8, None);
        // Needing 10 of 36: halved after SPARE reads in a row.
        for _ in 1..SPARE {
            learn(&reach, 36, Some(10));
        }
        assert_eq!(reach.plan(T, 10).reach, 36);
        learn(&reach, 36, Some(10));
        assert_eq!(reach.plan(T, 10).reach, 18);
        // Pages that cut no group: halved every SPARE reads, then out of the map.
        for expected in [9, 4, 2] {
            for _ in 0..SPARE {
                learn(&reach, 18, Some(1));
            }
            assert_eq!(reach.plan(T, 10).reach, expected);
        }
        for _ in 0..SPARE {
            learn(&reach, 2, Some(1));
        }
        assert_eq!(reach.plan(T, 10).reach, 1);
        assert!(reach.lock().is_empty());
    }

    #[test]
    fn groups_past_the_most_are_left_to_the_script_for_a_while() {
        let reach = TieReach::default();
        learn(&reach, 36, None);
        assert_eq!(reach.plan(T, 10).reach, MOST);
        learn(&reach, MOST, None);
        for _ in 0..RESTING {
            assert_eq!(reach.plan(T, 10).reach, 1);
            // What those reads learn changes nothing while it rests.
            learn(&reach, 1, None);
        }
        assert_eq!(reach.plan(T, 10).reach, MOST);
        // Other windows are their own.
        assert_eq!(reach.plan("stats_{b}", 10).reach, 1);
    }

    #[test]
    fn a_cut_last_group_is_kept_by_its_score_for_pages_ending_there() {
        let reach = TieReach::default();
        let plain = Plan {
            reach: 1,
            edge: None,
        };
        // The top 10 cut through the group of 40s: its score is kept for that page.
        reach.learn(T, 10, plain, Some(1), Some(40));
        let kept = Plan {
            reach: 1,
            edge: Some(40),
        };
        assert_eq!(reach.plan(T, 10), kept);
        assert_eq!(reach.plan(T, 20), plain);
        // Writes moved the edge into the group of 39s.
        reach.learn(T, 10, kept, Some(1), Some(39));
        assert_eq!(reach.plan(T, 10).edge, Some(39));
        // Pages of EDGES other ends: the oldest is dropped.
        for end in 11..11 + EDGES as u64 {
            reach.learn(T, end, plain, Some(1), Some(end as i64));
        }
        assert_eq!(reach.plan(T, 10).edge, None);
        assert_eq!(reach.plan(T, 11).edge, Some(11));
        // A page whose last group is no longer cut forgets it; a window with nothing
        // left leaves the map.
        for end in 11..11 + EDGES as u64 {
            let plan = reach.plan(T, end);
            reach.learn(T, end, plan, Some(1), None);
        }
        assert!(reach.lock().is_empty());
    }
}
