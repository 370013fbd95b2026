//! The tiers of a rate key's time ring, and which tier answers a window.
//!
//! A tier is a ring of `slots` counters of `slot` length each (the default, as in the
//! source articles: 60 × 1 s, 60 × 1 min, 24 × 1 h, 366 × 1 day). A window of length W
//! is answered by the finest tier whose slot length g divides W and which holds W/g
//! slots (W/g + 1 with [`Coverage::Full`]: `60s` then goes to the minute tier); a window
//! no tier can answer is rejected.

use std::fmt;

use super::coverage::Coverage;
use crate::domain::Span;
use crate::error::Error;

/// One ring: `slots` counters of `slot` length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tier {
    /// The length of one slot.
    pub slot: Span,
    /// How many slots the ring holds (the tier covers `slot × slots`).
    pub slots: u32,
}

impl Tier {
    /// The slot length in milliseconds, the unit of the ring arithmetic.
    pub(crate) fn slot_ms(&self) -> i64 {
        self.slot.secs_i64() * 1000
    }
}

/// The tiers of every rate key, finest first. `RateTiers::default()` is the source's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RateTiers(Vec<Tier>);

/// Most counters over all tiers: 4 bytes each, so a key stays well inside 4 KB.
pub const MAX_RATE_SLOTS: u32 = 900;

impl Default for RateTiers {
    fn default() -> Self {
        let tier = |seconds: u64, slots: u32| Tier {
            slot: Span::from_seconds(seconds).expect("a valid default slot"),
            slots,
        };
        RateTiers(vec![
            tier(1, 60),
            tier(60, 60),
            tier(3600, 24),
            tier(86_400, 366),
        ])
    }
}

impl RateTiers {
    /// Tiers from `(slot, slots)` pairs: 1 to 8 tiers, slot lengths strictly increasing,
    /// each tier at least one slot, at most [`MAX_RATE_SLOTS`] slots in all.
    pub fn new(tiers: Vec<Tier>) -> Result<Self, Error> {
        let invalid = |reason: String| Err(Error::InvalidConfig { reason });
        if tiers.is_empty() || tiers.len() > 8 {
            return invalid("rate tiers: between 1 and 8 tiers".into());
        }
        if tiers.iter().any(|t| t.slots == 0) {
            return invalid("rate tiers: every tier holds at least one slot".into());
        }
        if tiers.windows(2).any(|w| w[0].slot >= w[1].slot) {
            return invalid("rate tiers: slot lengths must be strictly increasing".into());
        }
        let total: u64 = tiers.iter().map(|t| u64::from(t.slots)).sum();
        if total > u64::from(MAX_RATE_SLOTS) {
            return invalid(format!(
                "rate tiers: {total} slots in all, at most {MAX_RATE_SLOTS}"
            ));
        }
        Ok(RateTiers(tiers))
    }

    /// Parses `"60x1s,60x1m,24x1h,366x1d"`.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let tiers = text
            .split(',')
            .map(|part| {
                let (slots, slot) =
                    part.trim()
                        .split_once('x')
                        .ok_or_else(|| Error::InvalidConfig {
                            reason: format!("rate tier {part:?}: write it SLOTSxSLOT, e.g. 60x1s"),
                        })?;
                let slots = slots.parse::<u32>().map_err(|_| Error::InvalidConfig {
                    reason: format!("rate tier {part:?}: {slots:?} is not a slot count"),
                })?;
                Ok(Tier {
                    slot: Span::parse(slot)?,
                    slots,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        RateTiers::new(tiers)
    }

    /// The tiers, finest first.
    pub fn tiers(&self) -> &[Tier] {
        &self.0
    }

    /// Counters over all tiers.
    pub fn total_slots(&self) -> usize {
        self.0.iter().map(|t| t.slots as usize).sum()
    }

    /// The bytes of one key's packed ring: an 8-byte head per tier and a 4-byte counter
    /// per slot (2,072 for the default tiers).
    pub fn packed_bytes(&self) -> usize {
        8 * self.0.len() + 4 * self.total_slots()
    }

    /// The window of length `span`, answered by the finest tier that can.
    pub fn window(&self, span: Span) -> Result<RateWindow, Error> {
        self.window_with(span, Coverage::Partial)
    }

    /// The window of length `span` counted with `coverage`, answered by the finest tier
    /// whose slot length g divides it and which holds the slots it counts (W/g, or
    /// W/g + 1 with full coverage).
    pub fn window_with(&self, span: Span, coverage: Coverage) -> Result<RateWindow, Error> {
        self.0
            .iter()
            .enumerate()
            .find_map(|(tier, t)| {
                let g = t.slot.seconds();
                let n = coverage.slots(span.seconds() / g);
                (span.seconds().is_multiple_of(g) && n <= u64::from(t.slots)).then_some(
                    RateWindow {
                        span,
                        tier,
                        slots: n as u32,
                        coverage,
                    },
                )
            })
            .ok_or_else(|| Error::InvalidRateWindow {
                window: span.to_string(),
                reason: match coverage {
                    Coverage::Partial => format!("no tier answers it (tiers: {self})"),
                    Coverage::Full => format!(
                        "no tier answers it with full coverage, which needs one slot more \
                         than the window (tiers: {self})"
                    ),
                },
            })
    }

    /// Parses a window (`"5m"`) and finds its tier.
    pub fn parse_window(&self, text: &str) -> Result<RateWindow, Error> {
        self.parse_window_with(text, Coverage::Partial)
    }

    /// Parses a window (`"5m"`) counted with `coverage` and finds its tier.
    pub fn parse_window_with(&self, text: &str, coverage: Coverage) -> Result<RateWindow, Error> {
        let span = Span::parse(text).map_err(|e| Error::InvalidRateWindow {
            window: text.chars().take(40).collect(),
            reason: e.to_string(),
        })?;
        self.window_with(span, coverage)
    }

    /// The windows read when none are named: those of `5s, 5m, 5h, 5d, 180d` that a tier
    /// answers, or, when none is, each tier's whole span.
    pub fn default_windows(&self) -> Vec<RateWindow> {
        let named: Vec<RateWindow> = ["5s", "5m", "5h", "5d", "180d"]
            .iter()
            .filter_map(|w| self.parse_window(w).ok())
            .collect();
        if !named.is_empty() {
            return named;
        }
        self.0
            .iter()
            .filter_map(|t| Span::from_seconds(t.slot.seconds() * u64::from(t.slots)).ok())
            .filter_map(|span| self.window(span).ok())
            .collect()
    }

    /// A short fingerprint of the layout, part of every Redis key name, so keys written
    /// under other tiers are never misread (FNV-1a of the tiers as text).
    pub(crate) fn fingerprint(&self) -> String {
        let text = self.to_string();
        let mut hash: u32 = 0x811c_9dc5;
        for b in text.bytes() {
            hash ^= u32::from(b);
            hash = hash.wrapping_mul(0x0100_0193);
        }
        format!("{hash:08x}")
    }
}

impl fmt::Display for RateTiers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}x{}", t.slots, t.slot)?;
        }
        Ok(())
    }
}

