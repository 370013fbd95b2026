//! The store side of moderation that spans boards: [`ModerationStore`], implemented by
//! both stores (the memory store in `memory/moderation.rs`, Redis in `redis/moderation.rs`)
//! and reached from any [`Store`](super::Store) through
//! [`Store::moderation`](super::Store::moderation). A board's own hidden members are the
//! board's ([`Store::set_hidden`](super::Store::set_hidden)); this keeps the members
//! hidden on every board and the contributors quarantined on every board, which boards
//! created later take on, and the moderation log.

use async_trait::async_trait;

use crate::domain::{Contributor, LogEntry, Member};
use crate::error::Result;

/// Moderation state of a store that is not a board's. Safe to call concurrently, from
/// several processes.
#[async_trait]
pub trait ModerationStore: Send + Sync + 'static {
    /// Adds `member` to the members hidden on every board (`hidden`) or takes it out;
    /// false when it already was so.
    async fn set_hidden_everywhere(&self, member: &Member, hidden: bool) -> Result<bool>;

    /// The members hidden on every board.
    async fn hidden_everywhere(&self) -> Result<Vec<Member>>;

    /// Adds `by` to the contributors quarantined on every board (`quarantined`) or takes
    /// it out; false when it already was so.
    async fn set_quarantined(&self, by: &Contributor, quarantined: bool) -> Result<bool>;

    /// The contributors quarantined on every board.
    async fn quarantined(&self) -> Result<Vec<Contributor>>;

    /// Appends `entry` to the log, keeping at least the newest
    /// [`LOG_KEPT`](crate::domain::LOG_KEPT) entries, with an `id` greater than every id
    /// before it (the `id` given is ignored).
    async fn log_moderation(&self, entry: LogEntry) -> Result<()>;

    /// Up to `limit` entries of the log, newest first, all older than `before` (an id)
    /// when given.
    async fn moderation_log(
        &self,
        before: Option<(u64, u64)>,
        limit: usize,
    ) -> Result<Vec<LogEntry>>;
}
