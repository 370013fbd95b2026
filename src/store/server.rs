//! [`ServerStore`]: what a store kept in a server of its own adds to
//! [`Store`](super::Store): the server's memory and clock, and retirement in bounded
//! calls, many small boards at once or tuned for one pass. An optional capability,
//! reached through [`Store::server`](super::Store::server): the memory store lacks it
//! (it has no memory limit of its own, shares this process's clock and retires a board
//! in one step), and so may a new backend.

use std::sync::Arc;

use async_trait::async_trait;

use crate::domain::board::Board;
use crate::domain::memory_check::MemoryReading;
use crate::domain::{RetireReport, Timestamp};
use crate::error::Result;

/// The operations of a store kept in a server (the Redis store). All methods are safe to
/// call concurrently, from several processes.
#[async_trait]
pub trait ServerStore: Send + Sync {
    /// What the server says of its memory limit, use and eviction policy (Redis
    /// `INFO memory`).
    async fn memory(&self) -> Result<MemoryReading>;

    /// The server's own clock (Redis `TIME`), to measure this process's clock against.
    async fn server_time(&self) -> Result<Timestamp>;

    /// Retires, in few round trips, those of `boards` that are small and due at one
    /// boundary only, as the store's own tuning says: per board, in order,
    /// `Some(report)` when it is retired through `now` (`complete`), `None` when it was
    /// left for [`Store::retire`](super::Store::retire) (big, behind by more than one
    /// boundary, being recomputed, changed). A retired board's closed slot is compacted
    /// as [`Store::retire`](super::Store::retire) does. `Err` when the store failed as a
    /// whole; every board is then left as it was or retired exactly (each board's
    /// retirement is atomic and idempotent).
    async fn retire_small(
        &self,
        boards: &[Arc<Board>],
        now: Timestamp,
    ) -> Result<Vec<Option<RetireReport>>>;
}
