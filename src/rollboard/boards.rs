//! Boards: create, load, list, describe and drop.

use super::Rollboard;
use crate::domain::BoardName;
use crate::domain::any_board::{AnyBoard, NewBoard};
use crate::domain::board::{Board, BoardStatus, Created};
use crate::error::{Error, Result};

impl Rollboard {
    /// Creates board `name`: a windowed board for a [`BoardConfig`](crate::BoardConfig),
    /// a trending one for a [`TrendingConfig`](crate::TrendingConfig). Returns the
    /// existing board when it has the same config; adds windows to a windowed board when
    /// `config` is its config plus larger windows ([`Created::Extended`]: call
    /// [`build_windows`](crate::Windowed::build_windows) to build their totals). Any
    /// other difference is [`Error::BoardConflict`] ([`Error::TrendingConflict`] for a
    /// trending board); a board of the other kind of that name is [`Error::BoardKind`].
    /// The board hides the members hidden on every board
    /// ([`hide_member`](Self::hide_member)) before this returns.
    pub async fn create(
        &self,
        name: &str,
        config: impl Into<NewBoard>,
    ) -> Result<Created<AnyBoard>> {
        let name = BoardName::parse(name)?;
        let config = config.into();
        if let NewBoard::Windowed(config) = &config {
            config.check_rank()?;
        }
        let create = self.inner.store.create_board(&name, &config, self.now());
        let created = self.change(&name, create).await?;
        self.inner.boards.remember(created.board().clone());
        self.inner.board_changes.send_replace(());
        self.take_hidden_everywhere(created.board().name()).await?;
        self.take_quarantined(created.board()).await?;
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
        self.windowed(name)
            .on_board(|b| async move { store.describe_board(&b, now).await })
            .await
    }

    /// Every board, by name.
    pub async fn boards(&self) -> Result<Vec<Board>> {
        let boards = self.inner.store.list_boards().await?;
        Ok(boards
            .iter()
            .filter_map(AnyBoard::windowed)
            .cloned()
            .collect())
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
