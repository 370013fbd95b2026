//! Boards without ceremony: with a default board config set
//! ([`Rollboard::set_default_board`]; `default_board` / `ROLLBOARD_DEFAULT_BOARD` in the
//! service), the first write to a board that does not exist creates it with that config,
//! as a `PUT` would, and is then applied. Only writes create boards (the calls of any
//! board: [`Rollboard::write_events`], [`Rollboard::write_events_keyed`], the
//! multi-board writes and the standing writes; the routes that post events); a read of
//! an unknown board is [`Error::BoardNotFound`] as before. Off by default.

use super::Rollboard;
use crate::domain::BoardName;
use crate::domain::any_board::{AnyBoard, NewBoard};
use crate::error::{Error, Result};

impl Rollboard {
    /// Sets the config a write's unknown board is created with (`None`: an unknown
    /// board is refused, as by default). Takes effect for the next write.
    pub fn set_default_board(&self, config: Option<NewBoard>) {
        *self
            .inner
            .default_board
            .write()
            .unwrap_or_else(|e| e.into_inner()) = config;
    }

    /// The config a write's unknown board is created with, if any.
    pub fn default_board(&self) -> Option<NewBoard> {
        self.inner
            .default_board
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The board a write goes to: the board of either kind, or, when there is none and
    /// a default config is set, the board created with it.
    pub(super) async fn write_target(&self, name: &BoardName) -> Result<AnyBoard> {
        match self.cached_any(name).await {
            Err(Error::BoardNotFound(missing)) => {
                let Some(config) = self.default_board() else {
                    return Err(Error::BoardNotFound(missing));
                };
                let created = self.create(name.as_str(), config).await?;
                #[cfg(feature = "server")]
                tracing::info!(board = name.as_str(), "board created by its first write");
                Ok(created.board().clone())
            }
            found => found,
        }
    }
}
