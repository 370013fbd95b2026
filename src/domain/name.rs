//! Validated names: `BoardName` (part of every Redis key of a board) and `Member`.
//!
//! Parse, don't validate: once one of these exists it is known to be valid, so nothing
//! user-supplied reaches a key name unchecked.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

use super::error::Error;

/// A board's name: 1–64 characters of `A-Z a-z 0-9 _ . : -`, not only dots (clients
/// drop the `.` and `..` path segments of a URL before sending it).
///
/// The charset excludes `{`, `}` and whitespace, so the name can sit inside the
/// `{<board>}` Redis Cluster hash tag of every key of the board.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema), schema(value_type = String, example = "hot-posts"))]
pub struct BoardName(String);

impl AsRef<str> for BoardName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl BoardName {
    /// Longest accepted name, in characters (all of them ASCII).
    pub const MAX_LEN: usize = 64;

    /// Checks `name` against the charset and length rules.
    pub fn parse(name: &str) -> Result<Self, Error> {
        let reason = if name.is_empty() {
            Some("must not be empty".to_owned())
        } else if name.len() > Self::MAX_LEN {
            Some(format!("must be at most {} characters", Self::MAX_LEN))
        } else if name.bytes().all(|b| b == b'.') {
            Some("must not be only dots (URLs drop . and .. segments)".to_owned())
        } else {
            name.chars()
                .find(|c| !Self::allowed(*c))
                .map(|c| format!("contains {c:?}; only A-Z a-z 0-9 _ . : - are allowed"))
        };
        match reason {
            Some(reason) => Err(Error::InvalidBoardName {
                name: name.chars().take(80).collect(),
                reason,
            }),
            None => Ok(BoardName(name.to_owned())),
        }
    }

    fn allowed(c: char) -> bool {
        c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-')
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name of one of this board's shards, `<name>#<suffix>`: `#` is outside the
    /// charset, so no user can name (or reach) a shard.
    pub(crate) fn shard(&self, suffix: &str) -> BoardName {
        BoardName(format!("{}#{suffix}", self.0))
    }

    /// A name as a store lists it: a board's (as [`parse`](Self::parse)) or one of its
    /// shards' (`<board>#<suffix>`, the suffix of hex digits and dots).
    pub(crate) fn parse_stored(name: &str) -> Result<Self, Error> {
        match name.split_once('#') {
            Some((board, suffix))
                if !suffix.is_empty()
                    && suffix.bytes().all(|b| b.is_ascii_hexdigit() || b == b'.') =>
            {
                Ok(BoardName::parse(board)?.shard(suffix))
            }
            _ => BoardName::parse(name),
        }
    }

    /// The board whose shard this name is (`None`: a board's own name).
    pub(crate) fn shard_of(&self) -> Option<&str> {
        self.0.split_once('#').map(|(board, _)| board)
    }
}

impl fmt::Display for BoardName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for BoardName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        BoardName::parse(&raw).map_err(serde::de::Error::custom)
    }
}

/// A ranked member (a post id, a user id): 1–256 bytes of UTF-8.
///
/// Members are hash fields and sorted-set members, never parts of key names, so any
/// UTF-8 text of that length is accepted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Member(String);

impl Member {
    /// Longest accepted member, in bytes of UTF-8.
    pub const MAX_BYTES: usize = 256;

    /// Checks the length rule.
    pub fn parse(member: &str) -> Result<Self, Error> {
        if member.is_empty() || member.len() > Self::MAX_BYTES {
            return Err(Error::InvalidMember {
                reason: format!(
                    "must be 1 to {} bytes of UTF-8, got {} bytes",
                    Self::MAX_BYTES,
                    member.len()
                ),
            });
        }
        Ok(Member(member.to_owned()))
    }

    /// The member as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Member {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn board_names_follow_charset_and_length() {
        for ok in [
            "hot",
            "posts:likes.24h",
            "A-Z_0-9",
            ".a",
            "..-",
            &"x".repeat(64),
        ] {
            assert_eq!(BoardName::parse(ok).unwrap().as_str(), ok);
        }
        for bad in [
            "",
            "a b",
            "a{b}",
            "tab\t",
            "é",
            "a/b",
            ".",
            "..",
            "...",
            &"x".repeat(65),
        ] {
            assert_eq!(
                BoardName::parse(bad).unwrap_err().code(),
                "invalid_board_name",
                "{bad:?}"
            );
        }
    }

    #[test]
    fn members_are_one_to_256_bytes() {
        assert!(Member::parse("post:1").is_ok());
        assert!(Member::parse("é").is_ok());
        assert!(Member::parse(&"é".repeat(128)).is_ok()); // 256 bytes
        assert_eq!(Member::parse("").unwrap_err().code(), "invalid_member");
        assert_eq!(
            Member::parse(&"é".repeat(129)).unwrap_err().code(),
            "invalid_member"
        );
    }
}
