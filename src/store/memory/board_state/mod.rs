//! One board held in memory: the same watermark model as the Redis scripts, run under a
//! lock, so that the two stores give the same answers. Window `j` freezes the slots up to
//! its cutoff (its watermark) and retires each slot that left it; what a slot keeps per
//! member, and how a write, a retirement or a rebuild uses it, is the board's family's
//! (see [`family`](super::family): stages per window on a sum board, one value on a
//! max, min or latest board). Reads are in `read.rs`, period snapshots in
//! `snapshots.rs`.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

mod contributors;
mod read;
mod review;
mod snapshots;
mod watch;

use super::family::{Family, Slots};
use super::keyed::KeyedRecords;
use super::latest::LATEST;
use super::maxima::MAXIMA;
use super::sums::Sums;
use super::totals::Totals;
use crate::domain::ChangeStamp;
use crate::domain::RecomputeReport;
use crate::domain::Removed;
use crate::domain::RetireReport;
use crate::domain::Snapshot;
use crate::domain::board::{Board, BoardStatus, WindowStatus};
use crate::domain::{Aggregate, ChangeCause, Member, MemberData, Timestamp};
use crate::domain::{WindowStanding, WrittenStanding};
use crate::domain::{WindowState, complete_from};
use crate::store::{Keyed, SlotWrite, WriteKey, WriteStatus};

/// A board's whole state.
#[derive(Debug)]
pub(super) struct MemBoard {
    pub board: Board,
    /// What the board keeps per slot and member (from its aggregate).
    family: &'static dyn Family,
    /// Per window: newest slot frozen out of it (writes to older slots skip it).
    watermarks: Vec<i64>,
    /// Per window: newest slot fully subtracted from its totals.
    retired: Vec<i64>,
    /// Live slots: those the largest window has not retired yet.
    slots: Slots,
    /// Per window: member totals.
    totals: Vec<Totals>,
    /// The events with a contributor, on a board that keeps them.
    contributions: contributors::Contributions,
    /// Per window: from which slot a window added later holds data (never "building"
    /// here: the memory store builds an added window at once).
    states: Vec<WindowState>,
    /// Tokens of writes applied exactly once.
    journal: HashSet<String>,
    /// Writes recorded under idempotency keys, until their deadline.
    keyed: KeyedRecords,
    /// Per window: its period snapshots, oldest first.
    snapshots: Vec<VecDeque<Snapshot>>,
    /// Per window: the newest boundary whose snapshot was delivered.
    snapshot_cursors: Vec<Option<i64>>,
    /// Member data, of members holding a total in the largest window only (as
    /// `data_{b}`: it goes whenever that total does).
    data: HashMap<String, MemberData>,
    /// The review gate's state: the allowed members, and those it holds.
    review: review::Review,
    /// The watched tops as last recorded, and their changes.
    watching: watch::Watching,
    /// On a shard of a sharded board a reshard is taking members from: those moved off
    /// it, and those being moved (see `ShardMoves`).
    pub moves: Moves,
}

/// A shard's part in a reshard: members moved off it, and each member being moved with
/// what it takes (a stash).
#[derive(Debug, Default)]
pub(super) struct Moves {
    pub moved: HashSet<String>,
    pub stashed: HashMap<String, String>,
    /// On shard 0: the reshard's lease, its holder and when it ends (unix ms).
    pub lease: Option<(String, i64)>,
}

/// The family of a board that keeps `aggregate` (a min board is a max board of negated
/// values): the one place the memory store looks at a board's aggregate.
fn family_of(aggregate: Aggregate) -> &'static dyn Family {
    match aggregate {
        Aggregate::Sum => &Sums,
        Aggregate::Max | Aggregate::Min => &MAXIMA,
        Aggregate::Latest => &LATEST,
    }
}

