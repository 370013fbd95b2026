//! `/v1/boards`: create, list, describe and drop boards.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::AppState;
use super::auth::AdminAccess;
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::json::Json;
use super::json_int;
use super::wire::{SpanInput, window};
use crate::{
    Aggregate, Board, BoardConfig, BoardKind, BoardName, BoardState, ChangesKept, Created, Layout,
    NewBoard, RankedTotals, RecomputeReport, RelayoutOptions, RelayoutReport, ReshardReport,
    ReviewPolicy, SnapshotPolicy, Span, Ties, TrendingBoard, TrendingConfig, Watch,
};

/// A board's config as sent in `PUT /v1/boards/{board}`: a windowed board (`slot`,
/// `windows`, `offset`, `ties`, `aggregate`, `rank`) or, with `"kind":"trending"`, a trending board
/// (`half_life`, `floor`, `max_age`).
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigBody {
    /// `"windowed"` (the default) or `"trending"`.
    #[serde(default)]
    #[schema(default = "windowed")]
    pub kind: BoardKind,
    /// Windowed boards: slot length, e.g. `"1h"` (required).
    #[schema(value_type = Option<Span>)]
    pub slot: Option<SpanInput>,
    /// Windowed boards: windows, smallest first, each a multiple of the slot and at most
    /// 100,000 slots, e.g. `["1h", "24h"]` (required).
    #[schema(value_type = Option<Vec<Span>>, min_items = 1, max_items = 8)]
    pub windows: Option<Vec<SpanInput>>,
    /// Windowed boards: shifts slot boundaries by this many seconds (`-slot < offset <
    /// slot`; 0 by default).
    #[serde(default, deserialize_with = "json_int::opt_i64")]
    #[schema(minimum = -34_559_999, maximum = 34_559_999)]
    pub offset: Option<i64>,
    /// Windowed boards: how equal totals share ranks: `"competition"` (1, 1, 3; the
    /// default), `"dense"` (1, 1, 2) or `"position"` (1, 2, 3: unique positions, equal
    /// totals numbered by member ascending). Fixed when the board is created: another
    /// value on an existing board is a conflict. Trending boards rank by competition:
    /// they accept `"competition"` and refuse the others.
    #[serde(default)]
    #[schema(value_type = Ties, default = "competition")]
    pub ties: Option<Ties>,
    /// Windowed boards: what a member's score in a window is: `"sum"` (the default: the
    /// sum of its events' deltas), `"max"` (the highest value of its events inside the
    /// window: a best score), `"min"` (the lowest: a fastest time; ranked lowest first)
    /// or `"latest"` (the value of the newest: a rating; of two events at the same
    /// millisecond the greater value). Events on such a board carry `value` instead of
    /// `delta`. Ties by
    /// competition or position, slots kept plain; the windows are the ones the board is
    /// created with. Fixed when the board is created: another value on an existing
    /// board is a conflict. Trending boards sum: they accept `"sum"` and refuse the
    /// others.
    #[serde(default)]
    #[schema(value_type = Aggregate, default = "sum")]
    pub aggregate: Option<Aggregate>,
    /// Windowed boards: which totals are ranked: on a sum board `"positive"` (the
    /// default: a member at or below zero is answered by member reads but not ranked,
    /// listed nor counted) or `"nonzero"` (every non-zero total is ranked, negative ones
    /// below every positive one: a net-vote board; ties by competition or position, not
    /// dense); on a max, min or latest board `"all"` (the default and only choice: every value,
    /// zero and negative ones too). Fixed when the board is created: another value on an
    /// existing board is a conflict. Trending boards accept `"positive"` and refuse the
    /// others.
    #[serde(default)]
    #[schema(value_type = RankedTotals, default = "positive")]
    pub rank: Option<RankedTotals>,
    /// Windowed boards: how a Redis store keeps slot data: `"plain"` (one hash per
    /// slot) or `"compact"` (small hashes per slot, less memory); absent: the service's
    /// default. Fixed by the PUT that creates the board; `rollboard relayout` changes it.
    #[serde(default)]
    pub layout: Option<Layout>,
    /// Trending boards: after this long an event counts half as much, e.g. `"6h"`
    /// (required).
    #[schema(value_type = Option<Span>)]
    pub half_life: Option<SpanInput>,
    /// Trending boards: members whose score decayed below this (in magnitude) are
    /// pruned by the scheduler; 0.001 by default.
    #[schema(minimum = 0)]
    pub floor: Option<f64>,
    /// Trending boards: events older than this are refused (`too_old`); 10 half-lives
    /// by default, at most 100.
    #[schema(value_type = Option<Span>)]
    pub max_age: Option<SpanInput>,
    /// Windowed boards: period snapshots: at each slot boundary, once retirement is
    /// done, the top `top` of every window is kept, the newest `keep` per window (`GET
    /// …/snapshots`). May be added, changed or removed (left out) on an existing board:
    /// it changes no data.
    #[serde(default)]
    pub snapshots: Option<SnapshotsBody>,
    /// Windowed boards: the review gate: a member no moderator allowed is held out of the
    /// public ranking while it would rank `above_rank` or better in some window (among
    /// the public members and itself), listed by `GET …/review` until a moderator allows
    /// or denies it (`POST …/review`).
    /// May be added, changed or removed (left out) on an existing board.
    #[serde(default)]
    pub review: Option<ReviewBody>,
    /// Windowed sum boards: watched tops: for each, who enters, leaves or moves in the
    /// window's first `top` members is recorded in the same atomic step as the change
    /// that caused it (`GET …/changes`). One per window, one shard. May be added, changed
    /// or removed (left out) on an existing board.
    #[serde(default)]
    pub watch: Option<Vec<WatchBody>>,
    /// Windowed sum boards: how many changes of the watched tops are kept, and for how
    /// long (the newest 10000 for 7 days by default).
    #[serde(default)]
    pub changes: Option<ChangesBody>,
    /// Windowed boards: how many shards the members are spread over, 1–32 (1 by
    /// default): on a Redis Cluster each shard can sit on another master, so one busy
    /// board's writes, retirement and reads spread over them; every read stays exact.
    /// Ties by competition or position; a write with `return=standing` is refused (409
    /// `sharded_unsupported`). Set when the board is created (another value in a `PUT`
    /// on an existing board is a conflict) and changed online by `POST
    /// /v1/boards/{board}/reshard`. See docs/operations.md, "Sharded boards".
    #[serde(default, deserialize_with = "json_int::opt_u64")]
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 32, default = 1)]
    pub shards: Option<u64>,
    /// Windowed sum boards of one shard: keep who gave each event (its `by`) and count
    /// at most this much of one contributor's events to one member in each window (the
    /// sum of their deltas to it inside the window, clamped to ±N; 1: each contributor
    /// once, net of unlikes); events without `by` count in full. The events' replies
    /// say what counted (`counted`), and `GET /v1/contributors/{by}` who gave what.
    /// Set when the board is created (another value, or none, in a `PUT` on an existing
    /// board is a conflict); such a board takes no new windows and is not recomputed.
    #[serde(default, deserialize_with = "json_int::opt_u64")]
    #[schema(minimum = 1, maximum = 9_007_199_254_740_991_i64)]
    pub per_contributor_member: Option<u64>,
    /// Windowed sum boards of one shard: keep who gave each event (its `by`) and give
    /// each contributor a budget of N inside the largest window, over every member. What
    /// of a like counts is fixed when it is written (at most N less what their counted
    /// likes already use there, in write order; a batch in its array order) and counts
    /// the same in every window it is in; an unlike takes back at most what their
    /// counted likes gave that member and gives no budget back; a like refused stays
    /// refused. With `per_contributor_member` too, the counted parts are then clamped.
    /// Set when the board is created, as `per_contributor_member`.
    #[serde(default, deserialize_with = "json_int::opt_u64")]
    #[schema(minimum = 1, maximum = 9_007_199_254_740_991_i64)]
    pub per_contributor: Option<u64>,
}

