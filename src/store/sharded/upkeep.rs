//! A sharded board's upkeep and member calls: creating, listing, describing and dropping
//! its shards, running retirement, recompute and relayout on every shard, and sending a
//! member's history, removal and data to the member's shard.

use std::collections::{BTreeMap, HashSet};

use futures_util::future::try_join_all;

use super::names::{shard_names, shard_of};
use super::shard_set::shard_config;
use super::view::Sharded;
use crate::domain::ChangeStamp;
use crate::domain::any_board::{AnyBoard, NewBoard};
use crate::domain::board::{Board, BoardStatus, Resharding, WindowStatus};
use crate::domain::{BoardName, History, Layout, Member, MemberData, Removed, Timestamp};
use crate::domain::{RecomputeReport, RelayoutOptions, RelayoutReport, RetireReport};
use crate::error::{Error, Result};
use crate::store::{RetireOptions, Store, ranked_hidden};

/// Creates (or finds, or extends as the board was) the shards of `board` after `board`
/// itself: a board is never listed without its shards for longer than this call.
pub(super) async fn create_shards(store: &dyn Store, board: &Board, now: Timestamp) -> Result<()> {
    let config = NewBoard::Windowed(shard_config(&board.config));
    let names = shard_names(board);
    try_join_all(
        names[1..]
            .iter()
            .map(|name| store.create_board(name, &config, now)),
    )
    .await?;
    Ok(())
}

/// The boards, shards left out. Shards whose board is gone (a drop cut short) are
/// dropped on the way, as far as that goes (the next listing tries again).
pub(super) async fn list_boards(store: &dyn Store) -> Result<Vec<AnyBoard>> {
    let (shards, boards): (Vec<AnyBoard>, Vec<AnyBoard>) = store
        .list_boards()
        .await?
        .into_iter()
        .partition(|b| b.name().shard_of().is_some());
    let owned: HashSet<BoardName> = boards
        .iter()
        .filter_map(AnyBoard::windowed)
        .filter(|b| b.shard_span() > 1)
        .flat_map(shard_names)
        .collect();
    for shard in shards.iter().filter(|s| !owned.contains(s.name())) {
        // Not listed with its board: check the board itself (listed late, or just made).
        let owner = match shard.name().shard_of().map(BoardName::parse) {
            Some(Ok(name)) => store.load_board(&name).await?,
            _ => None,
        };
        let owned = match owner {
            Some(AnyBoard::Windowed(board)) => shard_names(&board).contains(shard.name()),
            _ => false,
        };
        if !owned {
            let _ = store.drop_board(shard.name()).await;
        }
    }
    Ok(boards)
}

/// Drops board `name` and, when it is sharded, its shards after it.
pub(super) async fn drop_board(store: &dyn Store, name: &BoardName) -> Result<bool> {
    let loaded = store.load_board(name).await?;
    let existed = store.drop_board(name).await?;
    if let Some(AnyBoard::Windowed(board)) = loaded
        && board.shard_span() > 1
    {
        let names = shard_names(&board);
        try_join_all(names[1..].iter().map(|n| store.drop_board(n))).await?;
    }
    Ok(existed)
}

/// One report of the passes over every shard of a board: their counts added up,
/// complete when every one is.
pub(super) fn joined_retire(reports: Vec<RetireReport>) -> RetireReport {
    let complete = reports.iter().all(|r| r.complete);
    let mut joined = RetireReport::default();
    for report in reports {
        joined.absorb(report);
    }
    joined.complete = complete;
    joined
}

