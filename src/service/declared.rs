//! What the configuration declares of the boards, applied at start and on every reload:
//! the `[[boards]]` created (or checked), and the default board a write's unknown board
//! is created with.

use super::{ServiceConfig, ServiceError};
use crate::{Error, Rollboard};

/// Creates the boards `config` declares, or checks them, and sets its default board. A
/// board declared with more windows than stored gets them (built by the scheduler's
/// first sweep); any other difference is an error.
pub(super) async fn declare(
    boards: &Rollboard,
    config: &ServiceConfig,
) -> Result<(), ServiceError> {
    boards.set_default_board(config.default_board.clone());
    for (name, board) in &config.boards {
        boards
            .create(name, board.clone())
            .await
            .map_err(|e| match e {
                Error::BoardConflict {
                    existing, asked, ..
                } => ServiceError::Config(format!(
                    "board {name:?} in the config file differs from the stored one: {}",
                    existing.differences(&asked).join("; ")
                )),
                other => other.into(),
            })?;
    }
    Ok(())
}