/// `{"top": 100, "keep": 168}`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotsBody {
    /// Leaders per snapshot, 1–1000.
    #[serde(deserialize_with = "json_int::u64")]
    #[schema(value_type = u32, minimum = 1, maximum = 1000)]
    pub top: u64,
    /// Snapshots kept per window, 1–100000 (older ones are trimmed).
    #[serde(deserialize_with = "json_int::u64")]
    #[schema(value_type = u32, minimum = 1, maximum = 100000)]
    pub keep: u64,
}

/// `{"above_rank": 10}`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewBody {
    /// The rank from which a member needs review, 1–100.
    #[serde(deserialize_with = "json_int::u64")]
    #[schema(value_type = u32, minimum = 1, maximum = 100)]
    pub above_rank: u64,
}

/// `{"window": "24h", "top": 10}`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WatchBody {
    /// One of the board's windows.
    #[schema(value_type = Span)]
    pub window: SpanInput,
    /// How many of its first members are watched, 1–100.
    #[serde(deserialize_with = "json_int::u64")]
    #[schema(value_type = u32, minimum = 1, maximum = 100)]
    pub top: u64,
}

/// `{"keep": 10000, "keep_for": "7d"}`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangesBody {
    /// Most changes kept, 1–1000000.
    #[serde(deserialize_with = "json_int::u64")]
    #[schema(value_type = u32, minimum = 1, maximum = 1000000)]
    pub keep: u64,
    /// How long a change is kept, at least a minute.
    #[schema(value_type = Span)]
    pub keep_for: SpanInput,
}

