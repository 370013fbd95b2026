//! `Span`: a length of time in whole seconds, as users write it.
//!
//! Slot lengths and windows are written `"90s"`, `"5m"`, `"1h"`, `"24h"`, `"7d"` or as
//! plain integer seconds (`"3600"` or the JSON number `3600`). A span is always positive
//! and at most [`Span::MAX_SECONDS`], so window arithmetic on unix seconds cannot overflow.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::error::Error;

/// A positive length of time in whole seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span(u64);

const UNITS: [(char, u64); 4] = [('d', 86_400), ('h', 3_600), ('m', 60), ('s', 1)];

impl Span {
    /// The canonical form's parts: the count of the largest unit that divides the span,
    /// and that unit (`86400` → `(1, 'd')`).
    pub fn canonical(self) -> (u64, char) {
        let (unit, size) = UNITS
            .iter()
            .find(|(_, size)| self.0.is_multiple_of(*size))
            .expect("every span is a whole number of seconds");
        (self.0 / size, *unit)
    }

    /// The longest span accepted: 400 days.
    pub const MAX_SECONDS: u64 = 400 * 86_400;

    /// A span of `seconds`, which must be in `1..=MAX_SECONDS`.
    pub fn from_seconds(seconds: u64) -> Result<Self, Error> {
        if seconds == 0 || seconds > Self::MAX_SECONDS {
            return Err(Error::InvalidSpan {
                input: seconds.to_string(),
                reason: format!(
                    "must be between 1 second and {} days",
                    Self::MAX_SECONDS / 86_400
                ),
            });
        }
        Ok(Span(seconds))
    }

    /// Parses `"90s"`, `"5m"`, `"1h"`, `"24h"`, `"7d"` or integer seconds, exactly:
    /// surrounding spaces are refused, as in every other field.
    pub fn parse(input: &str) -> Result<Self, Error> {
        let invalid = |reason: &str| Error::InvalidSpan {
            input: input.to_owned(),
            reason: reason.to_owned(),
        };
        let text = input;
        let (digits, unit) = match text.char_indices().last() {
            None => return Err(invalid("is empty")),
            Some((at, c)) if c.is_ascii_alphabetic() => (&text[..at], Some(c)),
            Some(_) => (text, None),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid(
                "must be an integer followed by s, m, h or d (e.g. 90s, 5m, 24h, 7d)",
            ));
        }
        let multiplier = match unit {
            None => 1,
            Some(u) => UNITS
                .iter()
                .find(|(c, _)| *c == u)
                .map(|(_, m)| *m)
                .ok_or_else(|| invalid("unit must be one of s, m, h, d"))?,
        };
        let seconds = digits
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(multiplier))
            .ok_or_else(|| invalid("is too large"))?;
        Span::from_seconds(seconds).map_err(|_| {
            invalid(&format!(
                "must be between 1 second and {} days",
                Self::MAX_SECONDS / 86_400
            ))
        })
    }

    /// The span in seconds.
    pub fn seconds(self) -> u64 {
        self.0
    }

    /// The span in seconds, signed, for arithmetic on unix times.
    pub fn secs_i64(self) -> i64 {
        // MAX_SECONDS fits comfortably in an i64.
        self.0 as i64
    }
}

impl fmt::Display for Span {
    /// The canonical form: the largest unit that divides the span (`86400` → `"1d"`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (count, unit) = self.canonical();
        write!(f, "{count}{unit}")
    }
}

impl FromStr for Span {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Span::parse(s)
    }
}

impl Serialize for Span {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Seconds(u64),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Seconds(n) => Span::from_seconds(n),
            Raw::Text(s) => Span::parse(&s),
        }
        .map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "server")]
impl utoipa::PartialSchema for Span {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
        ObjectBuilder::new()
            .schema_type(SchemaType::Array(vec![Type::String, Type::Integer]))
            .pattern(Some("^[0-9]*[1-9][0-9]*[smhd]?$"))
            .minimum(Some(1))
            .maximum(Some(Span::MAX_SECONDS))
            .description(Some(
                "A duration: an integer followed by s, m, h or d (\"90s\", \"5m\", \"24h\", \"7d\"), \
                 or integer seconds; 1 second to 400 days. Responses use the largest unit that divides it.",
            ))
            .examples(["24h"])
            .into()
    }
}

#[cfg(feature = "server")]
impl utoipa::ToSchema for Span {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_unit_and_plain_seconds() {
        assert_eq!(Span::parse("90s").unwrap().seconds(), 90);
        assert_eq!(Span::parse("5m").unwrap().seconds(), 300);
        assert_eq!(Span::parse("1h").unwrap().seconds(), 3_600);
        assert_eq!(Span::parse("24h").unwrap().seconds(), 86_400);
        assert_eq!(Span::parse("7d").unwrap().seconds(), 604_800);
        assert_eq!(Span::parse("3600").unwrap().seconds(), 3_600);
    }

    #[test]
    fn rejects_zero_empty_negative_fractional_unknown_unit_and_too_long() {
        for bad in [
            "",
            "0",
            "0s",
            "-5m",
            "1.5h",
            "h",
            "5w",
            "5 m",
            " 1h",
            "1h ",
            " 2h ",
            "\t1h",
            "401d",
            "99999999999999999999",
        ] {
            let err = Span::parse(bad).unwrap_err();
            assert_eq!(err.code(), "invalid_span", "{bad:?} gave {err}");
        }
    }

    #[test]
    fn displays_in_the_largest_unit_that_divides() {
        let shown: Vec<String> = [90, 300, 5_400, 86_400, 90_000]
            .into_iter()
            .map(|s| Span::from_seconds(s).unwrap().to_string())
            .collect();
        assert_eq!(shown, ["90s", "5m", "90m", "1d", "25h"]);
    }

    #[test]
    fn deserializes_from_string_or_integer_and_serializes_canonically() {
        let a: Span = serde_json::from_str("\"24h\"").unwrap();
        let b: Span = serde_json::from_str("86400").unwrap();
        assert_eq!(a, b);
        assert_eq!(serde_json::to_string(&a).unwrap(), "\"1d\"");
        assert!(serde_json::from_str::<Span>("\"1y\"").is_err());
        assert!(serde_json::from_str::<Span>("0").is_err());
    }
}
