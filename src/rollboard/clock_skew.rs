//! How far this process's clock is from the store's.
//!
//! Every writer places events and freezes windows by its own clock, so a process whose
//! clock runs ahead freezes windows early for every process (see `docs/operations.md`).
//! The service measures the skew at start and then periodically, exports it, and fails
//! readiness when it is too large.

use std::time::Duration;

use super::Rollboard;
use crate::error::Result;

/// A clock skew beyond the limit (`max_clock_skew`), which fails readiness: `/readyz`
/// and the dashboard's health say it in the same words.
#[derive(Debug, Clone, PartialEq)]
pub struct SkewTooLarge {
    /// This clock minus the store's, in seconds.
    pub skew: f64,
    /// The limit.
    pub max: Duration,
}

impl SkewTooLarge {
    /// The problem when `skew` is beyond `max`, `None` within it.
    pub fn judge(skew: f64, max: Duration) -> Option<SkewTooLarge> {
        (skew.abs() > max.as_secs_f64()).then_some(SkewTooLarge { skew, max })
    }

    /// The stable code: `clock_skew`.
    pub fn code(&self) -> &'static str {
        "clock_skew"
    }
}

impl std::fmt::Display for SkewTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "this process's clock is {:+.3} s off the store's, more than the {} s allowed \
             (max_clock_skew): windows would freeze at the wrong time; sync this host's clock",
            self.skew,
            self.max.as_secs_f64()
        )
    }
}

impl Rollboard {
    /// This instance's clock minus the store's clock, in seconds (positive: this clock is
    /// ahead). One round trip: the store's reading is taken to be from the middle of it.
    /// Zero for a store in this process (it shares the process's clock).
    pub async fn clock_skew(&self) -> Result<f64> {
        let Some(server) = self.store().server() else {
            return Ok(0.0);
        };
        let before = self.now();
        let store = server.server_time().await?;
        let after = self.now();
        let local = (before.unix_millis() as f64 + after.unix_millis() as f64) / 2.0;
        Ok((local - store.unix_millis() as f64) / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::Rollboard;

    #[test]
    fn a_skew_fails_readiness_only_beyond_the_limit_either_way() {
        use super::SkewTooLarge;
        use std::time::Duration;
        let max = Duration::from_millis(500);
        assert_eq!(SkewTooLarge::judge(0.5, max), None);
        assert_eq!(SkewTooLarge::judge(-0.5, max), None);
        let behind = SkewTooLarge::judge(-0.75, max).unwrap();
        assert_eq!(behind.code(), "clock_skew");
        assert_eq!(
            behind.to_string(),
            "this process's clock is -0.750 s off the store's, more than the 0.5 s allowed \
             (max_clock_skew): windows would freeze at the wrong time; sync this host's clock"
        );
    }

    #[tokio::test]
    async fn a_store_in_this_process_has_no_skew() {
        assert_eq!(Rollboard::memory().clock_skew().await.unwrap(), 0.0);
    }
}
