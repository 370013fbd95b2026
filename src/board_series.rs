//! Which boards get Prometheus series of their own: the first
//! [`metrics_board_series`](crate::Settings::metrics_board_series) boards this process
//! records a metric for, at most. Every other board is counted under the label value
//! [`OTHER`], which no board name can take (names are `[A-Za-z0-9_.:-]`), so the number of
//! series (and the memory the exporter holds for them) stays bounded however many boards
//! there are. A board keeps its own series for the process's life, even once dropped: its
//! series stay in the exporter, so freeing its place would let board churn grow them.
//!
//! Counters of `(other)` sum over those boards. Its retirement-lag gauge shows, per
//! window, the largest lag among those boards lagging now: only lagging boards are held,
//! and a board leaves once it caught up (or is dropped).

use foldhash::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

use crate::domain::BoardName;

/// The label value of every board without series of its own.
pub const OTHER: &str = "(other)";

/// The boards with series of their own, and the lag of the others that lag.
#[derive(Debug)]
pub struct BoardSeries {
    /// Most boards with series of their own.
    cap: usize,
    /// Those boards (never more than `cap`).
    own: Mutex<HashSet<String>>,
    /// For each window, the lag in seconds of each board under [`OTHER`] that lags now.
    lagging: Mutex<HashMap<String, HashMap<BoardName, f64>>>,
}

impl BoardSeries {
    /// Series of their own for at most `cap` boards (0: none).
    pub fn new(cap: usize) -> BoardSeries {
        BoardSeries {
            cap,
            own: Mutex::default(),
            lagging: Mutex::default(),
        }
    }

    /// The `board` label for `board`: its name when it has series of its own (taking a
    /// free place if there is one), else [`OTHER`].
    pub fn label(&self, board: &str) -> String {
        self.label_of(board).to_owned()
    }

    /// [`label`](Self::label), borrowed: `board` itself or [`OTHER`].
    pub fn label_of<'a>(&self, board: &'a str) -> &'a str {
        let mut own = lock(&self.own);
        if own.contains(board) {
            return board;
        }
        if own.len() < self.cap {
            own.insert(board.to_owned());
            return board;
        }
        OTHER
    }

    /// Takes in that `board` (labelled `label`) lags `seconds` in `window`, and answers
    /// the value of the gauge of (`label`, `window`): `seconds` for a board with series of
    /// its own, else the largest lag among the boards under [`OTHER`] (0 when none lags).
    pub fn lag(&self, label: &str, board: &BoardName, window: &str, seconds: f64) -> f64 {
        if label != OTHER {
            return seconds;
        }
        let mut lagging = lock(&self.lagging);
        let boards = lagging.entry(window.to_owned()).or_default();
        if seconds > 0.0 {
            boards.insert(board.clone(), seconds);
        } else {
            boards.remove(board);
        }
        let largest = boards.values().copied().fold(0.0, f64::max);
        if boards.is_empty() {
            lagging.remove(window);
        }
        largest
    }

    /// Forgets the lag of `board` (dropped); answers the windows whose `(other)` gauge
    /// changes, with their new value.
    pub fn forget_lag(&self, board: &BoardName) -> Vec<(String, f64)> {
        let mut lagging = lock(&self.lagging);
        let mut changed = Vec::new();
        for (window, boards) in lagging.iter_mut() {
            if boards.remove(board).is_some() {
                let largest = boards.values().copied().fold(0.0, f64::max);
                changed.push((window.clone(), largest));
            }
        }
        lagging.retain(|_, boards| !boards.is_empty());
        changed
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> BoardName {
        BoardName::parse(s).unwrap()
    }

    #[test]
    fn the_first_boards_get_their_own_label_and_the_rest_share_other() {
        let series = BoardSeries::new(2);
        assert_eq!(series.label("a"), "a");
        assert_eq!(series.label("b"), "b");
        assert_eq!(series.label("c"), OTHER);
        assert_eq!(series.label("a"), "a");
        assert_eq!(series.label("d"), OTHER);
        assert_eq!(BoardSeries::new(0).label("a"), OTHER);
    }

    #[test]
    fn the_other_lag_is_the_largest_among_boards_lagging_now() {
        let series = BoardSeries::new(0);
        assert_eq!(series.lag("a", &name("a"), "1m", 7.0), 7.0);
        assert_eq!(series.lag(OTHER, &name("x"), "1m", 3.0), 3.0);
        assert_eq!(series.lag(OTHER, &name("y"), "1m", 5.0), 5.0);
        assert_eq!(series.lag(OTHER, &name("y"), "2m", 1.0), 1.0);
        assert_eq!(series.lag(OTHER, &name("y"), "1m", 0.0), 3.0);
        assert_eq!(series.forget_lag(&name("x")), vec![("1m".to_owned(), 0.0)]);
        assert_eq!(series.lag(OTHER, &name("y"), "2m", 0.0), 0.0);
        assert!(lock(&series.lagging).is_empty());
    }
}
