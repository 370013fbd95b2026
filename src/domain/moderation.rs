//! Moderation's record: what a moderator did (hide, show), to which member, on which
//! boards, why and who, as the moderation log keeps it (docs/design.md, "Moderation
//! log").

use serde::{Deserialize, Serialize};

use super::error::Error;

/// The longest `reason`, in bytes of UTF-8.
pub const MAX_REASON: usize = 1024;
/// The longest `actor`, in bytes of UTF-8.
pub const MAX_ACTOR: usize = 128;
/// How many entries the moderation log keeps: the newest, older ones dropped.
pub const LOG_KEPT: usize = 100_000;

/// What a moderator did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum ModerationAction {
    /// Hid the member from the rankings (its counts kept).
    Hide,
    /// Showed a hidden member again.
    Show,
    /// Pinned the member on the first page of the board's top.
    Pin,
    /// Ended the member's pin.
    Unpin,
    /// Allowed the member on a board's review gate.
    Allow,
    /// Denied the member on a board's review gate (it is hidden there).
    Deny,
}

impl ModerationAction {
    /// [`Hide`](Self::Hide) when `hidden`, else [`Show`](Self::Show).
    pub fn hiding(hidden: bool) -> Self {
        if hidden { Self::Hide } else { Self::Show }
    }
}

/// Why and by whom, kept with a moderation action in the log: both optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModerationNote {
    /// Why (at most [`MAX_REASON`] bytes).
    pub reason: Option<String>,
    /// Who, as the caller names them (at most [`MAX_ACTOR`] bytes).
    pub actor: Option<String>,
}

impl ModerationNote {
    /// A note with this reason and actor, checked:
    /// [`Error::InvalidModeration`] when either is empty or too long.
    pub fn new(reason: Option<String>, actor: Option<String>) -> Result<Self, Error> {
        check("reason", reason.as_deref(), MAX_REASON)?;
        check("actor", actor.as_deref(), MAX_ACTOR)?;
        Ok(ModerationNote { reason, actor })
    }
}

fn check(field: &str, value: Option<&str>, max: usize) -> Result<(), Error> {
    let reason = match value {
        Some("") => format!("{field} is empty: leave it out instead"),
        Some(v) if v.len() > max => format!("{field} takes {} bytes, more than {max}", v.len()),
        _ => return Ok(()),
    };
    Err(Error::InvalidModeration { reason })
}

/// One entry of the moderation log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct LogEntry {
    /// The entry's id: later entries have greater ids (compare as `<ms>-<n>`); a page's
    /// `before` cursor.
    pub id: String,
    /// When it was done, unix seconds.
    pub at: f64,
    /// What was done.
    pub action: ModerationAction,
    /// To which member.
    pub member: String,
    /// On which boards, as the call named them; absent: on every board, including boards
    /// created later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boards: Option<Vec<String>>,
    /// On how many boards it changed something (0: it was so already).
    pub changed: u64,
    /// Why, when the call said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who, when the call said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// A pin's position and end (unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<Pin>,
}

/// A log id's parts, `<ms>-<n>`, ordered as the log orders them.
pub fn parse_log_id(id: &str) -> Result<(u64, u64), Error> {
    let parsed = id
        .split_once('-')
        .and_then(|(ms, n)| Some((ms.parse().ok()?, n.parse().ok()?)));
    parsed.ok_or_else(|| Error::InvalidQuery {
        reason: format!("before {id:?} is not a log id (<ms>-<n>, as entries' ids are)"),
    })
}

/// What a hide or show of a member on several boards, or on every board, did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Moderated {
    /// The member.
    pub member: String,
    /// Whether it is hidden now, on the boards it applied to.
    pub hidden: bool,
    /// Whether it applied to every board, boards created later included.
    pub every_board: bool,
    /// How many boards it applied to.
    pub boards: u64,
    /// On how many of them it changed something (on the others it already was so).
    pub changed: u64,
    /// The boards it could not apply to, with why: trending boards, and boards being
    /// resharded (run it again once the reshard ends).
    pub skipped: Vec<SkippedBoard>,
}

/// A board a hide or show across boards left as it was, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct SkippedBoard {
    /// The board.
    pub board: String,
    /// The error's code (`board_kind`, `board_busy`).
    pub code: String,
    /// The error's message.
    pub message: String,
}

/// A board's hidden members, as a moderator reviews them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct HiddenMembers {
    /// The board.
    pub board: String,
    /// The window whose values are given.
    #[cfg_attr(feature = "server", schema(value_type = String, example = "1d"))]
    pub window: super::Span,
    /// Every member the board hides, with its value in the window: those holding one
    /// first, in the board's ranking order (ties by member), then those holding none.
    pub members: Vec<HiddenMember>,
}

/// A hidden member and its value in a window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct HiddenMember {
    /// The member.
    pub member: String,
    /// Its value in the window, what it would rank by if shown (`null`: none there).
    pub score: Option<i64>,
}

/// The most pins a board holds at once.
pub const MAX_PINS: usize = 10;
/// The highest position a pin takes on the first page (1-based).
pub const MAX_PIN_POSITION: u32 = 100;

/// A member pinned at a position of the first page of a board's top, until a time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Pin {
    /// The member.
    pub member: String,
    /// Its position on the first page from the top, 1-based (1 to [`MAX_PIN_POSITION`]).
    pub position: u32,
    /// When the pin ends, unix seconds.
    pub until: i64,
}

impl Pin {
    /// Whether the pin still holds at `now`.
    pub fn holds(&self, now: super::Timestamp) -> bool {
        self.until * 1000 > now.unix_millis()
    }
}
