//! `Rollboard`: the library's front door. It validates every input into domain types,
//! reads the time from its clock, caches board configs, and calls the store.
//!
//! One public API: what every board answers whatever its kind is on `Rollboard` itself
//! ([`any_board`]: decided once, then the windowed or trending operation; [`boards`]:
//! create, load, list, describe, drop); what one kind or system has is on a typed
//! handle ([`handles`]: [`Windowed`], [`Trending`], [`Rates`], [`Counters`], [`Stats`]),
//! its methods in one file per family of operations (what they answer is plain data in
//! `domain`, which the stores produce too): [`write`] (events, member removal; a
//! batch's outcome), [`read`] (rankings and history), [`contributors`] (what one
//! contributor gave across the boards keeping contributors), [`bulk_remove`] (removal by list,
//! by a range of totals, trimming to a top N), [`percentile`] (the top P percent, the
//! score at a percentile), [`multi_write`] and [`multi_read`] (one event to several
//! boards, one member across boards), [`retire`], [`recompute`] (and building added
//! windows in the background); [`clock_skew`] and [`memory_check`] (what the service
//! checks of the store); [`cache`] holds the boards of either kind and the one
//! reload-and-retry when a board changed underneath; [`read_cache`] keeps the answers
//! of reads that allow a staleness bound ([`Rollboard::reading_within`]), which every
//! change made through this process forgets for the changed board
//! ([`Rollboard::change`], the one helper every changing store call goes through);
//! [`coalesce`] lets concurrent exact reads of one key share a store read started after
//! each of them arrived. A
//! min board's values are negated back on every read (`domain/stored_values.rs`).

use std::fmt::Write;
use std::sync::Arc;

use crate::clock::{Clock, SystemClock};
use crate::domain::board::Board;
use crate::domain::{Span, Staleness, Timestamp};
use crate::error::{Error, Result};
use crate::settings::Settings;
use crate::store::sharded::ShardedStore;
use crate::store::{MemoryStore, RedisStore, Store};

mod any_board;
mod boards;
pub(crate) mod bulk_remove;
mod cache;
pub(crate) mod changes;
mod coalesce;
pub(crate) mod contributors;
mod default_board;
mod handles;
pub use handles::{Counters, Rates, Stats, Trending, Windowed};
mod clock_skew;
pub use clock_skew::SkewTooLarge;
pub(crate) mod counters;
#[cfg(feature = "server")]
mod dashboard;
#[cfg(feature = "server")]
pub(crate) mod dashboard_view;
pub(crate) mod idempotent;
mod member_data;
mod memory_check;
pub(crate) mod moderation;
pub(crate) mod movement;
pub(crate) mod multi_read;
pub(crate) mod multi_write;
pub(crate) mod percentile;
mod pins;
pub(crate) mod rates;
pub(crate) mod read;
mod read_cache;
mod review;
pub use read_cache::MAX_ENTRIES as MAX_CACHED_READS;
mod quarantine;
pub(crate) mod recompute;
pub(crate) mod relayout;
mod reshard;
pub use quarantine::Quarantined;
mod retract;
pub use retract::{Retraction, RetractionState};
pub(crate) mod retire;
pub(crate) mod snapshots;
pub(crate) mod stats;
#[cfg(feature = "server")]
mod stats_buffer;
pub(crate) mod trending;
pub(crate) mod write;
pub(crate) mod write_standing;

use cache::BoardCache;
use coalesce::Coalescer;
use read_cache::ReadCache;

/// Rolling-window leaderboards on a [`Store`]. Cheap to clone; clones share everything
/// (a view made by [`reading_within`](Rollboard::reading_within) differs only in the
/// staleness its reads allow).
#[derive(Clone)]
pub struct Rollboard {
    inner: Arc<Inner>,
    /// How old the answers of this handle's reads may be (the settings' by default).
    staleness: Staleness,
}

struct Inner {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    settings: Settings,
    /// Board configs by name, so most calls skip loading the board.
    boards: BoardCache,
    /// Answers of reads that allow a staleness bound, by board.
    reads: Arc<ReadCache>,
    /// Exact reads of one key under way together, sharing store reads.
    exact_reads: Coalescer,
    /// The config a write's unknown board is created with (`default_board.rs`).
    default_board: std::sync::RwLock<Option<crate::domain::any_board::NewBoard>>,
    /// Told of every board created, extended or dropped here, so the retirer picks up a
    /// new board at once instead of at its next re-read of the store.
    board_changes: tokio::sync::watch::Sender<()>,
    /// The retractions started here (`retract.rs`).
    retractions: retract::Retractions,
    /// Which boards get metric series of their own (`settings.metrics_board_series`).
    #[cfg(feature = "server")]
    board_series: crate::board_series::BoardSeries,
    /// Stats values recorded in the background and not yet written.
    #[cfg(feature = "server")]
    stats_buffer: stats_buffer::StatsBuffer,
}

impl std::fmt::Debug for Rollboard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rollboard")
            .field("store", &self.inner.store.kind())
            .field("settings", &self.inner.settings)
            .finish_non_exhaustive()
    }
}

