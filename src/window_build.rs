//! Building, in the background, the totals of windows added to a live board.

use tokio::task::JoinHandle;

use crate::{RecomputeReport, Result, Rollboard};

impl Rollboard {
    /// Starts building, in a task of its own, the totals of the windows added to `board`
    /// ([`Created::Extended`](crate::Created::Extended)); reads show them as building
    /// until then. Await the handle for the report, or drop it to let the build run: a
    /// build that fails or is cut short is simply started again (the service's sweep
    /// does). Call it inside a tokio runtime.
    pub fn spawn_build_windows(&self, board: &str) -> JoinHandle<Result<RecomputeReport>> {
        let (boards, board) = (self.clone(), board.to_owned());
        tokio::spawn(async move { boards.build_windows(&board).await })
    }
}
