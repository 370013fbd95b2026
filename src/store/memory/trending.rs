//! Trending boards in memory: per board a landmark and each member's stored value
//! (forward decay, as in Redis: see `domain/trending.rs`), with an ordered index for
//! ranks. A whole maintenance pass runs under the board's lock, so its rescale and prune
//! are single steps here.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use async_trait::async_trait;

use super::keyed::KeyedRecords;
use super::{MemoryStore, lock, with_current};
use crate::domain::PageQuery;
use crate::domain::any_board::AnyBoard;
use crate::domain::trending::{
    WRITE_LIMIT_HALF_LIVES, decayed, forward, page_ranks, rescale_target, stored_bound,
};
use crate::domain::{AroundQuery, Order, around_positions, page_positions};
use crate::domain::{
    BoardName, Member, Timestamp, TrendAt, TrendCounts, TrendCreated, TrendEntry, TrendMaintenance,
    TrendOptions, TrendPage, TrendRange, TrendRank, TrendRanks, TrendStanding, TrendWrite,
    TrendingBoard, TrendingConfig, percentile,
};
use crate::error::{Error, Result};
use crate::store::{Keyed, TrendKeyed, TrendingStore, WriteKey, new_version};

/// The trending boards of a [`MemoryStore`].
#[derive(Debug, Default)]
pub(super) struct MemTrending {
    boards: RwLock<BTreeMap<BoardName, Arc<Mutex<MemTrend>>>>,
}

impl MemTrending {
    /// The trending board of that name, if there is one.
    pub(super) fn board(&self, name: &BoardName) -> Option<TrendingBoard> {
        self.read().get(name).map(|entry| lock(entry).board.clone())
    }

    /// Every trending board, by name.
    pub(super) fn list(&self) -> Vec<AnyBoard> {
        let boards = self.read();
        boards
            .values()
            .map(|b| lock(b).board.clone().into())
            .collect()
    }

    /// Whether a trending board of that name exists.
    pub(super) fn contains(&self, name: &BoardName) -> bool {
        self.read().contains_key(name)
    }

    /// Drops the trending board of that name; `false` when there is none.
    pub(super) fn remove(&self, name: &BoardName) -> bool {
        self.boards
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name)
            .is_some()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<BoardName, Arc<Mutex<MemTrend>>>> {
        self.boards.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the board's state if `board` is still the stored incarnation.
    fn with<T>(&self, board: &TrendingBoard, f: impl FnOnce(&mut MemTrend) -> T) -> Result<T> {
        let entry = self.read().get(&board.name).cloned();
        let current = |s: &MemTrend| s.board.version == board.version;
        with_current(entry, &board.name, current, f)
    }
}

/// A stored value ordered highest first (`f64::total_cmp` on its negation), then by
/// member ascending: the order of a ranking.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Desc(f64);

impl Eq for Desc {}

impl PartialOrd for Desc {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Desc {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.0.total_cmp(&self.0)
    }
}

/// One trending board's state.
#[derive(Debug)]
struct MemTrend {
    board: TrendingBoard,
    landmark_ms: i64,
    values: HashMap<String, f64>,
    order: BTreeSet<(Desc, String)>,
    /// Writes made under an idempotency key, until their deadline.
    keyed: KeyedRecords,
}

impl MemTrend {
    fn h(&self) -> i64 {
        self.board.config.half_life_ms()
    }

    fn set(&mut self, member: &str, value: Option<f64>) {
        if let Some(old) = self.values.remove(member) {
            self.order.remove(&(Desc(old), member.to_owned()));
        }
        if let Some(v) = value {
            self.values.insert(member.to_owned(), v);
            self.order.insert((Desc(v), member.to_owned()));
        }
    }

    fn write(&mut self, now: Timestamp, writes: &[TrendWrite]) {
        let limit = i64::from(WRITE_LIMIT_HALF_LIVES) * self.h();
        if writes.iter().any(|w| w.at_ms - self.landmark_ms > limit) {
            // The maintenance pass did not run for that long: rescale first.
            if let Some(target) = rescale_target(self.landmark_ms, now.unix_millis(), self.h(), 1) {
                self.rescale(target);
            }
        }
        for w in writes {
            let add = forward(w.delta, w.at_ms, self.landmark_ms, self.h());
            let value = self.values.get(&w.member).copied().unwrap_or(0.0) + add;
            self.set(&w.member, Some(value));
        }
    }

    fn write_keyed(&mut self, now: Timestamp, writes: &[TrendWrite], key: &WriteKey) -> TrendKeyed {
        match self.keyed.replay(key, now) {
            Some(Keyed::Replayed { now, .. }) => TrendKeyed::Replayed { now },
            // `replay` answers only a replay or a reuse.
            Some(_) => TrendKeyed::Reused,
            None => {
                self.write(now, writes);
                self.keyed.record(key, now, &[]);
                TrendKeyed::Applied
            }
        }
    }

