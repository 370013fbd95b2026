//! The library's one error type. Every variant has a stable machine-readable
//! [`code`](Error::code), which the HTTP layer puts in `{"error":{"code","message"}}`.
//! It lives in the domain because its variants carry domain values (a [`BoardConfig`],
//! a [`Span`]) and every validation of the domain answers with it; the rest of the crate
//! reaches it as `crate::error`.

use super::{BoardConfig, Span, TrendingConfig};

/// Everything that can go wrong in rollboard, from bad input to an unreachable store.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A board name outside 1–64 characters of `A-Z a-z 0-9 _ . : -`.
    #[error("invalid board name {name:?}: {reason}")]
    InvalidBoardName {
        /// The rejected name (cut to 80 characters).
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A member outside 1–256 bytes.
    #[error("invalid member: {reason}")]
    InvalidMember {
        /// What is wrong with it.
        reason: String,
    },
    /// A duration that is not `90s`/`5m`/`1h`/`7d`/integer seconds, or out of range.
    #[error("invalid duration {input:?}: {reason}")]
    InvalidSpan {
        /// The rejected text.
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A board config that breaks a rule (window order, multiples, counts, offset).
    #[error("invalid board config: {reason}")]
    InvalidConfig {
        /// The rule it breaks.
        reason: String,
    },
    /// A time that is not a unix time between 1970 and 9999.
    #[error("invalid time: {reason}")]
    InvalidTime {
        /// What is wrong with it.
        reason: String,
    },
    /// A delta that is zero or outside ±(2^53 − 1).
    #[error("invalid delta: {reason}")]
    InvalidDelta {
        /// What is wrong with it.
        reason: String,
    },
    /// An event's value that is missing on a max, min or latest board, given on a sum board, or
    /// outside ±(2^53 − 1).
    #[error("invalid value: {reason}")]
    InvalidValue {
        /// What is wrong with it.
        reason: String,
    },
    /// A read parameter out of its range (limit, offset, n).
    #[error("invalid query: {reason}")]
    InvalidQuery {
        /// What is wrong with it.
        reason: String,
    },
    /// A show on some boards of a member hidden on every board.
    #[error(
        "member {member:?} is hidden on every board: show it on every board first, then hide it where it is to stay hidden"
    )]
    HiddenEverywhere {
        /// The member.
        member: String,
    },
    /// A read of a board's changes after an id older than the oldest one kept.
    #[error(
        "board {board:?} no longer keeps the changes after {after:?} (the oldest are trimmed): read from the oldest kept (leave out after) and rebuild the top from a top read"
    )]
    ChangesTrimmed {
        /// The board.
        board: String,
        /// The id asked for.
        after: String,
    },
    /// A moderation note's reason or actor that is empty or too long.
    #[error("invalid moderation note: {reason}")]
    InvalidModeration {
        /// What is wrong with it.
        reason: String,
    },
    /// Member data that is not a JSON value, is null, or takes more than 1,024 bytes of
    /// compact JSON text.
    #[error("invalid member data: {reason}")]
    InvalidMemberData {
        /// What is wrong with it.
        reason: String,
    },
    /// A contributor (an event's `by`) outside 1–128 bytes, or with a control character.
    #[error("invalid contributor: {reason}")]
    InvalidContributor {
        /// What is wrong with it.
        reason: String,
    },
    /// A rate key outside 1–256 bytes.
    #[error("invalid rate key: {reason}")]
    InvalidRateKey {
        /// What is wrong with it.
        reason: String,
    },
    /// A rate window that is not a duration, or that no tier answers.
    #[error("invalid rate window {window:?}: {reason}")]
    InvalidRateWindow {
        /// The window asked for.
        window: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A hit would take one of the key's slot counters past 2^32 − 1.
    #[error("rate key {key:?}: a slot would count more than 2^32 - 1 hits")]
    RateOverflow {
        /// The key.
        key: String,
    },
    /// A counter name outside the board-name rules.
    #[error("invalid counter name {name:?}: {reason}")]
    InvalidCounterName {
        /// The rejected name (cut to 80 characters).
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No counter by that name.
    #[error("counter {0:?} does not exist")]
    CounterNotFound(String),
    /// The counter does not count at that precision.
    #[error("counter {counter:?} has no {precision} precision")]
    PrecisionNotFound {
        /// The counter.
        counter: String,
        /// The precision asked for.
        precision: Span,
    },
    /// Nothing recorded for that (context, kind) in the current or the previous hour.
    #[error("no stats for kind {kind:?} in context {context:?} this hour or the previous one")]
    StatsNotFound {
        /// The context.
        context: String,
        /// The kind.
        kind: String,
    },
    /// The window ranks no member, so no score answers a percentile of its ranking.
    #[error(
        "board {board:?} ranks no member in window {window}: an empty ranking has no score at a percentile"
    )]
    RankingEmpty {
        /// The board.
        board: String,
        /// The window, as the board names it.
        window: String,
    },
    /// No board by that name.
    #[error("board {0:?} does not exist")]
    BoardNotFound(String),
    /// No retraction of that contributor ran in this process since it started.
    #[error(
        "no retraction of contributor {0:?} has run here since this process started: POST \
         /v1/contributors/{{by}}/retract runs one (running it again is harmless)"
    )]
    RetractionNotFound(String),
    /// The board has no such window.
    #[error("board {board:?} has no {window} window")]
    WindowNotFound {
        /// The board.
        board: String,
        /// The window asked for.
        window: Span,
    },
    /// The member holds nothing the read needs: no total in that window (a member
    /// read), no positive total (the page around a member), no value in the largest
    /// window (a history).
    #[error("member {member:?} has no {missing} on board {board:?}")]
    MemberNotFound {
        /// The board.
        board: String,
        /// The member asked for.
        member: String,
        /// What it lacks, e.g. "total in that window".
        missing: &'static str,
    },
    /// The board exists with a different config.
    #[error("board {board:?} already exists with another config: {}", existing.differences(asked).join("; "))]
    BoardConflict {
        /// The board.
        board: String,
        /// Its config as stored.
        existing: Box<BoardConfig>,
        /// The config asked for (both boxed: they keep every `Result` of the crate small).
        asked: Box<BoardConfig>,
    },
    /// A trending board exists with a different config.
    #[error("trending board {board:?} already exists with another config (half-life {}, floor {}, max age {})", existing.half_life(), existing.floor(), existing.max_age())]
    TrendingConflict {
        /// The board.
        board: String,
        /// Its config as stored.
        existing: TrendingConfig,
    },
    /// The board exists as another kind (`windowed` or `trending`) than the call needs.
    #[error("board {board:?} is a {kind} board")]
    BoardKind {
        /// The board.
        board: String,
        /// The kind it is.
        kind: &'static str,
    },
    /// An operation built for sum boards only, asked of a max, min or latest board.
    #[error("board {board:?} keeps the {aggregate} of values: {what} is for sum boards")]
    AggregateUnsupported {
        /// The board.
        board: String,
        /// Its aggregate (`max`, `min`).
        aggregate: &'static str,
        /// The operation refused.
        what: &'static str,
    },
    /// An operation a sharded board does not take (it needs one atomic step over the
    /// whole board).
    #[error("board {board:?} is sharded: {what}")]
    ShardedUnsupported {
        /// The board.
        board: String,
        /// The operation refused, and what to do instead.
        what: &'static str,
    },
    /// The event is older than the trending board's `max_age`.
    #[error("event at {at}s is too old: the board takes events from {oldest}s on")]
    TooOld {
        /// The event's time, unix seconds.
        at: f64,
        /// The oldest time accepted, unix seconds.
        oldest: f64,
    },
    /// The board is being recomputed: retirement, and a second recompute, wait for it.
    #[error("board {0:?} is being recomputed; retry when that finishes")]
    BoardBusy(String),
    /// An active relayout of the board is running: a recompute, or a second relayout,
    /// waits for it.
    #[error("board {0:?} is being relaid out (relayout --now); retry when that finishes")]
    RelayoutRunning(String),
    /// A reshard of the board to another count, or by another run, is under way.
    #[error(
        "board {board:?} is being resharded to {to} shards: retry when that finishes, or run \
         the reshard to {to} again to finish one cut short"
    )]
    ReshardRunning {
        /// The board.
        board: String,
        /// The count the reshard under way changes it to.
        to: u32,
    },
    /// The board was dropped or re-created while the operation ran.
    #[error("board {0:?} changed while the operation ran; retry")]
    BoardChanged(String),
    /// The event's slot has already left every window.
    #[error(
        "event at {at}s is too late: its slot {slot} has left every window (oldest slot still open: {oldest_open})"
    )]
    TooLate {
        /// The event's time, unix seconds.
        at: f64,
        /// The event's slot.
        slot: i64,
        /// The oldest slot that still accepts events.
        oldest_open: i64,
    },
    /// The event is further in the future than the allowed clock skew.
    #[error("event at {at}s is more than {skew_seconds}s in the future (now is {now}s)")]
    InFuture {
        /// The event's time, unix seconds.
        at: f64,
        /// The store's current time, unix seconds.
        now: f64,
        /// The allowed skew.
        skew_seconds: u64,
    },
    /// Applying the event would take a total or slot value outside ±(2^53 − 1).
    #[error("event for {member:?} would take a total outside ±(2^53 - 1)")]
    OutOfRange {
        /// The member.
        member: String,
    },
    /// A batch with more events than allowed.
    #[error("batch of {len} events exceeds the limit of {max}")]
    BatchTooLarge {
        /// Events in the batch.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// An `Idempotency-Key` outside 1–255 printable ASCII characters.
    #[error("invalid idempotency key: {reason}")]
    InvalidIdempotencyKey {
        /// What is wrong with it.
        reason: String,
    },
    /// The idempotency key was used, within its time to live, for another write (other
    /// events, or another request body).
    #[error(
        "idempotency key {key:?} was already used for a different request; use a new key for a new write"
    )]
    IdempotencyKeyReused {
        /// The key.
        key: String,
    },
    /// The store cannot be reached (connection refused, timeout, reconnecting).
    #[error("store unavailable: {0}")]
    StoreUnavailable(String),
    /// The write was applied on the Redis master, but fewer replicas than
    /// `min_replica_acks` confirmed it in time: a failover could still lose it. Sent again
    /// under the same idempotency key, it counts once.
    #[error("{0}")]
    WriteUncertain(String),
    /// Redis refused a write at its memory limit (`maxmemory` with `noeviction`): the
    /// call was not applied. Reads still work.
    #[error("{0}")]
    StoreFull(String),
    /// The store answered something unexpected (a bug, or the data was edited by hand).
    #[error("store error: {0}")]
    Store(String),
}

