//! The store side of trending boards: [`TrendingStore`], implemented by both stores (the
//! memory store in `memory/trending.rs`, Redis in `redis/trending/`) and reached from
//! any [`Store`](super::Store) through [`Store::trending`](super::Store::trending).
//!
//! Trending boards share the board namespace with windowed boards: creating one where
//! a windowed board of that name exists (or the other way round) is
//! [`Error::BoardKind`](crate::Error::BoardKind), [`Store::drop_board`](super::Store::drop_board)
//! drops either kind, and [`Store::load_board`](super::Store::load_board) loads either
//! kind in one read (the facade's cache keeps it and refuses the wrong kind on a typed
//! path), while [`Store::list_boards`](super::Store::list_boards) leaves trending boards
//! out.

use async_trait::async_trait;

use super::keyed::WriteKey;
use crate::domain::AroundQuery;
use crate::domain::PageQuery;
use crate::domain::{
    Member, Timestamp, TrendAt, TrendCounts, TrendMaintenance, TrendOptions, TrendPage, TrendRange,
    TrendRanks, TrendStanding, TrendWrite, TrendingBoard,
};
use crate::error::Result;

/// What a store did with a keyed write to a trending board.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrendKeyed {
    /// Applied now, and recorded.
    Applied,
    /// Applied before, by a call at `now`: nothing applied this time.
    Replayed {
        /// The `now` of the call that applied it.
        now: Timestamp,
    },
    /// The key names another write (another fingerprint): nothing applied.
    Reused,
}

/// Trending boards of a store. All methods are safe to call concurrently, from several
/// processes; each read is atomic, and a write is applied in order in one or more atomic
/// steps (on Redis, calls bounded in time). Methods that take a board fail with
/// [`Error::BoardChanged`](crate::Error::BoardChanged) when the stored board is gone or
/// is another incarnation.
#[async_trait]
pub trait TrendingStore: Send + Sync + 'static {
    /// How many members the board holds and ranks, its landmark, whether it rescales.
    async fn trend_counts(&self, board: &TrendingBoard) -> Result<TrendCounts>;

    /// Adds each write's delta, forward-decayed, to its member (validated input: times
    /// within the board's max age before `now` and the allowed skew after it). Rescales
    /// first when the maintenance pass has not run for so long that a stored value
    /// could leave the range of doubles. Without `key`, answers [`TrendKeyed::Applied`].
    ///
    /// With `key`, applies `writes` once for it while its records live: each atomic step
    /// applies its events and records, in that step, how many it applied and the call's
    /// `now`. A later call with the same name and fingerprint at that `now` follows the
    /// records and applies only the steps missing after them ([`TrendKeyed::Applied`]),
    /// or nothing when none is missing ([`TrendKeyed::Replayed`]); at another `now` it
    /// applies nothing and answers [`TrendKeyed::Replayed`] with the recorded `now`, at
    /// which the caller admits the events again and calls again. Another fingerprint is
    /// [`TrendKeyed::Reused`]. A record older than `key.ttl` by `now` is as good as
    /// absent; dropping the board drops its records.
    async fn trend_write(
        &self,
        at: TrendAt<'_>,
        writes: &[TrendWrite],
        key: Option<&WriteKey>,
    ) -> Result<TrendKeyed>;

    /// A page of the ranking at `now`: members with a positive score in `range`, from
    /// the `offset`-th of them counted in `order` (from the bottom when ascending), in
    /// that order; ranks are ranks in the whole ranking.
    async fn trend_top(&self, at: TrendAt<'_>, page: PageQuery<TrendRange>) -> Result<TrendPage>;

    /// A member's score at `now` whatever its sign, rank (`None` unless positive) and
    /// percentile; `None` when it holds no score.
    async fn trend_standing(
        &self,
        at: TrendAt<'_>,
        member: &Member,
    ) -> Result<Option<TrendStanding>>;

    /// The score (whatever its sign; 0 without one) and rank (`None` unless positive) of
    /// each of `members` at `now`, in order, read in one step.
    async fn trend_ranks(&self, at: TrendAt<'_>, members: &[Member]) -> Result<TrendRanks>;

    /// Up to `n` ranked entries on each side of `member` (a full page of `2n + 1`
    /// shifted at the ends with `options.fill`), in `options.order`; `None` without a
    /// positive score.
    async fn trend_around(
        &self,
        at: TrendAt<'_>,
        query: AroundQuery<'_>,
    ) -> Result<Option<TrendPage>>;

    /// One maintenance pass at `now`: rescales (moves the landmark) when due, in
    /// bounded steps, then prunes members below the floor, in bounded chunks.
    async fn trend_maintain(
        &self,
        at: TrendAt<'_>,
        options: TrendOptions,
    ) -> Result<TrendMaintenance>;
}
