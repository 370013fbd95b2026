//! The write-call budget: how many (slot, member) pairs one `write.lua` call of a board
//! may carry so that it holds Redis for about `call_budget` at most.
//!
//! A pair costs about one HINCRBY and one ZINCRBY per window, which takes longer the
//! bigger the board's hashes and sorted sets are (about 12 µs on a two-window board of
//! 200,000 members, 1–2 µs on a small one). Each call that may stop (more than
//! `check_every` pairs; a smaller one reads no clock) reports its own duration by the
//! server's clock; the board's estimate of µs per pair follows those reports (an
//! exponentially weighted mean, a call of few pairs counting little, since its fixed
//! cost would overstate a pair's). It goes down slowly and up at once: a board's cost
//! per pair can jump when its writes change (new members filling it, then updates
//! spread over all of it: ~3x dearer each on a 200,000-member board), and every call
//! sent with the old cap overruns the budget. The cap is the budget divided by the estimate,
//! between 1 and the most a batch may hold. A board not yet measured starts from a
//! cautious estimate, so its first calls are bounded too; a small board's cap reaches
//! the batch maximum within a few calls.
//!
//! The cap is at least `check_every + 1` pairs (under a zero budget, the tests' one pair
//! a call): a smaller call reads no clock and reports nothing, so an estimate that once
//! sized calls below it would never come down again (one call slowed by the OS taking
//! Redis's core is enough). Seen on 2 cores: plain batches of 100 stuck in calls of 15
//! pairs at 230,000 events/s instead of 440,000. A call of 17 pairs holds Redis ~0.3 ms
//! on the dearest boards, and stops at its budget anyway.
//!
//! The cap is an estimate, and calls sent before it learns a jump overrun it; so each
//! call also carries the budget itself ([`Limit`]) and `write.lua` stops once it has run
//! that long, reading the server's clock every `check_every` pairs (a `TIME` costs
//! ~0.6 µs in a script, measured, against 1–12 µs a pair: every 16 pairs adds under 2% on
//! the cheapest boards and lets a call overrun by at most 16 pairs, ~0.2 ms on the
//! dearest). A call that stopped reports the pairs it applied and its µs like any other.
//!
//! While hot reads go on, both the size and the stop are a [`WHILE_READING`]th of the
//! budget, so that a read waits for little write work (see `conn/reads_first.rs`).

use foldhash::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::domain::BoardName;
use crate::store::redis::conn::reads_first::{ReadsSeen, WHILE_READING};

/// The estimate of a board not measured yet, in µs per pair: a big board's cost.
const PRIOR_US_PER_PAIR: f64 = 16.0;

/// How far one call of `FULL_WEIGHT_PAIRS` pairs or more moves the estimate down.
const ALPHA: f64 = 0.3;

/// How far such a call moves it up: all the way to what it measured.
const ALPHA_UP: f64 = 1.0;

/// A call of fewer pairs moves the estimate proportionally less.
const FULL_WEIGHT_PAIRS: f64 = 32.0;

/// When a `write.lua` call may stop before its last entry (ARGV[12]): it reads the
/// server's clock at each stop point and stops there once it has run its budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Limit {
    /// No budget: the call applies every entry (a token covers exactly one call).
    None,
    /// A budget of `budget_us`, read after every `stride` entries (or events).
    Every { budget_us: u64, stride: usize },
    /// A budget of `budget_us`, read only after the listed numbers of entries, each with
    /// how many of the write's events those entries carry (a keyed write in mode
    /// `sums`, whose record says how many events it applied): ascending.
    At {
        budget_us: u64,
        stops: Vec<(usize, usize)>,
    },
}

impl Limit {
    /// The same budget, for summed entries whose stop points must fall where a prefix of
    /// the entries is a prefix of the events (`boundaries`, see [`Writes`]): those
    /// boundaries, thinned to about one every `stride` entries.
    pub(crate) fn at(&self, boundaries: &[(usize, usize)]) -> Limit {
        let (budget_us, stride) = match self {
            Limit::None => return Limit::None,
            Limit::Every { budget_us, stride } => (*budget_us, *stride),
            Limit::At { budget_us, .. } => (*budget_us, 1),
        };
        let mut stops = Vec::new();
        let mut last = 0;
        for &(entries, events) in boundaries {
            if entries >= last + stride {
                stops.push((entries, events));
                last = entries;
            }
        }
        Limit::At { budget_us, stops }
    }

