//! How much of the past a rate window counts: [`Coverage`].
//!
//! A window of length W answered by a tier of slot length L always counts whole slots.
//! `Partial` (the default) counts the current, partial slot and the W/L − 1 before it:
//! at least W − L of the past, at most W. `Full` counts the current slot and the W/L
//! before it: at least W, at most W + L, so a check with a limit never admits more than
//! the limit in any span of W (it may refuse up to one slot L early).

use std::fmt;

use serde::Serialize;

use crate::error::Error;

/// Which slots a window counts; see the module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Coverage {
    /// The current slot and the W/L − 1 before it (at least W − L of the past).
    #[default]
    Partial,
    /// The current slot and the W/L before it (at least W, at most W + L): a limiter
    /// that never lets more than its limit through within any span of W.
    Full,
}

impl Coverage {
    /// The names accepted by [`Coverage::parse`].
    pub const NAMES: [&'static str; 2] = ["partial", "full"];

    /// `"partial"` or `"full"`; anything else is [`Error::InvalidQuery`] naming both.
    pub fn parse(text: &str) -> Result<Self, Error> {
        match text {
            "partial" => Ok(Coverage::Partial),
            "full" => Ok(Coverage::Full),
            other => Err(Error::InvalidQuery {
                reason: format!(
                    "coverage must be \"partial\" or \"full\", not {:?}",
                    other.chars().take(40).collect::<String>()
                ),
            }),
        }
    }

    /// The slots of a tier a window of `len` slots counts with this coverage.
    pub(crate) fn slots(self, len: u64) -> u64 {
        match self {
            Coverage::Partial => len,
            Coverage::Full => len + 1,
        }
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Coverage::Partial => "partial",
            Coverage::Full => "full",
        }
    }
}

impl fmt::Display for Coverage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_two_names_and_refuses_others_naming_them() {
        assert_eq!(Coverage::parse("full").unwrap(), Coverage::Full);
        assert_eq!(Coverage::parse("partial").unwrap(), Coverage::Partial);
        assert_eq!(Coverage::default(), Coverage::Partial);
        let err = Coverage::parse("Full").unwrap_err();
        assert_eq!(err.code(), "invalid_query");
        assert_eq!(
            err.to_string(),
            "invalid query: coverage must be \"partial\" or \"full\", not \"Full\""
        );
        assert_eq!(Coverage::Full.slots(5), 6);
        assert_eq!(Coverage::Partial.slots(5), 5);
    }
}