impl Rollboard {
    /// Boards on `store`, with the system clock and default settings.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self::with(store, Arc::new(SystemClock), Settings::default())
    }

    /// Boards on `store`, with a given clock and settings.
    /// A `settings.max_staleness_ms` above [`MAX_STALENESS_MS`](crate::MAX_STALENESS_MS)
    /// is taken as that maximum.
    pub fn with(store: Arc<dyn Store>, clock: Arc<dyn Clock>, settings: Settings) -> Self {
        let reads = Arc::new(ReadCache::default());
        let store: Arc<dyn Store> = Arc::new(ShardedStore::new(store));
        let staleness = Staleness::from_millis(settings.max_staleness_ms)
            .unwrap_or(Staleness::from_millis(crate::MAX_STALENESS_MS).expect("the maximum"));
        Rollboard {
            staleness,
            inner: Arc::new(Inner {
                store,
                reads,
                clock,
                #[cfg(feature = "server")]
                board_series: crate::board_series::BoardSeries::new(settings.metrics_board_series),
                #[cfg(feature = "server")]
                stats_buffer: Default::default(),
                settings,
                boards: BoardCache::default(),
                exact_reads: Coalescer::default(),
                default_board: Default::default(),
                board_changes: tokio::sync::watch::Sender::new(()),
                retractions: Default::default(),
            }),
        }
    }

    /// Boards held in this process's memory.
    pub fn memory() -> Self {
        Self::new(Arc::new(MemoryStore::new()))
    }

    /// Boards in the Redis at `url`.
    pub async fn redis(url: &str) -> Result<Self> {
        Ok(Self::new(Arc::new(RedisStore::connect(url).await?)))
    }

    /// Boards in the Redis Cluster reached through the seed nodes `urls`.
    pub async fn redis_cluster<S: AsRef<str>>(urls: &[S]) -> Result<Self> {
        Ok(Self::new(Arc::new(
            RedisStore::connect_cluster(urls).await?,
        )))
    }

    /// The store underneath (inside the layer of sharded boards). Calls made on it directly
    /// skip this handle's caches (a read cached here does not see a write made there) and
    /// see a min board's values as stored, negated.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// Which boards get metric series of their own.
    #[cfg(feature = "server")]
    pub(crate) fn board_series(&self) -> &crate::board_series::BoardSeries {
        &self.inner.board_series
    }

    /// A handle on the same boards whose top-N, member, ranks and around reads (of
    /// either kind of board, and the member data read with them) may be answered from
    /// this process's read cache while the cached answer is at most `max_staleness` old
    /// ([`Staleness::EXACT`]: always from the store). Each answer says its age
    /// (`age_ms`). Writes made through any handle of this process forget the written
    /// board's cached answers at once; other processes' writes are seen within the
    /// bound. Handles made by [`with`](Self::with) allow the settings'
    /// `max_staleness_ms`.
    pub fn reading_within(&self, max_staleness: Staleness) -> Rollboard {
        Rollboard {
            inner: self.inner.clone(),
            staleness: max_staleness,
        }
    }

    /// How old the answers of this handle's reads may be.
    pub fn staleness(&self) -> Staleness {
        self.staleness
    }

    /// The answer of the read `key` of `board` (of `version`), with its age in ms: from
    /// the read cache when this handle allows a staleness bound, else from a fetch from
    /// the store started after this call (age 0; [`coalesce`]).
    pub(crate) async fn read_through<T, F, Fut>(
        &self,
        board: (&crate::domain::BoardName, u64),
        key: impl FnOnce() -> String,
        fetch: F,
    ) -> Result<(T, u64)>
    where
        T: Clone + Send + Sync + 'static,
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        if self.staleness.is_exact() {
            let fetch = |_| async move { fetch().await.map(|value| vec![value]) };
            return self.read_batched(board, key, (), fetch).await;
        }
        let read = self
            .inner
            .reads
            .read(board.0, key(), self.staleness, self.now(), fetch);
        read.await
    }

    /// As [`read_through`](Self::read_through), the answer for `item` of the read `key`
    /// (`key` and `item` together name it in the read cache), where one `fetch` of the
    /// store answers several items at once (one answer per item, in order): concurrent
    /// exact reads of `key` share one.
    pub(crate) async fn read_batched<I, T, F, Fut>(
        &self,
        (board, version): (&crate::domain::BoardName, u64),
        key: impl FnOnce() -> String,
        item: I,
        fetch: F,
    ) -> Result<(T, u64)>
    where
        I: Clone + PartialEq + std::fmt::Debug + Send + 'static,
        T: Clone + Send + Sync + 'static,
        F: FnOnce(Vec<I>) -> Fut,
        Fut: std::future::Future<Output = Result<Vec<T>>>,
    {
        if self.staleness.is_exact() {
            // Joined without `fmt`, whose `format!` of it cost an exact top-10 read ~1,400
            // instructions (~4%).
            let (mut number, words) = (itoa::Buffer::new(), key());
            let key = [board.as_str(), " ", number.format(version), " ", &words].concat();
            let read = self.inner.exact_reads.read(key, item, fetch);
            return read.await.map(|value| (value, 0));
        }
        let mut key = key();
        write!(key, " {item:?}").expect("writing to a String does not fail");
        let fetch = || async move { coalesce::first(fetch(vec![item]).await) };
        let read = self
            .inner
            .reads
            .read(board, key, self.staleness, self.now(), fetch);
        read.await
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// The current time, from this instance's clock.
    pub fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    /// This instance's clock.
    pub(crate) fn clock(&self) -> &dyn Clock {
        self.inner.clock.as_ref()
    }

    /// A receiver told of every board created, extended or dropped through this instance.
    pub(crate) fn board_changes(&self) -> tokio::sync::watch::Receiver<()> {
        self.inner.board_changes.subscribe()
    }
}

/// The index of `window` among the board's windows (the first window when `None`).
fn window_index(board: &Board, window: Option<Span>) -> Result<usize> {
    match window {
        None => Ok(0),
        Some(w) => board
            .config
            .window_index(w)
            .ok_or_else(|| Error::WindowNotFound {
                board: board.name.to_string(),
                window: w,
            }),
    }
}
