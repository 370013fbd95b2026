//! A board's rank changes: who entered, left or moved in each watched top
//! (docs/design.md, "Rank changes"), read after the last change a reader saw, a page at
//! a time or as a stream that follows them as they are recorded.

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::Stream;

use super::{Rollboard, Windowed};
use crate::domain::{Change, ChangePage, parse_log_id};
use crate::error::{Error, Result};

/// The most changes one read answers.
pub const MAX_CHANGES_LIMIT: usize = 1000;

impl Windowed<'_> {
    /// Up to `limit` (1–1,000) changes of the board's watched tops after the change
    /// `after` (an id `<ms>-<n>`; from the oldest kept when `None`), oldest first. A
    /// reader that applies them in order to the tops it saw at `after` holds the tops as
    /// of the last one. [`Error::ChangesTrimmed`] when changes after `after` are no
    /// longer kept (by default the newest 10,000 of a board, for 7 days).
    pub async fn changes(self, after: Option<&str>, limit: usize) -> Result<ChangePage> {
        self.read_changes(after, limit, false).await
    }

    /// Up to `limit` (1–1,000) of the newest changes of the board's watched tops before
    /// the change `before` (from the newest when `None`), newest first: to page back
    /// through what is kept, pass the last id read.
    pub async fn recent_changes(self, before: Option<&str>, limit: usize) -> Result<ChangePage> {
        self.read_changes(before, limit, true).await
    }

    async fn read_changes(
        self,
        after: Option<&str>,
        limit: usize,
        newest_first: bool,
    ) -> Result<ChangePage> {
        if !(1..=MAX_CHANGES_LIMIT).contains(&limit) {
            return Err(Error::InvalidQuery {
                reason: format!("limit must be between 1 and {MAX_CHANGES_LIMIT}, got {limit}"),
            });
        }
        if let Some(id) = after {
            parse_log_id(id).map_err(|_| Error::InvalidQuery {
                reason: format!("after {id:?} is not a change id (<ms>-<n>, as changes' ids are)"),
            })?;
        }
        let store = &self.rb.inner.store;
        self.on_board(|b| async move {
            Ok(ChangePage {
                board: b.name.to_string(),
                changes: store.changes(&b, after, limit, newest_first).await?,
            })
        })
        .await
    }
}

impl Windowed<'_> {
    /// The id of the newest change the changes webhook delivered (in any process),
    /// `None` before the first; with `delivered`, first records that the changes through
    /// that id were delivered (the cursor never moves back).
    pub async fn changes_cursor(self, delivered: Option<&str>) -> Result<Option<String>> {
        let store = &self.rb.inner.store;
        self.on_board(|b| async move { store.changes_cursor(&b, delivered).await })
            .await
    }
}

/// How often a stream of changes reads the store again once it has read every change.
pub const CHANGES_POLL: Duration = Duration::from_millis(250);

impl Windowed<'_> {
    /// Every change of the board's watched tops after `after` (from the oldest kept when
    /// `None`), oldest first, as they are recorded: the store is read again every
    /// `poll` once the stream has yielded every change read. A reader that resumes
    /// after the last id it applied misses nothing. The stream ends after yielding an
    /// error, but one that a store being unreachable causes
    /// ([`Error::StoreUnavailable`], read again after `poll`): after
    /// [`Error::ChangesTrimmed`], read the top again and start from the newest id.
    pub fn change_stream(
        self,
        after: Option<String>,
        poll: Duration,
    ) -> impl Stream<Item = Result<Change>> + Send + 'static {
        struct State {
            rb: Rollboard,
            board: String,
            after: Option<String>,
            ready: VecDeque<Change>,
            ended: bool,
        }
        let state = State {
            rb: self.rb.clone(),
            board: self.board.to_owned(),
            after,
            ready: VecDeque::new(),
            ended: false,
        };
        futures_util::stream::unfold(state, move |mut s| async move {
            loop {
                if s.ended {
                    return None;
                }
                if let Some(change) = s.ready.pop_front() {
                    s.after = Some(change.id.clone());
                    return Some((Ok(change), s));
                }
                let read = s.rb.windowed(&s.board);
                match read.changes(s.after.as_deref(), MAX_CHANGES_LIMIT).await {
                    Ok(page) if page.changes.is_empty() => tokio::time::sleep(poll).await,
                    Ok(page) => s.ready.extend(page.changes),
                    Err(e @ Error::StoreUnavailable(_)) => {
                        tokio::time::sleep(poll).await;
                        return Some((Err(e), s));
                    }
                    Err(e) => {
                        s.ended = true;
                        return Some((Err(e), s));
                    }
                }
            }
        })
    }
}
