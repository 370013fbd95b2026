//! The in-process store: the embedded default (nothing to install) and the reference
//! model that the Redis store is checked against.
//!
//! Each board sits behind its own mutex, held only for the synchronous work of one call,
//! so writes to different boards never contend. Reads of ranks and pages walk an ordered
//! set, O(offset + limit): fine for trying the service and for a forum's own tests; use
//! Redis for millions of members.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use async_trait::async_trait;

mod board_state;
mod counters;
mod family;
mod keyed;
mod latest;
mod maxima;
mod moderation;
mod rates;
mod shard_moves;
mod stats;
mod stream;
mod sums;
mod totals;
mod trending;

use board_state::MemBoard;

use crate::domain::Change;
use crate::domain::ChangeStamp;
use crate::domain::PageQuery;
use crate::domain::Removed;
use crate::domain::RetireReport;
use crate::domain::any_board::{AnyBoard, NewBoard};
use crate::domain::board::{Board, BoardStatus, Created, SlotWrites, WindowAt};
use crate::domain::{AroundOptions, AroundQuery};
use crate::domain::{
    BoardConfig, BoardName, Decision, HeldEvent, HeldMember, Member, MemberData, Pin, Timestamp,
};
use crate::domain::{Contributor, Retracted, WindowContributions, WindowContributors};
use crate::domain::{History, Ranks, ScoreRange, Standing, TopPage};
use crate::domain::{Layout, RecomputeReport, RelayoutOptions, RelayoutReport};
use crate::error::{Error, Result};
use crate::store::{Keyed, Store, WriteKey, WriteStatus, new_version};

/// Boards held in this process's memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    boards: RwLock<BTreeMap<BoardName, Arc<Mutex<MemBoard>>>>,
    /// Rate windows (see `rates.rs`).
    rates: rates::MemRates,
    counters: counters::MemCounters,
    stats: stats::MemStats,
    /// Trending boards (see `trending.rs`); their names share the namespace of `boards`.
    trending: trending::MemTrending,
    moderation: moderation::MemModeration,
}

