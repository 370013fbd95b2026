//! [`WriteStatus`]: what a store did with one write of a board, as the store answers it
//! and as an idempotency key's record keeps it.

/// What a store did with one [`SlotWrite`](crate::domain::SlotWrite).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteStatus {
    /// Counted in the slot and in every window that still contains the slot.
    Applied,
    /// Applied on a board that keeps contributors, the event having a contributor: counted
    /// in the slot and in every window that still contains it, of which this much counts
    /// in the largest window's total (its delta unless the contributor's cap took some).
    Counted(i64),
    /// Every window had already frozen the slot out.
    TooLate,
    /// A total or the slot value would leave ±(2^53 − 1).
    OutOfRange,
    /// Not confirmed: the write's events took several store calls and the one carrying
    /// this write failed (or was never sent) after others were applied. It may or may not
    /// be counted (a call whose reply was lost may have been applied). Also a keyed
    /// retry's write that went to a shard a reshard removed since (with its record).
    Unconfirmed,
    /// Not applied: as [`Unconfirmed`](Self::Unconfirmed), but Redis refused the failed
    /// call at its memory limit, so neither it nor the later calls applied anything.
    StoreFull,
    /// Not applied: as [`StoreFull`](Self::StoreFull), but the failed call was refused
    /// because the board changed (a new version: a window added, a reshard), so it is safe
    /// to send again to the board as stored now.
    Changed,
}
