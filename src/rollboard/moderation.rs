//! Moderation: hiding a member from every ranking of a board without losing its counts,
//! and showing it again (docs/design.md, "Hidden members").

use super::Windowed;
use crate::domain::{Member, sums_only};
use crate::error::Result;

impl Windowed<'_> {
    /// Hides `member` from every ranking of the board, in every window at once, before
    /// it answers: it keeps counting exactly (writes, retirement, removal, recompute),
    /// but no page, rank, `around`, percentile, snapshot or multi-board read lists it,
    /// and the members below it move up a rank. Its own standing still answers its total,
    /// with `hidden` and no rank. True when it was shown until now, false when it was
    /// hidden already (nothing changes). Sum boards that are not sharded, for now:
    /// [`Error::AggregateUnsupported`](crate::Error::AggregateUnsupported) and
    /// [`Error::ShardedUnsupported`](crate::Error::ShardedUnsupported) otherwise.
    pub async fn hide(self, member: &str) -> Result<bool> {
        self.set_hidden(member, true).await
    }

    /// Shows a hidden `member` again, in every window at once, at the rank its totals
    /// give (exactly what they would be had it never been hidden). True when it was
    /// hidden, false when it was not (nothing changes).
    pub async fn show(self, member: &str) -> Result<bool> {
        self.set_hidden(member, false).await
    }

    async fn set_hidden(self, member: &str, hidden: bool) -> Result<bool> {
        let member = Member::parse(member)?;
        let store = &self.rb.inner.store;
        let member = &member;
        self.change(|b| async move {
            sums_only(&b, "hiding and showing members")?;
            store.set_hidden(&b, member, hidden).await
        })
        .await
    }
}
