//! What the dashboard reads: the query of one refresh ([`DashboardQuery`]) and its answer
//! ([`Dashboard`]), the board picker's search ([`BoardSearch`]) and the member lookup
//! ([`MemberLookup`]). Plain data; [`super::dashboard`] gathers it.
//!
//! The answer reuses the types of the single reads (a top page's [`Entry`], a
//! [`History`], a [`Snapshot`], a trending [`TrendEntry`]), so a client reads them the
//! same way here and there.

use std::time::Duration;

use serde::Serialize;

use crate::domain::any_board::BoardKind;
use crate::domain::{
    BoardConfig, Change, Entry, HiddenMember, History, Order, Snapshot, Span, TrendEntry,
    TrendingConfig,
};

/// Most boards one dashboard read shows.
pub const MAX_DASHBOARD_BOARDS: usize = 50;
/// Most counters one dashboard read shows.
pub const MAX_DASHBOARD_COUNTERS: usize = 20;
/// Counters shown when none are named: the first ones by name.
pub const DEFAULT_DASHBOARD_COUNTERS: usize = 10;
/// Most counter names listed for the picker.
pub const COUNTER_NAMES_LISTED: usize = 1000;
/// Most boards one search lists.
pub const MAX_SEARCH_LIMIT: usize = 500;
/// The newest changes a watched board answers ([`WindowedBoardView::changes`]).
pub const DASHBOARD_CHANGES: usize = 10;

/// What one dashboard refresh asks for. [`Default`] is the documented defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct DashboardQuery {
    /// The boards to show, in this order (at most [`MAX_DASHBOARD_BOARDS`]).
    pub boards: Vec<String>,
    /// Rows per window table, 1–100 (default 10).
    pub top: u64,
    /// Which end of each ranking the tables show: the top (the default) or, with
    /// [`Order::Asc`], the bottom, lowest first.
    pub order: Order,
    /// Leaders per window whose history is read, 0–10 (default 3).
    pub leaders: usize,
    /// The counters to show (at most [`MAX_DASHBOARD_COUNTERS`]); `None`: the first
    /// [`DEFAULT_DASHBOARD_COUNTERS`] by name.
    pub counters: Option<Vec<String>>,
    /// Newest samples per counter precision, 1–1000 (default 120).
    pub samples: usize,
    /// The stats kind of the slowest table (default `AccessTime`).
    pub kind: String,
    /// Entries of the slowest table, 1–100 (default 10).
    pub slowest: usize,
    /// The clock skew beyond which the health says not ready (as `/readyz`); `None`: the
    /// clock is not judged.
    pub max_clock_skew: Option<Duration>,
    /// Each window's hidden members too ([`WindowView::hidden`]): for moderators.
    pub hidden: bool,
}

impl Default for DashboardQuery {
    fn default() -> Self {
        DashboardQuery {
            boards: Vec::new(),
            top: 10,
            order: Order::Desc,
            leaders: 3,
            counters: None,
            samples: 120,
            kind: "AccessTime".into(),
            slowest: 10,
            max_clock_skew: Some(Duration::from_secs(5)),
            hidden: false,
        }
    }
}

/// A problem as the API reports errors: a stable code and a message saying what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct DashboardProblem {
    /// A stable snake_case code (`board_not_found`, `store_unavailable`, …).
    pub code: String,
    /// What went wrong and what to do.
    pub message: String,
}

impl From<&crate::Error> for DashboardProblem {
    fn from(error: &crate::Error) -> Self {
        DashboardProblem {
            code: error.code().to_owned(),
            message: error.to_string(),
        }
    }
}

/// One dashboard refresh: health, the boards asked for, counters and stats.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Dashboard {
    /// When it was read, unix seconds (this instance's clock).
    pub now: i64,
    /// The checks of `/readyz`, and what they read.
    pub health: DashboardHealth,
    /// The boards asked for, in the order asked.
    pub boards: Vec<DashboardBoard>,
    /// Counter names for the picker and the samples of the counters shown.
    pub counters: DashboardCounters,
    /// The slowest contexts of one kind, and every kind.
    pub stats: DashboardStats,
}

