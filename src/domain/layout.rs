//! [`Layout`]: how a Redis store keeps a board's slot data, an option of the board's
//! config.

use serde::{Deserialize, Serialize};

/// How a Redis store keeps a board's slot data. It changes memory and speed, never
/// results; the memory store has one layout of its own and only records the option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub enum Layout {
    /// One hash per slot and stage.
    Plain,
    /// Each slot's stages split into small hashes by a hash of the member, so that each
    /// stays in Redis's compact listpack encoding (`docs/compact-slots.md`, "Compact slots").
    Compact,
}

impl Layout {
    /// The name stored in the board record and used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Layout::Plain => "plain",
            Layout::Compact => "compact",
        }
    }

    /// Parses a stored name.
    pub fn from_stored(stored: &str) -> Option<Layout> {
        match stored {
            "plain" => Some(Layout::Plain),
            "compact" => Some(Layout::Compact),
            _ => None,
        }
    }
}

impl std::str::FromStr for Layout {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        Layout::from_stored(text)
            .ok_or_else(|| format!("unknown layout {text:?}: expected plain or compact"))
    }
}
