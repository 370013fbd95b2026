//! Boards: create, load, list, describe and drop.

use std::sync::Arc;

use super::Rollboard;
use crate::domain::any_board::AnyBoard;
use crate::domain::board::{Board, BoardStatus, Created};
use crate::domain::{BoardConfig, BoardName};
use crate::error::{Error, Result};

impl Rollboard {
    /// Creates board `name`; returns the existing board when it has the same config, or
    /// adds windows to it when `config` is its config plus larger windows
    /// ([`Created::Extended`]: call [`build_windows`](Self::build_windows) to build their
    /// totals). Any other difference is [`Error::BoardConflict`].
    pub async fn create_board(&self, name: &str, config: BoardConfig) -> Result<Created> {
        let name = BoardName::parse(name)?;
        config.check_rank()?;
        let created = self
            .change(
                &name,
                self.inner.store.create_board(&name, &config, self.now()),
            )
            .await?;
        self.inner
            .boards
            .remember(AnyBoard::Windowed(Arc::new(created.board().clone())));
        self.inner.board_changes.send_replace(());
        Ok(created)
    }

    /// The board's name, config and identity.
    pub async fn board(&self, name: &str) -> Result<Board> {
        Ok(Board::clone(
            &*self.cached_board(&BoardName::parse(name)?).await?,
        ))
    }

    /// The board's state: members per window, live slots, retirement lag.
    pub async fn describe_board(&self, name: &str) -> Result<BoardStatus> {
        let now = self.now();
        let store = &self.inner.store;
        self.on_board(name, |b| async move { store.describe_board(&b, now).await })
            .await
    }

    /// Every board, by name.
    pub async fn boards(&self) -> Result<Vec<Board>> {
        self.inner.store.list_boards().await
    }

    /// Deletes the board and all its data; [`Error::BoardNotFound`] when there is none.
    pub async fn drop_board(&self, name: &str) -> Result<()> {
        let name = BoardName::parse(name)?;
        let existed = self
            .change(&name, self.inner.store.drop_board(&name))
            .await?;
        self.inner.boards.forget(&name);
        self.inner.board_changes.send_replace(());
        if existed {
            Ok(())
        } else {
            Err(Error::BoardNotFound(name.to_string()))
        }
    }
}
