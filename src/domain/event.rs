//! Events as callers hand them in, and the integer range every delta and total stays in.

use super::error::Error;
use crate::domain::{MemberData, Timestamp};

/// The largest magnitude of a delta, a total or a slot value: 2^53 − 1.
///
/// Totals live in Redis sorted-set scores, which are doubles; every integer up to this
/// magnitude is exact as a double (and as a JSON number in JavaScript).
pub const MAX_ABS: i64 = 9_007_199_254_740_991;

/// One event: `delta` added to `member`'s score at time `at` (now when `None`), or on a
/// max, min or latest board ([`Aggregate`](crate::domain::Aggregate)) its `value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The member the event is about (a post id, a user id). Checked on write.
    pub member: String,
    /// The change: +1 for a like, −1 for an unlike. Non-zero, |delta| ≤ [`MAX_ABS`].
    /// Ignored with a `value`.
    pub delta: i64,
    /// The value, on a max, min or latest board (a score, a time): |value| ≤ [`MAX_ABS`], zero
    /// included; `None` on a sum board, which refuses one ([`Error::InvalidValue`]).
    pub value: Option<i64>,
    /// When it happened; `None` means now.
    pub at: Option<Timestamp>,
    /// Data to keep beside the member on the board (a windowed board's member data),
    /// replacing what it held, when the member holds a total once the event is applied;
    /// `None` leaves its data as it is.
    pub data: Option<MemberData>,
    /// Who gave it (a user id), on a board that keeps contributors (see
    /// [`Contributor`](crate::domain::Contributor)); ignored on others. Checked on write.
    pub by: Option<String>,
}

impl Event {
    /// An event for `member` with `delta`, happening now.
    pub fn new(member: impl Into<String>, delta: i64) -> Self {
        Event {
            member: member.into(),
            delta,
            value: None,
            at: None,
            data: None,
            by: None,
        }
    }

    /// An event for `member` with `value` (a max, min or latest board), happening now.
    pub fn value(member: impl Into<String>, value: i64) -> Self {
        Event {
            value: Some(value),
            ..Event::new(member, 0)
        }
    }

    /// The same event, happening at `at`.
    pub fn at(mut self, at: Timestamp) -> Self {
        self.at = Some(at);
        self
    }

    /// The same event, given by `by`.
    pub fn by(mut self, by: impl Into<String>) -> Self {
        self.by = Some(by.into());
        self
    }

    /// The same event, setting the member's data (see [`MemberData`]).
    pub fn with_data(mut self, data: MemberData) -> Self {
        self.data = Some(data);
        self
    }
}

/// Checks that `delta` is a non-zero integer inside ±[`MAX_ABS`].
pub fn check_delta(delta: i64) -> Result<i64, Error> {
    if delta == 0 {
        return Err(Error::InvalidDelta {
            reason: "must not be zero".into(),
        });
    }
    if delta.unsigned_abs() > MAX_ABS as u64 {
        return Err(Error::InvalidDelta {
            reason: format!("{delta} is outside ±{MAX_ABS} (2^53 - 1)"),
        });
    }
    Ok(delta)
}

/// Checks that `value` is an integer inside ±[`MAX_ABS`] (zero included).
pub fn check_value(value: i64) -> Result<i64, Error> {
    if value.unsigned_abs() > MAX_ABS as u64 {
        return Err(Error::InvalidValue {
            reason: format!("{value} is outside ±{MAX_ABS} (2^53 - 1)"),
        });
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_must_be_non_zero_and_inside_2_pow_53() {
        assert_eq!(check_delta(-1).unwrap(), -1);
        assert_eq!(check_delta(MAX_ABS).unwrap(), MAX_ABS);
        assert_eq!(check_delta(-MAX_ABS).unwrap(), -MAX_ABS);
        for bad in [0, MAX_ABS + 1, -MAX_ABS - 1, i64::MIN] {
            assert_eq!(check_delta(bad).unwrap_err().code(), "invalid_delta");
        }
    }
}
