//! Changing a board's layout online: the slots it creates from now on take the new
//! layout; live slots keep theirs until they retire, or are converted now (an active
//! relayout). Exact while writes go on; see `docs/compact-slots.md`, "Relayout".

use super::Windowed;
use crate::domain::{Layout, RelayoutOptions, RelayoutReport, sums_only};
use crate::error::Result;

impl Windowed<'_> {
    /// Switches the board to `layout` for the slots it creates from now on; the report says
    /// how many live slots keep the other layout (until they retire). The board's stored
    /// config says `layout` afterwards. Changes no ranking, history or total. With
    /// `options.now` (`RelayoutOptions::default()`: not) also converts every live slot to
    /// `layout` now, in bounded calls, exactly while writes, reads and retirement go on. A
    /// run cut short (an error, `max_calls`) leaves the board exact; running it again
    /// finishes the conversion. A recompute of the board and an active relayout exclude
    /// each other ([`Error::BoardBusy`](crate::Error::BoardBusy) /
    /// [`Error::RelayoutRunning`](crate::Error::RelayoutRunning)).
    pub async fn relayout(
        self,
        layout: Layout,
        options: RelayoutOptions,
    ) -> Result<RelayoutReport> {
        let store = &self.rb.inner.store;
        self.change_config(|b| async move {
            sums_only(&b, "relayout")?;
            store.relayout(&b, layout, options).await
        })
        .await
    }
}
