//! Contributors across boards: what one contributor (an event's `by`) gave on the boards
//! that keep contributors (`per_contributor_member`, `per_contributor`), each window of
//! each board, with what of it counts under the board's caps: who liked what, for a
//! moderator or a user's own page. Every board keeping contributors by default (in name
//! order), or the boards named; the boards are read at once. And the other way round:
//! who gave to one member of a board ("who liked this post?").

use std::future::Future;
use std::sync::Arc;

use futures_util::StreamExt;
use serde::Serialize;

use super::Rollboard;
use super::multi_write::check_boards;
use crate::domain::any_board::AnyBoard;
use crate::domain::board::Board;
use crate::domain::{BoardName, ChangeCause, ChangeStamp, Contributor, Member};
use crate::domain::{WindowContributions, WindowContributors};
use crate::error::{Error, Result};

/// Boards read at once by one call.
const BOARDS_AT_ONCE: usize = 16;

/// What one contributor gave, board by board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct ContributorView {
    /// The contributor.
    pub by: String,
    /// Each board read: every board keeping contributors, in name order, or the boards
    /// named, in that order.
    pub boards: Vec<BoardContributions>,
}

/// What the contributor gave on one board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct BoardContributions {
    /// The board.
    pub board: String,
    /// Each window of the board, smallest first (a window where the contributor gave
    /// nothing lists no members, with sums 0).
    pub windows: Vec<WindowContributions>,
}

/// Who gave to one member of a board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct MemberContributors {
    /// The board.
    pub board: String,
    /// The member.
    pub member: String,
    /// Each window of the board, smallest first.
    pub windows: Vec<WindowContributors>,
}

/// The most contributors a member's read lists per window.
pub const MAX_MEMBER_CONTRIBUTORS: u64 = 1_000;

impl Rollboard {
    /// Who gave to `member` inside each window of `board` (which must keep
    /// contributors): per window how many contributors, the sums over all of them, and
    /// the first `limit` (1 to [`MAX_MEMBER_CONTRIBUTORS`]), highest `contributed` first.
    /// A board keeping no contributors, or a `limit` out of range, is
    /// [`Error::InvalidQuery`].
    pub async fn member_contributors(
        &self,
        board: &str,
        member: &str,
        limit: u64,
    ) -> Result<MemberContributors> {
        let member = Member::parse(member)?;
        crate::domain::check_page(0, limit, MAX_MEMBER_CONTRIBUTORS)?;
        let store = &self.inner.store;
        let member = &member;
        let windows = self
            .windowed(board)
            .on_board(|b| async move {
                keeps_contributors(&b, "")?;
                store.member_contributions(&b, member, limit as usize).await
            })
            .await?;
        Ok(MemberContributors {
            board: board.to_owned(),
            member: member.to_string(),
            windows,
        })
    }

    /// What `by` gave inside each window of each of `boards` (1 to
    /// [`MAX_BOARDS`](super::multi_write::MAX_BOARDS) distinct boards, each keeping
    /// contributors), or, when `None`, of every board that keeps contributors: per
    /// member, the sum of its deltas and what of it counts. An invalid `by` is
    /// [`Error::InvalidContributor`]; a named board that does not exist
    /// [`Error::BoardNotFound`], one keeping no contributors
    /// [`Error::InvalidQuery`].
    pub async fn contributions(
        &self,
        by: &str,
        boards: Option<&[String]>,
    ) -> Result<ContributorView> {
        let by = Contributor::parse(by)?;
        let names = match boards {
            Some(names) => check_boards(names)?,
            None => self.boards_keeping_contributors().await?,
        };
        let by_ref = &by;
        let reads: Vec<_> = futures_util::stream::iter(names.clone())
            .map(|name| async move { self.contributions_on(&name, by_ref).await })
            .buffered(BOARDS_AT_ONCE)
            .collect()
            .await;
        let mut view = ContributorView {
            by: by.to_string(),
            boards: Vec::with_capacity(names.len()),
        };
        for (name, read) in names.iter().zip(reads) {
            match read {
                Ok(windows) => view.boards.push(BoardContributions {
                    board: name.to_string(),
                    windows,
                }),
                // Dropped (or its cap gone with a re-creation) since it was listed.
                Err(Error::BoardNotFound(_) | Error::InvalidQuery { .. }) if boards.is_none() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(view)
    }

    /// Every windowed board that keeps contributors, by name.
    pub(super) async fn boards_keeping_contributors(&self) -> Result<Vec<BoardName>> {
        let boards = self.inner.store.list_boards().await?;
        let mut names: Vec<BoardName> = boards
            .iter()
            .filter_map(AnyBoard::windowed)
            .filter(|b| b.config.keeps_contributors())
            .map(|b| b.name.clone())
            .collect();
        names.sort();
        Ok(names)
    }

    /// `op` on the board `name` with a stamp of `cause` at now, as a change of it
    /// (retraction, quarantine), when it keeps contributors; `T::default()` when it no
    /// longer does or was dropped since it was listed.
    pub(super) async fn change_contributions<T, F, Fut>(
        &self,
        name: &str,
        cause: ChangeCause,
        op: F,
    ) -> Result<T>
    where
        T: Default,
        F: Fn(Arc<Board>, ChangeStamp) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let now = self.now();
        let changed = self
            .windowed(name)
            .change(|b| {
                let keeps = b.config.keeps_contributors();
                let call = keeps.then(|| op(b, ChangeStamp { cause, now }));
                async move {
                    match call {
                        Some(call) => call.await,
                        None => Ok(T::default()),
                    }
                }
            })
            .await;
        match changed {
            Err(Error::BoardNotFound(_)) => Ok(T::default()),
            other => other,
        }
    }

    /// What `by` gave inside each window of the board `name`, which must keep
    /// contributors.
    async fn contributions_on(
        &self,
        name: &BoardName,
        by: &Contributor,
    ) -> Result<Vec<WindowContributions>> {
        let store = &self.inner.store;
        self.windowed(name.as_str())
            .on_board(|b| async move {
                keeps_contributors(&b, "; leave it out of boards")?;
                store.contributions(&b, by).await
            })
            .await
    }
}

/// Refuses a board keeping no contributors ([`Error::InvalidQuery`], its reason ending
/// with `fix`).
pub(super) fn keeps_contributors(b: &crate::domain::board::Board, fix: &str) -> Result<()> {
    if b.config.keeps_contributors() {
        return Ok(());
    }
    Err(Error::InvalidQuery {
        reason: format!(
            "board {:?} keeps no contributors: it has neither \"per_contributor_member\" nor \
             \"per_contributor\" (set when a sum board is created){fix}",
            b.name.as_str()
        ),
    })
}
