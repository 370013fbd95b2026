//! Member data: a small JSON value kept beside a member of a windowed board (a post's
//! title beside its id), set by a write's events or on its own, read on its own or with
//! a page (`with_data`). It lives exactly as long as the member's total in the board's
//! largest window (`docs/design.md`, "Member data").

use std::collections::HashSet;
use std::sync::Arc;

use super::write::BatchOutcome;
use super::{Rollboard, Windowed};
use crate::domain::board::Board;
use crate::domain::{BoardName, Event, Member, MemberData, Standing, TopPage};
use crate::error::{Error, Result};

/// What a member without a total in the largest window lacks for its data to be kept.
const NO_TOTAL: &str =
    "total in the board's largest window (member data is kept only for members holding one)";

impl Windowed<'_> {
    /// Sets `member`'s data on `board`, replacing what it held:
    /// [`Error::MemberNotFound`] when the member holds no total in the board's largest
    /// window (checked in the same atomic step as the set, so data is only ever kept for
    /// members with a total). The data goes when that total does (retirement, a write
    /// back to 0, removal, a drop).
    pub async fn set_member_data(self, member: &str, data: MemberData) -> Result<()> {
        let parsed = Member::parse(member)?;
        let store = &self.rb.inner.store;
        let entries = [(parsed, data)];
        let entries = &entries;
        let set = self
            .on_board(|b| async move {
                self.rb
                    .change(&b.name, store.set_member_data(&b, entries))
                    .await
            })
            .await?;
        if set.first() == Some(&true) {
            Ok(())
        } else {
            Err(missing(self.board, member, NO_TOTAL))
        }
    }

    /// `member`'s data on `board`, `None` when it has none.
    pub async fn member_data(self, member: &str) -> Result<Option<MemberData>> {
        let members = [Member::parse(member)?];
        Ok(self.members_data(&members).await?.pop().flatten())
    }

    /// Deletes `member`'s data on `board`: whether it had any.
    pub async fn delete_member_data(self, member: &str) -> Result<bool> {
        let member = Member::parse(member)?;
        let store = &self.rb.inner.store;
        let member = &member;
        self.change(|b| async move { store.delete_member_data(&b, member).await })
            .await
    }

    /// `page` (a page read from `board`: `top`, `bottom`, a score range, a percent,
    /// `around`) with each entry's data (`Some(None)` where it has none), read in one
    /// store call right after the page (a member that left the board in between shows
    /// none).
    pub async fn with_data(self, mut page: TopPage) -> Result<TopPage> {
        let members = page
            .entries
            .iter()
            .map(|e| Member::parse(&e.member))
            .collect::<Result<Vec<_>>>()?;
        let data = self.data_beside_reads(&members).await?;
        for (entry, data) in page.entries.iter_mut().zip(data) {
            entry.data = Some(data);
        }
        Ok(page)
    }

    /// `standing` (a member's standing read from `board`) with its data (`Some(None)`
    /// when it has none).
    pub async fn standing_with_data(self, mut standing: Standing) -> Result<Standing> {
        let members = [Member::parse(&standing.member)?];
        let data = self.data_beside_reads(&members).await?.pop().flatten();
        standing.data = Some(data);
        Ok(standing)
    }

    /// The data of each of `members` on `board`, in order, for a read's answer: through
    /// the read cache like the read (see [`Rollboard::reading_within`]).
    async fn data_beside_reads(self, members: &[Member]) -> Result<Vec<Option<MemberData>>> {
        let store = &self.rb.inner.store;
        self.on_board(|b| async move {
            let key = || format!("data {members:?}");
            let fetch = || store.member_data(&b, members);
            Ok(self
                .rb
                .read_through((&b.name, b.version), key, fetch)
                .await?
                .0)
        })
        .await
    }

    /// The data of each of `members` on `board`, in order.
    async fn members_data(self, members: &[Member]) -> Result<Vec<Option<MemberData>>> {
        let store = &self.rb.inner.store;
        self.on_board(|b| async move { store.member_data(&b, members).await })
            .await
    }
}

impl Rollboard {
    /// Keeps the data of the events of a write that carry some and were applied (the
    /// later of a member's events wins), where the member holds a total once they are:
    /// one store call after the write, none when no event carries data.
    pub(super) async fn keep_event_data(
        &self,
        board: &mut Arc<Board>,
        events: &[Event],
        outcome: &BatchOutcome,
    ) -> Result<()> {
        if events.iter().all(|e| e.data.is_none()) {
            return Ok(());
        }
        let rejected: HashSet<usize> = outcome.rejected.iter().map(|r| r.index).collect();
        let entries: Vec<(Member, MemberData)> = events
            .iter()
            .enumerate()
            .filter(|(index, _)| !rejected.contains(index))
            .filter_map(|(_, e)| Some((Member::parse(&e.member).ok()?, e.data.clone()?)))
            .collect();
        if entries.is_empty() {
            return Ok(());
        }
        let store = &self.inner.store;
        let entries = &entries;
        self.retry_changed(board, |b| async move {
            self.change(&b.name, store.set_member_data(&b, entries))
                .await
        })
        .await??;
        Ok(())
    }
}

/// [`Error::MemberNotFound`] of `member` on `board`.
pub(crate) fn missing(board: &str, member: &str, what: &'static str) -> Error {
    Error::MemberNotFound {
        board: BoardName::parse(board).map_or_else(|_| board.to_owned(), |b| b.to_string()),
        member: member.to_owned(),
        missing: what,
    }
}
