//! Tie reach: how many entries past each edge of a top page its transaction reads
//! (`board/read_top.rs`), learned per window's totals.
//!
//! A tie group cut by a page's edge is ordered by member ascending, which `ZREVRANGE`
//! reverses, so the page needs the whole group; reading one entry past each edge only
//! tells that a group is cut, and `read_ranking.lua` then reads the page in a second
//! round trip. Boards whose totals are small integers (likes) are full of ties, and a
//! hot board's top page is cut through one on every read. So a read of a window that
//! did not find its groups' ends makes the window's next reads read further, until they
//! hold the groups their pages cut; a window whose groups outgrow [`MOST`] is read by
//! the script, as before, for [`RESTING`] reads before it tries again. The reach shrinks
//! only after [`SPARE`] reads in a row needed far less of it, so pages of one window
//! that need different reaches (the first page cut through a big group, the second
//! through a small one) do not pull it back and forth, and groups that grow and shrink
//! by a few members as writes go on do not move it; a window whose pages stop cutting
//! groups drops back to one entry and out of the map that way. A reach is a hint, never
//! part of an answer: a wrong one costs a longer `ZREVRANGE` or a second round trip.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The most entries read past each edge of a page.
pub(crate) const MOST: u64 = 128;

/// Reads of a window whose groups outgrew [`MOST`] left to the script before it tries
/// again.
const RESTING: u32 = 256;

/// Reads in a row that needed far less than the reach (at most half of it, less 4)
/// before it shrinks.
const SPARE: u32 = 64;

/// The learned reaches, keyed by the window's totals key.
#[derive(Debug, Clone, Default)]
pub(crate) struct TieReach {
    windows: Arc<Mutex<HashMap<String, Reach>>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reach {
    /// Entries to read past each edge.
    entries: u64,
    /// Reads left to the script (at one entry) before trying again.
    resting: u32,
    /// Reads in a row that needed far less.
    spare: u32,
}

impl TieReach {
    /// How many entries past each edge of a page the next read of `totals` reads: 1
    /// unless a read learned more.
    pub(crate) fn reach(&self, totals: &str) -> u64 {
        let mut windows = self.lock();
        let Some(reach) = windows.get_mut(totals) else {
            return 1;
        };
        if reach.resting > 0 {
            reach.resting -= 1;
            return 1;
        }
        reach.entries
    }

    /// Takes in a read of `totals` that read `used` entries past each edge and needed
    /// `needed` of them to see where the page's first and last tie groups end (`None`:
    /// one of them went on past what it read).
    pub(crate) fn learn(&self, totals: &str, used: u64, needed: Option<u64>) {
        if needed.is_some_and(|n| n <= 1 && used <= 1) {
            // No tie cut, none learned: the common read takes no entry.
            return;
        }
        let mut windows = self.lock();
        // Changed in place: a window read through a tie on every read names no new key.
        if let Some(reach) = windows.get_mut(totals) {
            match next(Some(*reach), used, needed) {
                Some(next) => *reach = next,
                None => drop(windows.remove(totals)),
            }
        } else if let Some(next) = next(None, used, needed) {
            windows.insert(totals.to_owned(), next);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Reach>> {
        self.windows.lock().unwrap_or_else(|e| e.into_inner())
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
    let mut reach = now.unwrap_or(Reach {
        entries: used,
        resting: 0,
        spare: 0,
    });
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

    #[test]
    fn a_window_read_without_ties_keeps_one_entry_and_no_record() {
        let reach = TieReach::default();
        reach.learn(T, 1, Some(1));
        reach.learn(T, 1, Some(0));
        assert_eq!(reach.reach(T), 1);
        assert!(reach.lock().is_empty());
    }

    #[test]
    fn a_cut_group_is_read_further_until_its_end_is_found_then_kept() {
        let reach = TieReach::default();
        // A group of 20 beyond the page: 1, then 8, then 36 entries.
        reach.learn(T, 1, None);
        assert_eq!(reach.reach(T), 8);
        reach.learn(T, 8, None);
        assert_eq!(reach.reach(T), 36);
        reach.learn(T, 36, Some(21));
        assert_eq!(reach.reach(T), 36);
        // Kept while the group grows or shrinks a little.
        reach.learn(T, 36, Some(14));
        assert_eq!(reach.reach(T), 36);
    }

    #[test]
    fn pages_that_need_different_reaches_keep_the_larger() {
        let reach = TieReach::default();
        reach.learn(T, 8, None);
        // The first page cut through a group of 20, the second through one of 2.
        for _ in 0..4 * SPARE {
            reach.learn(T, 36, Some(21));
            reach.learn(T, 36, Some(3));
            assert_eq!(reach.reach(T), 36);
        }
    }

    #[test]
    fn a_reach_far_larger_than_needed_for_long_shrinks_then_goes() {
        let reach = TieReach::default();
        reach.learn(T, 8, None);
        // Needing 10 of 36: halved after SPARE reads in a row.
        for _ in 1..SPARE {
            reach.learn(T, 36, Some(10));
        }
        assert_eq!(reach.reach(T), 36);
        reach.learn(T, 36, Some(10));
        assert_eq!(reach.reach(T), 18);
        // Pages that cut no group: halved every SPARE reads, then out of the map.
        for expected in [9, 4, 2] {
            for _ in 0..SPARE {
                reach.learn(T, 18, Some(1));
            }
            assert_eq!(reach.reach(T), expected);
        }
        for _ in 0..SPARE {
            reach.learn(T, 2, Some(1));
        }
        assert_eq!(reach.reach(T), 1);
        assert!(reach.lock().is_empty());
    }

    #[test]
    fn groups_past_the_most_are_left_to_the_script_for_a_while() {
        let reach = TieReach::default();
        reach.learn(T, 36, None);
        assert_eq!(reach.reach(T), MOST);
        reach.learn(T, MOST, None);
        for _ in 0..RESTING {
            assert_eq!(reach.reach(T), 1);
            // What those reads learn changes nothing while it rests.
            reach.learn(T, 1, None);
        }
        assert_eq!(reach.reach(T), MOST);
        // Other windows are their own.
        assert_eq!(reach.reach("stats_{b}"), 1);
    }
}
