//! Rate windows: per key (a user id, an IP), how many hits in the last 5 s / 5 min /
//! 5 h / 5 days / 180 days, answered from one small *time ring* per key (the structure
//! of the source articles, made exact), and `check`, which counts a hit only while a
//! window stays within a limit.
//!
//! Pure code: [`tiers`] (tiers, windows and which tier answers them), [`ring`] (the
//! ring arithmetic both stores share) and [`RateKey`]. The store side is
//! [`RateStore`](crate::store::RateStore); the front door is
//! [`Rates::hit`](crate::Rates::hit) and its siblings.

use std::fmt;

use serde::Serialize;

use crate::error::Error;

pub mod coverage;
pub(crate) mod ring;
pub mod tiers;

pub use coverage::Coverage;
pub use ring::MAX_SLOT_COUNT;
pub use tiers::{MAX_RATE_SLOTS, RateTiers, RateWindow, Tier};

/// A rate key: 1–256 bytes of UTF-8 (the member rules). It reaches a Redis key name
/// only through [`RateKey::encoded`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct RateKey(String);

impl RateKey {
    /// Longest accepted key, in bytes.
    pub const MAX_BYTES: usize = 256;

    /// Checks the length rules.
    pub fn parse(key: &str) -> Result<Self, Error> {
        let reason = if key.is_empty() {
            "must not be empty".to_owned()
        } else if key.len() > Self::MAX_BYTES {
            format!("must be at most {} bytes", Self::MAX_BYTES)
        } else {
            return Ok(RateKey(key.to_owned()));
        };
        Err(Error::InvalidRateKey { reason })
    }

    /// The key as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key with every byte outside `A-Z a-z 0-9 _ . -` written `%XX`: injective,
    /// and free of `{`, `}` and `:`, so it can sit inside a hash tag and no two keys
    /// share a Redis key or a tag.
    pub fn encoded(&self) -> String {
        let mut out = String::with_capacity(self.0.len());
        for b in self.0.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-') {
                out.push(char::from(b));
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    }
}

impl fmt::Display for RateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The counts of a key's windows at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateCounts {
    /// The key.
    pub key: String,
    /// The instant counted at, unix milliseconds.
    pub at: crate::domain::Timestamp,
    /// Per window asked for, in the order asked: its length and count.
    pub counts: Vec<(crate::domain::Span, u64)>,
}

/// What [`Rates::check`](crate::Rates::check) decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the hit was counted.
    pub allowed: bool,
    /// The window's count after the call.
    pub count: u64,
    /// The limit checked against.
    pub limit: u64,
    /// How long until a retry could be allowed (zero when allowed; `None` when it never
    /// can, the count alone being over the limit).
    pub retry_after: Option<std::time::Duration>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_one_to_256_bytes() {
        assert!(RateKey::parse("").is_err());
        assert!(RateKey::parse(&"a".repeat(257)).is_err());
        assert_eq!(
            RateKey::parse(&"é".repeat(128)).unwrap().as_str().len(),
            256
        );
        assert_eq!(RateKey::parse("").unwrap_err().code(), "invalid_rate_key");
    }

    #[test]
    fn encoding_escapes_tags_separators_spaces_and_non_ascii() {
        let enc = |k: &str| RateKey::parse(k).unwrap().encoded();
        assert_eq!(enc("user-1_a.b"), "user-1_a.b");
        assert_eq!(enc("{a}"), "%7Ba%7D");
        assert_eq!(enc("a:b c"), "a%3Ab%20c");
        assert_eq!(enc("%7B"), "%257B");
        assert_eq!(enc("中"), "%E4%B8%AD");
        assert_ne!(enc("%7B"), enc("{"));
    }
}