/// The service's health as `/readyz` judges it, answered rather than failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct DashboardHealth {
    /// Every check passed (`/readyz` would answer 200).
    pub ready: bool,
    /// The first check that failed (`/readyz`'s 503 error), null when ready.
    pub problem: Option<DashboardProblem>,
    /// `redis` or `memory`.
    pub store: &'static str,
    /// This process's clock minus the store's, seconds (0 on the memory store).
    pub clock_skew_seconds: f64,
    /// Redis's memory and eviction policy; null on the memory store or when Redis hides
    /// `INFO`.
    pub memory: Option<DashboardMemory>,
}

/// Redis's memory, as `INFO memory` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct DashboardMemory {
    /// Bytes in use.
    pub used_bytes: u64,
    /// The limit, 0 when none.
    pub max_bytes: u64,
    /// `maxmemory-policy`.
    pub policy: String,
}

/// One board of the dashboard: a windowed board, a trending board, or one that could
/// not be read (its name and the error).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum DashboardBoard {
    /// A windowed board.
    Windowed(WindowedBoardView),
    /// A trending board.
    Trending(TrendingBoardView),
    /// A board that could not be read.
    Failed(FailedBoardView),
}

/// A windowed board: per window its state and top, the leaders' histories and, when it
/// watches tops, its newest changes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct WindowedBoardView {
    /// The board.
    pub name: String,
    /// `windowed`.
    pub kind: BoardKind,
    /// Its config, as `GET /v1/boards` lists it.
    pub config: BoardConfig,
    /// One per window, smallest first.
    pub windows: Vec<WindowView>,
    /// The history of each distinct member of every window's `leaders`, once.
    pub histories: Vec<History>,
    /// A board that watches tops (`watch` in its config): the newest changes of its
    /// watched tops, at most 10, newest first, each as `GET /v1/boards/{board}/changes`
    /// answers it; empty before the first. Absent on a board without watches.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(nullable = false))]
    pub changes: Option<Vec<Change>>,
}

/// One window of a windowed board.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct WindowView {
    /// The window.
    pub window: Span,
    /// Members with a non-zero total.
    pub members: u64,
    /// Members with a positive total (ranked).
    pub ranked: u64,
    /// Seconds of expired events still counted because retirement is behind.
    pub lag_seconds: u64,
    /// Oldest slot the totals include (unix seconds, inclusive).
    pub from: i64,
    /// End of the newest slot the totals include (unix seconds, exclusive).
    pub to: i64,
    /// The top of the window.
    pub entries: Vec<Entry>,
    /// The window's newest snapshot; null when the board takes none or has none yet.
    pub snapshot: Option<Snapshot>,
    /// The first members of `entries` (up to `leaders`), whose histories are in the
    /// board's `histories`.
    pub leaders: Vec<String>,
    /// For a moderator (a caller that may administer) only: the members the board hides
    /// that hold a value in the window, with it, as `GET /v1/boards/{board}/hidden`
    /// lists them; absent when there are none or the caller may not see them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<HiddenMember>,
}

/// A trending board: its state and top by decayed score.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct TrendingBoardView {
    /// The board.
    pub name: String,
    /// `trending`.
    pub kind: BoardKind,
    /// Its config.
    pub config: TrendingConfig,
    /// Members held.
    pub members: u64,
    /// Members with a positive score.
    pub ranked: u64,
    /// The top, decayed scores.
    pub entries: Vec<TrendEntry>,
}

/// A board that could not be read: not found, or a store error.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct FailedBoardView {
    /// The board asked for.
    pub name: String,
    /// Why it could not be read.
    pub error: DashboardProblem,
}

/// The counters part of the dashboard.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct DashboardCounters {
    /// How many counters there are.
    pub total: u64,
    /// Counter names, sorted, at most 1000 (for the picker).
    pub names: Vec<String>,
    /// The counters shown.
    pub shown: Vec<CounterView>,
    /// Set when the counters could not be listed (a store error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<DashboardProblem>,
}

