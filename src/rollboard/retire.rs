//! Retirement: subtracting the slots that left each window, on one board or all of
//! them, with its options and report.

use serde::Serialize;

use super::Rollboard;
use crate::domain::BoardName;
use crate::error::Result;

/// How a retirement pass runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetireOptions {
    /// Most slot fields one script call subtracts.
    pub chunk_size: usize,
    /// How long one script call may work: it stops before a step (about 50 fields) that
    /// would likely overrun it, so Redis never blocks for long, whatever the machine.
    pub chunk_budget: std::time::Duration,
    /// Stop after this many chunk calls (the pass reports `complete: false`). `None` runs
    /// to the end. A later pass resumes exactly where this one stopped.
    pub max_chunks: Option<usize>,
}

impl Default for RetireOptions {
    fn default() -> Self {
        RetireOptions {
            chunk_size: 1000,
            chunk_budget: std::time::Duration::from_micros(1500),
            max_chunks: None,
        }
    }
}

/// What a retirement pass did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct RetireReport {
    /// (window, slot) pairs finished by this pass.
    pub slots_retired: u64,
    /// Slot fields subtracted from totals.
    pub fields_subtracted: u64,
    /// Members removed from a totals set because their total reached exactly zero.
    pub members_zeroed: u64,
    /// Script calls made for chunks.
    pub chunks: u64,
    /// Whether everything overdue was retired (false only when `max_chunks` stopped it).
    pub complete: bool,
}

impl RetireReport {
    /// Adds another report's counts to this one.
    pub fn absorb(&mut self, other: RetireReport) {
        self.slots_retired += other.slots_retired;
        self.fields_subtracted += other.fields_subtracted;
        self.members_zeroed += other.members_zeroed;
        self.chunks += other.chunks;
        self.complete = other.complete;
    }
}

impl Rollboard {
    /// Retires everything overdue on the board now, with the configured options.
    pub async fn retire(&self, board: &str) -> Result<RetireReport> {
        self.retire_with(board, self.inner.settings.retire).await
    }

    /// Retires everything overdue on the board now (or as much as `options` allow).
    pub async fn retire_with(&self, board: &str, options: RetireOptions) -> Result<RetireReport> {
        let now = self.now();
        let store = &self.inner.store;
        self.on_board(
            board,
            |b| async move { store.retire(&b, now, options).await },
        )
        .await
    }

    /// Retires everything overdue on every board. One board's failure does not stop
    /// the others; each board's result is returned.
    pub async fn retire_all(&self) -> Result<Vec<(BoardName, Result<RetireReport>)>> {
        let mut results = Vec::new();
        for board in self.boards().await? {
            let result = self.retire(board.name.as_str()).await;
            results.push((board.name, result));
        }
        Ok(results)
    }
}