impl SnapshotsBody {
    fn into_policy(self) -> crate::Result<SnapshotPolicy> {
        // Beyond u32 is beyond the bounds too: saturate and let the policy say so.
        let narrow = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        SnapshotPolicy::new(narrow(self.top), narrow(self.keep))
    }
}

impl ConfigBody {
    /// The board config the body describes, or the rule it breaks.
    pub fn into_config(self) -> crate::Result<NewBoard> {
        let misplaced = |field: &str, kind: &str| crate::Error::InvalidConfig {
            reason: format!("{field} is not an option of a {kind} board"),
        };
        // Which fields are needed depends on `kind`, which the schema cannot state: a
        // missing one is a 422 like any other rule of the config, not a malformed body.
        let missing = |field: &str, kind: &str| crate::Error::InvalidConfig {
            reason: format!("a {kind} board needs `{field}`"),
        };
        match self.kind {
            BoardKind::Trending => {
                for (given, field) in [
                    (self.slot.is_some(), "slot"),
                    (self.windows.is_some(), "windows"),
                    (self.offset.is_some(), "offset"),
                    // Trending boards rank ties by competition: saying so is no
                    // error (a generated client sends the schema's default).
                    (self.ties.is_some_and(|t| t != Ties::Competition), "ties"),
                    (
                        self.rank.is_some_and(|r| r != RankedTotals::Positive),
                        "rank",
                    ),
                    (
                        self.aggregate.is_some_and(|a| a != Aggregate::Sum),
                        "aggregate",
                    ),
                    (self.snapshots.is_some(), "snapshots"),
                    (self.review.is_some(), "review"),
                    (self.watch.is_some(), "watch"),
                    (self.changes.is_some(), "changes"),
                    (self.layout.is_some(), "layout"),
                    (self.shards.is_some_and(|k| k != 1), "shards"),
                    (
                        self.per_contributor_member.is_some(),
                        "per_contributor_member",
                    ),
                    (self.per_contributor.is_some(), "per_contributor"),
                ] {
                    if given {
                        return Err(misplaced(field, "trending"));
                    }
                }
                let half_life = self
                    .half_life
                    .ok_or_else(|| missing("half_life", "trending"))?;
                let mut config = TrendingConfig::new(half_life.parse()?)?;
                if let Some(floor) = self.floor {
                    config = config.with_floor(floor)?;
                }
                if let Some(max_age) = self.max_age {
                    config = config.with_max_age(max_age.parse()?)?;
                }
                Ok(NewBoard::Trending(config))
            }
            BoardKind::Windowed => {
                for (given, field) in [
                    (self.half_life.is_some(), "half_life"),
                    (self.floor.is_some(), "floor"),
                    (self.max_age.is_some(), "max_age"),
                ] {
                    if given {
                        return Err(misplaced(field, "windowed"));
                    }
                }
                let slot = self.slot.ok_or_else(|| missing("slot", "windowed"))?;
                // Beyond u32 is beyond every bound too: saturate, and let the config say so.
                let narrow = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
                let aggregate = self.aggregate.unwrap_or_default();
                let windows = self
                    .windows
                    .ok_or_else(|| missing("windows", "windowed"))?
                    .into_iter()
                    .map(SpanInput::parse)
                    .collect::<crate::Result<Vec<_>>>()?;
                Ok(NewBoard::Windowed(
                    BoardConfig::new(slot.parse()?, windows)?
                        .with_offset(self.offset.unwrap_or(0))?
                        .with_ties(self.ties.unwrap_or_default())
                        .with_aggregate(aggregate)
                        .with_rank(self.rank.unwrap_or(aggregate.default_rank()))?
                        .with_snapshots(self.snapshots.map(SnapshotsBody::into_policy).transpose()?)
                        .with_layout(self.layout)
                        // Beyond u32 is beyond the bound too: saturate, and let the
                        // config say so.
                        .with_shards(u32::try_from(self.shards.unwrap_or(1)).unwrap_or(u32::MAX))?
                        .with_review(
                            self.review
                                .map(|r| {
                                    ReviewPolicy::new(
                                        u32::try_from(r.above_rank).unwrap_or(u32::MAX),
                                    )
                                })
                                .transpose()?,
                        )
                        .with_watch(
                            self.watch
                                .unwrap_or_default()
                                .into_iter()
                                .map(|w| Watch::new(w.window.parse()?, narrow(w.top)))
                                .collect::<crate::Result<_>>()?,
                        )?
                        .with_changes_kept(
                            self.changes
                                .map(|c| ChangesKept::new(narrow(c.keep), c.keep_for.parse()?))
                                .transpose()?,
                        )
                        .with_contributor_cap(self.per_contributor_member)?
                        .with_contributor_budget(self.per_contributor)?,
                ))
            }
        }
    }
}

