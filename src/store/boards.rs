//! The [`Store`] trait: what every backend means by boards (create, load, write, read,
//! retire, recompute, snapshots), and its accessors to the sub-stores of the other
//! systems, one trait per system beside this file.

use async_trait::async_trait;

use crate::clock::Clock;
use crate::domain::Change;
use crate::domain::ChangeStamp;
use crate::domain::PageQuery;
use crate::domain::Removed;
use crate::domain::RetireReport;
use crate::domain::any_board::{AnyBoard, NewBoard};
use crate::domain::board::{Board, BoardStatus, Created, SlotWrites, WindowAt};
use crate::domain::{AroundOptions, Entry};
use crate::domain::{
    BoardName, Decision, HeldEvent, HeldMember, Member, MemberData, Pin, Timestamp,
};
use crate::domain::{Contributor, Retracted, WindowContributions, WindowContributors};
use crate::domain::{History, Ranks, ScoreRange, Standing, TopPage, WrittenStanding};
use crate::domain::{Layout, RecomputeReport, RelayoutOptions, RelayoutReport, ReshardReport};
use crate::domain::{Snapshot, SnapshotPass, SnapshotRange};
use crate::error::Result;

use super::counters::CounterStore;
use super::keyed::{Keyed, WriteKey};
use super::moderation::ModerationStore;
use super::rates::RateStore;
use super::redis::RetireOptions;
use super::server::ServerStore;
use super::shard_moves::ShardMoves;
use super::stats::StatsStore;
use super::trending::TrendingStore;
use super::write_status::WriteStatus;

