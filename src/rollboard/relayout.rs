//! Changing a board's layout online: the slots it creates from now on take the new
//! layout, live slots keep theirs until they retire. Exact while writes go on; see
//! `docs/design.md`, "Relayout".

use super::Rollboard;
use crate::domain::{BoardName, Layout, RelayoutReport};
use crate::error::Result;

impl Rollboard {
    /// Switches `board` to `layout` for the slots it creates from now on; the report
    /// says how many live slots keep the other layout (until they retire). The board's
    /// stored config says `layout` afterwards. Changes no ranking, history or total.
    pub async fn relayout(&self, board: &str, layout: Layout) -> Result<RelayoutReport> {
        let store = &self.inner.store;
        let report = self
            .on_board(board, |b| async move { store.relayout(&b, layout).await })
            .await?;
        // The cached config names the old layout: load it afresh when next used.
        self.inner.boards.forget(&BoardName::parse(board)?);
        Ok(report)
    }
}
