//! `ReviewPolicy`: a board's review gate (`review: {"above_rank": K}` in its config), and
//! the moderator's decision on a member.

use serde::{Deserialize, Serialize};

use super::error::Error;

/// The review gate: a member nobody reviewed is held out of the public ranking while its
/// rank among the public members and itself would be `above_rank` or better in some
/// window (docs/design.md, "Review gate").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawReview", into = "RawReview")]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct ReviewPolicy {
    /// The rank from which a member needs review, 1..=100.
    #[cfg_attr(feature = "server", schema(minimum = 1, maximum = 100))]
    above_rank: u32,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReview {
    above_rank: u32,
}

impl TryFrom<RawReview> for ReviewPolicy {
    type Error = Error;
    fn try_from(raw: RawReview) -> Result<Self, Error> {
        ReviewPolicy::new(raw.above_rank)
    }
}

impl From<ReviewPolicy> for RawReview {
    fn from(p: ReviewPolicy) -> Self {
        RawReview {
            above_rank: p.above_rank,
        }
    }
}

impl ReviewPolicy {
    /// The largest `above_rank`.
    pub const MAX_RANK: u32 = 100;

    /// Holds unreviewed members that would rank `above_rank` or better (1..=100).
    pub fn new(above_rank: u32) -> Result<Self, Error> {
        if !(1..=Self::MAX_RANK).contains(&above_rank) {
            return Err(Error::InvalidConfig {
                reason: format!(
                    "review.above_rank must be between 1 and {}, got {above_rank}",
                    Self::MAX_RANK
                ),
            });
        }
        Ok(ReviewPolicy { above_rank })
    }

    /// The rank from which a member needs review.
    pub fn above_rank(&self) -> u32 {
        self.above_rank
    }
}

/// A moderator's decision on a member of a board's review queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub enum Decision {
    /// The member may rank anywhere, now and later.
    Allow,
    /// The member is hidden on the board (as `hide` does).
    Deny,
}

impl Decision {
    /// The decision's word ("allow", "deny").
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
        }
    }
}

/// A member the review gate holds, in one window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct HeldMember {
    /// The member.
    pub member: String,
    /// Its total in the window (`null`: it holds none there).
    pub score: Option<i64>,
    /// The rank it would have among the window's public members and itself (`null`: its
    /// total is not ranked there).
    pub rank: Option<u64>,
}

/// A board's review queue in one window: what `GET /v1/boards/{board}/review` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct ReviewQueue {
    /// The board.
    pub board: String,
    /// The window whose values and ranks are given.
    #[cfg_attr(feature = "server", schema(value_type = String, example = "1d"))]
    pub window: super::Span,
    /// The board's review gate's rank (`null`: the board has no gate).
    pub above_rank: Option<u32>,
    /// The members the gate holds until a moderator allows or denies them, with their
    /// value in the window and the rank each would have there: highest value first (ties
    /// by member), those holding none last.
    pub held: Vec<HeldMember>,
}

/// A member the review gate held, as the review webhook delivers it (POSTed as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeldEvent {
    /// The board.
    pub board: String,
    /// The event's id, increasing per board (`<ms>-<n>`): the webhook's
    /// `Idempotency-Key` is `<board>:<id>`.
    pub id: String,
    /// The member held.
    pub member: String,
    /// When it was held, unix milliseconds.
    pub held_ms: i64,
}

impl HeldEvent {
    /// The event of `member` held on `board` under `id` (`<ms>-<n>`, whose ms it was
    /// held at).
    pub fn new(board: String, id: String, member: String) -> Result<Self, Error> {
        let (ms, _) = super::parse_log_id(&id)
            .map_err(|_| Error::Store(format!("a held event's id {id:?} is not <ms>-<n>")))?;
        let held_ms = ms as i64;
        Ok(HeldEvent {
            board,
            id,
            member,
            held_ms,
        })
    }
}

/// A window's bar of a review gate across the shards of a sharded board (docs/design.md,
/// "A review gate on a sharded board"): the K-th allowed public member of the whole
/// board, by its total and, on a board ranking ties by position, the member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GateBar {
    pub total: i64,
    pub member: Option<String>,
}

impl GateBar {
    /// `bar` as the stores keep it: `<total>[ <member>]`, `-` for none.
    pub(crate) fn text(bar: Option<&GateBar>) -> String {
        match bar {
            None => "-".to_owned(),
            Some(GateBar { total, member }) => match member {
                None => total.to_string(),
                Some(member) => format!("{total} {member}"),
            },
        }
    }
}
