//! Movement in reads (`with=movement`): where each member of a watched top stood at an
//! earlier time, as the kept changes give it, for the ▲2 / ▼1 / new badges (docs/api.md,
//! "Movement"). The changes since then are undone newest first: a member that entered
//! was outside the top before, one that moved or left stood at its `from`.

use std::collections::HashMap;

use super::Windowed;
use crate::domain::{Movement, Span, TopPage};
use crate::error::{Error, Result};

/// The most changes one movement read looks back through (the default kept): ten
/// pages of the newest. Older changes are not undone.
pub const MOVEMENT_LOOKBACK: usize = 10_000;

/// Changes read per page while looking back.
const PAGE: usize = 1000;

impl Windowed<'_> {
    /// `page` (a page of `window`'s ranking) with the `movement` of each entry inside
    /// that window's watched top: its rank there at `since` (unix ms), or `None` when
    /// it was outside it. The changes recorded after `since` (their `at`), at most the
    /// newest [`MOVEMENT_LOOKBACK`], are undone. [`Error::InvalidQuery`] when the window
    /// is not watched.
    pub async fn with_movement(self, mut page: TopPage, since: i64) -> Result<TopPage> {
        let board = self.rb.board(self.board).await?;
        let window = page.window;
        let Some(watch) = board.config.watch().iter().find(|w| w.window() == window) else {
            return Err(Error::InvalidQuery {
                reason: format!(
                    "with=movement reads a watched top's changes, and window {window} of \
                     board {:?} is not watched: add {{\"window\":\"{window}\",\"top\":10}} \
                     to the board's watch, or leave out movement",
                    self.board
                ),
            });
        };
        let was = self.ranks_at(window, since).await?;
        for entry in &mut page.entries {
            if entry.rank == 0 || entry.rank > u64::from(watch.top()) {
                continue;
            }
            let then = was.get(&entry.member).copied().unwrap_or(Some(entry.rank));
            entry.movement = Some(Movement { was: then });
        }
        Ok(page)
    }

    /// The rank in `window`'s watched top at `since` of each member whose place there
    /// changed since (`None`: outside it).
    async fn ranks_at(self, window: Span, since: i64) -> Result<HashMap<String, Option<u64>>> {
        let mut was = HashMap::new();
        let mut before: Option<String> = None;
        for _ in 0..MOVEMENT_LOOKBACK / PAGE {
            let page = self.recent_changes(before.as_deref(), PAGE).await?.changes;
            let read = page.len();
            for change in page {
                if change.at <= since {
                    return Ok(was);
                }
                if change.window == window {
                    was.insert(change.member, change.from);
                }
                before = Some(change.id);
            }
            if read < PAGE {
                break;
            }
        }
        Ok(was)
    }
}
