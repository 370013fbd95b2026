//! Retirement: subtracting the slots that left each window, on one board, many boards
//! at once, or all of them (its report is in `domain/maintenance.rs`; how the Redis store
//! chunks a pass is its own [`RetireOptions`]).

use std::sync::Arc;

use super::{Rollboard, Windowed};
use crate::domain::board::Board;
use crate::domain::{BoardName, RetireReport};
use crate::error::Result;
use crate::store::{RetireOptions, ServerStore};

impl Windowed<'_> {
    /// Retires everything overdue on the board now, as the store is tuned (`None`), or
    /// as much as `options` allow on a store kept in a server (Redis; a store without
    /// such tuning retires as it is tuned).
    pub async fn retire(self, options: Option<RetireOptions>) -> Result<RetireReport> {
        let now = self.rb.now();
        let store = &self.rb.inner.store;
        self.change(|b| async move { store.retire(&b, now, options).await })
            .await
    }
}

impl Rollboard {
    /// Retires everything overdue on each of `boards` in few round trips: on Redis the
    /// small boards due at one boundary in one call each, many calls per round trip
    /// ([`ServerStore::retire_small`](crate::ServerStore::retire_small)); the others (big,
    /// behind, changed, or every board of another store) one by one, as
    /// [`retire`](crate::Windowed::retire) does. Each board's result, in order. The boards
    /// may be stale: a changed one is reloaded.
    pub async fn retire_many(&self, boards: &[Arc<Board>]) -> Vec<Result<RetireReport>> {
        let fast = match self.inner.store.server() {
            Some(server) => match self.retire_small(server, boards).await {
                Ok(fast) => fast,
                // The store failed as a whole: so would every board's own pass.
                Err(e) => return boards.iter().map(|_| Err(e.clone())).collect(),
            },
            None => vec![None; boards.len()],
        };
        let rest = boards.iter().zip(&fast).map(|(board, fast)| async move {
            match fast {
                Some(report) => Ok(*report),
                None => self.windowed(board.name.as_str()).retire(None).await,
            }
        });
        futures_util::future::join_all(rest).await
    }

    /// The store's [`ServerStore::retire_small`](crate::ServerStore::retire_small) of
    /// `boards`, whose cached reads are then forgotten.
    async fn retire_small(
        &self,
        server: &dyn ServerStore,
        boards: &[Arc<Board>],
    ) -> Result<Vec<Option<RetireReport>>> {
        let result = server.retire_small(boards, self.now()).await;
        for board in boards {
            self.changed(&board.name);
        }
        result
    }

    /// Retires everything overdue on every board. One board's failure does not stop
    /// the others; each board's result is returned.
    pub async fn retire_all(&self) -> Result<Vec<(BoardName, Result<RetireReport>)>> {
        let boards: Vec<Arc<Board>> = self.boards().await?.into_iter().map(Arc::new).collect();
        let results = self.retire_many(&boards).await;
        Ok(boards.iter().map(|b| b.name.clone()).zip(results).collect())
    }
}
