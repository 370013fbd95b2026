//! What maintenance reports: removing a member, retirement, recompute and relayout (and
//! how a relayout runs). Plain data, shared by the stores that produce it and the
//! facade.

use serde::Serialize;

use super::{Layout, Span};

/// What changing a board's layout did (`Rollboard::relayout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct RelayoutReport {
    /// The layout the board's new slots get from now on.
    pub layout: Layout,
    /// The board's live slots.
    pub live_slots: u64,
    /// Live slots still in the other layout (wholly or partly): without `now` they keep
    /// it until they retire (every read, write, removal and recompute handles both);
    /// after a complete active relayout, 0. Always 0 in the memory store, which has one
    /// layout of its own.
    pub old_layout_slots: u64,
    /// Live slots an active relayout (`now`) converted to the layout (0 without `now`).
    pub converted_slots: u64,
    /// Slot values an active relayout moved from one form to the other.
    pub moved_values: u64,
    /// False when an active relayout stopped at `max_calls` before converting every
    /// live slot (a later run finishes it); true otherwise.
    pub complete: bool,
}

/// What changing a sharded board's shard count did (`Rollboard::reshard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct ReshardReport {
    /// The shard count before.
    pub from: u32,
    /// The shard count now.
    pub to: u32,
    /// Members moved to another shard (every one whose shard differs under the new
    /// count; a run that resumes one cut short counts those it moved).
    pub moved_members: u64,
    /// Slot values (a member's value in one slot) those members took with them.
    pub moved_values: u64,
}

/// How `Windowed::relayout` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayoutOptions {
    /// Also convert the live slots now, while writes, reads and retirement go on (an
    /// active relayout); otherwise they keep their layout until they retire.
    pub now: bool,
    /// How long one conversion call may work: it stops before a step (about 50 values)
    /// that would likely overrun it.
    pub chunk_budget: std::time::Duration,
    /// Stop after this many conversion calls (the report says `complete: false`); a
    /// later run finishes the conversion. `None` runs to the end.
    pub max_calls: Option<usize>,
}

impl Default for RelayoutOptions {
    fn default() -> Self {
        RelayoutOptions {
            now: false,
            chunk_budget: std::time::Duration::from_micros(1500),
            max_calls: None,
        }
    }
}

/// What removing a member did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Removed {
    /// Slot values deleted.
    pub slot_values: u64,
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
    /// Closed slots converted to the compact layout after retiring (see the Redis
    /// store's `RetireOptions::compact`); 0 on the memory store, which has no layouts.
    pub slots_compacted: u64,
    /// Values those conversions moved from a slot's plain hashes into its buckets.
    pub fields_compacted: u64,
    /// Of `slots_retired`, those window 1 retired by a swap (see the Redis store's
    /// `RetireOptions::swap_fields`); each counts its closed slot's fields in
    /// `fields_subtracted`, the members window 1's totals held before and not after in
    /// `members_zeroed`, and one call in `chunks`. 0 on the memory store.
    pub slots_swapped: u64,
}

impl RetireReport {
    /// Adds another report's counts to this one.
    pub fn absorb(&mut self, other: RetireReport) {
        self.slots_retired += other.slots_retired;
        self.fields_subtracted += other.fields_subtracted;
        self.members_zeroed += other.members_zeroed;
        self.chunks += other.chunks;
        self.slots_compacted += other.slots_compacted;
        self.fields_compacted += other.fields_compacted;
        self.slots_swapped += other.slots_swapped;
        self.complete = other.complete;
    }
}

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
    /// A report of rebuilding `window`, before anything is counted.
    pub fn of(window: Span) -> RecomputeReport {
        RecomputeReport {
            windows: vec![window],
            ..RecomputeReport::default()
        }
    }

    /// Adds another report's counts to this one.
    pub fn absorb(&mut self, other: RecomputeReport) {
        self.windows.extend(other.windows);
        self.fields_scanned += other.fields_scanned;
        self.members_folded += other.members_folded;
        self.calls += other.calls;
    }
}
