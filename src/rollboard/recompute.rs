//! Recomputing a board's totals from its live slots: repairs drift (totals edited by
//! hand, or by a bug), and builds a window added to the board, in place or in a task of
//! its own. Exact while writes go on; see `docs/design.md`.

use tokio::task::JoinHandle;

use super::{Windowed, window_index};
use crate::domain::{RecomputeReport, Span};
use crate::error::Result;

impl Windowed<'_> {
    /// Rebuilds the totals of `window` (every window when `None`) from the live slots:
    /// repairs drift, and builds windows added to the board. Exact while writes go on;
    /// retirement of the board waits meanwhile. [`Error::BoardBusy`](crate::Error::BoardBusy) while another
    /// recompute of the board runs. A board keeping contributors
    /// (`per_contributor_member`, `per_contributor`) is not recomputed yet: [`Error::InvalidConfig`](crate::Error::InvalidConfig).
    pub async fn recompute(self, window: Option<Span>) -> Result<RecomputeReport> {
        let store = &self.rb.inner.store;
        self.on_board(|b| async move {
            let windows = match window {
                Some(w) => vec![window_index(&b, Some(w))?],
                None => (0..b.config.windows().len()).collect(),
            };
            let mut report = RecomputeReport::default();
            for w in windows {
                report.absorb(self.rb.change(&b.name, store.recompute(&b, w)).await?);
            }
            Ok(report)
        })
        .await
    }

    /// Builds the totals of windows added to the board ([`Created::Extended`](crate::Created::Extended)), if any.
    pub async fn build_windows(self) -> Result<RecomputeReport> {
        let store = &self.rb.inner.store;
        self.on_board(|b| async move {
            let mut report = RecomputeReport::default();
            for w in store.pending_windows(&b).await? {
                report.absorb(self.rb.change(&b.name, store.recompute(&b, w)).await?);
            }
            Ok(report)
        })
        .await
    }

    /// Starts building, in a task of its own, the totals of the windows added to `board`
    /// ([`Created::Extended`](crate::Created::Extended)); reads show them as building
    /// until then. Await the handle for the report, or drop it to let the build run: a
    /// build that fails or is cut short is simply started again (the service's sweep
    /// does). Call it inside a tokio runtime.
    pub fn spawn_build_windows(self) -> JoinHandle<Result<RecomputeReport>> {
        let (boards, board) = (self.rb.clone(), self.board.to_owned());
        tokio::spawn(async move { boards.windowed(&board).build_windows().await })
    }
}