impl MemBoard {
    pub fn new(board: Board, now: Timestamp) -> Self {
        let n = board.config.windows().len();
        let cutoffs: Vec<i64> = (0..n).map(|j| board.config.cutoff(j, now)).collect();
        let (rank, ties) = (board.config.rank(), board.config.ties());
        let contributions = contributors::Contributions::new(
            board.config.per_contributor_member(),
            board.config.per_contributor(),
            n,
        );
        MemBoard {
            family: family_of(board.config.aggregate()),
            board,
            watermarks: cutoffs.clone(),
            retired: cutoffs,
            slots: BTreeMap::new(),
            totals: (0..n).map(|_| Totals::new(rank, ties)).collect(),
            contributions,
            states: vec![WindowState::default(); n],
            journal: HashSet::new(),
            keyed: KeyedRecords::default(),
            snapshots: vec![VecDeque::new(); n],
            snapshot_cursors: vec![None; n],
            data: HashMap::new(),
            review: review::Review::default(),
            watching: watch::Watching::default(),
            moves: Moves::default(),
        }
    }

    /// Applies `writes` unless `token` was applied before.
    pub fn write_once(
        &mut self,
        now: Timestamp,
        writes: &[SlotWrite],
        token: &str,
    ) -> Option<Vec<WriteStatus>> {
        self.journal
            .insert(token.to_owned())
            .then(|| self.write(now, writes))
    }

    /// Applies `writes` once for `key` while its record lives (see `Store::write_keyed`).
    pub fn write_keyed(&mut self, now: Timestamp, writes: &[SlotWrite], key: &WriteKey) -> Keyed {
        if let Some(answer) = self.keyed.replay(key, now) {
            return answer;
        }
        let statuses = self.write(now, writes);
        self.keyed.record(key, now, &statuses);
        Keyed::Applied(statuses)
    }

    /// Applies `writes` (once for `key`, if given), reading each distinct member's total
    /// and rank in `windows` before and after, under the board's lock (see
    /// `Store::write_standing`).
    pub fn write_standing(
        &mut self,
        now: Timestamp,
        writes: &[SlotWrite],
        windows: &[usize],
        key: Option<&WriteKey>,
    ) -> (Keyed, Vec<WrittenStanding>) {
        if let Some(answer) = key.and_then(|key| self.keyed.replay(key, now)) {
            return (answer, Vec::new());
        }
        let mut seen = HashSet::new();
        let members: Vec<&str> = writes
            .iter()
            .map(|w| w.member.as_str())
            .filter(|m| seen.insert(*m))
            .collect();
        // A quarantined contributor's write answers as if it were not: its held sums
        // count in the standing it reads, the member's and every other's.
        let writers: HashSet<&crate::domain::Contributor> =
            writes.iter().filter_map(|w| w.by.as_ref()).collect();
        let writers: Vec<&crate::domain::Contributor> = writers.into_iter().collect();
        let read = |state: &Self| -> Vec<Vec<(i64, Option<u64>)>> {
            let seen: Vec<Cow<Totals>> = windows
                .iter()
                .map(|j| state.seen_by(*j, &writers))
                .collect();
            let read = |m: &&str| seen.iter().map(|t| standing_in(t, m)).collect();
            members.iter().map(read).collect()
        };
        let before = read(self);
        let statuses = self.write(now, writes);
        if let Some(key) = key {
            self.keyed.record(key, now, &statuses);
        }
        let standings = members
            .iter()
            .zip(before.into_iter().zip(read(self)))
            .map(|(member, (before, after))| WrittenStanding {
                member: member.to_string(),
                windows: windows
                    .iter()
                    .zip(before.into_iter().zip(after))
                    .map(
                        |(j, ((score_before, rank_before), (score, rank)))| WindowStanding {
                            window: self.board.config.windows()[*j],
                            score,
                            rank,
                            score_before: Some(score_before),
                            rank_before,
                        },
                    )
                    .collect(),
            })
            .collect();
        (Keyed::Applied(statuses), standings)
    }