impl MemoryStore {
    /// Creates, finds or extends windowed board `name` (see [`Store::create_board`]).
    fn create_windowed(
        &self,
        name: &BoardName,
        config: &BoardConfig,
        now: Timestamp,
    ) -> Result<Created> {
        let mut boards = self.boards.write().unwrap_or_else(|e| e.into_inner());
        if self.trending.contains(name) {
            return Err(Error::BoardKind {
                board: name.to_string(),
                kind: "trending",
            });
        }
        if let Some(entry) = boards.get(name) {
            let mut state = lock(entry);
            let config = &config.layout_defaulting_to(&state.board.config);
            // The snapshots policy and the review gate are the options a live board
            // takes as they are.
            let compatible = state.board.config.same_but_live(config)
                || state.board.config.extended_by(config).is_some();
            if compatible {
                let updated = state.board.config.with_live_of(config);
                state.set_config(updated);
            }
            let existing = state.board.clone();
            if existing.config == *config {
                return Ok(Created::Existing(existing));
            }
            if existing.config.extended_by(config).is_none() {
                return Err(Error::BoardConflict {
                    board: name.to_string(),
                    existing: Box::new(existing.config),
                    asked: Box::new(config.clone()),
                });
            }
            let extended = Board {
                config: config.clone(),
                version: new_version(),
                ..existing
            };
            state.extend(extended.clone(), now);
            return Ok(Created::Extended(extended));
        }
        let version = new_version();
        let board = Board {
            name: name.clone(),
            config: config.clone(),
            version,
            created_at: now,
            incarnation: version,
            resharding: None,
            pins: Vec::new(),
        };
        let state = MemBoard::new(board.clone(), now);
        boards.insert(name.clone(), Arc::new(Mutex::new(state)));
        Ok(Created::New(board))
    }

    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f` on the board's state if `board` is still the stored incarnation.
    fn with_board<T>(&self, board: &Board, f: impl FnOnce(&mut MemBoard) -> T) -> Result<T> {
        let entry = self.read_boards().get(&board.name).cloned();
        let current = |s: &MemBoard| s.board.version == board.version;
        with_current(entry, &board.name, current, f)
    }

    fn read_boards(
        &self,
    ) -> std::sync::RwLockReadGuard<'_, BTreeMap<BoardName, Arc<Mutex<MemBoard>>>> {
        self.boards.read().unwrap_or_else(|e| e.into_inner())
    }
}

fn lock<S>(board: &Mutex<S>) -> MutexGuard<'_, S> {
    // A panic while holding the lock cannot leave half an operation behind that a later
    // call would misread, so a poisoned lock is still usable.
    board.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` on the state in `entry` (board `name`'s, looked up with the map's lock
/// released since) if it is still `current`; [`Error::BoardChanged`] otherwise.
fn with_current<S, T>(
    entry: Option<Arc<Mutex<S>>>,
    name: &BoardName,
    current: impl FnOnce(&S) -> bool,
    f: impl FnOnce(&mut S) -> T,
) -> Result<T> {
    let changed = || Error::BoardChanged(name.to_string());
    let entry = entry.ok_or_else(changed)?;
    let mut state = lock(&entry);
    if !current(&state) {
        return Err(changed());
    }
    Ok(f(&mut state))
}

#[async_trait]
impl Store for MemoryStore {
    fn kind(&self) -> &'static str {
        "memory"
    }

    fn counters(&self) -> &dyn crate::store::CounterStore {
        self
    }

    fn stats(&self) -> &dyn crate::store::StatsStore {
        self
    }

    fn rates(&self) -> &dyn crate::store::RateStore {
        self
    }

    fn trending(&self) -> &dyn crate::store::TrendingStore {
        self
    }

    fn moderation(&self) -> &dyn crate::store::ModerationStore {
        self
    }

    #[allow(private_interfaces)] // sealed: see `Store::shard_moves`
    fn shard_moves(&self) -> Option<&dyn crate::store::ShardMoves> {
        Some(self)
    }

    async fn ping(&self) -> Result<()> {
        Ok(())
    }

    async fn create_board(
        &self,
        name: &BoardName,
        config: &NewBoard,
        now: Timestamp,
    ) -> Result<Created<AnyBoard>> {
        Ok(match config {
            NewBoard::Windowed(config) => self.create_windowed(name, config, now)?.map(Into::into),
            NewBoard::Trending(config) => self.create_trending(name, config, now)?.map(Into::into),
        })
    }

    async fn load_board(&self, name: &BoardName) -> Result<Option<AnyBoard>> {
        if let Some(board) = self.read_boards().get(name) {
            return Ok(Some(lock(board).board.clone().into()));
        }
        Ok(self.trending.board(name).map(Into::into))
    }

    async fn list_boards(&self) -> Result<Vec<AnyBoard>> {
        let mut boards: Vec<AnyBoard> = self
            .read_boards()
            .values()
            .map(|b| lock(b).board.clone().into())
            .collect();
        boards.extend(self.trending.list());
        boards.sort_by(|a, b| a.name().cmp(b.name()));
        Ok(boards)
    }

    async fn describe_board(&self, board: &Board, now: Timestamp) -> Result<BoardStatus> {
        self.with_board(board, |b| b.describe(now))
    }

    async fn drop_board(&self, name: &BoardName) -> Result<bool> {
        let mut boards = self.boards.write().unwrap_or_else(|e| e.into_inner());
        Ok(boards.remove(name).is_some() || self.trending.remove(name))
    }

    async fn write(&self, w: SlotWrites<'_>) -> Result<Vec<WriteStatus>> {
        self.with_board(w.board, |b| b.write(w.now, &w.writes))
    }

    async fn write_once(&self, w: SlotWrites<'_>, token: &str) -> Result<Option<Vec<WriteStatus>>> {
        self.with_board(w.board, |b| b.write_once(w.now, &w.writes, token))
    }

    async fn write_keyed(&self, w: SlotWrites<'_>, key: &WriteKey) -> Result<Keyed> {
        self.with_board(w.board, |b| b.write_keyed(w.now, &w.writes, key))
    }

    async fn write_standing(
        &self,
        w: SlotWrites<'_>,
        windows: &[usize],
        key: Option<&WriteKey>,
    ) -> Result<(Keyed, Vec<crate::domain::WrittenStanding>)> {
        self.with_board(w.board, |b| {
            b.write_standing(w.now, &w.writes, windows, key)
        })
    }

    async fn top(&self, at: WindowAt<'_>, page: PageQuery<ScoreRange>) -> Result<TopPage> {
        self.with_board(at.board, |b| b.top(at.window, at.now, page))
    }

    async fn standings(
        &self,
        at: WindowAt<'_>,
        members: &[Member],
    ) -> Result<Vec<Option<Standing>>> {
        self.with_board(at.board, |b| {
            members
                .iter()
                .map(|m| b.standing(at.window, at.now, m))
                .collect()
        })
    }

    async fn ranks(&self, at: WindowAt<'_>, members: &[Member]) -> Result<Ranks> {
        self.with_board(at.board, |b| b.ranks(at.window, at.now, members))
    }

    async fn arounds(
        &self,
        at: WindowAt<'_>,
        members: &[Member],
        n: u64,
        options: AroundOptions,
    ) -> Result<Vec<Option<TopPage>>> {
        self.with_board(at.board, |b| {
            let around = |member| b.around(at.window, at.now, AroundQuery { member, n, options });
            members.iter().map(around).collect()
        })
    }

    async fn history(&self, board: &Board, now: Timestamp, member: &Member) -> Result<History> {
        self.with_board(board, |b| b.history(now, member))
    }

    async fn contributions(
        &self,
        board: &Board,
        by: &Contributor,
    ) -> Result<Vec<WindowContributions>> {
        self.with_board(board, |b| b.contributions(by))
    }

    async fn member_contributions(
        &self,
        board: &Board,
        member: &Member,
        limit: usize,
    ) -> Result<Vec<WindowContributors>> {
        self.with_board(board, |b| b.member_contributions(member, limit))
    }

    async fn retract(
        &self,
        board: &Board,
        by: &Contributor,
        from: Option<i64>,
        stamp: ChangeStamp,
    ) -> Result<Retracted> {
        self.with_board(board, |b| b.retract(by, from, stamp))
    }

    async fn quarantine(
        &self,
        board: &Board,
        by: &Contributor,
        quarantined: bool,
        stamp: ChangeStamp,
    ) -> Result<u64> {
        self.with_board(board, |b| b.quarantine(by, quarantined, stamp))
    }

    async fn remove_member(
        &self,
        board: &Board,
        member: &Member,
        stamp: ChangeStamp,
    ) -> Result<Removed> {
        self.with_board(board, |b| b.remove_member(member, stamp))
    }

    async fn set_hidden(
        &self,
        board: &Board,
        members: &[Member],
        hidden: bool,
        now: Timestamp,
    ) -> Result<u64> {
        self.with_board(board, |b| {
            let changed = members.iter().filter(|m| b.set_hidden(m, hidden, now));
            changed.count() as u64
        })
    }

    async fn set_pins(&self, board: &Board, pins: &[Pin]) -> Result<Board> {
        self.with_board(board, |b| {
            b.board.version = crate::store::new_version();
            b.board.pins = pins.to_vec();
            b.board.clone()
        })
    }

    async fn hidden_members(&self, at: WindowAt<'_>) -> Result<Vec<(String, Option<i64>)>> {
        self.with_board(at.board, |b| b.hidden_members(at.window))
    }

    async fn review(
        &self,
        board: &Board,
        member: &Member,
        decision: Decision,
        now: Timestamp,
    ) -> Result<bool> {
        self.with_board(board, |b| b.review(member, decision, now))
    }

    async fn held_members(&self, at: WindowAt<'_>) -> Result<Vec<HeldMember>> {
        self.with_board(at.board, |b| b.held_members(at.window))
    }

    async fn held_events(
        &self,
        board: &Board,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<HeldEvent>> {
        self.with_board(board, |b| b.held_events(after, limit))
    }

    async fn held_cursor(&self, board: &Board, delivered: Option<&str>) -> Result<Option<String>> {
        self.with_board(board, |b| b.held_cursor(delivered))
    }

    async fn changes(
        &self,
        board: &Board,
        after: Option<&str>,
        limit: usize,
        newest_first: bool,
    ) -> Result<Vec<Change>> {
        self.with_board(board, |b| b.changes(after, limit, newest_first))?
    }

    async fn changes_cursor(
        &self,
        board: &Board,
        delivered: Option<&str>,
    ) -> Result<Option<String>> {
        self.with_board(board, |b| b.changes_cursor(delivered))
    }

    async fn set_member_data(
        &self,
        board: &Board,
        entries: &[(Member, MemberData)],
    ) -> Result<Vec<bool>> {
        self.with_board(board, |b| b.set_member_data(entries))
    }

    async fn member_data(
        &self,
        board: &Board,
        members: &[Member],
    ) -> Result<Vec<Option<MemberData>>> {
        self.with_board(board, |b| b.member_data(members))
    }

    async fn delete_member_data(&self, board: &Board, member: &Member) -> Result<bool> {
        self.with_board(board, |b| b.delete_member_data(member))
    }

    async fn pending_windows(&self, board: &Board) -> Result<Vec<usize>> {
        // Windows added here are built at once.
        self.with_board(board, |_| Vec::new())
    }

    async fn recompute(&self, board: &Board, window: usize) -> Result<RecomputeReport> {
        board.config.check_recompute()?;
        self.with_board(board, |b| b.recompute(window))
    }

    async fn relayout(
        &self,
        board: &Board,
        layout: Layout,
        _options: RelayoutOptions,
    ) -> Result<RelayoutReport> {
        // No buckets here: the layout is only recorded in the config, `now` or not.
        self.with_board(board, |b| {
            let config = b.board.config.clone().with_layout(Some(layout));
            b.set_config(config);
            RelayoutReport {
                layout,
                live_slots: b.live_slots() as u64,
                old_layout_slots: 0,
                converted_slots: 0,
                moved_values: 0,
                complete: true,
            }
        })
    }

    async fn retire(
        &self,
        board: &Board,
        now: Timestamp,
        _: Option<crate::store::RetireOptions>,
    ) -> Result<RetireReport> {
        // In memory a whole pass runs under the board's lock: there is nothing to chunk.
        self.with_board(board, |b| b.retire(now))
    }

    async fn take_snapshots(
        &self,
        board: &Board,
        now: Timestamp,
        tops: Option<&[Option<Vec<crate::domain::Entry>>]>,
    ) -> Result<crate::domain::SnapshotPass> {
        self.with_board(board, |b| match tops {
            None => b.take_snapshots(now),
            Some(tops) => b.append_snapshots(now, tops.to_vec()),
        })
    }

    async fn snapshots(
        &self,
        board: &Board,
        window: usize,
        range: crate::domain::SnapshotRange,
    ) -> Result<Vec<crate::domain::Snapshot>> {
        self.with_board(board, |b| b.snapshots(window, range))
    }

    async fn snapshot_cursor(
        &self,
        board: &Board,
        window: usize,
        delivered: Option<i64>,
    ) -> Result<Option<i64>> {
        self.with_board(board, |b| b.snapshot_cursor(window, delivered))
    }
}
