//! The time ring of one rate key: per tier, a ring of slot counters and a *head*, the
//! newest slot the ring has been advanced to. Pure arithmetic, shared by both stores:
//! the memory store keeps a [`RateRing`] per key; the Redis store keeps the same layout
//! packed in one string (see [`RateRing::from_bytes`]), writes it with `rate_hit.lua`
//! (the same rules, line for line) and reads it back here.
//!
//! Invariant: a tier with head H holds exactly the slots in (H − n, H]; slot j lives at
//! position j mod n. Advancing the head to T clears the positions of slots H+1..=T
//! (at most n of them, a contiguous range or two), so a whole silent cycle resets the
//! tier and a slot is never reused before it is cleared, whatever the gap. A slot at or
//! below H − n is out of the tier: a hit there is too late for it, and no read sees it.

use super::tiers::{RateTiers, RateWindow};
use crate::domain::Timestamp;

/// The largest value one slot counter holds (an unsigned 32-bit counter).
pub const MAX_SLOT_COUNT: u64 = u32::MAX as u64;

/// A hit would take a slot counter past [`MAX_SLOT_COUNT`]; nothing was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Overflow;

/// One key's counters, tier by tier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RateRing {
    /// Per tier, the newest slot advanced to; `None` while the tier is empty.
    heads: Vec<Option<i64>>,
    /// Per tier, `slots` counters; slot j at position j mod slots.
    counts: Vec<Vec<u32>>,
}

/// The outcome of [`RateRing::check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CheckOutcome {
    pub allowed: bool,
    /// The window's count after the call.
    pub count: u64,
    /// Milliseconds until the window could admit `count` (0 when allowed; `None` when it
    /// never can: `count` alone is over the limit).
    pub retry_after_ms: Option<i64>,
}

impl CheckOutcome {
    /// The outcome as the library answers it.
    pub fn verdict(self, limit: u64) -> super::Verdict {
        super::Verdict {
            allowed: self.allowed,
            count: self.count,
            limit,
            retry_after: self
                .retry_after_ms
                .map(|ms| std::time::Duration::from_millis(ms.max(0) as u64)),
        }
    }
}

impl RateRing {
    /// An empty ring.
    pub fn new(tiers: &RateTiers) -> Self {
        RateRing {
            heads: vec![None; tiers.tiers().len()],
            counts: tiers
                .tiers()
                .iter()
                .map(|t| vec![0; t.slots as usize])
                .collect(),
        }
    }

    /// Reads the packed layout (per tier an 8-byte big-endian head, slot + 1 or 0 for an
    /// empty tier, then per tier its counters, 4 bytes big-endian each); missing bytes (a shorter string) are zeros.
    pub fn from_bytes(tiers: &RateTiers, bytes: &[u8]) -> Self {
        let byte = |i: usize| bytes.get(i).copied().unwrap_or(0);
        let mut ring = RateRing::new(tiers);
        for (t, head) in ring.heads.iter_mut().enumerate() {
            let raw = (0..8).fold(0i64, |acc, k| (acc << 8) | i64::from(byte(8 * t + k)));
            *head = (raw != 0).then_some(raw - 1);
        }
        let mut offset = 8 * tiers.tiers().len();
        for counts in ring.counts.iter_mut() {
            for c in counts.iter_mut() {
                *c = (0..4).fold(0u32, |acc, k| (acc << 8) | u32::from(byte(offset + k)));
                offset += 4;
            }
        }
        ring
    }

