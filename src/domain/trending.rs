//! Trending boards: a member's score decays with time instead of leaving a window.
//!
//! A member's score at `now` is `Σ delta · 2^(−(now − at)/half_life)` over its events.
//! Stores keep it by *forward decay*: each delta is stored scaled by
//! `2^((at − landmark)/half_life)` for a landmark kept with the board, and a read divides
//! the stored value back to `now` ([`decayed`]). The landmark is moved forward by a whole
//! number of half-lives (an exact factor `2^−k`) by the maintenance pass long before the
//! stored values could overflow (see `docs/design.md`, "Trending boards").
//!
//! This module holds the config, the board, the plain data reads answer and the
//! arithmetic both stores share. No I/O.

use serde::Serialize;

use super::error::{Error, Result};
use crate::domain::{BoardName, Span, Timestamp};

/// A trending board's floor when none is given: members whose score decayed below it
/// (in magnitude) are pruned by the maintenance pass.
pub const DEFAULT_FLOOR: f64 = 0.001;

/// How many half-lives an event may be old when no `max_age` is given.
pub const DEFAULT_MAX_AGE_HALF_LIVES: u64 = 10;

/// The largest `max_age`, in half-lives: an older event would count less than 2^−100 of
/// its delta.
pub const MAX_AGE_HALF_LIVES: u64 = 100;

/// After how many half-lives since the landmark the maintenance pass rescales a board
/// by default: stored values then stay below 2^32 times the deltas written at `now`.
pub const RESCALE_AFTER_HALF_LIVES: u32 = 32;

/// The most half-lives a write may be from the landmark before the store rescales
/// first (the maintenance pass did not run for that long): stored values stay far below
/// the largest double (2^1024).
pub const WRITE_LIMIT_HALF_LIVES: u32 = 512;

/// A trending board's config: half-life, prune floor and how old an event may be.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct TrendingConfig {
    /// After this long an event counts half as much.
    half_life: Span,
    /// Members whose score is below this in magnitude are pruned by the maintenance pass.
    floor: f64,
    /// Events older than this (by `now`) are refused (`too_old`).
    max_age: Span,
}

impl TrendingConfig {
    /// A config with `half_life`, the default floor ([`DEFAULT_FLOOR`]) and max age
    /// ([`DEFAULT_MAX_AGE_HALF_LIVES`] half-lives).
    pub fn new(half_life: Span) -> Result<Self> {
        let max_age = Span::from_seconds(
            (half_life.seconds() * DEFAULT_MAX_AGE_HALF_LIVES).min(Span::MAX_SECONDS),
        )?;
        Ok(TrendingConfig {
            half_life,
            floor: DEFAULT_FLOOR,
            max_age,
        })
    }

    /// Parses `"6h"`-style texts: the half-life, and optionally the max age.
    pub fn parse(half_life: &str) -> Result<Self> {
        Self::new(Span::parse(half_life)?)
    }

    /// The same config with another prune floor: finite and not negative (0 prunes only
    /// members at exactly 0).
    pub fn with_floor(mut self, floor: f64) -> Result<Self> {
        if !floor.is_finite() || floor < 0.0 {
            return Err(Error::InvalidConfig {
                reason: format!("floor must be a finite number >= 0, not {floor}"),
            });
        }
        self.floor = floor;
        Ok(self)
    }

    /// The same config with another max age: at most [`MAX_AGE_HALF_LIVES`] half-lives.
    pub fn with_max_age(mut self, max_age: Span) -> Result<Self> {
        if max_age.seconds() > self.half_life.seconds() * MAX_AGE_HALF_LIVES {
            return Err(Error::InvalidConfig {
                reason: format!(
                    "max_age {max_age} is more than {MAX_AGE_HALF_LIVES} half-lives ({})",
                    self.half_life
                ),
            });
        }
        self.max_age = max_age;
        Ok(self)
    }

    /// The half-life.
    pub fn half_life(&self) -> Span {
        self.half_life
    }

    /// The prune floor.
    pub fn floor(&self) -> f64 {
        self.floor
    }

    /// How old an event may be.
    pub fn max_age(&self) -> Span {
        self.max_age
    }

    /// The half-life in milliseconds.
    pub(crate) fn half_life_ms(&self) -> i64 {
        self.half_life.secs_i64() * 1000
    }
}

/// A trending board as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendingBoard {
    /// The board's name.
    pub name: BoardName,
    /// Half-life, floor, max age.
    pub config: TrendingConfig,
    /// Changes whenever the board is (re-)created.
    pub version: u64,
    /// When the board was created.
    pub created_at: Timestamp,
}

/// A trending board as read (or kept up) at `now`.
#[derive(Debug, Clone, Copy)]
pub struct TrendAt<'a> {
    /// The board.
    pub board: &'a TrendingBoard,
    /// The time of the read.
    pub now: Timestamp,
}

impl TrendingBoard {
    /// The board as read at `now`.
    pub fn at(&self, now: Timestamp) -> TrendAt<'_> {
        TrendAt { board: self, now }
    }
}

