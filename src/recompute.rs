//! Recomputing a board's totals from its live slots: repairs drift (totals edited by
//! hand, or by a bug), and builds a window added to the board. Exact while writes go on;
//! see `docs/design.md`.

use serde::Serialize;

use crate::domain::Span;

/// What a recompute did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct RecomputeReport {
    /// The windows rebuilt.
    #[cfg_attr(feature = "server", schema(value_type = Vec<String>))]
    pub windows: Vec<Span>,
    /// Stage values added up by the scan.
    pub fields_scanned: u64,
    /// Members computed afresh because writes touched them during the scan.
    pub members_folded: u64,
    /// Script calls made.
    pub calls: u64,
}

impl RecomputeReport {
    /// Adds another report's counts to this one.
    pub fn absorb(&mut self, other: RecomputeReport) {
        self.windows.extend(other.windows);
        self.fields_scanned += other.fields_scanned;
        self.members_folded += other.members_folded;
        self.calls += other.calls;
    }
}
