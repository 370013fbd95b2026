//! Retirement: subtracting the slots that left each window, on one board, many boards
//! at once, or all of them (its options and report are in `domain/maintenance.rs`).

use std::sync::Arc;

use super::Rollboard;
use crate::board::Board;
use crate::domain::{BoardName, RetireOptions, RetireReport};
use crate::error::Result;

impl Rollboard {
    /// Retires everything overdue on the board now, with the configured options.
    pub async fn retire(&self, board: &str) -> Result<RetireReport> {
        self.retire_with(board, self.inner.settings.retire).await
    }

    /// Retires everything overdue on the board now (or as much as `options` allow).
    pub async fn retire_with(&self, board: &str, options: RetireOptions) -> Result<RetireReport> {
        let now = self.now();
        let store = &self.inner.store;
        self.on_board(
            board,
            |b| async move { store.retire(&b, now, options).await },
        )
        .await
    }

    /// Retires everything overdue on each of `boards`, with the configured options, in
    /// few round trips: the small boards due at one boundary in one call each, many calls
    /// per round trip ([`Store::retire_small`](crate::store::Store::retire_small)); the
    /// others (big, behind, changed) one by one, as [`retire`](Self::retire) does. Each
    /// board's result, in order. The boards may be stale: a changed one is reloaded.
    pub async fn retire_many(&self, boards: &[Arc<Board>]) -> Vec<Result<RetireReport>> {
        let options = self.inner.settings.retire;
        let fast = match self
            .inner
            .store
            .retire_small(boards, self.now(), options)
            .await
        {
            Ok(fast) => fast,
            // The store failed as a whole: so would every board's own pass.
            Err(e) => return boards.iter().map(|_| Err(e.clone())).collect(),
        };
        let rest = boards.iter().zip(&fast).map(|(board, fast)| async move {
            match fast {
                Some(report) => Ok(*report),
                None => self.retire_with(board.name.as_str(), options).await,
            }
        });
        futures_util::future::join_all(rest).await
    }

    /// Retires everything overdue on every board. One board's failure does not stop
    /// the others; each board's result is returned.
    pub async fn retire_all(&self) -> Result<Vec<(BoardName, Result<RetireReport>)>> {
        let boards: Vec<Arc<Board>> = self.boards().await?.into_iter().map(Arc::new).collect();
        let results = self.retire_many(&boards).await;
        Ok(boards.iter().map(|b| b.name.clone()).zip(results).collect())
    }
}
