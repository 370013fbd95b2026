//! Integers as JSON (and JSON Schema) count them: `3` and `3.0` are the same integer, so
//! a body field declared `integer` accepts both. A fraction, or a value beyond the
//! field's type, is still a wrong shape (400). Use with `#[serde(deserialize_with)]`.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::Number;

/// The integer `n` holds, when it holds one that fits an `i64`.
pub fn to_i64(n: &Number) -> Option<i64> {
    n.as_i64().or_else(|| {
        n.as_f64()
            // Strictly inside: an integer just beyond i64 rounds to ±2^63 as a double
            // (and -2^63 itself was read by `as_i64`).
            .filter(|f| f.fract() == 0.0 && *f > i64::MIN as f64 && *f < i64::MAX as f64)
            .map(|f| f as i64)
    })
}

/// The integer `n` holds, when it holds one that fits a `u64`.
pub fn to_u64(n: &Number) -> Option<u64> {
    n.as_u64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < u64::MAX as f64)
            .map(|f| f as u64)
    })
}

fn integer<'de, D: Deserializer<'de>, T>(
    deserializer: D,
    convert: fn(&Number) -> Option<T>,
    what: &str,
) -> Result<Option<T>, D::Error> {
    Option::<Number>::deserialize(deserializer)?
        .map(|n| convert(&n).ok_or_else(|| D::Error::custom(format!("expected {what}, got {n}"))))
        .transpose()
}

/// An optional signed integer (null or absent: `None`).
pub fn opt_i64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    integer(deserializer, to_i64, "an integer")
}

/// An optional unsigned integer (null or absent: `None`).
pub fn opt_u64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    integer(deserializer, to_u64, "a non-negative integer")
}

/// An unsigned integer.
pub fn u64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    opt_u64(deserializer)?
        .ok_or_else(|| D::Error::custom("expected a non-negative integer, got null"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Debug, PartialEq)]
    struct Body {
        #[serde(default, deserialize_with = "opt_i64")]
        delta: Option<i64>,
        #[serde(deserialize_with = "u64")]
        limit: u64,
    }

    #[test]
    fn whole_floats_are_integers_and_fractions_are_not() {
        let parse = |text: &str| serde_json::from_str::<Body>(text).map_err(|e| e.to_string());
        assert_eq!(
            parse(r#"{"delta": 3.0, "limit": 7}"#),
            Ok(Body {
                delta: Some(3),
                limit: 7
            })
        );
        assert_eq!(
            parse(r#"{"delta": null, "limit": 1e3}"#),
            Ok(Body {
                delta: None,
                limit: 1000
            })
        );
        assert_eq!(parse(r#"{"limit": 0}"#).unwrap().delta, None);
        // Read exactly (serde_json's float_roundtrip): without it this whole number
        // came back as 2094960267519932.8, a fraction.
        assert_eq!(
            parse(r#"{"delta": 2094960267519933.0, "limit": 9007199254740991.0}"#),
            Ok(Body {
                delta: Some(2_094_960_267_519_933),
                limit: 9_007_199_254_740_991
            })
        );
        for (text, message) in [
            (
                r#"{"delta": 1.5, "limit": 1}"#,
                "expected an integer, got 1.5",
            ),
            (
                r#"{"limit": -1}"#,
                "expected a non-negative integer, got -1",
            ),
            (
                r#"{"limit": 1e300}"#,
                "expected a non-negative integer, got 1e+300",
            ),
            (
                r#"{"delta": -9223372036854775809, "limit": 1}"#,
                "expected an integer, got -9.223372036854776e+18",
            ),
            (r#"{"limit": "1"}"#, "invalid type: string"),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.starts_with(message), "{text}: {error}");
        }
    }
}
