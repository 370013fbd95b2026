//! A stream as the memory store keeps one (the moderation log, a board's held members):
//! entries with Redis-like ids `<ms>-<n>`, increasing even when the clock is not, the
//! oldest dropped past a cap.

use std::collections::VecDeque;

/// An entry's id: milliseconds and a sequence number within them.
pub(super) type Id = (u64, u64);

/// Entries oldest first, at most `CAP` of them.
#[derive(Debug)]
pub(super) struct Stream<T, const CAP: usize> {
    entries: VecDeque<(Id, T)>,
}

impl<T, const CAP: usize> Default for Stream<T, CAP> {
    fn default() -> Self {
        Stream {
            entries: VecDeque::new(),
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
            self.entries.pop_front();
        }
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