/// A window to count over, and the tier that answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateWindow {
    /// Its length.
    pub span: Span,
    /// The index of the tier that answers it.
    pub tier: usize,
    /// How many of that tier's slots it counts (the current one included): W/g, or
    /// W/g + 1 with full coverage.
    pub slots: u32,
    /// Which slots it counts.
    pub coverage: Coverage,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(text: &str) -> Result<(usize, u32), Error> {
        RateTiers::default()
            .parse_window(text)
            .map(|w| (w.tier, w.slots))
    }

    #[test]
    fn each_window_is_answered_by_the_finest_tier_that_can() {
        assert_eq!(window("5s").unwrap(), (0, 5));
        assert_eq!(window("60s").unwrap(), (0, 60));
        assert_eq!(window("2m").unwrap(), (1, 2));
        assert_eq!(window("5m").unwrap(), (1, 5));
        assert_eq!(window("5h").unwrap(), (2, 5));
        assert_eq!(window("24h").unwrap(), (2, 24));
        assert_eq!(window("48h").unwrap(), (3, 2));
        assert_eq!(window("5d").unwrap(), (3, 5));
        assert_eq!(window("180d").unwrap(), (3, 180));
        assert_eq!(window("366d").unwrap(), (3, 366));
    }

    #[test]
    fn windows_no_tier_answers_are_rejected() {
        for text in ["90s", "25h", "367d", "61s", "0s", "soon"] {
            let err = window(text).unwrap_err();
            assert_eq!(err.code(), "invalid_rate_window", "{text}");
        }
    }

    #[test]
    fn full_coverage_counts_one_slot_more_and_moves_up_a_tier_when_needed() {
        let full = |text: &str| {
            RateTiers::default()
                .parse_window_with(text, Coverage::Full)
                .map(|w| (w.tier, w.slots))
        };
        assert_eq!(full("5s").unwrap(), (0, 6));
        assert_eq!(full("59s").unwrap(), (0, 60));
        // 60 s needs 61 one-second slots: the minute tier answers, this minute and the last.
        assert_eq!(full("60s").unwrap(), (1, 2));
        assert_eq!(full("5m").unwrap(), (1, 6));
        assert_eq!(full("60m").unwrap(), (2, 2));
        assert_eq!(full("24h").unwrap(), (3, 2));
        assert_eq!(full("365d").unwrap(), (3, 366));
        let err = full("366d").unwrap_err();
        assert_eq!(err.code(), "invalid_rate_window");
        assert_eq!(
            err.to_string(),
            "invalid rate window \"366d\": no tier answers it with full coverage, which \
             needs one slot more than the window (tiers: 60x1s,60x1m,24x1h,366x1d)"
        );
    }

    #[test]
    fn default_windows_are_those_of_the_source() {
        let spans: Vec<String> = RateTiers::default()
            .default_windows()
            .iter()
            .map(|w| w.span.to_string())
            .collect();
        assert_eq!(spans, ["5s", "5m", "5h", "5d", "180d"]);
    }

    #[test]
    fn tiers_parse_print_and_validate() {
        let tiers = RateTiers::parse("60x1s, 60x1m,24x1h,366x1d").unwrap();
        assert_eq!(tiers, RateTiers::default());
        assert_eq!(tiers.to_string(), "60x1s,60x1m,24x1h,366x1d");
        assert_eq!(tiers.total_slots(), 510);
        assert_eq!(tiers.packed_bytes(), 2072);
        for bad in ["", "60x1m,60x1s", "0x1s", "1000x1s", "60y1s", "ax1s"] {
            assert_eq!(
                RateTiers::parse(bad).unwrap_err().code(),
                "invalid_config",
                "{bad}"
            );
        }
    }

    #[test]
    fn the_fingerprint_changes_with_the_tiers() {
        let a = RateTiers::default().fingerprint();
        let b = RateTiers::parse("60x1s,60x1m,24x1h,365x1d")
            .unwrap()
            .fingerprint();
        assert_eq!(a.len(), 8);
        assert_ne!(a, b);
        assert_eq!(a, RateTiers::default().fingerprint());
    }
}
