//! Window arithmetic of the stored totals: which slots a window's totals cover, whether
//! they are behind (still holding slots that left the window) and since when a window
//! added to a live board holds its span. Pure; both stores build their replies' `window`,
//! `from`, `to`, `behind` and `lag_ms` from one [`Coverage`] made here.

use super::{BoardConfig, Span, Timestamp};

/// What a read's totals cover, as every reply of a window says it: the window, the
/// slots `from` (inclusive) to `to` (exclusive), and whether retirement is behind and
/// since how long. The replies ([`TopPage`](super::TopPage), [`Ranks`](super::Ranks),
/// [`Standing`](super::Standing)) carry these as fields of their own, so their JSON stays
/// flat; they are built from one `Coverage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coverage {
    /// The window.
    pub window: Span,
    /// Oldest slot the totals include (unix seconds, inclusive).
    pub from: i64,
    /// End of the newest slot the totals include (unix seconds, exclusive).
    pub to: i64,
    /// The totals still include slots that have left the window.
    pub behind: bool,
    /// How long ago the oldest slot still included left the window, ms (0 when not
    /// behind).
    pub lag_ms: u64,
}

/// The struct literal of an answer whose coverage fields come from a [`Coverage`]:
/// `covered!(coverage => TopPage { board, age_ms: 0, entries })`.
macro_rules! covered {
    ($coverage:expr => $answer:ident { $($fields:tt)* }) => {{
        let c: $crate::domain::Coverage = $coverage;
        $answer {
            window: c.window,
            from: c.from,
            to: c.to,
            behind: c.behind,
            lag_ms: c.lag_ms,
            $($fields)*
        }
    }};
}
pub(crate) use covered;

impl Coverage {
    /// The coverage of window `window`'s totals at `now` when they hold the slots
    /// `from..to` (as [`coverage`] answers them).
    pub(crate) fn of(
        config: &BoardConfig,
        window: usize,
        now: Timestamp,
        (from, to): (i64, i64),
    ) -> Coverage {
        let (behind, lag_ms) = behind(config, window, now, from);
        Coverage {
            window: config.windows()[window],
            from,
            to,
            behind,
            lag_ms,
        }
    }
}

/// `coverage()` for replies that carry a [`Coverage`] as flat fields of their own
/// (`window`, `from`, `to`, `behind`, `lag_ms`), so their JSON stays flat.
macro_rules! flat_coverage {
    ($($reply:ty),*) => {$(
        impl $reply {
            /// The slots this reply's totals cover.
            pub(crate) fn coverage(&self) -> Coverage {
                Coverage {
                    window: self.window,
                    from: self.from,
                    to: self.to,
                    behind: self.behind,
                    lag_ms: self.lag_ms,
                }
            }
        }
    )*};
}

flat_coverage!(super::TopPage, super::Standing, super::Ranks, super::Ahead);

impl Coverage {
    /// The coverage of totals made of these and `other`'s (a sharded board's shards):
    /// from the oldest slot either includes to the end of the newest, behind when
    /// either is, by the larger lag.
    pub(crate) fn join(self, other: Coverage) -> Coverage {
        Coverage {
            window: self.window,
            from: self.from.min(other.from),
            to: self.to.max(other.to),
            behind: self.behind || other.behind,
            lag_ms: self.lag_ms.max(other.lag_ms),
        }
    }
}

/// What a store knows of a window beyond its config: from which slot a window added to a
/// live board holds data, and whether its totals are still to be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct WindowState {
    /// The first slot a window added to a live board holds.
    pub since: Option<i64>,
    /// Its totals are not built yet.
    pub building: bool,
}

/// Which slots a window's totals cover: `(from, to)`, unix seconds.
///
/// `first_pending` is the oldest live slot newer than the window's retired-through mark
/// and `newest` the newest live slot. The totals are exactly the window when `from`
/// equals the window's start. A window still building covers nothing (`from == to`).
pub(crate) fn coverage(
    config: &BoardConfig,
    window: usize,
    now: Timestamp,
    first_pending: Option<i64>,
    newest: Option<i64>,
    state: WindowState,
) -> (i64, i64) {
    let start = config.window_start(window, now);
    let current = config.slot_start(now);
    let from = first_pending.map_or(start, |s| s.min(start));
    let from = state.since.map_or(from, |since| from.max(since));
    let to = newest.map_or(current, |s| s.max(current)) + config.slot().secs_i64();
    if state.building { (to, to) } else { (from, to) }
}

/// Whether totals covering slots from `from` on are behind at `now` (they still hold
/// slots that left window `window`), and since how long, in ms: the slot `from` left
/// the window at `from + W` (when the current slot became `from + W`).
fn behind(config: &BoardConfig, window: usize, now: Timestamp, from: i64) -> (bool, u64) {
    if from >= config.window_start(window, now) {
        return (false, 0);
    }
    let left_at_ms = (from + config.windows()[window].secs_i64()) * 1000;
    (true, (now.unix_millis() - left_at_ms).max(0) as u64)
}

/// When a window added to a live board (holding slots from `since` on) holds its span.
pub(crate) fn complete_from(
    config: &BoardConfig,
    window: usize,
    since: Option<i64>,
) -> Option<i64> {
    since.map(|s| s + config.windows()[window].secs_i64() - config.slot().secs_i64())
}