impl Error {
    /// [`Error::Store`]: the store answered something unexpected, as `message` says.
    pub(crate) fn store(message: impl Into<String>) -> Error {
        Error::Store(message.into())
    }

    /// A stable snake_case code naming the kind of error.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidBoardName { .. } => "invalid_board_name",
            Error::InvalidMember { .. } => "invalid_member",
            Error::InvalidSpan { .. } => "invalid_span",
            Error::InvalidConfig { .. } => "invalid_config",
            Error::InvalidTime { .. } => "invalid_time",
            Error::InvalidDelta { .. } => "invalid_delta",
            Error::InvalidValue { .. } => "invalid_value",
            Error::InvalidQuery { .. } => "invalid_query",
            Error::InvalidMemberData { .. } => "invalid_member_data",
            Error::InvalidModeration { .. } => "invalid_moderation",
            Error::HiddenEverywhere { .. } => "hidden_everywhere",
            Error::ChangesTrimmed { .. } => "changes_trimmed",
            Error::InvalidContributor { .. } => "invalid_contributor",
            Error::InvalidRateKey { .. } => "invalid_rate_key",
            Error::InvalidRateWindow { .. } => "invalid_rate_window",
            Error::RateOverflow { .. } => "rate_overflow",
            Error::InvalidCounterName { .. } => "invalid_counter_name",
            Error::CounterNotFound(_) => "counter_not_found",
            Error::PrecisionNotFound { .. } => "precision_not_found",
            Error::StatsNotFound { .. } => "stats_not_found",
            Error::RankingEmpty { .. } => "ranking_empty",
            Error::BoardNotFound(_) => "board_not_found",
            Error::RetractionNotFound(_) => "retraction_not_found",
            Error::WindowNotFound { .. } => "window_not_found",
            Error::MemberNotFound { .. } => "member_not_found",
            Error::BoardConflict { .. } => "board_conflict",
            Error::TrendingConflict { .. } => "board_conflict",
            Error::BoardKind { .. } => "board_kind",
            Error::AggregateUnsupported { .. } => "aggregate_unsupported",
            Error::ShardedUnsupported { .. } => "sharded_unsupported",
            Error::TooOld { .. } => "too_old",
            Error::BoardChanged(_) => "board_changed",
            Error::BoardBusy(_) | Error::RelayoutRunning(_) | Error::ReshardRunning { .. } => {
                "board_busy"
            }
            Error::TooLate { .. } => "too_late",
            Error::InFuture { .. } => "in_future",
            Error::OutOfRange { .. } => "out_of_range",
            Error::BatchTooLarge { .. } => "batch_too_large",
            Error::InvalidIdempotencyKey { .. } => "invalid_idempotency_key",
            Error::IdempotencyKeyReused { .. } => "idempotency_key_reused",
            Error::StoreUnavailable(_) => "store_unavailable",
            Error::WriteUncertain(_) => "write_uncertain",
            Error::StoreFull(_) => "store_full",
            Error::Store(_) => "store_error",
        }
    }
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
