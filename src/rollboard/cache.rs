//! The board-config cache of a [`Rollboard`], and the one place that reloads a board
//! and retries when the store says it changed (dropped and re-created elsewhere).
//!
//! A stale entry is harmless: the store checks the board's version on every call and
//! answers `BoardChanged`, and the entry is then reloaded.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::Rollboard;
use crate::board::Board;
use crate::domain::BoardName;
use crate::error::{Error, Result};

/// Board configs by name.
#[derive(Default)]
pub(super) struct BoardCache {
    boards: RwLock<HashMap<BoardName, Arc<Board>>>,
}

impl BoardCache {
    fn get(&self, name: &BoardName) -> Option<Arc<Board>> {
        self.read().get(name).cloned()
    }

    pub(super) fn remember(&self, board: Arc<Board>) {
        self.write().insert(board.name.clone(), board);
    }

    pub(super) fn forget(&self, name: &BoardName) {
        self.write().remove(name);
    }

    fn read(&self) -> RwLockReadGuard<'_, HashMap<BoardName, Arc<Board>>> {
        self.boards.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, HashMap<BoardName, Arc<Board>>> {
        self.boards.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl Rollboard {
    /// Runs `op` on the named board (see [`retry_changed`](Self::retry_changed)).
    pub(super) async fn on_board<T, F, Fut>(&self, name: &str, op: F) -> Result<T>
    where
        F: Fn(Arc<Board>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut board = self.cached_board(&BoardName::parse(name)?).await?;
        self.retry_changed(&mut board, op).await?
    }

    /// Runs `op` on `board`; when the store says the board changed, reloads it once (into
    /// `board`, for the caller's later calls) and runs `op` on the fresh board. The outer
    /// error is the reload's (the board is gone, or the store failed); the inner result
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
        match op(board.clone()).await {
            Err(Error::BoardChanged(_)) => {
                let name = board.name.clone();
                self.inner.boards.forget(&name);
                *board = self.cached_board(&name).await?;
                Ok(op(board.clone()).await)
            }
            other => Ok(other),
        }
    }

    /// The board from the cache, or loaded from the store (and cached).
    pub(super) async fn cached_board(&self, name: &BoardName) -> Result<Arc<Board>> {
        if let Some(board) = self.inner.boards.get(name) {
            return Ok(board);
        }
        let board = Arc::new(
            self.inner
                .store
                .load_board(name)
                .await?
                .ok_or_else(|| Error::BoardNotFound(name.to_string()))?,
        );
        self.inner.boards.remember(board.clone());
        Ok(board)
    }
}
