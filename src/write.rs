//! What writes return.

use serde::Serialize;

use crate::error::Error;

/// The outcome of a batch: each bad event is rejected on its own, the rest are applied.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BatchOutcome {
    /// Events applied.
    pub accepted: usize,
    /// Events rejected, with their index in the batch, in index order.
    pub rejected: Vec<Rejected>,
}

/// One rejected event of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// Its position in the batch, from 0.
    pub index: usize,
    /// Why it was rejected.
    pub error: Error,
}

/// What removing a member did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Removed {
    /// Slot values deleted.
    pub slot_values: u64,
}
