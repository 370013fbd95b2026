//! Trending boards over HTTP. They share the board routes with windowed boards: each
//! handler calls the windowed operation and, when the library answers that the board
//! is a trending one ([`Error::BoardKind`]), the trending operation instead. This module
//! holds what those handlers share: the board kind of a `PUT`, the replies that are one
//! of two shapes, and the rule of a trending read (no `window`).

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::{
    BoardName, BoardStatus, Error, Ranks, Standing, TopPage, TrendCounts, TrendPage, TrendRanks,
    TrendStanding, TrendingBoard, TrendingConfig,
};

/// A board's kind in `PUT /v1/boards/{board}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum BoardKindName {
    /// Exact rolling windows of slots (the default).
    #[default]
    Windowed,
    /// Time-decayed scores: Σ delta · 2^(−(now − at)/half_life).
    Trending,
}

/// A trending board's state (`PUT` and `GET /v1/boards/{board}`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TrendingStatus {
    /// The board's name.
    #[schema(value_type = String)]
    pub name: BoardName,
    /// Always `"trending"`.
    pub kind: BoardKindName,
    /// Half-life, floor and max age.
    pub config: TrendingConfig,
    /// When the board was created.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    /// Members held (any score, until pruned below the floor).
    pub members: u64,
    /// Members with a positive score: those ranked.
    pub ranked: u64,
    /// The landmark the stored values are scaled to (unix seconds; see the design notes).
    pub landmark: f64,
    /// A rescale (moving the landmark) is under way.
    pub rescaling: bool,
}

impl TrendingStatus {
    /// The state of `board` with `counts`.
    pub(super) fn new(board: TrendingBoard, counts: TrendCounts) -> Self {
        TrendingStatus {
            name: board.name,
            kind: BoardKindName::Trending,
            config: board.config,
            created_at: crate::board::to_datetime(board.created_at),
            members: counts.members,
            ranked: counts.ranked,
            landmark: counts.landmark_ms as f64 / 1000.0,
            rescaling: counts.rescaling,
        }
    }
}

/// A board's state: a windowed board's, or a trending board's.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum BoardReply {
    /// A windowed board.
    Windowed(BoardStatus),
    /// A trending board.
    Trending(TrendingStatus),
}

/// A page of a ranking: a window's (integer scores) or a trending board's (float scores).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum PageReply {
    /// A windowed board's page.
    Windowed(TopPage),
    /// A trending board's page.
    Trending(TrendPage),
}

/// A member's standing on a windowed or a trending board.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum StandingReply {
    /// On a windowed board.
    Windowed(Standing),
    /// On a trending board.
    Trending(TrendStanding),
}

/// The ranks of a list of members on a windowed or a trending board.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum RanksReply {
    /// On a windowed board.
    Windowed(Ranks),
    /// On a trending board.
    Trending(TrendRanks),
}

/// Whether the library refused a windowed operation because the board is trending.
pub(super) fn is_trending(error: &Error) -> bool {
    matches!(
        error,
        Error::BoardKind {
            kind: "trending",
            ..
        }
    )
}

/// A trending board has no windows: a `window` parameter is refused.
pub(super) fn no_window(window: &Option<String>) -> crate::Result<()> {
    if window.is_some() {
        return Err(Error::InvalidQuery {
            reason: "a trending board has no windows: leave out window".into(),
        });
    }
    Ok(())
}