/// One board in `GET /v1/boards`: its name, kind, config and creation time.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum BoardSummary {
    /// A windowed board.
    Windowed(WindowedSummary),
    /// A trending board.
    Trending(TrendingSummary),
}

/// A windowed board in the list.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WindowedSummary {
    /// The board's name.
    pub name: BoardName,
    /// Slot length, windows and alignment.
    pub config: BoardConfig,
    /// When the board was created.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

/// A trending board in the list.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TrendingSummary {
    /// The board's name.
    #[schema(value_type = String)]
    pub name: BoardName,
    /// Half-life, floor and max age.
    pub config: TrendingConfig,
    /// When the board was created.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

impl BoardSummary {
    fn name(&self) -> &BoardName {
        match self {
            BoardSummary::Windowed(b) => &b.name,
            BoardSummary::Trending(b) => &b.name,
        }
    }
}

impl From<Board> for BoardSummary {
    fn from(b: Board) -> Self {
        BoardSummary::Windowed(WindowedSummary {
            name: b.name,
            config: b.config,
            created_at: crate::domain::board::to_datetime(b.created_at),
        })
    }
}

impl From<TrendingBoard> for BoardSummary {
    fn from(b: TrendingBoard) -> Self {
        BoardSummary::Trending(TrendingSummary {
            name: b.name,
            config: b.config,
            created_at: crate::domain::board::to_datetime(b.created_at),
        })
    }
}

/// `GET /v1/boards`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BoardList {
    /// Every board, by name.
    pub boards: Vec<BoardSummary>,
}