/// What creating a trending board did (never
/// [`Created::Extended`](super::board::Created::Extended)).
pub type TrendCreated = super::board::Created<TrendingBoard>;

/// What a store says of a trending board's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TrendCounts {
    /// Members held (any score, until pruned).
    pub members: u64,
    /// Members with a positive score: those ranked.
    pub ranked: u64,
    /// The landmark stored values are scaled to, unix ms.
    pub landmark_ms: i64,
    /// A rescale is under way.
    pub rescaling: bool,
}

/// One event for a store: validated, with its time in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendWrite {
    /// The member.
    pub member: String,
    /// The change, non-zero, within ±(2^53 − 1).
    pub delta: i64,
    /// When it happened, unix milliseconds.
    pub at_ms: i64,
}

/// One entry of a trending ranking.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct TrendEntry {
    /// 1-based; equal scores share a rank (competition: 1, 1, 3).
    pub rank: u64,
    /// The member.
    pub member: String,
    /// Its decayed score at `at`.
    pub score: f64,
}

/// A page of a trending ranking.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct TrendPage {
    /// The board.
    #[cfg_attr(feature = "server", schema(value_type = String))]
    pub board: BoardName,
    /// The time the scores are decayed to, unix seconds.
    pub at: f64,
    /// How old the answer is, in milliseconds: 0 when read from the store now; when the
    /// read allowed it (`max_staleness_ms` above 0), the age of this process's cached
    /// answer (`at` is then as old), never above the read's bound.
    pub age_ms: u64,
    /// Members with a positive score, highest first, ties by member ascending.
    pub entries: Vec<TrendEntry>,
}

/// A member's standing on a trending board.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct TrendStanding {
    /// The member.
    pub member: String,
    /// Its decayed score at `at`, whatever its sign.
    pub score: f64,
    /// 1-based competition rank among members with a positive score; `null` when its
    /// score is negative (not ranked).
    #[cfg_attr(feature = "server", schema(required = true))]
    pub rank: Option<u64>,
    /// The share of ranked members whose score is strictly below, in [0, 1) (0 for a
    /// member not ranked).
    pub percentile: f64,
    /// The time the score is decayed to, unix seconds.
    pub at: f64,
    /// How old the answer is, in milliseconds: 0 when read from the store now; when the
    /// read allowed it (`max_staleness_ms` above 0), the age of this process's cached
    /// answer (`at` is then as old), never above the read's bound.
    pub age_ms: u64,
}

/// A member's score and rank in a list of members.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct TrendRank {
    /// The member.
    pub member: String,
    /// Its decayed score, negative ones too (0 when it holds none).
    pub score: f64,
    /// Its rank; `null` without a positive score.
    pub rank: Option<u64>,
}

/// The ranks of a list of members, in the order asked.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct TrendRanks {
    /// The board.
    #[cfg_attr(feature = "server", schema(value_type = String))]
    pub board: BoardName,
    /// The time the scores are decayed to, unix seconds.
    pub at: f64,
    /// How old the answer is, in milliseconds: 0 when read from the store now; when the
    /// read allowed it (`max_staleness_ms` above 0), the age of this process's cached
    /// answer (`at` is then as old), never above the read's bound.
    pub age_ms: u64,
    /// One per member asked.
    pub entries: Vec<TrendRank>,
}

/// A range of scores for a page of a trending board (both ends inclusive, either open).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TrendRange {
    min: Option<f64>,
    max: Option<f64>,
}

impl TrendRange {
    /// Every ranked member.
    pub const ALL: TrendRange = TrendRange {
        min: None,
        max: None,
    };

    /// Members whose score is in `[min, max]`: finite bounds, `min` not above `max`
    /// ([`Error::InvalidQuery`] otherwise).
    pub fn new(min: Option<f64>, max: Option<f64>) -> Result<Self> {
        if min.into_iter().chain(max).any(|x| !x.is_finite()) {
            return Err(Error::InvalidQuery {
                reason: "min_score and max_score must be finite numbers".into(),
            });
        }
        if let (Some(lo), Some(hi)) = (min, max)
            && lo > hi
        {
            return Err(Error::InvalidQuery {
                reason: format!("min_score ({lo}) must not be above max_score ({hi})"),
            });
        }
        Ok(TrendRange { min, max })
    }

    /// The lowest score, if bounded.
    pub fn min(&self) -> Option<f64> {
        self.min
    }

    /// The highest score, if bounded.
    pub fn max(&self) -> Option<f64> {
        self.max
    }
}

/// How the maintenance pass runs (tests use a small `rescale_after`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrendOptions {
    /// Rescale once `now` is this many half-lives past the landmark.
    pub rescale_after: u32,
    /// Members handled per step (a rescale's copy, a prune).
    pub chunk: usize,
    /// Steps of one pass at most (the next pass goes on from there).
    pub max_steps: usize,
}

impl Default for TrendOptions {
    fn default() -> Self {
        TrendOptions {
            rescale_after: RESCALE_AFTER_HALF_LIVES,
            chunk: 500,
            max_steps: 10_000,
        }
    }
}

