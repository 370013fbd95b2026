//! A board of either kind, and the replies of the operations every board answers.
//!
//! Windowed and trending boards share one namespace and every board route. One load
//! tells a board's kind ([`AnyBoard`]); the operations of
//! [`Rollboard`](crate::Rollboard) that take "a board" decide once from it and answer
//! one of the enums here. Each serialises as its variant's fields plus `"kind":
//! "windowed"` or `"kind": "trending"`, so a client in any language tells them apart by
//! that field alone.

use std::sync::Arc;

use serde::Serialize;
use time::OffsetDateTime;

use crate::domain::board::{Board, BoardStatus, to_datetime};
use crate::domain::{
    BoardConfig, BoardName, Ranks, Standing, TopPage, TrendCounts, TrendPage, TrendRanks,
    TrendStanding, TrendingBoard, TrendingConfig,
};

/// The config of a board to create ([`Rollboard::create`](crate::Rollboard::create)):
/// a windowed board's or a trending board's (either converts into it).
#[derive(Debug, Clone, PartialEq)]
pub enum NewBoard {
    /// A windowed board: slots and rolling windows.
    Windowed(BoardConfig),
    /// A trending board: time-decayed scores.
    Trending(TrendingConfig),
}

impl From<BoardConfig> for NewBoard {
    fn from(config: BoardConfig) -> Self {
        NewBoard::Windowed(config)
    }
}

impl From<TrendingConfig> for NewBoard {
    fn from(config: TrendingConfig) -> Self {
        NewBoard::Trending(config)
    }
}

/// A board's kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum BoardKind {
    /// Exact rolling windows of slots (the default).
    #[default]
    Windowed,
    /// Time-decayed scores: the sum of delta · 2^(−(now − at)/half_life).
    Trending,
}

impl BoardKind {
    /// `"windowed"` or `"trending"`.
    pub fn as_str(self) -> &'static str {
        match self {
            BoardKind::Windowed => "windowed",
            BoardKind::Trending => "trending",
        }
    }
}

/// A board as one load finds it: windowed or trending.
#[derive(Debug, Clone, PartialEq)]
pub enum AnyBoard {
    /// A windowed board.
    Windowed(Arc<Board>),
    /// A trending board.
    Trending(Arc<TrendingBoard>),
}

impl From<Board> for AnyBoard {
    fn from(board: Board) -> Self {
        AnyBoard::Windowed(Arc::new(board))
    }
}

impl From<TrendingBoard> for AnyBoard {
    fn from(board: TrendingBoard) -> Self {
        AnyBoard::Trending(Arc::new(board))
    }
}

impl AnyBoard {
    /// The board's name.
    pub fn name(&self) -> &BoardName {
        match self {
            AnyBoard::Windowed(b) => &b.name,
            AnyBoard::Trending(b) => &b.name,
        }
    }

    /// The trending board, if it is one.
    pub fn trending(&self) -> Option<&TrendingBoard> {
        match self {
            AnyBoard::Trending(b) => Some(b),
            AnyBoard::Windowed(_) => None,
        }
    }

    /// The windowed board, if it is one.
    pub fn windowed(&self) -> Option<&Board> {
        match self {
            AnyBoard::Windowed(b) => Some(b),
            AnyBoard::Trending(_) => None,
        }
    }

    /// The board's kind.
    pub fn kind(&self) -> BoardKind {
        match self {
            AnyBoard::Windowed(_) => BoardKind::Windowed,
            AnyBoard::Trending(_) => BoardKind::Trending,
        }
    }
}

/// A page of a board's ranking: a window's (integer scores) or a trending board's
/// (float scores).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum BoardPage {
    /// A windowed board's page.
    Windowed(TopPage),
    /// A trending board's page.
    Trending(TrendPage),
}

/// A member's standing on a board.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum MemberStanding {
    /// On a windowed board: total, rank and percentile in a window.
    Windowed(Standing),
    /// On a trending board: score, rank and percentile now.
    Trending(TrendStanding),
}

/// The ranks of a list of members on a board, in the order asked.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum MemberRanks {
    /// On a windowed board.
    Windowed(Ranks),
    /// On a trending board.
    Trending(TrendRanks),
}

/// A board's state.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum BoardState {
    /// A windowed board's: config, members per window, live slots, retirement lag.
    Windowed(BoardStatus),
    /// A trending board's: config, members, landmark.
    Trending(TrendingStatus),
}

/// A trending board's state.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct TrendingStatus {
    /// The board's name.
    #[cfg_attr(feature = "server", schema(value_type = String))]
    pub name: BoardName,
    /// Half-life, floor and max age.
    pub config: TrendingConfig,
    /// When the board was created.
    #[serde(with = "time::serde::rfc3339")]
    #[cfg_attr(feature = "server", schema(value_type = String, format = DateTime))]
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
    pub fn new(board: &TrendingBoard, counts: TrendCounts) -> Self {
        TrendingStatus {
            name: board.name.clone(),
            config: board.config,
            created_at: to_datetime(board.created_at),
            members: counts.members,
            ranked: counts.ranked,
            landmark: counts.landmark_ms as f64 / 1000.0,
            rescaling: counts.rescaling,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::TrendEntry;

    #[test]
    fn replies_carry_their_kind_beside_their_fields() {
        let page = BoardPage::Trending(TrendPage {
            board: BoardName::parse("hot").unwrap(),
            at: 1_700_000_000.0,
            age_ms: 0,
            entries: vec![TrendEntry {
                rank: 1,
                member: "post:1".into(),
                score: 2.5,
            }],
        });
        assert_eq!(
            serde_json::to_value(&page).unwrap(),
            serde_json::json!({
                "kind": "trending",
                "board": "hot",
                "at": 1_700_000_000.0,
                "age_ms": 0,
                "entries": [{"rank": 1, "member": "post:1", "score": 2.5}],
            })
        );
    }
}