    /// Window `window`'s totals as `writers` see them: with what those of them that are
    /// quarantined gave each member counted (a hidden member's stay hidden). A copy of
    /// the window when there is such a part: the reference a store's ranks are tested
    /// against, paid only by a quarantined contributor's write asking its standing.
    fn seen_by(&self, window: usize, writers: &[&crate::domain::Contributor]) -> Cow<'_, Totals> {
        let held = self.contributions.held_parts(window, writers);
        if held.is_empty() {
            return Cow::Borrowed(&self.totals[window]);
        }
        let mut totals = self.totals[window].clone();
        for (member, part) in held {
            totals.add(&member, part);
        }
        Cow::Owned(totals)
    }

    /// Adds the larger windows of `board` (a new incarnation of this one's config plus
    /// windows), built at once from the live slots.
    pub fn extend(&mut self, board: Board, now: Timestamp) {
        // Retire first when the largest window froze slots it has not retired, so none is
        // half-consumed by it; then the new windows start at its watermark (as in Redis:
        // `extend_board.lua` refuses until then, and the caller retires).
        let old = self.windows();
        if self.retired[old - 1] < self.watermarks[old - 1] {
            self.retire(now);
        }
        let n = board.config.windows().len();
        let last = self.watermarks[old - 1];
        let since = last + board.config.slot().secs_i64();
        self.family.extend(&mut self.slots, n);
        // A new version of the same incarnation: its idempotency records stay, as
        // Redis's, whose names carry the incarnation.
        self.board = board;
        for j in old..n {
            self.watermarks.push(last);
            self.retired.push(last);
            let totals = self.fresh_totals();
            self.totals.push(totals);
            self.snapshots.push(VecDeque::new());
            self.snapshot_cursors.push(None);
            self.states.push(WindowState {
                since: Some(since),
                building: false,
            });
            self.recompute(j);
        }
    }

    fn windows(&self) -> usize {
        self.totals.len()
    }

    /// Empty totals for a window of this board, its hidden members hidden.
    fn fresh_totals(&self) -> Totals {
        let mut totals = Totals::new(self.board.config.rank(), self.board.config.ties());
        for member in self.totals[0].hidden() {
            totals.hide(member);
        }
        totals
    }

    /// Hides `member` in every window, or shows it again (see `Totals::hide`); false
    /// when it already was so.
    pub fn set_hidden(&mut self, member: &Member, hidden: bool, now: Timestamp) -> bool {
        if self.review.held.contains(member.as_str()) {
            // Held by the review gate: hiding it only marks it hidden; showing does nothing.
            return hidden && self.review.held.remove(member.as_str());
        }
        let changed = self.move_hidden(member.as_str(), hidden);
        self.changed(
            if hidden {
                ChangeCause::Hide
            } else {
                ChangeCause::Show
            },
            Some(now.unix_millis()),
        );
        changed
    }

    /// Hides `member` in every window's totals, or shows it again.
    fn move_hidden(&mut self, member: &str, hidden: bool) -> bool {
        let mut changed = false;
        for totals in &mut self.totals {
            changed |= if hidden {
                totals.hide(member)
            } else {
                totals.show(member)
            };
        }
        changed
    }

    /// The hidden members and their totals in `window` (see `Store::hidden_members`).
    pub fn hidden_members(&self, window: usize) -> Vec<(String, Option<i64>)> {
        let totals = &self.totals[window];
        let members = totals.hidden().filter(|m| !self.review.held.contains(*m));
        let members = members.map(|m| (m.to_owned(), totals.held(m)));
        crate::store::ranked_hidden(members.collect())
    }

    /// Moves every window's watermark up to its cutoff at `now`.
    fn freeze(&mut self, now: Timestamp) {
        self.review.seen(now);
        for j in 0..self.windows() {
            let cutoff = self.board.config.cutoff(j, now);
            self.watermarks[j] = self.watermarks[j].max(cutoff);
        }
    }

    pub fn write(&mut self, now: Timestamp, writes: &[SlotWrite]) -> Vec<WriteStatus> {
        self.freeze(now);
        let statuses = writes.iter().map(|w| self.write_one(w)).collect();
        self.changed(ChangeCause::Write, Some(now.unix_millis()));
        statuses
    }

    fn write_one(&mut self, w: &SlotWrite) -> WriteStatus {
        let n = self.windows();
        let member = w.member.as_str();
        let stage = self.watermarks.iter().filter(|wm| **wm >= w.slot).count();
        if stage == n {
            return WriteStatus::TooLate;
        }
        let counting = &mut self.totals[stage..];
        let status = if w.by.is_some() {
            // The slot is live from its first event, with or without a contributor.
            self.slots.entry(w.slot).or_default();
            // The slots the largest window froze but has not retired use no budget.
            let left = self.retired[n - 1] + 1..=self.watermarks[n - 1];
            self.contributions.write(counting, stage, w, left)
        } else {
            self.family.write(&mut self.slots, counting, stage, n, w)
        };
        if matches!(status, WriteStatus::Applied | WriteStatus::Counted(_)) {
            self.drop_data_without_total(member);
        }
        status
    }

    pub fn retire(&mut self, now: Timestamp) -> RetireReport {
        self.freeze(now);
        let n = self.windows();
        let mut report = RetireReport {
            complete: true,
            ..RetireReport::default()
        };
        for j in 0..n {
            let cutoff = self.board.config.cutoff(j, now);
            if self.retired[j] >= cutoff {
                continue;
            }
            let due: Vec<i64> = self
                .slots
                .range(self.retired[j] + 1..=cutoff)
                .map(|(s, _)| *s)
                .collect();
            for s in due {
                let mut left =
                    self.family
                        .retire(&mut self.slots, &mut self.totals, j, s, &mut report);
                let totals = &mut self.totals[j];
                self.contributions
                    .retire(totals, j, s, &mut report, &mut left);
                report.slots_retired += 1;
                if j + 1 == n {
                    for member in &left {
                        self.data.remove(member);
                    }
                    self.slots.remove(&s);
                }
            }
            self.retired[j] = self.retired[j].max(cutoff);
        }
        // Every slot retired left its windows by the boundary of now's slot.
        let boundary = self.board.config.slot_start(now) * 1000;
        self.changed(ChangeCause::Retire, Some(boundary));
        report
    }

    /// Sets the board's config to `config`, which differs in its live options only.
    /// A changed gate applies first (its holds recorded as hides), as on Redis.
    pub fn set_config(&mut self, config: crate::domain::BoardConfig) {
        let staged = config
            .clone()
            .with_watch(self.board.config.watch().to_vec());
        self.board.config = staged.unwrap_or_else(|_| config.clone());
        self.changed(ChangeCause::Hide, None);
        self.board.config = config;
        self.record_changes(ChangeCause::Watch, None);
    }

    /// After a change of the totals: the review gate applies, then the watched tops'
    /// changes are recorded.
    fn changed(&mut self, cause: ChangeCause, at: Option<i64>) {
        self.regate();
        self.record_changes(cause, at);
    }

    /// Forgets `tokens` of writes applied once.
    pub fn forget_tokens(&mut self, tokens: &[String]) {
        for token in tokens {
            self.journal.remove(token);
        }
    }

    /// Every member holding a value in a live slot.
    pub fn slot_members(&self) -> HashSet<&str> {
        self.slots
            .values()
            .flat_map(|slot| slot.keys().map(String::as_str))
            .collect()
    }

    /// How many slots are live (not retired by the largest window).
    pub fn live_slots(&self) -> usize {
        self.slots.len()
    }

    /// Rebuilds window `window`'s totals from what its slots keep (the family's
    /// rebuild: the stages it counts on a sum board, the slots it has not frozen on a
    /// max or latest board). The largest window's keeps data only for the members it
    /// holds.
    pub fn recompute(&mut self, window: usize) -> RecomputeReport {
        let mut totals = self.fresh_totals();
        let from = self.watermarks[window] + 1;
        let scanned = self.family.rebuild(&self.slots, window, from, &mut totals);
        self.totals[window] = totals;
        if window + 1 == self.windows() {
            // A member whose total in the largest window was drift left it: its data too.
            let largest = &self.totals[window];
            self.data.retain(|member, _| largest.held(member).is_some());
        }
        self.changed(ChangeCause::Recompute, None);
        RecomputeReport {
            fields_scanned: scanned,
            ..RecomputeReport::of(self.board.config.windows()[window])
        }
    }

    pub fn remove_member(&mut self, member: &Member, stamp: ChangeStamp) -> Removed {
        let member = member.as_str();
        let slot_values = self
            .family
            .remove(&mut self.slots, &mut self.totals, member)
            + self.contributions.remove(&mut self.totals, member);
        self.drop_data_without_total(member);
        self.changed(stamp.cause, Some(stamp.now.unix_millis()));
        Removed { slot_values }
    }

    /// Takes back `by`'s contributions in the slots from `from` on (see
    /// [`Store::retract`](crate::store::Store::retract)).
    pub fn retract(
        &mut self,
        by: &crate::domain::Contributor,
        from: Option<i64>,
        stamp: ChangeStamp,
    ) -> crate::domain::Retracted {
        let mut retracted = crate::domain::Retracted::default();
        let changed = self
            .contributions
            .retract(&mut self.totals, by, from, &mut retracted);
        for member in &changed {
            self.drop_data_without_total(member);
        }
        if retracted != crate::domain::Retracted::default() {
            self.changed(stamp.cause, Some(stamp.now.unix_millis()));
        }
        retracted
    }

    /// Quarantines `by` (`hold`) or releases it (see
    /// [`Store::quarantine`](crate::store::Store::quarantine)): the window sums moved.
    pub fn quarantine(
        &mut self,
        by: &crate::domain::Contributor,
        hold: bool,
        stamp: ChangeStamp,
    ) -> u64 {
        let (moved, changed) = self.contributions.quarantine(&mut self.totals, by, hold);
        for member in &changed {
            self.drop_data_without_total(member);
        }
        if !changed.is_empty() {
            self.changed(stamp.cause, Some(stamp.now.unix_millis()));
        }
        moved
    }

    /// What `by` gave inside each window.
    pub fn contributions(
        &self,
        by: &crate::domain::Contributor,
    ) -> Vec<crate::domain::WindowContributions> {
        self.contributions.of(self.board.config.windows(), by)
    }

    /// Who gave to `member` inside each window, the first `limit` of each.
    pub fn member_contributions(
        &self,
        member: &Member,
        limit: usize,
    ) -> Vec<crate::domain::WindowContributors> {
        let windows = self.board.config.windows();
        self.contributions.given_to(windows, member.as_str(), limit)
    }

    /// Deletes `member`'s data unless it holds a total in the largest window.
    fn drop_data_without_total(&mut self, member: &str) {
        let largest = self.totals.last().expect("a board has a window");
        if !self.data.is_empty() && largest.held(member).is_none() {
            self.data.remove(member);
        }
    }

    /// Sets each member's data where it holds a total in the largest window (as
    /// `data_set.lua`).
    pub fn set_member_data(&mut self, entries: &[(Member, MemberData)]) -> Vec<bool> {
        let largest = self.totals.last().expect("a board has a window");
        entries
            .iter()
            .map(|(member, data)| {
                let held = largest.held(member.as_str()).is_some();
                if held {
                    self.data.insert(member.as_str().to_owned(), data.clone());
                }
                held
            })
            .collect()
    }

    /// The data of each of `members`.
    pub fn member_data(&self, members: &[Member]) -> Vec<Option<MemberData>> {
        members
            .iter()
            .map(|m| self.data.get(m.as_str()).cloned())
            .collect()
    }

    /// Deletes a member's data: whether it had any.
    pub fn delete_member_data(&mut self, member: &Member) -> bool {
        self.data.remove(member.as_str()).is_some()
    }

    pub fn describe(&self, now: Timestamp) -> BoardStatus {
        let config = &self.board.config;
        let windows = (0..self.windows())
            .map(|j| {
                let (from, to) = self.coverage(j, now);
                WindowStatus {
                    window: config.windows()[j],
                    members: self.totals[j].len() as u64,
                    ranked: self.totals[j].ranked(),
                    from,
                    to,
                    retired_through: self.retired[j],
                    lag_seconds: (config.window_start(j, now) - from).max(0) as u64,
                    building: self.states[j].building,
                    complete_from: complete_from(config, j, self.states[j].since),
                }
            })
            .collect();
        BoardStatus {
            name: self.board.name.clone(),
            config: config.clone(),
            created_at: crate::domain::board::to_datetime(self.board.created_at),
            live_slots: self.slots.len() as u64,
            windows,
        }
    }
}

/// A member's total in `totals` (0 without one, or hidden) and its rank, if ranked.
fn standing_in(totals: &Totals, member: &str) -> (i64, Option<u64>) {
    let score = totals.get(member).unwrap_or(0);
    let rank = (totals.get(member).is_some() && totals.rank_rule().ranks(score))
        .then(|| totals.rank(member, score));
    (score, rank)
}
