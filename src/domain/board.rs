//! A board as stored, and the description of its state (`GET /v1/boards/{board}`).

use serde::Serialize;
use time::OffsetDateTime;

use crate::domain::{BoardConfig, BoardName, SlotWrite, Span, Timestamp};

/// A board: its name, config and the identity of this incarnation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Board {
    /// The board's name.
    pub name: BoardName,
    /// Slot length, windows and alignment.
    pub config: BoardConfig,
    /// Changes whenever the board is (re-)created, so a stale cached copy is detected by
    /// the store instead of writing into the wrong incarnation.
    pub version: u64,
    /// When the board was created.
    pub created_at: Timestamp,
    /// Names this incarnation's idempotency records: its first version, kept when the
    /// version changes (a window added, a reshard), so a write retried across such a
    /// change is still applied once, while a re-created board starts anew.
    pub incarnation: u64,
    /// While its shard count is being changed ([`Rollboard::reshard`]): how far that is.
    ///
    /// [`Rollboard::reshard`]: crate::Windowed::reshard
    pub resharding: Option<Resharding>,
    /// Members pinned on the first page of its top ([`Windowed::pin`]), expired ones
    /// included until the next pin change.
    ///
    /// [`Windowed::pin`]: crate::Windowed::pin
    pub pins: Vec<super::Pin>,
}

/// A change of a sharded board's shard count under way (`docs/operations.md`, "Sharded
/// boards"). Stored in the board's record, so every process routes alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resharding {
    /// Members are moving from their shard under `config.shards()` to their shard under
    /// `to`; a member marked moved on its old shard is written on its new one.
    Moving {
        /// The count the board changes to.
        to: u32,
    },
    /// Every member is written on its shard under `config.shards()`, the new count; what
    /// writes left on members' old shards (the board had `from`) is being swept over.
    Sweeping {
        /// The count the board had.
        from: u32,
    },
}

impl Resharding {
    /// As stored in a board record's `resharding`: `<to>`, or `sweep <from>`.
    pub(crate) fn stored(self) -> String {
        match self {
            Resharding::Moving { to } => to.to_string(),
            Resharding::Sweeping { from } => format!("sweep {from}"),
        }
    }

    /// The count the board changes to (while members move) or from (while the sweep
    /// runs): the count besides `config.shards()` that holds members.
    pub(crate) fn other_count(self) -> u32 {
        match self {
            Resharding::Moving { to } => to,
            Resharding::Sweeping { from } => from,
        }
    }

    /// From a record's `resharding`.
    pub(crate) fn from_stored(text: &str) -> Option<Resharding> {
        match text.strip_prefix("sweep ") {
            Some(from) => Some(Resharding::Sweeping {
                from: from.parse().ok()?,
            }),
            None => Some(Resharding::Moving {
                to: text.parse().ok()?,
            }),
        }
    }
}

/// One window of a board as read at `now`: what every windowed read names. `window` is
/// an index into the board's windows.
#[derive(Debug, Clone, Copy)]
pub struct WindowAt<'a> {
    /// The board.
    pub board: &'a Board,
    /// The window's index.
    pub window: usize,
    /// The time of the read.
    pub now: Timestamp,
}

/// Events for a board's slots, written at `now`: what every write of a board names.
#[derive(Debug)]
pub struct SlotWrites<'a> {
    /// The board.
    pub board: &'a Board,
    /// The time of the write.
    pub now: Timestamp,
    /// The events, in order.
    pub writes: Vec<SlotWrite>,
}

impl Board {
    /// `writes` for the board's slots, written at `now`.
    pub fn writing(&self, now: Timestamp, writes: Vec<SlotWrite>) -> SlotWrites<'_> {
        SlotWrites {
            board: self,
            now,
            writes,
        }
    }

    /// Window `window` of the board as read at `now`.
    pub fn at(&self, window: usize, now: Timestamp) -> WindowAt<'_> {
        WindowAt {
            board: self,
            window,
            now,
        }
    }

    /// How many shards hold the board's members now: its count and, while it changes,
    /// the other count too (the larger of them).
    pub(crate) fn shard_span(&self) -> u32 {
        let other = self.resharding.map_or(0, Resharding::other_count);
        self.config.shards().max(other)
    }

    /// The board with `shards` shards and the reshard state `resharding`, its version as
    /// it is: what a reshard's step stores (a count outside 1–32 refused).
    pub(crate) fn resharded(
        &self,
        shards: u32,
        resharding: Option<Resharding>,
    ) -> Result<Board, crate::Error> {
        Ok(Board {
            config: self.config.clone().with_shards(shards)?,
            resharding,
            ..self.clone()
        })
    }
}

/// What creating a board did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created<B = Board> {
    /// A new board was created.
    New(B),
    /// The board already existed with the same config; nothing changed.
    Existing(B),
    /// The board existed and got the new, larger windows. They hold data from the oldest
    /// live slot on, and are marked building until [`Windowed::build_windows`]
    /// (or the service's scheduler) has built their totals.
    ///
    /// [`Windowed::build_windows`]: crate::Windowed::build_windows
    Extended(B),
}

impl<B> Created<B> {
    /// The board, however it came to be.
    pub fn board(&self) -> &B {
        match self {
            Created::New(b) | Created::Existing(b) | Created::Extended(b) => b,
        }
    }

    /// The same outcome for the board made by `f`.
    pub fn map<C>(self, f: impl FnOnce(B) -> C) -> Created<C> {
        match self {
            Created::New(b) => Created::New(f(b)),
            Created::Existing(b) => Created::Existing(f(b)),
            Created::Extended(b) => Created::Extended(f(b)),
        }
    }
}

/// A board's state: config, members per window, live slots and retirement lag.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct BoardStatus {
    /// The board's name.
    pub name: BoardName,
    /// Slot length, windows and alignment.
    pub config: BoardConfig,
    /// When the board was created.
    #[serde(with = "time::serde::rfc3339")]
    #[cfg_attr(feature = "server", schema(value_type = String, format = DateTime))]
    pub created_at: OffsetDateTime,
    /// Slots that hold data not yet retired by the largest window.
    pub live_slots: u64,
    /// One entry per window, smallest first.
    pub windows: Vec<WindowStatus>,
}

/// The state of one window of a board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct WindowStatus {
    /// The window.
    pub window: Span,
    /// Members with a non-zero total (positive or negative).
    pub members: u64,
    /// Members with a positive total: those the window ranks.
    pub ranked: u64,
    /// Oldest slot whose events the totals include (unix seconds, inclusive).
    pub from: i64,
    /// End of the newest slot the totals include (unix seconds, exclusive).
    pub to: i64,
    /// Newest slot fully subtracted from this window's totals.
    pub retired_through: i64,
    /// Seconds of expired events still counted, because retirement is behind (0 when
    /// the totals are exactly the window).
    pub lag_seconds: u64,
    /// A window added to the board whose totals are not built yet.
    pub building: bool,
    /// For a window added to a live board: when it holds its whole span (unix seconds).
    /// Before that, its totals start at the oldest slot the board held when it was added.
    pub complete_from: Option<i64>,
}

/// A timestamp as a UTC date-time, for serialising with `time::serde::rfc3339`.
pub(crate) fn to_datetime(t: Timestamp) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(t.unix_millis() as i128 * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}