    /// The packed layout (what `rate_hit.lua` keeps in Redis).
    #[cfg(test)]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for head in &self.heads {
            out.extend_from_slice(&head.map_or(0, |h| h + 1).to_be_bytes());
        }
        for c in self.counts.iter().flatten() {
            out.extend_from_slice(&c.to_be_bytes());
        }
        out
    }

    /// When (unix ms) the newest slot leaves its longest-lasting tier: from then on the
    /// ring holds nothing (the Redis key expires then). `None` for an empty ring.
    pub fn holds_until_ms(&self, tiers: &RateTiers) -> Option<i64> {
        self.heads
            .iter()
            .zip(tiers.tiers())
            .filter_map(|(head, tier)| {
                head.map(|h| (h + 1 + i64::from(tier.slots)) * tier.slot_ms())
            })
            .max()
    }

    /// Whether no tier holds anything.
    pub fn is_empty(&self) -> bool {
        self.heads.iter().all(Option::is_none)
    }

    /// Counts a hit of `count` at `at`, seen at `now`, in every tier that still holds
    /// its slot; returns how many tiers counted it (0: too late for every tier, and
    /// nothing changed).
    pub fn hit(
        &mut self,
        tiers: &RateTiers,
        now: Timestamp,
        at: Timestamp,
        count: u32,
    ) -> Result<usize, Overflow> {
        let plan: Vec<(i64, i64, bool)> = tiers
            .tiers()
            .iter()
            .zip(&self.heads)
            .map(|(tier, head)| {
                let g = tier.slot_ms();
                let n = i64::from(tier.slots);
                let (now_slot, slot) = (
                    now.unix_millis().div_euclid(g),
                    at.unix_millis().div_euclid(g),
                );
                let reach = head.map_or(now_slot, |h| h.max(now_slot));
                let target = reach.max(slot);
                (slot, target, slot > reach - n)
            })
            .collect();
        let counted = plan.iter().filter(|(_, _, counts)| *counts).count();
        if counted == 0 {
            return Ok(0);
        }
        // Check every counter first, so an overflow changes nothing.
        for (t, &(slot, _, counts)) in plan.iter().enumerate() {
            let fresh = self.heads[t].is_none_or(|h| slot > h);
            let current = if fresh { 0 } else { self.at(t, slot) };
            if counts && u64::from(current) + u64::from(count) > MAX_SLOT_COUNT {
                return Err(Overflow);
            }
        }
        for (t, &(slot, target, counts)) in plan.iter().enumerate() {
            self.advance(t, target);
            if counts {
                let n = self.counts[t].len() as i64;
                self.counts[t][slot.rem_euclid(n) as usize] += count;
            }
        }
        Ok(counted)
    }

    /// Moves tier `t`'s head to `target` (if ahead), clearing the slots it passes.
    fn advance(&mut self, t: usize, target: i64) {
        let counts = &mut self.counts[t];
        let n = counts.len() as i64;
        match self.heads[t] {
            Some(head) if target <= head => return,
            Some(head) => {
                let cleared = (target - head).min(n);
                for j in head + 1..=head + cleared {
                    counts[j.rem_euclid(n) as usize] = 0;
                }
            }
            None => counts.iter_mut().for_each(|c| *c = 0),
        }
        self.heads[t] = Some(target);
    }

    /// The counter of `slot` on tier `t` (its position; the caller knows it is held).
    fn at(&self, t: usize, slot: i64) -> u32 {
        let n = self.counts[t].len() as i64;
        self.counts[t][slot.rem_euclid(n) as usize]
    }

    /// The held slots of `window` at `now`, as `(first, last)` (empty when first > last).
    fn window_slots(&self, tiers: &RateTiers, window: &RateWindow, now: Timestamp) -> (i64, i64) {
        let tier = tiers.tiers()[window.tier];
        let Some(head) = self.heads[window.tier] else {
            return (1, 0);
        };
        let now_slot = now.unix_millis().div_euclid(tier.slot_ms());
        let first = (now_slot - i64::from(window.slots)).max(head - i64::from(tier.slots)) + 1;
        (first, now_slot.min(head))
    }

    /// The hits of `window` at `now`: those whose slot is in the window's
    /// `window.slots` slots ending with the current one.
    pub fn count(&self, tiers: &RateTiers, window: &RateWindow, now: Timestamp) -> u64 {
        let (first, last) = self.window_slots(tiers, window, now);
        (first..=last)
            .map(|j| u64::from(self.at(window.tier, j)))
            .sum()
    }

    /// Counts `count` hits at `now` only if `window` then holds at most `limit`.
    pub fn check(
        &mut self,
        tiers: &RateTiers,
        window: &RateWindow,
        now: Timestamp,
        limit: u64,
        count: u32,
    ) -> Result<CheckOutcome, Overflow> {
        let current = self.count(tiers, window, now);
        if current + u64::from(count) <= limit {
            self.hit(tiers, now, now, count)?;
            return Ok(CheckOutcome {
                allowed: true,
                count: self.count(tiers, window, now),
                retry_after_ms: Some(0),
            });
        }
        Ok(CheckOutcome {
            allowed: false,
            count: current,
            retry_after_ms: self.retry_after(tiers, window, now, limit, count, current),
        })
    }

    /// How long until enough of the window's oldest slots leave it for `count` more
    /// to fit under `limit` (no other hits assumed).
    fn retry_after(
        &self,
        tiers: &RateTiers,
        window: &RateWindow,
        now: Timestamp,
        limit: u64,
        count: u32,
        current: u64,
    ) -> Option<i64> {
        if u64::from(count) > limit {
            return None;
        }
        let tier = tiers.tiers()[window.tier];
        let g = tier.slot_ms();
        let now_slot = now.unix_millis().div_euclid(g);
        let (first, last) = self.window_slots(tiers, window, now);
        let mut left = current;
        // At slot now_slot + k, the slots up to now_slot - window.slots + k have left.
        for k in 1..=i64::from(window.slots) {
            let leaving = now_slot - i64::from(window.slots) + k;
            if (first..=last).contains(&leaving) {
                left -= u64::from(self.at(window.tier, leaving));
            }
            if left + u64::from(count) <= limit {
                return Some((now_slot + k) * g - now.unix_millis());
            }
        }
        Some((now_slot + i64::from(window.slots)) * g - now.unix_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_700_000_000_000 - 1_700_000_000_000 % 86_400_000;

    fn ts(ms: i64) -> Timestamp {
        Timestamp::from_unix_millis(T0 + ms).unwrap()
    }

    fn small() -> RateTiers {
        RateTiers::parse("4x1s,3x1m").unwrap()
    }

    fn w(tiers: &RateTiers, text: &str) -> RateWindow {
        tiers.parse_window(text).unwrap()
    }

    #[test]
    fn a_hit_counts_in_every_tier_and_leaves_with_its_slot() {
        let tiers = small();
        let mut ring = RateRing::new(&tiers);
        assert_eq!(ring.hit(&tiers, ts(0), ts(0), 2), Ok(2));
        assert_eq!(ring.count(&tiers, &w(&tiers, "1s"), ts(999)), 2);
        assert_eq!(ring.count(&tiers, &w(&tiers, "1s"), ts(1000)), 0);
        assert_eq!(ring.count(&tiers, &w(&tiers, "4s"), ts(3999)), 2);
        assert_eq!(ring.count(&tiers, &w(&tiers, "4s"), ts(4000)), 0);
        assert_eq!(ring.count(&tiers, &w(&tiers, "3m"), ts(179_999)), 2);
        assert_eq!(ring.count(&tiers, &w(&tiers, "3m"), ts(180_000)), 0);
    }

    #[test]
    fn a_silent_cycle_clears_the_whole_tier() {
        let tiers = small();
        let mut ring = RateRing::new(&tiers);
        for s in 0..4 {
            ring.hit(&tiers, ts(s * 1000), ts(s * 1000), 1).unwrap();
        }
        // Silent for much longer than a cycle, landing on the same positions.
        ring.hit(&tiers, ts(40_000), ts(40_000), 5).unwrap();
        assert_eq!(ring.count(&tiers, &w(&tiers, "4s"), ts(43_999)), 5);
    }

    #[test]
    fn late_hits_count_where_held_and_too_late_ones_change_nothing() {
        let tiers = small();
        let mut ring = RateRing::new(&tiers);
        ring.hit(&tiers, ts(10_000), ts(10_000), 1).unwrap();
        // 3 s late: still in the second tier (4 slots) and the minute tier.
        assert_eq!(ring.hit(&tiers, ts(10_000), ts(7_000), 1), Ok(2));
        // 5 s late: only the minute tier holds it.
        assert_eq!(ring.hit(&tiers, ts(10_000), ts(5_000), 1), Ok(1));
        assert_eq!(ring.count(&tiers, &w(&tiers, "4s"), ts(10_000)), 2);
        assert_eq!(ring.count(&tiers, &w(&tiers, "1m"), ts(10_000)), 3);
        let before = ring.clone();
        assert_eq!(ring.hit(&tiers, ts(200_000), ts(0), 1), Ok(0));
        assert_eq!(ring, before);
    }

    #[test]
    fn overflow_changes_nothing() {
        let tiers = small();
        let mut ring = RateRing::new(&tiers);
        ring.hit(&tiers, ts(0), ts(0), u32::MAX - 1).unwrap();
        let before = ring.clone();
        assert_eq!(ring.hit(&tiers, ts(0), ts(0), 2), Err(Overflow));
        assert_eq!(ring, before);
        assert_eq!(ring.hit(&tiers, ts(0), ts(0), 1), Ok(2));
    }

    #[test]
    fn check_admits_up_to_the_limit_and_says_when_to_retry() {
        let tiers = small();
        let mut ring = RateRing::new(&tiers);
        let window = w(&tiers, "4s");
        ring.hit(&tiers, ts(0), ts(0), 2).unwrap();
        ring.hit(&tiers, ts(1500), ts(1500), 1).unwrap();
        let ok = ring.check(&tiers, &window, ts(2500), 4, 1).unwrap();
        assert_eq!(
            (ok.allowed, ok.count, ok.retry_after_ms),
            (true, 4, Some(0))
        );
        let no = ring.check(&tiers, &window, ts(2500), 4, 1).unwrap();
        // The 2 hits of slot 0 leave at 4000 ms: 1500 ms from now.
        assert_eq!(
            (no.allowed, no.count, no.retry_after_ms),
            (false, 4, Some(1500))
        );
        let never = ring.check(&tiers, &window, ts(2500), 4, 5).unwrap();
        assert_eq!((never.allowed, never.retry_after_ms), (false, None));
    }

    #[test]
    fn full_coverage_counts_the_oldest_slot_whole_and_refuses_until_it_leaves() {
        use crate::rates::Coverage;
        let tiers = small();
        let full = tiers.parse_window_with("2m", Coverage::Full).unwrap();
        assert_eq!((full.tier, full.slots), (1, 3));
        let mut ring = RateRing::new(&tiers);
        // Three hits at 0:50, read 1 min 19 s later (2:09): "2m" counts minutes 1 and
        // 2 only; with full coverage, minute 0 too (hits 2 min 9 s back at most).
        ring.hit(&tiers, ts(50_000), ts(50_000), 3).unwrap();
        assert_eq!(ring.count(&tiers, &w(&tiers, "2m"), ts(129_000)), 0);
        assert_eq!(ring.count(&tiers, &full, ts(129_000)), 3);
        // A limit of 3 per 2 minutes: refused until minute 0 leaves, at 3:00 (the
        // span from 0:50 is 2 min 10 s: at most one slot more than the window).
        let no = ring.check(&tiers, &full, ts(129_000), 3, 1).unwrap();
        assert_eq!(
            (no.allowed, no.count, no.retry_after_ms),
            (false, 3, Some(51_000))
        );
        let ok = ring.check(&tiers, &full, ts(180_000), 3, 1).unwrap();
        assert_eq!((ok.allowed, ok.count), (true, 1));
    }

    #[test]
    fn bytes_round_trip_and_short_strings_read_as_zeros() {
        let tiers = small();
        let mut ring = RateRing::new(&tiers);
        ring.hit(&tiers, ts(0), ts(0), 7).unwrap();
        let bytes = ring.to_bytes();
        assert_eq!(bytes.len(), tiers.packed_bytes());
        assert_eq!(RateRing::from_bytes(&tiers, &bytes), ring);
        assert!(RateRing::from_bytes(&tiers, &[]).is_empty());
    }
}
