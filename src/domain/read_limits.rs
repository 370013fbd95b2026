//! Read limits: the bounds on a ranking read's paging arguments, checked before any
//! store sees the read. Pure; no I/O.

use super::error::Error;

/// Largest `offset` of a page of the ranking.
pub const MAX_OFFSET: u64 = 1_000_000_000;
/// Largest `n` (entries on each side) of a read around a member.
pub const MAX_AROUND: u64 = 100;

/// Checks a page's `limit` (1 to `max_limit`) and `offset` (0 to [`MAX_OFFSET`]).
pub fn check_page(offset: u64, limit: u64, max_limit: u64) -> Result<(), Error> {
    check_range("limit", limit, 1, max_limit)?;
    check_range("offset", offset, 0, MAX_OFFSET)
}

/// Checks the `n` of a read around a member (0 to [`MAX_AROUND`]).
pub fn check_around(n: u64) -> Result<(), Error> {
    check_range("n", n, 0, MAX_AROUND)
}

fn check_range(what: &str, value: u64, min: u64, max: u64) -> Result<(), Error> {
    if value < min || value > max {
        return Err(Error::InvalidQuery {
            reason: format!("{what} must be between {min} and {max}, got {value}"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(result: Result<(), Error>) -> String {
        match result {
            Err(Error::InvalidQuery { reason }) => reason,
            other => panic!("expected an invalid query, got {other:?}"),
        }
    }

    #[test]
    fn limit_runs_from_one_to_the_configured_maximum() {
        assert_eq!(check_page(0, 1, 1_000), Ok(()));
        assert_eq!(check_page(0, 1_000, 1_000), Ok(()));
        assert_eq!(
            reason(check_page(0, 0, 1_000)),
            "limit must be between 1 and 1000, got 0"
        );
        assert_eq!(
            reason(check_page(0, 1_001, 1_000)),
            "limit must be between 1 and 1000, got 1001"
        );
    }

    #[test]
    fn offset_runs_to_one_billion_and_a_bad_limit_is_reported_first() {
        assert_eq!(check_page(MAX_OFFSET, 10, 1_000), Ok(()));
        assert_eq!(
            reason(check_page(MAX_OFFSET + 1, 10, 1_000)),
            "offset must be between 0 and 1000000000, got 1000000001"
        );
        assert_eq!(
            reason(check_page(MAX_OFFSET + 1, 0, 1_000)),
            "limit must be between 1 and 1000, got 0"
        );
    }

    #[test]
    fn around_takes_zero_to_one_hundred_neighbours() {
        assert_eq!(check_around(0), Ok(()));
        assert_eq!(check_around(100), Ok(()));
        assert_eq!(
            reason(check_around(101)),
            "n must be between 0 and 100, got 101"
        );
    }
}
