//! [`Ties`]: how a board ranks equal totals, an option of the board's config.

use serde::{Deserialize, Serialize};

/// How a board ranks equal totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub enum Ties {
    /// Competition ranks (1, 1, 3): 1 + the number of members with a strictly higher
    /// total.
    #[default]
    Competition,
    /// Dense ranks (1, 1, 2): 1 + the number of distinct totals strictly higher.
    Dense,
    /// Positions (1, 2, 3): the 1-based place in the ranking, equal totals numbered in
    /// the board's tie order (member ascending, byte order).
    Position,
}

impl Ties {
    /// The name stored in the board record and used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Ties::Competition => "competition",
            Ties::Dense => "dense",
            Ties::Position => "position",
        }
    }

    /// Parses a stored name; an absent one (a board created before the option) is
    /// competition.
    pub fn from_stored(stored: Option<&str>) -> Option<Ties> {
        match stored {
            None | Some("competition") => Some(Ties::Competition),
            Some("dense") => Some(Ties::Dense),
            Some("position") => Some(Ties::Position),
            Some(_) => None,
        }
    }
}
