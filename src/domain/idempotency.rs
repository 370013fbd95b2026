//! Idempotency keys: a client's token naming one write, so that a write retried after an
//! unknown outcome (a timeout, a 503) is applied once and answered as the first time.
//!
//! A key is 1–255 printable ASCII characters (`!` to `~`, no space). What the write
//! carried is summed up in a [`Fingerprint`] (SHA-1 of a canonical form), so a key
//! reused for another write is told apart from a retry.

use super::error::Error;
use crate::domain::Event;

/// Longest idempotency key, in characters.
pub const MAX_IDEMPOTENCY_KEY: usize = 255;

/// A client's idempotency key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Checks `key`: 1–255 characters from `!` to `~`.
    pub fn parse(key: &str) -> Result<Self, Error> {
        let reason = if key.is_empty() {
            Some("it is empty".to_owned())
        } else if key.len() > MAX_IDEMPOTENCY_KEY {
            Some(format!(
                "it is {} characters long, the limit is {MAX_IDEMPOTENCY_KEY}",
                key.len()
            ))
        } else if !key.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
            Some("only printable ASCII characters without spaces are allowed".to_owned())
        } else {
            None
        };
        match reason {
            Some(reason) => Err(Error::InvalidIdempotencyKey { reason }),
            None => Ok(IdempotencyKey(key.to_owned())),
        }
    }

    /// The key as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a keyed write carried, as 40 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fingerprint(String);

impl Fingerprint {
    /// The fingerprint of arbitrary bytes (the HTTP service uses the request body).
    pub fn of_bytes(bytes: &[u8]) -> Self {
        Fingerprint(sha1_smol::Sha1::from(bytes).digest().to_string())
    }

    /// The fingerprint of a list of events: each member (length-prefixed), delta, time,
    /// data and contributor.
    pub fn of_events(events: &[Event]) -> Self {
        let mut sha = sha1_smol::Sha1::new();
        for e in events {
            sha.update(&(e.member.len() as u64).to_be_bytes());
            sha.update(e.member.as_bytes());
            sha.update(&e.delta.to_be_bytes());
            match e.at {
                Some(at) => {
                    sha.update(&[1]);
                    sha.update(&at.unix_millis().to_be_bytes());
                }
                None => sha.update(&[0]),
            }
            // Only with data, so the fingerprints of events without it stay as they were.
            if let Some(data) = &e.data {
                sha.update(&[2]);
                sha.update(&(data.as_str().len() as u64).to_be_bytes());
                sha.update(data.as_str().as_bytes());
            }
            // Only with a contributor, likewise.
            if let Some(by) = &e.by {
                sha.update(&[3]);
                sha.update(&(by.len() as u64).to_be_bytes());
                sha.update(by.as_bytes());
            }
        }
        Fingerprint(sha.digest().to_string())
    }

    /// The hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Timestamp;

    #[test]
    fn keys_are_checked() {
        assert_eq!(
            IdempotencyKey::parse("a-1_B:~").unwrap().as_str(),
            "a-1_B:~"
        );
        for bad in ["", "a b", "é", &"k".repeat(256)] {
            assert_eq!(
                IdempotencyKey::parse(bad).unwrap_err().code(),
                "invalid_idempotency_key",
                "{bad:?}"
            );
        }
        assert!(IdempotencyKey::parse(&"k".repeat(255)).is_ok());
    }

    #[test]
    fn fingerprints_tell_writes_apart() {
        let one = vec![Event::new("a", 1)];
        assert_eq!(Fingerprint::of_events(&one), Fingerprint::of_events(&one));
        assert_eq!(
            Fingerprint::of_bytes(b"abc").as_str(),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        let at = Timestamp::from_unix_seconds(1).unwrap();
        let others = [
            vec![Event::new("a", 2)],
            vec![Event::new("b", 1)],
            vec![Event::new("a", 1).at(at)],
            vec![Event::new("a", 1), Event::new("a", 1)],
            vec![Event::new("a", 1).by("u1")],
        ];
        for other in &others {
            assert_ne!(Fingerprint::of_events(&one), Fingerprint::of_events(other));
        }
        assert_ne!(
            Fingerprint::of_events(&[Event::new("a", 1).by("u1")]),
            Fingerprint::of_events(&[Event::new("a", 1).by("u2")])
        );
    }
}