    /// Moves the landmark to `target` (a whole number of half-lives later).
    fn rescale(&mut self, target: i64) -> u64 {
        let factor = ((self.landmark_ms - target) / self.h()) as f64;
        let factor = factor.exp2();
        let values: Vec<(String, f64)> = self.values.drain().collect();
        self.order.clear();
        for (m, v) in &values {
            self.set(m, Some(v * factor));
        }
        self.landmark_ms = target;
        values.len() as u64
    }

    fn score(&self, stored: f64, now: Timestamp) -> f64 {
        decayed(stored, now.unix_millis(), self.landmark_ms, self.h())
    }

    /// Ranked entries (positive values) whose score is in `range`, from the `offset`-th
    /// of them counted in `order`, at most `limit`, in that order.
    fn page(
        &self,
        now: Timestamp,
        range: TrendRange,
        order: Order,
        offset: u64,
        limit: u64,
    ) -> TrendPage {
        let now_ms = now.unix_millis();
        let bound = |score: f64| stored_bound(score, now_ms, self.landmark_ms, self.h());
        let (lo, hi) = (range.min().map(bound), range.max().map(bound));
        let in_range =
            |v: f64| v > 0.0 && lo.is_none_or(|lo| v >= lo) && hi.is_none_or(|hi| v <= hi);
        let above = hi.map_or(0, |hi| self.better(hi));
        let run = self
            .order
            .iter()
            .skip_while(|(v, _)| hi.is_some_and(|hi| v.0 > hi))
            .take_while(|(v, _)| in_range(v.0));
        let (offset, limit) = page_positions(0, run.clone().count() as u64, order, offset, limit);
        let items: Vec<&(Desc, String)> = run.skip(offset as usize).take(limit as usize).collect();
        let better = items.first().map_or(0, |(v, _)| self.better(v.0));
        let values: Vec<f64> = items.iter().map(|(v, _)| v.0).collect();
        let ranks = page_ranks(&values, above + offset, better);
        let mut entries: Vec<TrendEntry> = items
            .iter()
            .zip(ranks)
            .map(|((v, m), rank)| TrendEntry {
                rank,
                member: m.clone(),
                score: self.score(v.0, now),
            })
            .collect();
        if order == Order::Asc {
            entries.reverse();
        }
        TrendPage {
            board: self.board.name.clone(),
            at: now.unix_seconds_f64(),
            age_ms: 0,
            entries,
        }
    }

    /// How many members have a stored value above `v`.
    fn better(&self, v: f64) -> u64 {
        self.order.iter().take_while(|(x, _)| x.0 > v).count() as u64
    }

    fn ranked(&self) -> u64 {
        self.order.iter().take_while(|(x, _)| x.0 > 0.0).count() as u64
    }

    /// The member's stored value when it ranks (positive).
    fn ranked_value(&self, member: &str) -> Option<f64> {
        self.values.get(member).copied().filter(|v| *v > 0.0)
    }

    /// How many entries precede the ranked member in the ranking.
    fn position(&self, member: &str) -> Option<u64> {
        let v = self.ranked_value(member)?;
        Some(self.order.range(..(Desc(v), member.to_owned())).count() as u64)
    }

    /// The member's stored value whatever its sign, when it has one (not exactly 0).
    fn any_value(&self, member: &str) -> Option<f64> {
        self.values.get(member).copied().filter(|v| *v != 0.0)
    }

    fn standing(&self, now: Timestamp, member: &Member) -> Option<TrendStanding> {
        let v = self.any_value(member.as_str())?;
        let ranked = self.ranked();
        // A negative score is answered, not ranked: no ranked member is behind it.
        let below = self
            .order
            .iter()
            .filter(|(x, _)| x.0 > 0.0 && x.0 < v)
            .count() as u64;
        Some(TrendStanding {
            member: member.as_str().to_owned(),
            score: self.score(v, now),
            rank: (v > 0.0).then(|| self.better(v) + 1),
            percentile: percentile(below, ranked),
            at: now.unix_seconds_f64(),
            age_ms: 0,
        })
    }

    fn ranks(&self, now: Timestamp, members: &[Member]) -> TrendRanks {
        TrendRanks {
            board: self.board.name.clone(),
            at: now.unix_seconds_f64(),
            age_ms: 0,
            entries: members
                .iter()
                .map(|m| match self.any_value(m.as_str()) {
                    Some(v) => TrendRank {
                        member: m.as_str().to_owned(),
                        score: self.score(v, now),
                        rank: (v > 0.0).then(|| self.better(v) + 1),
                    },
                    None => TrendRank {
                        member: m.as_str().to_owned(),
                        score: 0.0,
                        rank: None,
                    },
                })
                .collect(),
        }
    }

