//! Rate windows on the front door: validate keys, counts, windows and times, read the
//! time from the clock, and call the store's [`RateStore`](crate::store::RateStore).

use super::Rates;
use crate::domain::{MAX_ABS, Timestamp};
use crate::error::{Error, Result};
use crate::rates::{Coverage, RateCounts, RateKey, RateTiers, RateWindow, Verdict};
use crate::store::RateHit;

impl<'a> Rates<'a> {
    /// The tiers of every rate key (from the settings).
    pub fn tiers(self) -> &'a RateTiers {
        &self.rb.settings().rate_tiers
    }

    /// Counts `count` hits of `key` at `at` (now when `None`) in every tier that still
    /// holds its slot; returns how many tiers counted it. A hit too old for every tier
    /// is [`Error::TooLate`]; one further in the future than the allowed skew is
    /// [`Error::InFuture`].
    pub async fn hit(self, key: &str, count: u64, at: Option<Timestamp>) -> Result<usize> {
        let now = self.rb.now();
        let hit = self.hit_input(key, count, at, now)?;
        let at = hit.at;
        let statuses = self
            .rb
            .store()
            .rates()
            .rate_hits(self.tiers(), now, std::slice::from_ref(&hit))
            .await?;
        let counted = statuses
            .into_iter()
            .next()
            .ok_or_else(|| Error::store("no status for the hit"))??;
        if counted == 0 {
            return Err(self.too_late(at, now));
        }
        Ok(counted)
    }

    /// Counts a batch of hits `(key, count, at)` in one round trip; per hit what
    /// [`hit`](Self::hit) would answer.
    pub async fn hits(
        self,
        hits: &[(String, u64, Option<Timestamp>)],
    ) -> Result<Vec<Result<usize>>> {
        let now = self.rb.now();
        let checked: Vec<Result<RateHit>> = hits
            .iter()
            .map(|(key, count, at)| self.hit_input(key, *count, *at, now))
            .collect();
        let valid: Vec<RateHit> = checked
            .iter()
            .filter_map(|h| h.as_ref().ok().cloned())
            .collect();
        let mut applied = self
            .rb
            .store()
            .rates()
            .rate_hits(self.tiers(), now, &valid)
            .await?
            .into_iter()
            .zip(valid.iter().map(|h| h.at));
        Ok(checked
            .into_iter()
            .map(|input| {
                input?;
                let (status, at) = applied
                    .next()
                    .ok_or_else(|| Error::store("no status for a hit"))?;
                match status? {
                    0 => Err(self.too_late(at, now)),
                    counted => Ok(counted),
                }
            })
            .collect())
    }

    /// The counts of `key` over `windows` (`"5s"`, `"5m"`, …; every default window when
    /// `None`) at now, each window counted with `coverage`: [`Coverage::Partial`] (the
    /// default) the current slot and the W/L − 1 before it, [`Coverage::Full`] the
    /// current slot and the W/L before it, at least W of the past.
    pub async fn counts(
        self,
        key: &str,
        windows: Option<&[&str]>,
        coverage: Coverage,
    ) -> Result<RateCounts> {
        let key = RateKey::parse(key)?;
        let tiers = self.tiers();
        let windows: Vec<RateWindow> = match windows {
            None => tiers
                .default_windows()
                .iter()
                .map(|w| tiers.window_with(w.span, coverage))
                .collect::<Result<_>>()?,
            Some(texts) => texts
                .iter()
                .map(|w| tiers.parse_window_with(w, coverage))
                .collect::<Result<_>>()?,
        };
        let now = self.rb.now();
        let counts = self
            .rb
            .store()
            .rates()
            .rate_counts(tiers, &key, &windows, now)
            .await?;
        Ok(RateCounts {
            key: key.to_string(),
            at: now,
            counts: windows.iter().map(|w| w.span).zip(counts).collect(),
        })
    }

    /// Counts `count` hits of `key` now only if `window` then holds at most `limit`,
    /// atomically; answers the verdict with the window's count. With [`Coverage::Partial`]
    /// (the default) the window counts the current slot and the W/L − 1 before it; with
    /// [`Coverage::Full`] it counts the current slot and the W/L before it, so no span of W
    /// ever holds more than `limit` admitted hits; a hit may be refused up to one slot L
    /// earlier than an exact sliding window would.
    pub async fn check(
        self,
        key: &str,
        limit: u64,
        window: &str,
        count: u64,
        coverage: Coverage,
    ) -> Result<Verdict> {
        let key = RateKey::parse(key)?;
        let count = check_count(count)?;
        if limit > MAX_ABS as u64 {
            return Err(Error::InvalidQuery {
                reason: format!("limit must be at most {MAX_ABS}"),
            });
        }
        let tiers = self.tiers();
        let window = tiers.parse_window_with(window, coverage)?;
        self.rb
            .store()
            .rates()
            .rate_check(tiers, &key, &window, self.rb.now(), limit, count)
            .await
    }

    /// Forgets `key`. `false` when it held nothing.
    pub async fn delete(self, key: &str) -> Result<bool> {
        let key = RateKey::parse(key)?;
        self.rb
            .store()
            .rates()
            .rate_delete(self.tiers(), &key)
            .await
    }

    fn hit_input(
        self,
        key: &str,
        count: u64,
        at: Option<Timestamp>,
        now: Timestamp,
    ) -> Result<RateHit> {
        let key = RateKey::parse(key)?;
        let count = check_count(count)?;
        let at = crate::domain::not_in_future(at, now, self.rb.settings().max_future_skew)?;
        Ok(RateHit { key, at, count })
    }

    /// The error of a hit at `at` that no tier holds at `now`, named by the coarsest tier.
    fn too_late(self, at: Timestamp, now: Timestamp) -> Error {
        let coarsest = self.tiers().tiers().last().copied();
        let (slot, oldest_open) = coarsest.map_or((0, 0), |tier| {
            let g = tier.slot.secs_i64();
            let slot = at.unix_seconds().div_euclid(g) * g;
            let oldest = (now.unix_seconds().div_euclid(g) - i64::from(tier.slots) + 1) * g;
            (slot, oldest)
        });
        Error::TooLate {
            at: at.unix_seconds_f64(),
            slot,
            oldest_open,
        }
    }
}

/// A hit's count: 1 to 2^32 − 1.
fn check_count(count: u64) -> Result<u32> {
    u32::try_from(count)
        .ok()
        .filter(|c| *c >= 1)
        .ok_or_else(|| Error::InvalidDelta {
            reason: format!("a rate count must be between 1 and {}", u32::MAX),
        })
}

/// The windows of a `last=5s,5m` list, as written: a space or an empty part is an
/// invalid window, as in every other field.
#[cfg(feature = "server")]
pub(crate) fn split_windows(text: &str) -> Vec<&str> {
    text.split(',').collect()
}
