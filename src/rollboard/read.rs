//! Reads: a page of the ranking, a member's standing, its neighbours and its history,
//! and what they return. Every read says which slots its totals cover (`from` inclusive,
//! `to` exclusive, unix seconds), so a caller sees when retirement is behind: the totals
//! are exactly the window when `from` equals the window's start.

use std::future::Future;
use std::sync::Arc;

use serde::Serialize;

use super::{Rollboard, window_index};
use crate::board::Board;
use crate::domain::{BoardName, Member, Span, check_around, check_page};
use crate::error::Result;

/// One ranked member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Entry {
    /// Competition rank: 1 + the number of members with a strictly higher score, so
    /// equal scores share a rank (1, 1, 3).
    pub rank: u64,
    /// The member.
    pub member: String,
    /// Its total in the window.
    pub score: i64,
}

/// A page of a board's ranking: members with a positive total, highest first, equal
/// scores ordered by member name ascending (byte order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct TopPage {
    /// The board.
    pub board: BoardName,
    /// The window ranked.
    pub window: Span,
    /// Oldest slot the totals include (unix seconds, inclusive).
    pub from: i64,
    /// End of the newest slot the totals include (unix seconds, exclusive).
    pub to: i64,
    /// The entries, in rank order.
    pub entries: Vec<Entry>,
}

/// One member's standing in a window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Standing {
    /// The member.
    pub member: String,
    /// Its total in the window (positive).
    pub score: i64,
    /// Its competition rank.
    pub rank: u64,
    /// The window.
    pub window: Span,
    /// Oldest slot the total includes (unix seconds, inclusive).
    pub from: i64,
    /// End of the newest slot the total includes (unix seconds, exclusive).
    pub to: i64,
}

/// A member's value in one slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Point {
    /// The slot's start, unix seconds.
    pub slot: i64,
    /// The sum of the member's events in that slot.
    pub value: i64,
}

/// A member's per-slot values over the largest window (for a sparkline). Slots without
/// events are left out; a chart fills them with zero between `from` and `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct History {
    /// The member.
    pub member: String,
    /// The slot length.
    pub slot: Span,
    /// Start of the oldest slot of the largest window (unix seconds, inclusive).
    pub from: i64,
    /// End of the newest slot (unix seconds, exclusive).
    pub to: i64,
    /// Non-zero slots, oldest first.
    pub points: Vec<Point>,
}

impl Rollboard {
    /// A page of the ranking of `window` (the board's first window when `None`):
    /// members with a positive total, highest first, ties by member ascending.
    /// `limit` is 1–1000.
    pub async fn top(
        &self,
        board: &str,
        window: Option<Span>,
        offset: u64,
        limit: u64,
    ) -> Result<TopPage> {
        check_page(offset, limit, self.inner.settings.max_limit)?;
        let now = self.now();
        let store = &self.inner.store;
        self.on_window(board, window, |b, w| async move {
            store.top(&b, w, now, offset, limit).await
        })
        .await
    }

    /// The member's total and competition rank in `window`; `None` when it has no
    /// positive total there.
    pub async fn score(
        &self,
        board: &str,
        member: &str,
        window: Option<Span>,
    ) -> Result<Option<Standing>> {
        let member = Member::parse(member)?;
        let now = self.now();
        let store = &self.inner.store;
        let member = &member;
        self.on_window(board, window, |b, w| async move {
            store.standing(&b, w, now, member).await
        })
        .await
    }

    /// The member with up to `n` (0–100) entries above and below it; `None` when it has
    /// no positive total in `window`.
    pub async fn around(
        &self,
        board: &str,
        member: &str,
        window: Option<Span>,
        n: u64,
    ) -> Result<Option<TopPage>> {
        check_around(n)?;
        let member = Member::parse(member)?;
        let now = self.now();
        let store = &self.inner.store;
        let member = &member;
        self.on_window(board, window, |b, w| async move {
            store.around(&b, w, now, member, n).await
        })
        .await
    }

    /// The member's non-zero values per slot over the board's largest window.
    pub async fn history(&self, board: &str, member: &str) -> Result<History> {
        let member = Member::parse(member)?;
        let now = self.now();
        let store = &self.inner.store;
        let member = &member;
        self.on_board(
            board,
            |b| async move { store.history(&b, now, member).await },
        )
        .await
    }

    /// Runs `op` on the named board and the index of `window` in it (the first window
    /// when `None`).
    async fn on_window<T, F, Fut>(&self, board: &str, window: Option<Span>, op: F) -> Result<T>
    where
        F: Fn(Arc<Board>, usize) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let op = &op;
        self.on_board(board, |b| async move {
            let w = window_index(&b, window)?;
            op(b, w).await
        })
        .await
    }
}
