//! Retirement: subtracting the slots that left each window, on one board or all of
//! them (its options and report are in `domain/maintenance.rs`).

use super::Rollboard;
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

    /// Retires everything overdue on every board. One board's failure does not stop
    /// the others; each board's result is returned.
    pub async fn retire_all(&self) -> Result<Vec<(BoardName, Result<RetireReport>)>> {
        let mut results = Vec::new();
        for board in self.boards().await? {
            let result = self.retire(board.name.as_str()).await;
            results.push((board.name, result));
        }
        Ok(results)
    }
}
