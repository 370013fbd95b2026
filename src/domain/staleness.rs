//! How old a read's answer may be: the staleness bound a caller allows a top-N, member,
//! ranks or around read, checked before the read. Pure; no I/O.

use super::error::Error;

/// The largest staleness bound a read may allow, in milliseconds (one minute). A bound
/// is a promise about freshness: beyond a minute an answer is no longer "nearly now",
/// and a caller content with older answers keeps them itself.
pub const MAX_STALENESS_MS: u64 = 60_000;

/// How old, in milliseconds, a read's answer may be: [`Staleness::EXACT`] (0) reads the
/// store every time; above 0 the read may be answered from this process's read cache
/// while the cached answer is at most this old.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Staleness(u64);

impl Staleness {
    /// No staleness: every read reads the store.
    pub const EXACT: Staleness = Staleness(0);

    /// A bound of `ms` milliseconds, 0 to [`MAX_STALENESS_MS`]
    /// ([`Error::InvalidQuery`] otherwise).
    pub fn from_millis(ms: u64) -> Result<Staleness, Error> {
        if ms > MAX_STALENESS_MS {
            return Err(Error::InvalidQuery {
                reason: format!(
                    "max_staleness_ms must be between 0 (exact: read the store) and \
                     {MAX_STALENESS_MS} (a minute, the oldest answer the read cache keeps), \
                     got {ms}"
                ),
            });
        }
        Ok(Staleness(ms))
    }

    /// The bound in milliseconds.
    pub fn millis(self) -> u64 {
        self.0
    }

    /// Whether the bound is 0: the read goes to the store.
    pub fn is_exact(self) -> bool {
        self.0 == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_is_zero_to_a_minute() {
        assert_eq!(Staleness::from_millis(0).unwrap(), Staleness::EXACT);
        assert!(Staleness::from_millis(0).unwrap().is_exact());
        assert_eq!(Staleness::from_millis(60_000).unwrap().millis(), 60_000);
        match Staleness::from_millis(60_001) {
            Err(Error::InvalidQuery { reason }) => assert_eq!(
                reason,
                "max_staleness_ms must be between 0 (exact: read the store) and 60000 (a \
                 minute, the oldest answer the read cache keeps), got 60001"
            ),
            other => panic!("expected an invalid query, got {other:?}"),
        }
    }
}
