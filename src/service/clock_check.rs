//! Compares this process's clock with the store's, at start and then every
//! [`CHECK_EVERY`]: the skew is the `rollboard_clock_skew_seconds` gauge, and a warning
//! when it is above [`WARN_ABOVE_SECONDS`]. (`/readyz` fails above `max_clock_skew`.)

use std::time::Duration;

use tokio::task::JoinHandle;

use crate::Rollboard;

/// How often the clock is compared.
pub const CHECK_EVERY: Duration = Duration::from_secs(30);

/// A skew above this many seconds is logged as a warning.
pub const WARN_ABOVE_SECONDS: f64 = 1.0;

/// Compares the clocks now and then every [`CHECK_EVERY`], until the task is aborted.
pub fn spawn(boards: Rollboard) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(CHECK_EVERY);
        loop {
            every.tick().await;
            check(&boards).await;
        }
    })
}

/// Measures the skew once, records it and warns when it is large.
pub async fn check(boards: &Rollboard) {
    match boards.clock_skew().await {
        Ok(skew) => {
            crate::metrics::clock_skew(skew);
            if skew.abs() > WARN_ABOVE_SECONDS {
                tracing::warn!(
                    skew_seconds = skew,
                    "this process's clock is {skew:+.3} s off the store's: windows freeze by each \
                     writer's clock, so sync this host's clock (see docs/operations.md)"
                );
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the store's clock");
            crate::metrics::store_error(e.code());
        }
    }
}
