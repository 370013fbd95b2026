//! A stream as the memory store keeps one (the moderation log, a board's held members):
//! entries with Redis-like ids `<ms>-<n>`, increasing even when the clock is not, the
//! oldest dropped past a cap (or, when asked, by age).

use std::collections::VecDeque;

/// An entry's id: milliseconds and a sequence number within them.
pub(super) type Id = (u64, u64);

/// Entries oldest first, at most `CAP` of them.
#[derive(Debug)]
pub(super) struct Stream<T, const CAP: usize> {
    entries: VecDeque<(Id, T)>,
    /// The newest id dropped (Redis's max-deleted-entry-id).
    dropped: Option<Id>,
}

impl<T, const CAP: usize> Default for Stream<T, CAP> {
    fn default() -> Self {
        Stream {
            entries: VecDeque::new(),
            dropped: None,
        }
    }
}

impl<T, const CAP: usize> Stream<T, CAP> {
    /// Appends the entry `make` makes of its id, at `ms` (or after the newest, when that
    /// is later).
    pub fn push(&mut self, ms: u64, make: impl FnOnce(Id) -> T) {
        let id = match self.entries.back() {
            Some(((last, n), _)) if *last >= ms => (*last, n + 1),
            _ => (ms, 0),
        };
        self.entries.push_back((id, make(id)));
        if self.entries.len() > CAP {
            self.drop_oldest();
        }
    }

    /// Drops the oldest entries past the newest `n` (as `XTRIM MAXLEN`).
    pub fn keep_newest(&mut self, n: usize) {
        while self.entries.len() > n {
            self.drop_oldest();
        }
    }

    /// Drops the entries older than `ms` (as `XTRIM MINID`).
    pub fn trim_before(&mut self, ms: u64) {
        while self.entries.front().is_some_and(|(id, _)| id.0 < ms) {
            self.drop_oldest();
        }
    }

    fn drop_oldest(&mut self) {
        if let Some((id, _)) = self.entries.pop_front() {
            self.dropped = Some(id);
        }
    }

    /// Whether an entry after `id` was dropped.
    pub fn dropped_after(&self, id: Id) -> bool {
        self.dropped.is_some_and(|d| d > id)
    }

    /// The entries, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &(Id, T)> {
        self.entries.iter()
    }
}

/// An id as text, `<ms>-<n>`.
pub(super) fn id_text((ms, n): Id) -> String {
    format!("{ms}-{n}")
}

/// A delivery cursor (a webhook's, kept in the store): first moved up to `delivered`
/// when given (it never moves back), then answered as text.
pub(super) fn advance(cursor: &mut Option<Id>, delivered: Option<&str>) -> Option<String> {
    if let Some(id) = delivered.and_then(|id| crate::domain::parse_log_id(id).ok()) {
        *cursor = (*cursor).max(Some(id));
    }
    cursor.map(id_text)
}
