//! Window arithmetic of the stored totals: which slots a window's totals cover, whether
//! they are behind (still holding slots that left the window) and since when a window
//! added to a live board holds its span. Pure; both stores compute their replies' `from`,
//! `to`, `behind` and `lag_ms` here.

use super::{BoardConfig, Timestamp};

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
pub(crate) fn behind(
    config: &BoardConfig,
    window: usize,
    now: Timestamp,
    from: i64,
) -> (bool, u64) {
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