/// What one maintenance pass did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TrendMaintenance {
    /// The landmark was moved (a rescale finished in this pass).
    pub rescaled: bool,
    /// A rescale is still under way (the pass ran out of steps).
    pub rescaling: bool,
    /// Members copied by rescale steps.
    pub copied: u64,
    /// Members pruned below the floor.
    pub pruned: u64,
}

/// The stored value of `delta` at `at_ms` for the landmark `landmark_ms`:
/// `delta · 2^((at − landmark)/half_life)`.
pub(crate) fn forward(delta: i64, at_ms: i64, landmark_ms: i64, half_life_ms: i64) -> f64 {
    delta as f64 * ((at_ms - landmark_ms) as f64 / half_life_ms as f64).exp2()
}

/// The score at `now_ms` of a stored value for the landmark `landmark_ms`.
pub(crate) fn decayed(stored: f64, now_ms: i64, landmark_ms: i64, half_life_ms: i64) -> f64 {
    stored * (-((now_ms - landmark_ms) as f64) / half_life_ms as f64).exp2()
}

/// The stored value that decays to `score` at `now_ms` (the floor's bound in the stored
/// scale).
pub(crate) fn stored_bound(score: f64, now_ms: i64, landmark_ms: i64, half_life_ms: i64) -> f64 {
    score * ((now_ms - landmark_ms) as f64 / half_life_ms as f64).exp2()
}

/// The landmark after a rescale at `now_ms`, when one is due: moved forward by the
/// whole half-lives since the landmark, if at least `after` of them.
pub(crate) fn rescale_target(
    landmark_ms: i64,
    now_ms: i64,
    half_life_ms: i64,
    after: u32,
) -> Option<i64> {
    let k = (now_ms - landmark_ms).div_euclid(half_life_ms);
    (k >= i64::from(after.max(1))).then_some(landmark_ms + k * half_life_ms)
}

/// Competition ranks of a page of stored values (highest first) whose first entry has
/// `better` members ahead of it and sits at position `offset` of the whole ranking.
pub(crate) fn page_ranks(values: &[f64], offset: u64, better: u64) -> Vec<u64> {
    let mut ranks = Vec::with_capacity(values.len());
    for (i, v) in values.iter().enumerate() {
        let rank = if i == 0 {
            better + 1
        } else if *v == values[i - 1] {
            ranks[i - 1]
        } else {
            offset + i as u64 + 1
        };
        ranks.push(rank);
    }
    ranks
}

/// Checks an event's age: older than the board's max age at `now` is [`Error::TooOld`].
pub(crate) fn check_age(config: &TrendingConfig, at: Timestamp, now: Timestamp) -> Result<()> {
    let oldest = now.unix_millis() - config.max_age().secs_i64() * 1000;
    if at.unix_millis() < oldest {
        return Err(Error::TooOld {
            at: at.unix_seconds_f64(),
            oldest: oldest as f64 / 1000.0,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_and_limits() {
        let c = TrendingConfig::parse("6h").unwrap();
        assert_eq!(c.half_life().seconds(), 6 * 3600);
        assert_eq!(c.max_age().seconds(), 60 * 3600);
        assert_eq!(c.floor(), DEFAULT_FLOOR);
        let c = c.with_floor(0.5).unwrap();
        assert_eq!(c.floor(), 0.5);
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(c.with_floor(bad).unwrap_err().code(), "invalid_config");
        }
        let max = Span::from_seconds(600 * 3600).unwrap();
        assert_eq!(c.with_max_age(max).unwrap().max_age(), max);
        let over = Span::from_seconds(600 * 3600 + 1).unwrap();
        assert_eq!(c.with_max_age(over).unwrap_err().code(), "invalid_config");
    }

    #[test]
    fn forward_decay_round_trips_to_the_direct_formula() {
        let h = 3_600_000;
        let stored = forward(8, 1_000_000, 1_000_000 - 2 * h, h);
        assert_eq!(stored, 32.0);
        assert_eq!(decayed(stored, 1_000_000 + h, 1_000_000 - 2 * h, h), 4.0);
        assert_eq!(stored_bound(4.0, 1_000_000 + h, 1_000_000 - 2 * h, h), 32.0);
    }

    #[test]
    fn rescale_moves_the_landmark_by_whole_half_lives() {
        assert_eq!(rescale_target(0, 31 * 10 + 9, 10, 32), None);
        assert_eq!(rescale_target(0, 32 * 10 + 9, 10, 32), Some(320));
        assert_eq!(rescale_target(5, 5 + 10, 10, 1), Some(15));
        assert_eq!(rescale_target(5, 5 + 9, 10, 0), None);
    }

    #[test]
    fn page_ranks_are_competition_ranks() {
        assert_eq!(page_ranks(&[9.0, 9.0, 7.0, 5.0], 0, 0), [1, 1, 3, 4]);
        assert_eq!(page_ranks(&[7.0, 7.0, 5.0], 3, 2), [3, 3, 6]);
        assert_eq!(page_ranks(&[], 3, 2), Vec::<u64>::new());
    }
}
