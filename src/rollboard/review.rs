//! The review gate's moderator side: the queue of members a board's gate holds, and the
//! decisions on them (docs/design.md, "Review gate"), each kept in the moderation log.

use super::Windowed;
use crate::domain::{BoardName, Decision, HeldEvent, Member, ReviewQueue, Span};
use crate::domain::{ModerationAction, ModerationNote};
use crate::error::Result;

impl Windowed<'_> {
    /// Decides on `member`: [`Decision::Allow`] lets it rank anywhere on this board, now
    /// and later (held, it takes its place in the ranking at once; hidden by a moderator,
    /// it stays hidden); [`Decision::Deny`] hides it on this board (as
    /// [`hide`](Self::hide) does). Either is kept for when the board has a gate. True when
    /// it changed anything. Kept in the moderation log with `note`. On a sharded board,
    /// refused while a reshard runs ([`Error::ReshardRunning`](crate::Error::ReshardRunning)).
    pub async fn review(
        self,
        member: &str,
        decision: Decision,
        note: &ModerationNote,
    ) -> Result<bool> {
        let member = Member::parse(member)?;
        let name = BoardName::parse(self.board)?;
        let store = &self.rb.inner.store;
        let (member_ref, now) = (&member, self.rb.now());
        let changed = self
            .change(|b| async move { store.review(&b, member_ref, decision, now).await })
            .await?;
        let action = match decision {
            Decision::Allow => ModerationAction::Allow,
            Decision::Deny => ModerationAction::Deny,
        };
        let boards = Some(vec![name.to_string()]);
        let log = self
            .rb
            .log_entry(action, &member, boards, u64::from(changed), note, None);
        log.await?;
        Ok(changed)
    }

    /// The members the board's review gate holds, each with its value in `window` (the
    /// smallest by default) and the rank it would have there among the public members
    /// and itself: what a moderator reviews.
    pub async fn review_queue(self, window: Option<Span>) -> Result<ReviewQueue> {
        let now = self.rb.now();
        let store = &self.rb.inner.store;
        self.on_window(window, |b, w| async move {
            let sign = b.config.aggregate().sign();
            let mut held = store.held_members(b.at(w, now)).await?;
            held.iter_mut()
                .for_each(|e| e.score = e.score.map(|s| sign * s));
            Ok(ReviewQueue {
                board: b.name.to_string(),
                window: b.config.windows()[w],
                above_rank: b.config.review().map(|r| r.above_rank()),
                held,
            })
        })
        .await
    }

    /// Up to `limit` events of members the board's review gate held, after the event
    /// `after` (from the oldest kept when `None`), oldest first: what the review webhook
    /// delivers (about the newest 10,000 are kept).
    pub async fn held_events(self, after: Option<&str>, limit: usize) -> Result<Vec<HeldEvent>> {
        let store = &self.rb.inner.store;
        self.on_board(|b| async move { store.held_events(&b, after, limit).await })
            .await
    }

    /// The id of the newest held event delivered (by the review webhook, in any process),
    /// `None` before the first; with `delivered`, first records that the events through
    /// that id were delivered (the cursor never moves back).
    pub async fn held_cursor(self, delivered: Option<&str>) -> Result<Option<String>> {
        let store = &self.rb.inner.store;
        self.on_board(|b| async move { store.held_cursor(&b, delivered).await })
            .await
    }
}
