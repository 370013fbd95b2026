//! A timeout as the config file and the environment write it: `"250ms"`, `"2s"`, or a
//! whole number of seconds (`2`), between 1 ms and 1 hour.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// A parsed timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeout(pub Duration);

/// The longest timeout accepted.
const MAX: Duration = Duration::from_secs(3600);

impl FromStr for Timeout {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (digits, unit) = match text.strip_suffix("ms") {
            Some(digits) => (digits, Duration::from_millis(1)),
            None => (
                text.strip_suffix('s').unwrap_or(text),
                Duration::from_secs(1),
            ),
        };
        let invalid = || format!("invalid timeout {text:?}: write 250ms, 2s, or whole seconds");
        let n: u32 = digits.trim().parse().map_err(|_| invalid())?;
        let duration = unit * n;
        if duration.is_zero() || duration > MAX {
            return Err(format!(
                "invalid timeout {text:?}: it must be between 1ms and 1h"
            ));
        }
        Ok(Timeout(duration))
    }
}

impl fmt::Display for Timeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0.as_millis())
    }
}

impl<'de> Deserialize<'de> for Timeout {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Seconds(u32),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Seconds(n) => n.to_string().parse(),
            Raw::Text(s) => s.parse(),
        }
        .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_milliseconds_seconds_and_plain_seconds() {
        let ms = |t: &str| t.parse::<Timeout>().map(|t| t.0.as_millis());
        assert_eq!(ms("250ms"), Ok(250));
        assert_eq!(ms("2s"), Ok(2000));
        assert_eq!(ms("3"), Ok(3000));
        assert_eq!(
            ms("0s"),
            Err("invalid timeout \"0s\": it must be between 1ms and 1h".into())
        );
        assert_eq!(
            ms("2m"),
            Err("invalid timeout \"2m\": write 250ms, 2s, or whole seconds".into())
        );
    }
}
