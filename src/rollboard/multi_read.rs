//! One member across several boards in one call: a post's standing on `hot-posts`,
//! `hot-posts:rust` and `top-authors`. Every board, and every window of a board, is read
//! at once (one store read each, all in flight together: on Redis they share the
//! multiplexed connection of their node, so the reads of one node travel together); a
//! board that cannot be read is an entry with its error, the others still answer.

use futures_util::future::join_all;
use serde::Serialize;

use super::Rollboard;
use super::multi_write::check_boards;
use crate::domain::any_board::AnyBoard;
use crate::domain::{Member, Span};
use crate::error::{Error, Result};

/// A member on several boards, in the order the boards were named.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberAcross {
    /// The member.
    pub member: String,
    /// Each board's standing of the member, or why it could not be read.
    pub boards: Vec<BoardResult>,
}

/// One board of a [`MemberAcross`]: the member's standing, or the board's error.
#[derive(Debug, Clone, PartialEq)]
pub struct BoardResult {
    /// The board, as named.
    pub board: String,
    /// The standing, or `board_not_found`, `window_not_found`, `store_unavailable`, ….
    pub result: Result<BoardStanding>,
}

/// A member's standing on one board, by the board's kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum BoardStanding {
    /// A windowed board: the member in each window read.
    Windowed(WindowedStanding),
    /// A trending board: the member's score now.
    Trending(TrendingStanding),
}

/// The member on a windowed board.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct WindowedStanding {
    /// The board.
    pub board: String,
    /// Each window read (every window of the board, smallest first, or the one asked).
    pub windows: Vec<WindowScore>,
}

/// The member in one window of a windowed board.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct WindowScore {
    /// The window, in its shortest spelling (`"1d"` for 24 h).
    pub window: Span,
    /// The member's total in the window, whatever its sign (0 when it holds none).
    pub score: i64,
    /// Its rank as the board ranks ties; `null` unless the total is positive.
    #[cfg_attr(feature = "server", schema(required = true))]
    pub rank: Option<u64>,
    /// The share of ranked members whose total is strictly below, in [0, 1) (0 when the
    /// member is not ranked).
    pub percentile: f64,
    /// Retirement is behind: the total still includes slots that left the window.
    pub behind: bool,
    /// The member is hidden by a moderator (present only then, `true`; `rank` null).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
}

/// The member on a trending board, now.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct TrendingStanding {
    /// The board.
    pub board: String,
    /// Its decayed score now, whatever its sign (0 when it holds none).
    pub score: f64,
    /// Its competition rank; `null` unless the score is positive.
    #[cfg_attr(feature = "server", schema(required = true))]
    pub rank: Option<u64>,
    /// The share of ranked members whose score is strictly below, in [0, 1).
    pub percentile: f64,
}

impl Rollboard {
    /// The member's standing on each of `boards` (1 to
    /// [`MAX_BOARDS`](super::multi_write::MAX_BOARDS), distinct): on a windowed board in
    /// each of its windows, or in `window` alone when given (a board without that window
    /// answers [`Error::WindowNotFound`] as its entry); on a trending board its score
    /// now (it has no windows: `window` does not apply to it). All boards and windows
    /// are read at once. Errors only when the member or the list of boards is invalid.
    pub async fn member_across<S: AsRef<str>>(
        &self,
        member: &str,
        boards: &[S],
        window: Option<Span>,
    ) -> Result<MemberAcross> {
        Member::parse(member)?;
        check_boards(boards)?;
        let reads = boards.iter().map(|board| async move {
            let board = board.as_ref();
            BoardResult {
                board: board.to_owned(),
                result: self.standing_on(board, member, window).await,
            }
        });
        Ok(MemberAcross {
            member: member.to_owned(),
            boards: join_all(reads).await,
        })
    }

    /// The member on one board: each window read at once on a windowed board.
    async fn standing_on(
        &self,
        board: &str,
        member: &str,
        window: Option<Span>,
    ) -> Result<BoardStanding> {
        match self.any_board(board).await? {
            AnyBoard::Windowed(b) => {
                let windows: Vec<Span> = match window {
                    Some(w) if b.config.window_index(w).is_none() => {
                        return Err(Error::WindowNotFound {
                            board: board.to_owned(),
                            window: w,
                        });
                    }
                    Some(w) => vec![w],
                    None => b.config.windows().to_vec(),
                };
                let reads = windows
                    .iter()
                    .map(|w| self.windowed(board).score(member, Some(*w)));
                let mut scores = Vec::with_capacity(windows.len());
                for (w, standing) in windows.iter().zip(join_all(reads).await) {
                    scores.push(match standing? {
                        Some(s) => WindowScore {
                            window: s.window,
                            score: s.score,
                            rank: s.rank,
                            percentile: s.percentile,
                            behind: s.behind,
                            hidden: s.hidden,
                        },
                        None => WindowScore {
                            window: *w,
                            score: 0,
                            rank: None,
                            percentile: 0.0,
                            behind: false,
                            hidden: false,
                        },
                    });
                }
                Ok(BoardStanding::Windowed(WindowedStanding {
                    board: board.to_owned(),
                    windows: scores,
                }))
            }
            AnyBoard::Trending(_) => {
                let standing = self.trending(board).score(member).await?;
                Ok(BoardStanding::Trending(TrendingStanding {
                    board: board.to_owned(),
                    score: standing.as_ref().map_or(0.0, |s| s.score),
                    rank: standing.as_ref().and_then(|s| s.rank),
                    percentile: standing.as_ref().map_or(0.0, |s| s.percentile),
                }))
            }
        }
    }
}
