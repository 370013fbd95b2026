//! # rollboard: exact rolling-window leaderboards
//!
//! "Hot posts: most liked in the last 24 hours", "most viewed this hour", "top posters
//! this week": each is a **board**, a ranking of **members** by the sum of their
//! **events** inside a **rolling window**. rollboard keeps one hash per time slot and one
//! running-total sorted set per window, and *retires* each slot that leaves a window by
//! subtracting it, in bounded, idempotent chunks. Totals are exact: equal to the sum of
//! the window's events, under concurrency, crashes and several replicas.
//!
//! The main types:
//! - [`Rollboard`]: the front door: create boards, write events, read rankings, retire;
//!   what every board answers whatever its kind. What one kind or system has sits on a
//!   typed handle: [`Windowed`] ([`Rollboard::windowed`]), [`Trending`], [`Rates`],
//!   [`Counters`], [`Stats`].
//! - [`Store`]: where boards live: [`RedisStore`] in production, [`MemoryStore`]
//!   embedded (and the reference model the Redis store is tested against).
//! - [`BoardConfig`], [`Span`], [`Timestamp`], [`Event`]: validated inputs.
//! - [`Clock`]: where "now" comes from; tests use [`ManualClock`].
//!
//! ```
//! use rollboard::{BoardConfig, Rollboard};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), rollboard::Error> {
//! let boards = Rollboard::memory(); // or Rollboard::redis("redis://127.0.0.1/").await?
//! boards.create("hot", BoardConfig::parse("1h", &["1h", "24h"])?).await?;
//! let hot = boards.windowed("hot");
//! hot.incr("post:1", 1, None).await?;
//! hot.incr("post:2", 3, None).await?;
//! let page = hot.top(None, 0, 10).await?;
//! assert_eq!(page.entries[0].member, "post:2");
//! assert_eq!(page.entries[0].score, 3);
//! # Ok(())
//! # }
//! ```
//!
//! With the `server` feature (on by default), [`http::router`] is the HTTP API as an axum
//! router and [`service`] runs it with the retirement scheduler; an embedding backend
//! that needs neither uses `default-features = false`.
//!
//! Start a [`Retirer`] ([`Rollboard::start_retirer`]; the service's scheduler runs one)
//! so totals drop the slots that left each window at every slot boundary, or call
//! [`Rollboard::retire_all`] yourself. See `docs/design.md` for the data model and why
//! retirement is exact.

#![deny(missing_docs)]

#[cfg(feature = "server")]
mod board_series;
mod clock;
mod domain;
mod error;
pub mod rates;
mod retirer;
mod rollboard;
mod settings;
mod store;

#[cfg(feature = "server")]
pub mod http;
#[cfg(feature = "server")]
pub mod jobs;
#[cfg(feature = "server")]
pub mod metrics;
#[cfg(feature = "server")]
pub mod service;

