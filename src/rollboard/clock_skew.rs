//! How far this process's clock is from the store's.
//!
//! Every writer places events and freezes windows by its own clock, so a process whose
//! clock runs ahead freezes windows early for every process (see `docs/operations.md`).
//! The service measures the skew at start and then periodically, exports it, and fails
//! readiness when it is too large.

use super::Rollboard;
use crate::error::Result;

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

    #[tokio::test]
    async fn a_store_in_this_process_has_no_skew() {
        assert_eq!(Rollboard::memory().clock_skew().await.unwrap(), 0.0);
    }
}
