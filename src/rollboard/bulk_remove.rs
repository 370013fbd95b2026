//! Bulk maintenance: removing members by list, by a range of totals in one window, and
//! trimming a board to a window's top N. Each selects its members at one moment (one
//! read of the ranking) and removes each with the exact single-member removal
//! ([`Store::remove_member`](crate::store::Store::remove_member)), whose store calls are
//! bounded (a Redis call visits at most 64 slots of one member), so a removal of
//! thousands of members never holds the store for long and writes go on meanwhile.
//!
//! "Exact while writes go on" means: every total stays the sum of the slot values that
//! remain; a member written after the selection was read is not removed (unless it was
//! selected), and an event written to a removed member after its removal counts again.

use serde::Serialize;

use super::Windowed;
use crate::domain::PageQuery;
use crate::domain::{ChangeCause, ChangeStamp};
use crate::domain::{Member, Order, ScoreBounds, ScoreRange, Span, TopPage};
use crate::domain::{own_values, stored_range};
use crate::error::{Error, Result};

/// Most members one call removes: a list holds at most this many, and a removal by range
/// or a trim selects at most this many (`more` tells when others matched; call again).
pub const MAX_BULK_REMOVE: usize = 1_000;

/// Largest `top` of a trim (the largest offset of a page).
const MAX_TOP: u64 = 1_000_000_000;

/// What a bulk removal did.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct BulkRemoved {
    /// Members removed: those that held at least one slot value when their removal ran
    /// (a listed member that held nothing is not counted).
    pub removed: u64,
    /// The members removed, in the order they were removed (at most 1,000).
    pub members: Vec<String>,
    /// A removal by range or a trim selected 1,000 members and more matched: call again
    /// to remove the next ones. Always `false` for a list.
    pub more: bool,
}

impl Windowed<'_> {
    /// Removes each of `members` (1 to 1,000; duplicates are removed once) from every
    /// slot and window of the board, as [`remove_member`](Self::remove_member) does.
    pub async fn remove_members<S: AsRef<str>>(self, members: &[S]) -> Result<BulkRemoved> {
        if members.is_empty() || members.len() > MAX_BULK_REMOVE {
            return Err(Error::InvalidQuery {
                reason: format!(
                    "members must list 1 to {MAX_BULK_REMOVE} members, got {}",
                    members.len()
                ),
            });
        }
        let mut parsed: Vec<Member> = Vec::with_capacity(members.len());
        for m in members {
            let member = Member::parse(m.as_ref())?;
            if !parsed.contains(&member) {
                parsed.push(member);
            }
        }
        self.remove_each(&parsed, false, ChangeCause::Remove).await
    }

    /// Removes, from every slot and window, the members ranked in `window` (the board's
    /// first when `None`) whose totals there are within `bounds` (inclusive; at least
    /// one bound), highest first, at most 1,000 per call (`more` when others matched).
    /// Members not ranked in that window are not selected, whatever their totals
    /// elsewhere.
    pub async fn remove_by_score(
        self,
        window: Option<Span>,
        bounds: ScoreBounds,
    ) -> Result<BulkRemoved> {
        if bounds.min.is_none() && bounds.max.is_none() {
            return Err(Error::InvalidQuery {
                reason: "a removal by score needs min_score, max_score or both (to remove \
                         every member, trim to top 0)"
                    .into(),
            });
        }
        let range = bounds.totals()?;
        let page = self.selection(window, range, 0).await?;
        self.remove_selected(page, ChangeCause::Remove).await
    }

    /// Removes, from every slot and window, the members ranked in `window` (the board's
    /// first when `None`) below its top `top` (0 to 1,000,000,000): ties at the cut follow
    /// the board's tie order, so exactly `top` stay ranked. At most 1,000 per call, those
    /// right below the cut first (`more` when others remain). Members not ranked in that
    /// window are left alone.
    pub async fn trim(self, window: Option<Span>, top: u64) -> Result<BulkRemoved> {
        if top > MAX_TOP {
            return Err(Error::InvalidQuery {
                reason: format!("top must be between 0 and {MAX_TOP}, got {top}"),
            });
        }
        let page = self.selection(window, ScoreRange::ALL, top).await?;
        self.remove_selected(page, ChangeCause::Trim).await
    }

    /// One read of the ranking of `window`: up to 1,001 members of `range` from `offset`.
    async fn selection(
        self,
        window: Option<Span>,
        range: ScoreRange,
        offset: u64,
    ) -> Result<TopPage> {
        let now = self.rb.now();
        let store = &self.rb.inner.store;
        let limit = MAX_BULK_REMOVE as u64 + 1;
        self.on_window(window, |b, w| async move {
            let range = stored_range(&b, range);
            let page = store.top(
                b.at(w, now),
                PageQuery::new(range, Order::Desc, offset, limit),
            );
            Ok(own_values(&b, page.await?))
        })
        .await
    }

    async fn remove_selected(self, page: TopPage, cause: ChangeCause) -> Result<BulkRemoved> {
        let more = page.entries.len() > MAX_BULK_REMOVE;
        let members = page
            .entries
            .into_iter()
            .take(MAX_BULK_REMOVE)
            .map(|e| Member::parse(&e.member))
            .collect::<Result<Vec<_>>>()?;
        self.remove_each(&members, more, cause).await
    }

    /// Removes each member with the store's exact removal, one after the other; a
    /// watched top's changes say `cause`.
    async fn remove_each(
        self,
        members: &[Member],
        more: bool,
        cause: ChangeCause,
    ) -> Result<BulkRemoved> {
        let store = &self.rb.inner.store;
        let stamp = ChangeStamp {
            cause,
            now: self.rb.now(),
        };
        self.on_board(|b| async move {
            let mut done = BulkRemoved {
                more,
                ..BulkRemoved::default()
            };
            for member in members {
                let removed = self
                    .rb
                    .change(&b.name, store.remove_member(&b, member, stamp))
                    .await?;
                if removed.slot_values > 0 {
                    done.removed += 1;
                    done.members.push(member.to_string());
                }
            }
            Ok(done)
        })
        .await
    }
}