pub use clock::{Clock, ManualClock, SystemClock};
pub use domain::Aggregate;
pub use domain::RankedTotals;
pub use domain::any_board::{
    AnyBoard, BoardKind, BoardPage, BoardState, MemberRanks, MemberStanding, NewBoard,
    TrendingStatus,
};
pub use domain::board::WindowStatus;
pub use domain::board::{Board, BoardStatus, Created, Resharding, SlotWrites, WindowAt};
pub use domain::counter::{
    CleanPlan, CounterName, DEFAULT_KEEP, DEFAULT_PRECISIONS, Sample, SampleQuery,
};
pub use domain::memory_check::{MemoryCheck, MemoryLimit, MemoryProblem, MemoryReading};
pub use domain::stats::{
    HourStats, RELATIVE_ERROR, SLOWEST_KEPT, SlowEntry, StatsContext, StatsKind,
};
pub use domain::{AroundOptions, AroundQuery, MAX_STALENESS_MS, Order, PageQuery, Staleness};
pub use domain::{
    BoardConfig, BoardName, Entry, Event, Fingerprint, History, IdempotencyKey, Layout, MAX_ABS,
    MAX_IDEMPOTENCY_KEY, MAX_MEMBER_DATA, MAX_RANKS_MEMBERS, Member, MemberData, MemberRank, Point,
    Ranks, RecomputeReport, RelayoutOptions, RelayoutReport, Removed, ReshardReport, RetireReport,
    ScoreBounds, ScoreRange, Span, Standing, Ties, Timestamp, TopPage, TrendAt, TrendCounts,
    TrendCreated, TrendEntry, TrendMaintenance, TrendOptions, TrendPage, TrendRange, TrendRank,
    TrendRanks, TrendStanding, TrendWrite, TrendingBoard, TrendingConfig,
};
pub use domain::{Change, ChangeCause, ChangePage, ChangeType, ChangesKept, Movement, Watch};
pub use domain::{
    Contribution, Contributor, MemberContribution, WindowContributions, WindowContributors,
};
pub use domain::{Decision, HeldEvent, HeldMember, ReviewPolicy, ReviewQueue};
pub use domain::{
    HiddenMember, HiddenMembers, LOG_KEPT, LogEntry, MAX_ACTOR, MAX_PIN_POSITION, MAX_PINS,
    MAX_REASON, Moderated, ModerationAction, ModerationNote, Pin, SkippedBoard,
};
pub use domain::{
    MAX_STANDING_EVENTS, MAX_STANDING_MEMBERS, MAX_STANDING_READS, WindowStanding, WrittenStanding,
};
pub use domain::{Snapshot, SnapshotPass, SnapshotPolicy, SnapshotRange, Snapshots};
pub use error::{Error, Result};
pub use rates::{Coverage, RateCounts, RateKey, RateTiers, RateWindow, Tier, Verdict};
pub use retirer::{Retirer, RetirerEvent, RetirerObserver, RetirerOptions, RetirerStatus};
pub use rollboard::MAX_CACHED_READS;
pub use rollboard::bulk_remove::{BulkRemoved, MAX_BULK_REMOVE};
pub use rollboard::changes::{CHANGES_POLL, MAX_CHANGES_LIMIT};
pub use rollboard::contributors::{
    BoardContributions, ContributorView, MAX_MEMBER_CONTRIBUTORS, MemberContributors,
};
pub use rollboard::counters::CleanReport;
#[cfg(feature = "server")]
pub use rollboard::dashboard_view::{
    BoardOrder, BoardRef, BoardSearch, CounterView, Dashboard, DashboardBoard, DashboardCounters,
    DashboardHealth, DashboardMemory, DashboardProblem, DashboardQuery, DashboardStats,
    FailedBoardView, MemberLookup, MemberScore, MemberWindow, PrecisionSamples, SlowView,
    TrendingBoardView, WindowView, WindowedBoardView,
};
pub use rollboard::idempotent::KeyedOutcome;
pub use rollboard::moderation::{MAX_LOG_PAGE, MAX_MODERATED_BOARDS};
pub use rollboard::multi_read::{
    BoardResult, BoardStanding, MemberAcross, TrendingStanding, WindowScore, WindowedStanding,
};
pub use rollboard::multi_write::{BoardWrite, BoardsEvent, MAX_BOARDS};
pub use rollboard::percentile::ScoreAt;
pub use rollboard::stats::ContextStats;
pub use rollboard::write::{BatchOutcome, Counted, Rejected};
pub use rollboard::write_standing::StandingOutcome;
pub use rollboard::{Counters, Rates, Rollboard, SkewTooLarge, Stats, Trending, Windowed};
pub use rollboard::{Quarantined, Retraction, RetractionState};
pub use settings::Settings;
pub use store::{
    CounterCleaned, CounterInfo, CounterStore, IngestOptions, InvalidKeyPrefix, KeyPrefix, Keyed,
    MemoryStore, RateHit, RateStore, Recorded, RedisOptions, RedisStore, ReplicaAcks,
    RetireOptions, ServerStore, SlotWrite, StatRecord, StatsStore, Store, TrendingStore, WriteKey,
    WriteStatus,
};

/// Compiles and runs the Rust code blocks of the README, so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// Compiles and runs the Rust code blocks of `docs/library.md`.
#[cfg(doctest)]
#[doc = include_str!("../docs/library.md")]
struct LibraryDoctests;