impl Sharded<'_> {
    pub(super) async fn describe(&self, now: Timestamp) -> Result<BoardStatus> {
        let statuses = self.each(|_, b| self.store.describe_board(b, now)).await?;
        let mut statuses = statuses.into_iter();
        let mut board = statuses.next().expect("a board has shards");
        for shard in statuses {
            board.live_slots = board.live_slots.max(shard.live_slots);
            for (window, other) in board.windows.iter_mut().zip(shard.windows) {
                join_window(window, other);
            }
        }
        Ok(board)
    }

    pub(super) async fn retire(
        &self,
        now: Timestamp,
        options: Option<RetireOptions>,
    ) -> Result<RetireReport> {
        let reports = self.each(|_, b| self.store.retire(b, now, options)).await?;
        Ok(joined_retire(reports))
    }

    pub(super) async fn pending_windows(&self) -> Result<Vec<usize>> {
        let pending = self.each(|_, b| self.store.pending_windows(b)).await?;
        let mut windows: Vec<usize> = pending.into_iter().flatten().collect();
        windows.sort_unstable();
        windows.dedup();
        Ok(windows)
    }

    pub(super) async fn recompute(&self, window: usize) -> Result<RecomputeReport> {
        let reports = self.each(|_, b| self.store.recompute(b, window)).await?;
        let mut reports = reports.into_iter();
        let mut joined = reports.next().expect("a board has shards");
        for report in reports {
            joined.fields_scanned += report.fields_scanned;
            joined.members_folded += report.members_folded;
            joined.calls += report.calls;
        }
        Ok(joined)
    }

    pub(super) async fn relayout(
        &self,
        layout: Layout,
        options: RelayoutOptions,
    ) -> Result<RelayoutReport> {
        let reports = self
            .each(|_, b| self.store.relayout(b, layout, options))
            .await;
        // The shards' stored configs changed: find them again.
        self.sets.forget(&self.board().name);
        let mut reports = reports?.into_iter();
        let mut joined = reports.next().expect("a board has shards");
        for report in reports {
            joined.live_slots += report.live_slots;
            joined.old_layout_slots += report.old_layout_slots;
            joined.converted_slots += report.converted_slots;
            joined.moved_values += report.moved_values;
            joined.complete &= report.complete;
        }
        Ok(joined)
    }

    pub(super) async fn history(&self, now: Timestamp, member: &Member) -> Result<History> {
        let shard = self.home(member).await?;
        let result = self.store.history(shard, now, member).await;
        self.lift(result)
    }

    /// Removes the member from its shard and, while a reshard moves it, from the other
    /// one too (its move may be under way).
    pub(super) async fn remove_member(
        &self,
        member: &Member,
        stamp: ChangeStamp,
    ) -> Result<Removed> {
        let mut removed = Removed::default();
        for shard in self.either(member) {
            let result = self.store.remove_member(shard, member, stamp).await;
            removed.slot_values += self.lift(result)?.slot_values;
        }
        Ok(removed)
    }

    pub(super) async fn delete_member_data(&self, member: &Member) -> Result<bool> {
        let mut deleted = false;
        for shard in self.either(member) {
            let result = self.store.delete_member_data(shard, member).await;
            deleted |= self.lift(result)?;
        }
        Ok(deleted)
    }

    /// Hides (shows) each of `members` on the shard that holds it. Refused while a
    /// reshard runs ([`Error::ReshardRunning`]): the reshard gives every hidden member's
    /// mark to its new shard as it begins (`reshard.rs`), which a change meanwhile
    /// would race.
    pub(super) async fn set_hidden(
        &self,
        members: &[Member],
        hidden: bool,
        now: Timestamp,
    ) -> Result<u64> {
        self.not_resharding()?;
        let mut lists: Vec<Vec<Member>> = vec![Vec::new(); self.shards().len()];
        for member in members {
            lists[self.set.of(member)].push(member.clone());
        }
        let changed = self
            .each(|i, shard| {
                let list = &lists[i];
                async move {
                    if list.is_empty() {
                        return Ok(0);
                    }
                    self.store.set_hidden(shard, list, hidden, now).await
                }
            })
            .await?;
        Ok(changed.into_iter().sum())
    }

    /// Refuses a change of a member's marks while a reshard runs
    /// ([`Error::ReshardRunning`]).
    pub(super) fn not_resharding(&self) -> Result<()> {
        let Some(resharding) = self.board().resharding else {
            return Ok(());
        };
        let to = match resharding {
            Resharding::Moving { to } => to,
            Resharding::Sweeping { .. } => self.board().config.shards(),
        };
        let board = self.board().name.to_string();
        Err(Error::ReshardRunning { board, to })
    }

    /// Every shard's hidden members, in [`ranked_hidden`] order (a member a reshard
    /// moves is marked on both of its shards: listed once, with its total where it has
    /// one).
    pub(super) async fn hidden_members(
        &self,
        window: usize,
        now: Timestamp,
    ) -> Result<Vec<(String, Option<i64>)>> {
        let lists = self
            .each(|_, shard| self.store.hidden_members(shard.at(window, now)))
            .await?;
        let mut merged: BTreeMap<String, Option<i64>> = BTreeMap::new();
        for (member, total) in lists.into_iter().flatten() {
            let kept = merged.entry(member).or_insert(None);
            *kept = (*kept).or(total);
        }
        Ok(ranked_hidden(merged.into_iter().collect()))
    }

    /// The shards that may hold `member`: its shard under the board's count and, while
    /// a reshard runs, its shard under the other count.
    fn either(&self, member: &Member) -> Vec<&Board> {
        let shards = self.shards();
        let mut either = vec![&shards[self.set.of(member)]];
        let Some(resharding) = self.board().resharding else {
            return either;
        };
        let other = &shards[shard_of(member, resharding.other_count())];
        if other.name != either[0].name {
            either.push(other);
        }
        either
    }

    pub(super) async fn set_member_data(
        &self,
        entries: &[(Member, MemberData)],
    ) -> Result<Vec<bool>> {
        self.per_member(
            entries,
            |(m, _)| m,
            |b, part| async move { self.store.set_member_data(b, &part).await },
        )
        .await
    }

    pub(super) async fn member_data(&self, members: &[Member]) -> Result<Vec<Option<MemberData>>> {
        self.per_member(
            members,
            |m| m,
            |b, part| async move { self.store.member_data(b, &part).await },
        )
        .await
    }
}

/// Adds a shard's state of a window to the board's.
fn join_window(window: &mut WindowStatus, shard: WindowStatus) {
    window.members += shard.members;
    window.ranked += shard.ranked;
    window.from = window.from.min(shard.from);
    window.to = window.to.max(shard.to);
    window.retired_through = window.retired_through.min(shard.retired_through);
    window.lag_seconds = window.lag_seconds.max(shard.lag_seconds);
    window.building |= shard.building;
    window.complete_from = window.complete_from.max(shard.complete_from);
}