/// Creates a board, or confirms an existing one with the same config: a windowed board
/// (the default), or with `"kind":"trending"` a trending one.
#[utoipa::path(
    put, path = "/v1/boards/{board}", tag = "boards", operation_id = "boardsPut",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$")),
    request_body(content = ConfigBody, examples(
        ("windowed" = (summary = "Hourly slots, ranked over the last hour and the last day", value = json!({"slot": "1h", "windows": ["1h", "24h"]}))),
        ("trending" = (summary = "Scores that halve every 6 hours", value = json!({"kind": "trending", "half_life": "6h"}))),
    )),
    responses(
        (status = 201, description = "Created", body = BoardState,
         example = json!({"kind": "windowed", "name": "hot-posts", "config": {"slot": "1h", "windows": ["1h", "1d"], "offset": 0, "ties": "competition"}, "created_at": "2026-11-26T22:00:00Z", "live_slots": 1,
                          "windows": [{"window": "1h", "members": 3, "ranked": 2, "from": 1_795_726_800, "to": 1_795_730_400, "retired_through": 1_795_723_200, "lag_seconds": 0, "building": false, "complete_from": null},
                                      {"window": "1d", "members": 3, "ranked": 2, "from": 1_795_647_600, "to": 1_795_730_400, "retired_through": 1_795_644_000, "lag_seconds": 0, "building": false, "complete_from": null}]})),
        (status = 200, description = "Already exists with this config, or with another `snapshots` option only (now this one)", body = BoardState,
         example = json!({"kind": "trending", "name": "trending-posts", "config": {"half_life": "6h", "floor": 0.001, "max_age": "60h"}, "created_at": "2026-11-26T22:00:00Z", "members": 0, "ranked": 0, "landmark": 1_795_726_800.0, "rescaling": false})),
        (status = 202, description = "Existed; the larger windows added are being built", body = BoardState,
         example = json!({"kind": "windowed", "name": "hot-posts", "config": {"slot": "1h", "windows": ["1h", "1d"], "offset": 0, "ties": "competition"}, "created_at": "2026-11-26T22:00:00Z", "live_slots": 1,
                          "windows": [{"window": "1h", "members": 3, "ranked": 2, "from": 1_795_726_800, "to": 1_795_730_400, "retired_through": 1_795_723_200, "lag_seconds": 0, "building": false, "complete_from": null},
                                      {"window": "1d", "members": 3, "ranked": 2, "from": 1_795_647_600, "to": 1_795_730_400, "retired_through": 1_795_644_000, "lag_seconds": 0, "building": false, "complete_from": null}]})),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 409, description = "`board_conflict`: exists with another config (only windows larger than the existing ones can be added, and not to a board with `per_contributor_member` or `per_contributor`); `board_kind`: exists as the other kind (windowed or trending); `board_busy`, `board_changed`: retry", body = ErrorBody),
        (status = 422, description = "`invalid_span`, `invalid_config`: a duration out of range, a window that is not a multiple of the slot, windows not increasing, too many slots or an offset beyond the slot; snapshots' top or keep out of range; an option of the other kind (`slot`, `windows`, `offset`, `ties`, `snapshots` on a trending board; `half_life`, `floor`, `max_age` on a windowed one); a field the kind needs left out (`slot`, `windows`; `half_life`); a negative floor, a max age above 100 half-lives; `shards` outside 1–32, or with dense ties or snapshots; `review.above_rank` outside 1–100; `per_contributor_member` or `per_contributor` of 0, or on a board that is not a sum board of one shard", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn put_board(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiJson(body): ApiJson<ConfigBody>,
) -> ApiResult<(StatusCode, Json<BoardState>)> {
    let status = match state.boards.create(&board, body.into_config()?).await? {
        Created::New(_) => StatusCode::CREATED,
        Created::Existing(_) => StatusCode::OK,
        Created::Extended(_) => {
            // Runs on after the reply; the service's sweep retries a build that failed.
            drop(state.boards.windowed(&board).spawn_build_windows());
            StatusCode::ACCEPTED
        }
    };
    Ok((status, Json(state.boards.board_state(&board).await?)))
}

/// Lists every board.
#[utoipa::path(
    get, path = "/v1/boards", tag = "boards", operation_id = "boardsList",
    responses((status = 200, description = "Every board, by name; `kind` tells a windowed board's config from a trending board's", body = BoardList,
               example = json!({"boards": [
                   {"kind": "windowed", "name": "hot-posts", "config": {"slot": "1h", "windows": ["1h", "1d"], "offset": 0, "ties": "competition"}, "created_at": "2026-11-26T22:00:00Z"},
                   {"kind": "trending", "name": "trending-posts", "config": {"half_life": "6h", "floor": 0.001, "max_age": "60h"}, "created_at": "2026-11-26T22:00:00Z"}]})))
)]
pub async fn list_boards(State(state): State<AppState>) -> ApiResult<Json<BoardList>> {
    let windowed = state.boards.boards().await?;
    let trending = state.boards.trending_boards().await?;
    let mut boards: Vec<BoardSummary> = windowed
        .into_iter()
        .map(BoardSummary::from)
        .chain(trending.into_iter().map(BoardSummary::from))
        .collect();
    boards.sort_by(|a, b| a.name().cmp(b.name()));
    Ok(Json(BoardList { boards }))
}

