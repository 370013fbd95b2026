//! The board cache of a [`Rollboard`] (boards of either kind, as one load found them),
//! and the one place that reloads a board and retries when the store says it changed
//! (dropped and re-created elsewhere, perhaps as the other kind).
//!
//! A stale entry is harmless: the store checks the board's version on every call and
//! answers `BoardChanged`, and the entry is then reloaded.

use foldhash::HashMap;
use std::future::Future;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::Rollboard;
use crate::domain::any_board::AnyBoard;
use crate::domain::board::Board;
use crate::domain::{BoardName, TrendingBoard};
use crate::error::{Error, Result};

/// How many times a call is run again on the board reloaded after the store said it
/// changed.
const RELOADS: usize = 3;

/// Boards by name.
#[derive(Default)]
pub(super) struct BoardCache {
    boards: RwLock<HashMap<BoardName, AnyBoard>>,
}

impl BoardCache {
    fn get(&self, name: &BoardName) -> Option<AnyBoard> {
        self.read().get(name).cloned()
    }

    pub(super) fn remember(&self, board: AnyBoard) {
        self.write().insert(board.name().clone(), board);
    }

    pub(super) fn forget(&self, name: &BoardName) {
        self.write().remove(name);
    }

    fn read(&self) -> RwLockReadGuard<'_, HashMap<BoardName, AnyBoard>> {
        self.boards.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, HashMap<BoardName, AnyBoard>> {
        self.boards.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl Rollboard {
    /// `call`, a store call that changes the board `name`, whose cached reads are then
    /// forgotten, even when it failed (a failed call may have changed part of the
    /// board). Every change made through this process, by whatever path (the routes,
    /// the retirer, the jobs), is a facade call that makes its store call here, so a
    /// read after it never sees the state before it.
    pub(super) async fn change<T>(
        &self,
        name: &BoardName,
        call: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let result = call.await;
        self.changed(name);
        result
    }

    /// Forgets the cached reads of the board `name` (see [`change`](Self::change)).
    pub(super) fn changed(&self, name: &BoardName) {
        self.inner.reads.invalidate(name);
    }

    /// Runs `op` on `board`; when the store says the board changed, reloads it (into
    /// `board`, for the caller's later calls) and runs `op` on the fresh board, up to
    /// [`RELOADS`] times (a reshard's step renews a board and its shards at once, so a
    /// call may meet the one and then the other). The outer error is the reload's (the
    /// board is gone, is now a trending board, or the store failed); the inner result
    /// is `op`'s.
    pub(super) async fn retry_changed<T, F, Fut>(
        &self,
        board: &mut Arc<Board>,
        op: F,
    ) -> Result<Result<T>>
    where
        F: Fn(Arc<Board>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut reloads = 0;
        loop {
            match op(board.clone()).await {
                Err(Error::BoardChanged(_)) if reloads < RELOADS => {
                    reloads += 1;
                    let name = board.name.clone();
                    self.inner.boards.forget(&name);
                    *board = self.cached_board(&name).await?;
                }
                other => return Ok(other),
            }
        }
    }

    /// The trending-board twin of [`retry_changed`](Self::retry_changed).
    pub(super) async fn retry_trending<T, F, Fut>(
        &self,
        board: &mut Arc<TrendingBoard>,
        op: F,
    ) -> Result<T>
    where
        F: Fn(Arc<TrendingBoard>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        match op(board.clone()).await {
            Err(Error::BoardChanged(_)) => {
                let name = board.name.clone();
                self.inner.boards.forget(&name);
                *board = self.cached_trending(&name).await?;
                op(board.clone()).await
            }
            other => other,
        }
    }

    /// The windowed board from the cache, or loaded from the store (and cached); a
    /// trending board of that name is [`Error::BoardKind`].
    pub(super) async fn cached_board(&self, name: &BoardName) -> Result<Arc<Board>> {
        match self.cached_any(name).await? {
            AnyBoard::Windowed(board) => Ok(board),
            other => Err(other_kind(&other)),
        }
    }

    /// The trending board from the cache, or loaded from the store (and cached); a
    /// windowed board of that name is [`Error::BoardKind`].
    pub(super) async fn cached_trending(&self, name: &BoardName) -> Result<Arc<TrendingBoard>> {
        match self.cached_any(name).await? {
            AnyBoard::Trending(board) => Ok(board),
            other => Err(other_kind(&other)),
        }
    }

    /// The board of either kind from the cache, or loaded from the store (one load) and
    /// cached.
    pub(super) async fn cached_any(&self, name: &BoardName) -> Result<AnyBoard> {
        if let Some(board) = self.inner.boards.get(name) {
            return Ok(board);
        }
        let board = self
            .inner
            .store
            .load_board(name)
            .await?
            .ok_or_else(|| Error::BoardNotFound(name.to_string()))?;
        self.inner.boards.remember(board.clone());
        Ok(board)
    }
}

/// A typed operation met a board of the other kind: `board` is what the name holds.
fn other_kind(board: &AnyBoard) -> Error {
    Error::BoardKind {
        board: board.name().to_string(),
        kind: board.kind().as_str(),
    }
}
