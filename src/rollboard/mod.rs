//! `Rollboard`: the library's front door. It validates every input into domain types,
//! reads the time from its clock, caches board configs, and calls the store.
//!
//! One file per family of operations (what they answer is plain data in `domain`, which
//! the stores produce too): [`any_board`] (what every board answers, whatever its kind:
//! decided once, then the windowed or trending operation), [`boards`] (create, load,
//! list, describe, drop), [`write`]
//! (events, member removal; a batch's outcome),
//! [`read`] (rankings and history), [`bulk_remove`] (removal by list, by a range of
//! totals, trimming to a top N), [`percentile`] (the top P percent, the score at a
//! percentile), [`multi_write`] and [`multi_read`] (one event to several boards, one
//! member across boards), [`retire`], [`recompute`] (and building added windows in the
//! background); [`clock_skew`] and [`memory_check`] (what the service checks of
//! the store); [`cache`] holds the board boards of either kind and the one
//! reload-and-retry when a board changed underneath.

use std::sync::Arc;

use crate::board::Board;
use crate::clock::{Clock, SystemClock};
use crate::domain::{Span, Timestamp};
use crate::error::{Error, Result};
use crate::settings::Settings;
use crate::store::{MemoryStore, RedisStore, Store};

mod any_board;
mod boards;
pub(crate) mod bulk_remove;
mod cache;
mod clock_skew;
pub use clock_skew::SkewTooLarge;
pub(crate) mod counters;
mod dashboard;
pub(crate) mod dashboard_view;
pub(crate) mod idempotent;
mod member_data;
mod memory_check;
pub(crate) mod multi_read;
pub(crate) mod multi_write;
pub(crate) mod percentile;
pub(crate) mod rates;
pub(crate) mod read;
pub(crate) mod recompute;
pub(crate) mod relayout;
pub(crate) mod retire;
pub(crate) mod snapshots;
pub(crate) mod stats;
#[cfg(feature = "server")]
mod stats_buffer;
pub(crate) mod trending;
pub(crate) mod write;
pub(crate) mod write_standing;

use cache::BoardCache;

/// Rolling-window leaderboards on a [`Store`]. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Rollboard {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    settings: Settings,
    /// Board configs by name, so most calls skip loading the board.
    boards: BoardCache,
    /// Told of every board created, extended or dropped here, so the retirer picks up a
    /// new board at once instead of at its next re-read of the store.
    board_changes: tokio::sync::watch::Sender<()>,
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
    pub fn with(store: Arc<dyn Store>, clock: Arc<dyn Clock>, settings: Settings) -> Self {
        Rollboard {
            inner: Arc::new(Inner {
                store,
                clock,
                #[cfg(feature = "server")]
                board_series: crate::board_series::BoardSeries::new(settings.metrics_board_series),
                #[cfg(feature = "server")]
                stats_buffer: Default::default(),
                settings,
                boards: BoardCache::default(),
                board_changes: tokio::sync::watch::Sender::new(()),
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

    /// The store underneath.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// Which boards get metric series of their own.
    #[cfg(feature = "server")]
    pub(crate) fn board_series(&self) -> &crate::board_series::BoardSeries {
        &self.inner.board_series
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