    /// ARGV[12] of `write.lua`.
    pub(crate) fn arg(&self) -> String {
        match self {
            Limit::None => String::new(),
            Limit::Every { budget_us, stride } => format!("{budget_us} {}", (*stride).max(1)),
            Limit::At { budget_us, stops } => {
                let mut arg = format!("{budget_us} 0");
                for (entries, events) in stops {
                    arg.push_str(&format!(" {entries} {events}"));
                }
                arg
            }
        }
    }
}

/// Per-board estimates of the cost of a pair, the caps they give, and the budget each
/// call stops at.
pub(crate) struct Budget {
    budget_us: f64,
    max: usize,
    estimates: Mutex<HashMap<BoardName, f64>>,
    stop_us: u64,
    check_every: usize,
    reads: ReadsSeen,
}

impl Budget {
    /// Calls sized for about `target` each, of at most `max` pairs (a zero target: one
    /// pair per call, for tests), each stopping once it has run `stop` (read every
    /// `check_every` pairs), and a [`WHILE_READING`]th of both while `reads` went out
    /// lately.
    pub(crate) fn new(
        target: Duration,
        max: usize,
        stop: Duration,
        check_every: usize,
        reads: ReadsSeen,
    ) -> Budget {
        Budget {
            budget_us: target.as_secs_f64() * 1e6,
            max: max.max(1),
            estimates: Mutex::default(),
            stop_us: u64::try_from(stop.as_micros()).unwrap_or(u64::MAX),
            check_every: check_every.max(1),
            reads,
        }
    }

    /// When a call may stop: every `check_every` pairs (or events), once it ran the budget.
    pub(crate) fn limit(&self) -> Limit {
        self.limit_of(self.share())
    }

    /// The most pairs the next call of `board` may carry: at least 1.
    pub(crate) fn cap(&self, board: &BoardName) -> usize {
        self.cap_of(board, self.share())
    }

    fn limit_of(&self, share: u32) -> Limit {
        Limit::Every {
            budget_us: self.stop_us / u64::from(share),
            stride: self.check_every,
        }
    }

    fn cap_of(&self, board: &BoardName, share: u32) -> usize {
        let cap = (self.budget_us / f64::from(share) / self.estimate(board)).floor();
        // A smaller call reads no clock: a cap below this would never be raised.
        let least = match self.budget_us > 0.0 {
            true => (self.check_every + 1).min(self.max),
            false => 1,
        };
        cap.clamp(least as f64, self.max as f64) as usize
    }

    /// What the budget is divided by: [`WHILE_READING`] while reads go on, else 1.
    fn share(&self) -> u32 {
        if self.reads.lately() {
            WHILE_READING
        } else {
            1
        }
    }

    /// The board's estimate, in µs per pair.
    pub(crate) fn estimate(&self, board: &BoardName) -> f64 {
        self.lock().get(board).copied().unwrap_or(PRIOR_US_PER_PAIR)
    }

    /// Takes in a call of `board` that carried `pairs` pairs and ran `us` µs. A call of
    /// at most `check_every` pairs is left out: it never stops, so `write_plain.lua`
    /// reads no clock for it and answers 0 µs (two `TIME` calls would cost Redis about
    /// as much as a single like's commands).
    pub(crate) fn observe(&self, board: &BoardName, us: u64, pairs: usize) {
        if pairs <= self.check_every {
            return;
        }
        let sample = us as f64 / pairs as f64;
        let mut estimates = self.lock();
        let estimate = estimates.entry(board.clone()).or_insert(PRIOR_US_PER_PAIR);
        let alpha = if sample > *estimate { ALPHA_UP } else { ALPHA };
        let weight = alpha * (pairs as f64 / FULL_WEIGHT_PAIRS).min(1.0);
        // A floor keeps the cap finite when a call measures 0 µs (a coarse clock).
        *estimate = (*estimate + weight * (sample - *estimate)).max(0.01);
    }