/// A board's state: a windowed board's config, members per window, live slots and
/// retirement lag; a trending board's config, members and landmark.
#[utoipa::path(
    get, path = "/v1/boards/{board}", tag = "boards", operation_id = "boardsGet",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$")),
    responses(
        (status = 200, description = "The board's state; `kind` tells a windowed board's from a trending board's", body = BoardState,
         example = json!({"kind": "windowed", "name": "hot-posts", "config": {"slot": "1h", "windows": ["1h", "1d"], "offset": 0, "ties": "competition"}, "created_at": "2026-11-26T22:00:00Z", "live_slots": 1,
                          "windows": [{"window": "1h", "members": 3, "ranked": 2, "from": 1_795_726_800, "to": 1_795_730_400, "retired_through": 1_795_723_200, "lag_seconds": 0, "building": false, "complete_from": null},
                                      {"window": "1d", "members": 3, "ranked": 2, "from": 1_795_647_600, "to": 1_795_730_400, "retired_through": 1_795_644_000, "lag_seconds": 0, "building": false, "complete_from": null}]})),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`", body = ErrorBody),
    )
)]
pub async fn get_board(
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
) -> ApiResult<Json<BoardState>> {
    Ok(Json(state.boards.board_state(&board).await?))
}

/// Deletes a board and all its data.
#[utoipa::path(
    delete, path = "/v1/boards/{board}", tag = "boards", operation_id = "boardsDelete",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$")),
    responses(
        (status = 204, description = "Dropped"),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 409, description = "`board_busy`: the board is being changed; retry", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn delete_board(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
) -> ApiResult<StatusCode> {
    state.boards.drop_board(&board).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `?layout=` of a relayout.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RelayoutQuery {
    /// The layout of the board's slots from now on: `plain` or `compact`.
    pub layout: Layout,
    /// `true`: also convert the live slots now (an active relayout, exact while writes
    /// go on); otherwise they keep their layout until they retire.
    #[serde(default)]
    pub now: bool,
}

/// Switches the layout of the slots the board creates from now on; live slots keep
/// theirs until they retire, or with `?now=true` are converted now. Online and exact
/// while writes go on; changes no result.
#[utoipa::path(
    post, path = "/v1/boards/{board}/relayout", tag = "boards", operation_id = "boardsRelayout",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), RelayoutQuery),
    responses(
        (status = 200, description = "The new layout, the live slots that keep the old one, and with `now` the slots converted", body = RelayoutReport,
         example = json!({"layout": "compact", "live_slots": 24, "old_layout_slots": 0, "converted_slots": 24, "moved_values": 5120, "complete": true})),
        (status = 400, description = "`bad_request`: no or an unknown layout", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 409, description = "`board_changed`; `board_kind`: a trending board (it has no slots); `board_busy`: a recompute or another active relayout is running (with `now`); `aggregate_unsupported`: a max, min or latest board (it keeps the layout it was created with)", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn relayout(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiQuery(q): ApiQuery<RelayoutQuery>,
) -> ApiResult<Json<RelayoutReport>> {
    let options = RelayoutOptions {
        now: q.now,
        ..RelayoutOptions::default()
    };
    Ok(Json(
        state
            .boards
            .windowed(&board)
            .relayout(q.layout, options)
            .await?,
    ))
}

/// `{"shards": 5}`: the shard count a reshard changes the board to.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReshardBody {
    /// The board's shard count from now on, 1–32.
    #[serde(deserialize_with = "json_int::u64")]
    #[schema(value_type = u32, minimum = 1, maximum = 32)]
    pub shards: u64,
}

/// Changes the board's shard count: every member whose shard differs under the new count
/// moves there, exactly, while writes, reads and retirement go on; the board's config
/// says the new count afterwards. A run cut short is finished by running it again with
/// the same count. Runs to its end even if the request times out.
#[utoipa::path(
    post, path = "/v1/boards/{board}/reshard", tag = "boards", operation_id = "boardsReshard",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$")),
    request_body = ReshardBody,
    responses(
        (status = 200, description = "The counts before and after, and the members that moved with their slot values", body = ReshardReport,
         example = json!({"from": 3, "to": 5, "moved_members": 41250, "moved_values": 290114})),
        (status = 400, description = "`bad_request`: the body is not `{\"shards\": <count>}`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 409, description = "`board_busy`: a reshard of the board to another count, or another run, is under way; `board_changed`; `board_kind`: a trending board; `aggregate_unsupported`: a max, min or latest board (its shard count is fixed)", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`; `invalid_config`: a count outside 1–32, or dense ties or a watch with more than one shard", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn reshard(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiJson(body): ApiJson<ReshardBody>,
) -> ApiResult<Json<ReshardReport>> {
    let shards = u32::try_from(body.shards).unwrap_or(u32::MAX);
    let boards = state.boards.clone();
    let task = tokio::spawn(async move { boards.windowed(&board).reshard(shards).await });
    let report = task
        .await
        .map_err(|e| crate::Error::store(format!("reshard task failed: {e}")))??;
    Ok(Json(report))
}

/// `?window=` of a recompute.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RecomputeQuery {
    /// The window to rebuild (`"24h"` or seconds); every window when absent.
    #[param(pattern = r"^[0-9]*[1-9][0-9]*[smhd]?$")]
    pub window: Option<String>,
}

/// Rebuilds the board's totals from its live slots (repairs drift), exactly, while
/// writes go on. Runs to its end even if the request times out.
#[utoipa::path(
    post, path = "/v1/boards/{board}/recompute", tag = "boards", operation_id = "boardsRecompute",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), RecomputeQuery),
    responses(
        (status = 200, description = "What the rebuild changed", body = RecomputeReport,
         example = json!({"windows": ["1h", "1d"], "fields_scanned": 4800, "members_folded": 0, "calls": 6})),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`, `window_not_found`", body = ErrorBody),
        (status = 409, description = "`board_busy`: another recompute of the board is running; `board_changed`; `board_kind`: a trending board (nothing to recompute)", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_span`; `invalid_config`: a board with `per_contributor_member` or `per_contributor` (not recomputed yet)", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn recompute(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiQuery(q): ApiQuery<RecomputeQuery>,
) -> ApiResult<Json<RecomputeReport>> {
    let window = window(&q.window)?;
    let boards = state.boards.clone();
    let task = tokio::spawn(async move { boards.windowed(&board).recompute(window).await });
    let report = task
        .await
        .map_err(|e| crate::Error::store(format!("recompute task failed: {e}")))??;
    Ok(Json(report))
}
