//! `Timestamp`: an instant as unix time in milliseconds, UTC.
//!
//! Users give times as unix seconds, fractions allowed (`1700000000.5`). Slots are whole
//! seconds, so millisecond precision is more than enough and keeps arithmetic exact.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use time::OffsetDateTime;

use super::error::Error;

/// An instant, in unix milliseconds (UTC). Always between 1970 and the end of year 9999.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The latest accepted instant: 9999-12-31T23:59:59Z.
    pub const MAX_SECONDS: i64 = 253_402_300_799;

    /// An instant from unix milliseconds; `millis` must be in range.
    pub fn from_unix_millis(millis: i64) -> Result<Self, Error> {
        if !(0..=Self::MAX_SECONDS * 1000).contains(&millis) {
            return Err(Error::InvalidTime {
                reason: format!("{millis} ms is outside 1970..9999"),
            });
        }
        Ok(Timestamp(millis))
    }

    /// An instant from whole unix seconds.
    pub fn from_unix_seconds(seconds: i64) -> Result<Self, Error> {
        seconds
            .checked_mul(1000)
            .ok_or_else(|| Error::InvalidTime {
                reason: format!("{seconds} s is outside 1970..9999"),
            })
            .and_then(Self::from_unix_millis)
    }

    /// An instant from unix seconds with a fraction, as JSON carries it.
    pub fn from_unix_seconds_f64(seconds: f64) -> Result<Self, Error> {
        if !seconds.is_finite() || seconds < 0.0 || seconds > Self::MAX_SECONDS as f64 {
            return Err(Error::InvalidTime {
                reason: format!("{seconds} is not a unix time in seconds between 1970 and 9999"),
            });
        }
        Self::from_unix_millis((seconds * 1000.0).floor() as i64)
    }

    /// Unix milliseconds.
    pub fn unix_millis(self) -> i64 {
        self.0
    }

    /// Whole unix seconds (rounded down).
    pub fn unix_seconds(self) -> i64 {
        self.0.div_euclid(1000)
    }

    /// Unix seconds with the fraction, as JSON carries it.
    pub fn unix_seconds_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// This instant plus `millis` (saturating at the accepted range).
    pub fn plus_millis(self, millis: i64) -> Timestamp {
        Timestamp(
            self.0
                .saturating_add(millis)
                .clamp(0, Self::MAX_SECONDS * 1000),
        )
    }

    /// The current time from the system clock (read as a duration since the epoch: an
    /// `OffsetDateTime` computes a calendar date first, ~250 instructions a read on paths
    /// that read the clock a few times a request).
    pub fn now_utc() -> Timestamp {
        let millis = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(since) => i64::try_from(since.as_millis()).unwrap_or(i64::MAX),
            Err(_) => 0,
        };
        Timestamp(millis.clamp(0, Self::MAX_SECONDS * 1000))
    }
}

impl From<OffsetDateTime> for Timestamp {
    fn from(t: OffsetDateTime) -> Self {
        let millis = (t.unix_timestamp_nanos() / 1_000_000) as i64;
        Timestamp(millis.clamp(0, Self::MAX_SECONDS * 1000))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let formatted = OffsetDateTime::from_unix_timestamp_nanos(self.0 as i128 * 1_000_000)
            .ok()
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            });
        match formatted {
            Some(text) => f.write_str(&text),
            None => write!(f, "{} ms", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_of_seconds_keep_milliseconds() {
        let t = Timestamp::from_unix_seconds_f64(1_700_000_000.5).unwrap();
        assert_eq!(t.unix_millis(), 1_700_000_000_500);
        assert_eq!(t.unix_seconds(), 1_700_000_000);
    }

    #[test]
    fn rejects_nan_negative_and_far_future() {
        for bad in [f64::NAN, f64::INFINITY, -1.0, 1e13] {
            assert_eq!(
                Timestamp::from_unix_seconds_f64(bad).unwrap_err().code(),
                "invalid_time"
            );
        }
        assert!(Timestamp::from_unix_seconds(i64::MAX).is_err());
    }

    #[test]
    fn displays_as_rfc3339_utc() {
        let t = Timestamp::from_unix_seconds(0).unwrap();
        assert_eq!(t.to_string(), "1970-01-01T00:00:00Z");
    }
}