    /// Drops the board's estimate (the board was dropped).
    pub(crate) fn forget(&self, board: &BoardName) {
        self.lock().remove(board);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<BoardName, f64>> {
        self.estimates.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board() -> BoardName {
        BoardName::parse("b").unwrap()
    }

    fn sized_for(target: Duration) -> Budget {
        Budget::new(
            target,
            1000,
            Duration::from_millis(1),
            16,
            ReadsSeen::default(),
        )
    }

    #[test]
    fn calls_stop_at_the_budget_every_few_pairs() {
        let budget = Budget::new(
            Duration::from_secs(1),
            1000,
            Duration::from_micros(1500),
            4,
            ReadsSeen::default(),
        );
        assert_eq!(
            budget.limit(),
            Limit::Every {
                budget_us: 1500,
                stride: 4
            }
        );
        // Boundaries at least 4 entries apart are kept, from the start.
        let boundaries = [(1, 1), (3, 5), (4, 6), (5, 7), (7, 8), (8, 9), (13, 20)];
        assert_eq!(
            budget.limit().at(&boundaries),
            Limit::At {
                budget_us: 1500,
                stops: vec![(4, 6), (8, 9), (13, 20)]
            }
        );
    }

    #[test]
    fn an_unmeasured_board_gets_the_cautious_cap() {
        let budget = sized_for(Duration::from_millis(1));
        assert_eq!(budget.cap(&board()), 62); // 1000 µs / 16 µs
        assert_eq!(sized_for(Duration::ZERO).cap(&board()), 1);
        assert_eq!(sized_for(Duration::from_secs(1)).cap(&board()), 1000);
    }

    #[test]
    fn while_reads_go_on_calls_are_sized_and_stopped_for_a_quarter_of_the_budget() {
        let budget = sized_for(Duration::from_millis(1));
        for _ in 0..40 {
            budget.observe(&board(), 490, 100); // 4.9 µs per pair
        }
        assert_eq!(budget.cap_of(&board(), WHILE_READING), 51); // 250 µs / 4.9 µs
        let Limit::Every { budget_us, stride } = budget.limit_of(WHILE_READING) else {
            panic!("a budget stops every few pairs");
        };
        assert_eq!((budget_us, stride), (250, 16));
        // No read went out: the whole budget.
        assert_eq!(budget.cap(&board()), 204);
    }

    #[test]
    fn calls_stay_large_enough_to_be_timed() {
        let budget = sized_for(Duration::from_millis(1));
        // Unmeasured while reads go on: 250 µs / 16 µs would be 15 pairs, untimed.
        assert_eq!(budget.cap_of(&board(), WHILE_READING), 17);
        // One call of 20 pairs held Redis 3 ms (the OS ran something else): 150 µs a
        // pair would size calls of 6 pairs, which would never be timed again.
        budget.observe(&board(), 3000, 20);
        assert_eq!(budget.cap(&board()), 17);
        // Calls of 17 pairs are timed, and bring it back down.
        for _ in 0..200 {
            budget.observe(&board(), 33, 17);
        }
        assert_eq!(budget.cap(&board()), 515); // 1000 µs / (33 / 17 µs)
    }

    #[test]
    fn the_cap_follows_the_measured_cost() {
        let budget = sized_for(Duration::from_millis(1));
        for _ in 0..40 {
            budget.observe(&board(), 100 * 20, 100); // 20 µs per pair
        }
        assert_eq!(budget.cap(&board()), 50);
        for _ in 0..40 {
            budget.observe(&board(), 250, 500); // 0.5 µs per pair
        }
        assert_eq!(budget.cap(&board()), 1000);
    }

    #[test]
    fn a_dearer_call_raises_the_estimate_at_once() {
        let budget = sized_for(Duration::from_millis(1));
        for _ in 0..40 {
            budget.observe(&board(), 3 * 300, 300); // 3 µs per pair: cap 333
        }
        assert_eq!(budget.cap(&board()), 333);
        // The board's writes change: one call of 333 pairs at 9 µs each.
        budget.observe(&board(), 9 * 333, 333);
        assert_eq!(budget.cap(&board()), 111);
        // Cheaper again: down by 0.3 of the way per call.
        budget.observe(&board(), 3 * 111, 111);
        // 9 + 0.3 * (3 - 9) = 7.2 µs per pair
        assert!((budget.estimate(&board()) - 7.2).abs() < 1e-9);
    }

    #[test]
    fn a_small_call_counts_little_and_an_untimed_one_not_at_all() {
        let budget = sized_for(Duration::from_millis(1));
        // 16 pairs or fewer: the call read no clock.
        budget.observe(&board(), 0, 16);
        assert_eq!(budget.estimate(&board()), PRIOR_US_PER_PAIR);
        budget.observe(&board(), 32 * 20, 20);
        // 16 + 20 / 32 * (32 - 16) = 26
        assert!((budget.estimate(&board()) - 26.0).abs() < 1e-9);
        budget.observe(&board(), 2 * 20, 20);
        // 26 + 0.3 * 20 / 32 * (2 - 26) = 21.5
        assert!((budget.estimate(&board()) - 21.5).abs() < 1e-9);
        budget.forget(&board());
        assert_eq!(budget.estimate(&board()), PRIOR_US_PER_PAIR);
    }
}