    fn around(&self, now: Timestamp, query: AroundQuery) -> Option<TrendPage> {
        let AroundQuery { member, n, options } = query;
        let pos = self.position(member.as_str())?;
        let (from, count) = around_positions(pos, self.ranked(), n, options.fill);
        let mut page = self.page(now, TrendRange::ALL, Order::Desc, from, count);
        if options.order == Order::Asc {
            page.entries.reverse();
        }
        Some(page)
    }

    fn maintain(&mut self, now: Timestamp, options: TrendOptions) -> TrendMaintenance {
        let mut done = TrendMaintenance::default();
        let now_ms = now.unix_millis();
        if let Some(target) =
            rescale_target(self.landmark_ms, now_ms, self.h(), options.rescale_after)
        {
            done.copied = self.rescale(target);
            done.rescaled = true;
        }
        let bound = stored_bound(
            self.board.config.floor(),
            now_ms,
            self.landmark_ms,
            self.h(),
        );
        let below: Vec<String> = self
            .values
            .iter()
            .filter(|(_, v)| v.abs() < bound)
            .map(|(m, _)| m.clone())
            .collect();
        for m in &below {
            self.set(m, None);
        }
        done.pruned = below.len() as u64;
        done
    }
}

impl MemoryStore {
    /// Creates or finds trending board `name` (see [`Store::create_board`]).
    pub(super) fn create_trending(
        &self,
        name: &BoardName,
        config: &TrendingConfig,
        now: Timestamp,
    ) -> Result<TrendCreated> {
        // The windowed boards' lock guards the shared namespace (always taken first).
        let windowed = self.boards.write().unwrap_or_else(|e| e.into_inner());
        if windowed.contains_key(name) {
            return Err(Error::BoardKind {
                board: name.to_string(),
                kind: "windowed",
            });
        }
        let mut boards = self
            .trending
            .boards
            .write()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = boards.get(name) {
            let existing = lock(entry).board.clone();
            if existing.config == *config {
                return Ok(TrendCreated::Existing(existing));
            }
            return Err(Error::TrendingConflict {
                board: name.to_string(),
                existing: existing.config,
            });
        }
        let board = TrendingBoard {
            name: name.clone(),
            config: *config,
            version: new_version(),
            created_at: now,
        };
        boards.insert(
            name.clone(),
            Arc::new(Mutex::new(MemTrend {
                board: board.clone(),
                landmark_ms: now.unix_millis(),
                values: HashMap::new(),
                order: BTreeSet::new(),
                keyed: KeyedRecords::default(),
            })),
        );
        Ok(TrendCreated::New(board))
    }
}

#[async_trait]
impl TrendingStore for MemoryStore {
    async fn trend_counts(&self, board: &TrendingBoard) -> Result<TrendCounts> {
        self.trending.with(board, |b| TrendCounts {
            members: b.values.len() as u64,
            ranked: b.ranked(),
            landmark_ms: b.landmark_ms,
            rescaling: false,
        })
    }

    async fn trend_write(
        &self,
        at: TrendAt<'_>,
        writes: &[TrendWrite],
        key: Option<&WriteKey>,
    ) -> Result<TrendKeyed> {
        self.trending.with(at.board, |b| match key {
            Some(key) => b.write_keyed(at.now, writes, key),
            None => {
                b.write(at.now, writes);
                TrendKeyed::Applied
            }
        })
    }

    async fn trend_top(&self, at: TrendAt<'_>, page: PageQuery<TrendRange>) -> Result<TrendPage> {
        let (range, order, offset, limit) = page.parts();
        self.trending
            .with(at.board, |b| b.page(at.now, range, order, offset, limit))
    }

    async fn trend_standing(
        &self,
        at: TrendAt<'_>,
        member: &Member,
    ) -> Result<Option<TrendStanding>> {
        self.trending.with(at.board, |b| b.standing(at.now, member))
    }

    async fn trend_ranks(&self, at: TrendAt<'_>, members: &[Member]) -> Result<TrendRanks> {
        self.trending.with(at.board, |b| b.ranks(at.now, members))
    }

    async fn trend_around(
        &self,
        at: TrendAt<'_>,
        query: AroundQuery<'_>,
    ) -> Result<Option<TrendPage>> {
        self.trending.with(at.board, |b| b.around(at.now, query))
    }

    async fn trend_maintain(
        &self,
        at: TrendAt<'_>,
        options: TrendOptions,
    ) -> Result<TrendMaintenance> {
        self.trending
            .with(at.board, |b| b.maintain(at.now, options))
    }
}
