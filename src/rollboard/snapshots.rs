//! Period snapshots: taking them at a slot boundary (the retirer does, after each pass)
//! and listing them (what they hold is in `domain/snapshot.rs`).

use super::Windowed;
use crate::domain::own_values;
use crate::domain::{SnapshotPass, SnapshotRange, Snapshots, Span};
use crate::error::Result;

impl Windowed<'_> {
    /// Takes the board's snapshots at the current slot boundary if it asks for them and
    /// retirement through the boundary is complete for every window: each window's top
    /// is appended once, however many processes call this. A boundary the board has not
    /// lived through (it was created at or after it) is [`SnapshotPass::Off`]. After a
    /// downtime spanning several boundaries only the newest can be taken: the totals of
    /// the older ones are gone.
    pub async fn take_snapshots(self) -> Result<SnapshotPass> {
        let now = self.rb.now();
        let store = &self.rb.inner.store;
        self.on_board(|b| async move {
            let boundary = b.config.slot_start(now);
            if boundary * 1000 <= b.created_at.unix_millis() {
                return Ok(SnapshotPass::Off);
            }
            store.take_snapshots(&b, now, None).await
        })
        .await
    }

    /// The snapshots of `window` (the board's first window when `None`) whose boundaries
    /// are in `range`, newest first.
    pub async fn snapshots(self, window: Option<Span>, range: SnapshotRange) -> Result<Snapshots> {
        let store = &self.rb.inner.store;
        self.on_window(window, |b, w| async move {
            Ok(Snapshots {
                board: b.name.clone(),
                window: b.config.windows()[w],
                snapshots: own_values(&b, store.snapshots(&b, w, range).await?),
            })
        })
        .await
    }

    /// The newest boundary of `window` whose snapshot was delivered (by the service's
    /// snapshot webhook, in any process), `None` before the first; with `delivered`,
    /// first records that `window`'s snapshots through that boundary were delivered (the
    /// cursor never moves back).
    pub async fn snapshot_cursor(
        self,
        window: Option<Span>,
        delivered: Option<i64>,
    ) -> Result<Option<i64>> {
        let store = &self.rb.inner.store;
        self.on_window(window, |b, w| async move {
            store.snapshot_cursor(&b, w, delivered).await
        })
        .await
    }
}
