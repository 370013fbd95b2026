//! Typed handles: what only one family or system has. [`Rollboard::windowed`] holds the
//! operations of a windowed board (sum, max, min or latest; sharded or not),
//! [`Rollboard::trending`] those of a trending board, and [`Rollboard::rates`],
//! [`Rollboard::counters`] and [`Rollboard::stats`] the systems beside boards. A handle
//! is a borrowed name, copied freely: it loads nothing until one of its operations runs,
//! and then the board as cached, unless it was made with the board already found (an
//! operation on a board of either kind, `any_board.rs`, looks it up once).
//! What every board answers whatever its kind is on [`Rollboard`] itself.

use std::future::Future;
use std::sync::Arc;

use super::Rollboard;
use crate::domain::board::Board;
use crate::domain::{BoardName, TrendingBoard};
use crate::error::Result;

/// The operations of the windowed board `board` (see [`Rollboard::windowed`]).
#[derive(Clone, Copy, Debug)]
pub struct Windowed<'a> {
    pub(super) rb: &'a Rollboard,
    pub(super) board: &'a str,
    /// The board, when the caller found it already.
    pub(super) found: Option<&'a Arc<Board>>,
}

/// The operations of the trending board `board` (see [`Rollboard::trending`]).
#[derive(Clone, Copy, Debug)]
pub struct Trending<'a> {
    pub(super) rb: &'a Rollboard,
    pub(super) board: &'a str,
    /// The board, when the caller found it already.
    pub(super) found: Option<&'a Arc<TrendingBoard>>,
}

/// Per-key rate windows (see [`Rollboard::rates`]).
#[derive(Clone, Copy, Debug)]
pub struct Rates<'a> {
    pub(super) rb: &'a Rollboard,
}

/// Multi-precision counters (see [`Rollboard::counters`]).
#[derive(Clone, Copy, Debug)]
pub struct Counters<'a> {
    pub(super) rb: &'a Rollboard,
}

/// Aggregate stats per context and kind, with the slowest list (see [`Rollboard::stats`]).
#[derive(Clone, Copy, Debug)]
pub struct Stats<'a> {
    pub(super) rb: &'a Rollboard,
}

impl Windowed<'_> {
    /// The board as found, else as cached (one load when it is not).
    pub(super) async fn cached(self) -> Result<Arc<Board>> {
        match self.found {
            Some(board) => Ok(Arc::clone(board)),
            None => self.rb.cached_board(&BoardName::parse(self.board)?).await,
        }
    }

    /// Runs `op` on the board (see [`retry_changed`](Rollboard::retry_changed)).
    pub(super) async fn on_board<T, F, Fut>(self, op: F) -> Result<T>
    where
        F: Fn(Arc<Board>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut board = self.cached().await?;
        self.rb.retry_changed(&mut board, op).await?
    }

    /// `op` on the board (run again on the fresh board when it changed) as a change of
    /// it: the board's cached reads are forgotten once `op` is done, however it went.
    pub(super) async fn change<T, F, Fut>(self, op: F) -> Result<T>
    where
        F: Fn(Arc<Board>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let change = |b: Arc<Board>| {
            let name = b.name.clone();
            let call = op(b);
            async move { self.rb.change(&name, call).await }
        };
        self.on_board(change).await
    }

    /// [`change`](Self::change) of the board's stored config (its layout, its shard
    /// count): the cached board is forgotten once `op` ends, however it ends (an error,
    /// its future dropped mid-way), so the next call loads the config as stored.
    pub(super) async fn change_config<T, F, Fut>(self, op: F) -> Result<T>
    where
        F: Fn(Arc<Board>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let name = BoardName::parse(self.board)?;
        let _forget = ForgetOnDrop { rb: self.rb, name };
        self.change(op).await
    }
}

/// Forgets the cached board `name` when dropped.
struct ForgetOnDrop<'a> {
    rb: &'a Rollboard,
    name: BoardName,
}

impl Drop for ForgetOnDrop<'_> {
    fn drop(&mut self) {
        self.rb.inner.boards.forget(&self.name);
    }
}

impl Trending<'_> {
    /// The board as found, else as cached (one load when it is not).
    pub(super) async fn cached(self) -> Result<Arc<TrendingBoard>> {
        match self.found {
            Some(board) => Ok(Arc::clone(board)),
            None => {
                self.rb
                    .cached_trending(&BoardName::parse(self.board)?)
                    .await
            }
        }
    }
}

impl Rollboard {
    /// The windowed board `board`: its rankings, writes, removals and upkeep.
    pub fn windowed<'a>(&'a self, board: &'a str) -> Windowed<'a> {
        Windowed {
            rb: self,
            board,
            found: None,
        }
    }

    /// The trending board `board`: its decaying scores, writes and upkeep.
    pub fn trending<'a>(&'a self, board: &'a str) -> Trending<'a> {
        Trending {
            rb: self,
            board,
            found: None,
        }
    }

    /// Rate windows: hits, counts and checks per key.
    pub fn rates(&self) -> Rates<'_> {
        Rates { rb: self }
    }

    /// Multi-precision counters.
    pub fn counters(&self) -> Counters<'_> {
        Counters { rb: self }
    }

    /// Aggregate stats and the slowest list.
    pub fn stats(&self) -> Stats<'_> {
        Stats { rb: self }
    }
}