/// One counter's newest samples at each of its precisions.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct CounterView {
    /// The counter.
    pub name: String,
    /// Its precisions, finest first.
    pub precisions: Vec<PrecisionSamples>,
    /// Set when the counter could not be read (`counter_not_found`, a store error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<DashboardProblem>,
}

/// A counter's newest samples at one precision.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct PrecisionSamples {
    /// The precision.
    pub precision: Span,
    /// `[slice_start, count]` pairs, oldest first (non-zero slices only).
    #[cfg_attr(feature = "server", schema(value_type = Vec<Vec<i64>>))]
    pub samples: Vec<(i64, i64)>,
}

/// The stats part of the dashboard.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct DashboardStats {
    /// The kind of `slowest`.
    pub kind: String,
    /// Every kind that has a slowest list, sorted (the service's `AccessTime` and
    /// `DashboardTime`, and every kind recorded by users).
    pub kinds: Vec<String>,
    /// The contexts of `kind` with the highest mean, highest first.
    pub slowest: Vec<SlowView>,
    /// Set when the stats could not be read (a store error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<DashboardProblem>,
}

/// One context of a slowest list.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct SlowView {
    /// The context.
    pub context: String,
    /// The mean of its newest hour.
    pub mean: f64,
    /// Values in that hour.
    pub count: u64,
    /// The 95th percentile of its newest hour (within 2 %), null when unknown.
    pub p95: Option<f64>,
}

/// The board picker's search.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct BoardSearch {
    /// Every board.
    pub total: u64,
    /// The boards whose name holds the search (all of them, not only those listed).
    pub matched: u64,
    /// The first matches in the order asked, at most the limit.
    pub boards: Vec<BoardRef>,
}

/// The order of the board picker's matches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum BoardOrder {
    /// By name.
    #[default]
    Name,
    /// The busiest first: the most members ranked in the board's first window now (a
    /// trending board: ranked now), then by name. Measured on the first
    /// [`MAX_BUSIEST_MEASURED`] matches by name.
    Busiest,
}

/// Most boards whose activity one `sort=busiest` search measures (one store read each).
pub const MAX_BUSIEST_MEASURED: usize = 1000;

/// A board's name and kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct BoardRef {
    /// The board.
    pub name: String,
    /// `windowed` or `trending`.
    pub kind: BoardKind,
    /// With `sort=busiest`: the members ranked in its first window now (a trending
    /// board: ranked now); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranked: Option<u64>,
}

/// A member's standing in every window of a board, and its history.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct MemberLookup {
    /// The board.
    pub board: String,
    /// The member.
    pub member: String,
    /// One per window, smallest first (one, `now`, on a trending board).
    pub windows: Vec<MemberWindow>,
    /// Its per-slot values over the largest window; null on a trending board.
    pub history: Option<History>,
    /// On a board keeping contributors, for a caller that may administer: who gave to
    /// it in each window, the first [`LOOKUP_CONTRIBUTORS`] (as `GET
    /// /v1/boards/{board}/members/{member}/contributors`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contributors: Option<Vec<crate::domain::WindowContributors>>,
}

/// How many contributors a member's lookup lists per window.
pub const LOOKUP_CONTRIBUTORS: u64 = 5;

/// A member in one window.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct MemberWindow {
    /// The window (`now` on a trending board).
    pub window: String,
    /// Its total in the window (0 when none), or its decayed score on a trending board.
    #[cfg_attr(feature = "server", schema(value_type = f64))]
    pub score: MemberScore,
    /// Its rank; null when it has no positive score there.
    pub rank: Option<u64>,
    /// The share of ranked members strictly below it, in [0, 1) (as `GET
    /// …/members/{member}`); null when it has no positive score there.
    pub percentile: Option<f64>,
    /// Members ranked in the window.
    pub ranked: u64,
}

/// A windowed board's integer total or a trending board's decayed score (a number in
/// the OpenAPI document: an integer is one).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MemberScore {
    /// A windowed board's total.
    Total(i64),
    /// A trending board's decayed score.
    Decayed(f64),
}