/// A board store: what every backend means by boards, and through its accessors its
/// counters, stats, rate windows and trending boards. All methods are safe to call
/// concurrently, from several processes.
///
/// Methods that take a [`Board`] fail with [`Error::BoardChanged`](crate::Error::BoardChanged)
/// when the stored board is gone or is another incarnation (another `version`). What
/// only a store kept in a server has (its memory, its clock, retirement in tuned chunks)
/// is the optional [`ServerStore`], reached through [`server`](Store::server); a store's
/// tuning is its own (the Redis store's: [`RedisOptions`](crate::RedisOptions)).
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// A short name for logs: `"redis"` or `"memory"`.
    fn kind(&self) -> &'static str;

    /// The store's counters (see [`CounterStore`]).
    fn counters(&self) -> &dyn CounterStore;

    /// The store's aggregate statistics (see [`StatsStore`]).
    fn stats(&self) -> &dyn StatsStore;

    /// The store's rate windows (see [`RateStore`]).
    fn rates(&self) -> &dyn RateStore;

    /// The store's trending boards (see [`TrendingStore`]).
    fn trending(&self) -> &dyn TrendingStore;

    /// The store's moderation that spans boards (see [`ModerationStore`]).
    fn moderation(&self) -> &dyn ModerationStore;

    /// The operations of a store kept in a server (see [`ServerStore`]); `None` for a
    /// store without them, which then has no memory limit of its own, shares this
    /// process's clock and retires board by board.
    fn server(&self) -> Option<&dyn ServerStore> {
        None
    }

    /// What the store gives a reshard of a sharded board, when it keeps boards itself
    /// (the memory and Redis stores; not the wrappers above them). Sealed: a seam of
    /// this crate's stores, which a store made elsewhere leaves as `None` (its sharded
    /// boards are not resharded).
    #[allow(private_interfaces)]
    fn shard_moves(&self) -> Option<&dyn ShardMoves> {
        None
    }

    /// Checks that the store answers.
    async fn ping(&self) -> Result<()>;

    /// Creates a board of the kind `config` says, or returns the existing one when its
    /// config is the same, or adds windows to a windowed board when the config only adds
    /// windows larger than the existing ones. Any other difference is
    /// [`Error::BoardConflict`](crate::Error::BoardConflict)
    /// ([`Error::TrendingConflict`](crate::Error::TrendingConflict) for a trending
    /// board); a board of the other kind of that name is
    /// [`Error::BoardKind`](crate::Error::BoardKind).
    async fn create_board(
        &self,
        name: &BoardName,
        config: &NewBoard,
        now: Timestamp,
    ) -> Result<Created<AnyBoard>>;

    /// The board of either kind, if it exists: one load tells its kind.
    async fn load_board(&self, name: &BoardName) -> Result<Option<AnyBoard>>;

    /// Every board of either kind, by name.
    async fn list_boards(&self) -> Result<Vec<AnyBoard>>;

    /// Members per window, live slots and retirement lag.
    async fn describe_board(&self, board: &Board, now: Timestamp) -> Result<BoardStatus>;

    /// Deletes the board and all its data. `false` when it did not exist.
    async fn drop_board(&self, name: &BoardName) -> Result<bool>;

    /// Applies events in order; one status per event. Also freezes every window whose
    /// cutoff at `now` has passed its watermark, so late events skip windows they have
    /// left even before retirement runs. Concurrent calls may be applied together.
    async fn write(&self, w: SlotWrites<'_>) -> Result<Vec<WriteStatus>>;

    /// Applies `writes` at most once for `token` (a job's replayed call counts once):
    /// `None` when the token was applied before.
    async fn write_once(&self, w: SlotWrites<'_>, token: &str) -> Result<Option<Vec<WriteStatus>>>;

    /// Applies `writes` once for `key` while its record lives: the first call applies
    /// them and records, in the same atomic step, its `now` and what it did; a later call
    /// with the same name and fingerprint applies nothing and answers
    /// [`Keyed::Replayed`], one with another fingerprint [`Keyed::Reused`]. A record
    /// older than `key.ttl` by `now` is as good as absent, and the store forgets it by
    /// itself (memory stays bounded); dropping the board drops its records.
    async fn write_keyed(&self, w: SlotWrites<'_>, key: &WriteKey) -> Result<Keyed>;

    /// Applies `writes` as [`write`](Store::write) does (with `key`, once, as
    /// [`write_keyed`](Store::write_keyed) does), in one atomic step that also reads, for
    /// each distinct member of `writes` (in order of first appearance) and each of
    /// `windows` (indexes, in the order given), the member's total and rank just before
    /// and just after applying: nothing else can be applied between the reads and the
    /// write. One [`WrittenStanding`] per member (the caller keeps those with an event
    /// applied); none when nothing was applied (a keyed replay, a reused key). Never
    /// batched with other callers' writes; `writes` is at most 1,000 events (one keyed span).
    async fn write_standing(
        &self,
        w: SlotWrites<'_>,
        windows: &[usize],
        key: Option<&WriteKey>,
    ) -> Result<(Keyed, Vec<WrittenStanding>)>;

    /// A page of window `at`: the ranking's
    /// members whose totals are in `range`, from the `offset`-th of them counted in
    /// `order` (from the bottom when ascending), in that order; ranks are ranks in the
    /// whole ranking.
    async fn top(&self, at: WindowAt<'_>, page: PageQuery<ScoreRange>) -> Result<TopPage>;

    /// Each of `members`' score (any sign), rank (`None` unless positive) and
    /// percentile, in order, read at one instant; `None` for a member that holds no
    /// total in the window.
    async fn standings(
        &self,
        at: WindowAt<'_>,
        members: &[Member],
    ) -> Result<Vec<Option<Standing>>>;

    /// The score and rank of each of `members` (in order, duplicates kept), read in one
    /// step: its total whatever its sign (0 without one), no rank unless positive.
    async fn ranks(&self, at: WindowAt<'_>, members: &[Member]) -> Result<Ranks>;

    /// For each of `members`, in order, read at one instant: up to `n` entries on each
    /// side of it (a full page of `2n + 1` shifted at the ends with `options.fill`), in
    /// `options.order`; `None` for a member without a ranked total.
    async fn arounds(
        &self,
        at: WindowAt<'_>,
        members: &[Member],
        n: u64,
        options: AroundOptions,
    ) -> Result<Vec<Option<TopPage>>>;

    /// The member's non-zero slot values in the largest window.
    async fn history(&self, board: &Board, now: Timestamp, member: &Member) -> Result<History>;

    /// What `by` gave inside each window of `board` as retired so far (a board that
    /// keeps contributors; nothing on others), window by window, smallest first.
    async fn contributions(
        &self,
        board: &Board,
        by: &Contributor,
    ) -> Result<Vec<WindowContributions>>;

    /// Who gave to `member` inside each window of `board` as retired so far (a board that
    /// keeps contributors; nothing on others), window by window, smallest first, the
    /// first `limit` contributors of each.
    async fn member_contributions(
        &self,
        board: &Board,
        member: &Member,
        limit: usize,
    ) -> Result<Vec<WindowContributors>>;

    /// Takes back every contribution of `by` to `board` (which keeps contributors) in
    /// the slots starting at or after `from` (every live slot when `None`): from every
    /// window, from the members' totals and from what its caps counted, so that each
    /// window is what it would be had those events never been written (the budget they
    /// used is given back). In bounded steps, each applied whole: one cut short and run
    /// again takes each contribution back once. A watched top's changes record `stamp`.
    async fn retract(
        &self,
        board: &Board,
        by: &Contributor,
        from: Option<i64>,
        stamp: ChangeStamp,
    ) -> Result<Retracted>;

    /// Quarantines `by` on `board` (which keeps contributors; `quarantined`), or releases
    /// it: while quarantined, what its events admitted counts in no member's total, its
    /// writes answering as ever; released, what of it is still inside the windows counts
    /// again. In bounded steps, each applied whole: one cut short and run again finishes
    /// it. Returns how many window sums it moved. A watched top's changes record `stamp`.
    async fn quarantine(
        &self,
        board: &Board,
        by: &Contributor,
        quarantined: bool,
        stamp: ChangeStamp,
    ) -> Result<u64>;

    /// Removes the member from every slot and window; a watched top's changes record
    /// `stamp`.
    async fn remove_member(
        &self,
        board: &Board,
        member: &Member,
        stamp: ChangeStamp,
    ) -> Result<Removed>;

    /// Hides each of `members` (`hidden`) or shows it again, in every window at once,
    /// each member in one atomic step (a sharded board: on its shard; refused while a
    /// reshard runs). A hidden member keeps counting exactly (writes, retirement,
    /// removal, recompute), but no ranking lists it and the ranks below it close up; its
    /// standing says `hidden`. Shown again, it ranks as its totals give. Returns how many
    /// changed (the others already were so).
    /// A watched top's changes record `now` as their time.
    async fn set_hidden(
        &self,
        board: &Board,
        members: &[Member],
        hidden: bool,
        now: Timestamp,
    ) -> Result<u64>;

    /// Every member the board hides, with its stored total in `at`'s window (`None`:
    /// none), in [`ranked_hidden`](super::ranked_hidden) order.
    async fn hidden_members(&self, at: WindowAt<'_>) -> Result<Vec<(String, Option<i64>)>>;

    /// A moderator's decision on `member` (docs/design.md, "Review gate"): `allow` puts it
    /// among the board's allowed members (held, it goes back to the ranking), `deny` hides
    /// it. Then the gate applies. Whether it changed anything.
    async fn review(
        &self,
        board: &Board,
        member: &Member,
        decision: Decision,
        now: Timestamp,
    ) -> Result<bool>;

    /// The members the board's review gate holds, each with its total in `at`'s window
    /// and the rank it would have there, in [`ranked_held`](super::ranked_held) order.
    async fn held_members(&self, at: WindowAt<'_>) -> Result<Vec<HeldMember>>;

    /// Up to `limit` events of members the board's review gate held, after the event
    /// `after` (from the oldest kept when `None`), oldest first: what the review webhook
    /// delivers. About the newest 10,000 are kept.
    async fn held_events(
        &self,
        board: &Board,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<HeldEvent>>;

    /// The id of the newest held event delivered (by the review webhook, in any
    /// process), `None` before the first; with `delivered`, first records that the events
    /// through that id were delivered (the cursor never moves back).
    async fn held_cursor(&self, board: &Board, delivered: Option<&str>) -> Result<Option<String>>;

    /// Up to `limit` changes of the board's watched tops after the change `after` (from
    /// the oldest kept when `None`), oldest first (docs/design.md, "Rank changes");
    /// [`Error::ChangesTrimmed`](crate::Error::ChangesTrimmed) when some of those were
    /// trimmed. With `newest_first`, read the other way: the newest `limit` before
    /// `after` (from the newest when `None`), newest first; never refused.
    async fn changes(
        &self,
        board: &Board,
        after: Option<&str>,
        limit: usize,
        newest_first: bool,
    ) -> Result<Vec<Change>>;

    /// The id of the newest change the changes webhook delivered (in any process), `None`
    /// before the first; with `delivered`, first records that the changes through that id
    /// were delivered (the cursor never moves back).
    async fn changes_cursor(
        &self,
        board: &Board,
        delivered: Option<&str>,
    ) -> Result<Option<String>>;

    /// Sets the board's pins (the members its top's first page shows at their
    /// positions) under a new version, so every cached copy reloads: the board as stored
    /// now. [`Error::BoardChanged`](crate::Error::BoardChanged) when `board` is not the
    /// stored version (another change came first).
    async fn set_pins(&self, board: &Board, pins: &[Pin]) -> Result<Board>;

    /// Sets each member's data (in order: a member named twice keeps the later) where the
    /// member holds a total in the board's largest window, checked in the same atomic step;
    /// `false` where it holds none (nothing kept). A member's data is deleted in the same
    /// atomic step as its total in the largest window, however that goes (a write to 0,
    /// retirement, removal, a drop).
    async fn set_member_data(
        &self,
        board: &Board,
        entries: &[(Member, MemberData)],
    ) -> Result<Vec<bool>>;

    /// The data of each of `members`, in order (`None`: none).
    async fn member_data(
        &self,
        board: &Board,
        members: &[Member],
    ) -> Result<Vec<Option<MemberData>>>;

    /// Deletes a member's data: whether it had any.
    async fn delete_member_data(&self, board: &Board, member: &Member) -> Result<bool>;

    /// Windows added to the board whose totals are still to be built (by `recompute`).
    async fn pending_windows(&self, board: &Board) -> Result<Vec<usize>>;

    /// Rebuilds the totals of window `window` from the live slots, exactly, while writes
    /// go on; retirement of the board waits meanwhile.
    async fn recompute(&self, board: &Board, window: usize) -> Result<RecomputeReport>;

    /// Sets the layout of the board's slots created from now on (its stored config says
    /// it); live slots keep theirs until they retire, or, with `options.now`, are
    /// converted now. Exact while writes, reads and retirement go on.
    async fn relayout(
        &self,
        board: &Board,
        layout: Layout,
        options: RelayoutOptions,
    ) -> Result<RelayoutReport>;

    /// Changes a sum board's shard count to `shards`, moving the members whose shard
    /// changes, exactly while writes, reads and retirement go on (the moves write at
    /// `clock`'s time); finishes one cut short. Only the sharded store (which every
    /// `Rollboard` wraps its store in) does this; others refuse.
    async fn reshard(
        &self,
        board: &Board,
        shards: u32,
        clock: &dyn Clock,
    ) -> Result<ReshardReport> {
        let _ = (shards, clock);
        Err(crate::error::Error::store(format!(
            "board {:?}: this store does not change shard counts (use a Rollboard)",
            board.name.as_str()
        )))
    }

    /// Retires everything overdue at `now`, window by window, as the store's own tuning
    /// says (`None`) or as `options` say for this pass (a store without such tuning, the
    /// memory store, ignores them); a store with slot layouts then compacts the slot that
    /// just closed (a compact board's open slot is written plain:
    /// `docs/compact-slots.md`, "Compact slots").
    async fn retire(
        &self,
        board: &Board,
        now: Timestamp,
        options: Option<RetireOptions>,
    ) -> Result<RetireReport>;

    /// Takes the board's period snapshots at the boundary `slot_start(now)`, if its
    /// stored config asks for them ([`SnapshotPass::Off`] when not): once retirement
    /// through the boundary is complete for every window, appends each window's top to
    /// its snapshots, at most once per window and boundary however many callers race
    /// (an older boundary than the newest taken is never appended). Windows still being
    /// built are skipped. With `tops`, appends those instead, `tops[j]` when given as
    /// window `j`'s: how a sharded board takes its snapshots, its leaders merged from its
    /// shards, whose retirement through the boundary the caller has checked.
    async fn take_snapshots(
        &self,
        board: &Board,
        now: Timestamp,
        tops: Option<&[Option<Vec<Entry>>]>,
    ) -> Result<SnapshotPass>;

    /// Window `window`'s snapshots with boundaries in `range`, newest first (or oldest
    /// first, as `range` says).
    async fn snapshots(
        &self,
        board: &Board,
        window: usize,
        range: SnapshotRange,
    ) -> Result<Vec<Snapshot>>;

    /// The newest boundary of window `window` whose snapshot was delivered (to the
    /// snapshot webhook, by any process), `None` before the first; with `delivered`,
    /// first records that the snapshots through that boundary were delivered (the
    /// cursor never moves back).
    async fn snapshot_cursor(
        &self,
        board: &Board,
        window: usize,
        delivered: Option<i64>,
    ) -> Result<Option<i64>>;
}

/// Creates a fresh board version: random, below 2^53 so every language reads it exactly.
pub(crate) fn new_version() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    (h.finish() & ((1 << 53) - 1)).max(1)
}
