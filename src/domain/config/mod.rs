//! `BoardConfig`: a board's slot length, windows and alignment, and the window arithmetic.
//!
//! A board has a slot length `L` and windows `W1 < W2 < …`, each a multiple of `L`.
//! `slot_start(t) = floor((t - offset) / L) * L + offset`. At time `now`, window `W`
//! contains exactly the events whose slot satisfies `slot > slot_start(now) - W`: the
//! current, partial slot plus the `W/L - 1` before it.

use serde::{Deserialize, Serialize};

use super::error::Error;
use crate::domain::{
    Aggregate, ChangesKept, Layout, RankedTotals, ReviewPolicy, SnapshotPolicy, Span, Ties,
    Timestamp, Watch,
};

/// A board's configuration. Always valid once constructed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawConfig", into = "RawConfig")]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct BoardConfig {
    /// Slot length.
    slot: Span,
    /// Windows, smallest first, each a multiple of the slot length.
    windows: Vec<Span>,
    /// Slot alignment offset in seconds (`0 <= offset < slot`).
    #[cfg_attr(feature = "server", schema(default = 0))]
    offset: i64,
    /// How equal totals share ranks; set when the board is created, never changed.
    #[cfg_attr(feature = "server", schema(default = "competition"))]
    ties: Ties,
    /// What the board keeps of a member's events in a window: their sum (the default),
    /// their highest value, their lowest (ranked lowest first) or the newest one's; set
    /// when the board is created, never changed. Absent from a config read back when
    /// `sum`.
    #[cfg_attr(feature = "server", schema(default = "sum", required = false))]
    aggregate: Aggregate,
    /// Which totals are ranked: on a sum board positive ones (the default) or every
    /// non-zero one (a net-vote board); on a max, min or latest board every value (`all`, the
    /// only choice there); set when the board is created, never changed. Absent from a
    /// config read back when the default.
    #[cfg_attr(feature = "server", schema(default = "positive", required = false))]
    rank: RankedTotals,
    /// Period snapshots of every window's top at each slot boundary; none when absent.
    /// May be added, changed or removed on an existing board (it changes no data).
    #[cfg_attr(feature = "server", schema(nullable = false))]
    snapshots: Option<SnapshotPolicy>,
    /// The review gate: members nobody reviewed are held out of the public ranking while
    /// they would rank `above_rank` or better (see `GET /v1/boards/{board}/review`); none
    /// when absent. Sum boards ranking by competition or position, one shard. May be
    /// added, changed or removed on an existing board.
    #[cfg_attr(feature = "server", schema(nullable = false))]
    review: Option<ReviewPolicy>,
    /// Watched tops: for each, the changes of the window's first `top` members are
    /// recorded (see `GET /v1/boards/{board}/changes`); none when empty. Sum boards of one
    /// shard, one watch per window. May be added, changed or removed on an existing board.
    #[cfg_attr(feature = "server", schema(required = false))]
    watch: Vec<Watch>,
    /// How many changes of the watched tops are kept, and for how long (the newest 10000
    /// for 7 days when absent). May be changed on an existing board.
    #[cfg_attr(feature = "server", schema(nullable = false))]
    changes: Option<ChangesKept>,
    /// How slot data is kept in Redis (see the `Layout` schema); absent: the store's
    /// default.
    /// Changed on a live board by `rollboard relayout`, never by a PUT.
    #[cfg_attr(feature = "server", schema(nullable = false))]
    layout: Option<Layout>,
    /// How many shards the board's members are spread over (1 to 32): each shard keeps
    /// its own slots, totals and retirement under its own Redis Cluster hash tag, so one
    /// board's work spreads over several masters; every read is exact across them. Set
    /// when the board is created. Absent from a config read back when 1.
    #[cfg_attr(
        feature = "server",
        schema(default = 1, minimum = 1, maximum = 32, required = false)
    )]
    shards: u32,
    /// What one contributor's events (`by`) may count for one member in a window: a
    /// window's total for a member sums, per contributor, their deltas to it inside the
    /// window clamped to ±N (so 1 counts distinct contributors, net of unlikes); events
    /// without `by` count in full. Sum boards of one shard; set when the board is
    /// created, never changed. A board with it keeps who gave each event (see
    /// `GET /v1/contributors/{by}`); on other boards `by` is checked and not kept.
    #[cfg_attr(
        feature = "server",
        schema(minimum = 1, maximum = 1000000000, nullable = false)
    )]
    per_contributor_member: Option<u64>,
    /// A budget per contributor (`by`): what their likes may count in all, over every
    /// member, inside the largest window. The counted part of a like is fixed when it
    /// is written (`min(delta, N - what their counted likes already use there)`, in
    /// write order) and counts the same in every window it is in; an unlike takes back
    /// at most what their counted likes gave that member, and gives no budget back. Sum
    /// boards of one shard; set when the board is created, never changed; it may be
    /// combined with `per_contributor_member`, which then clamps the counted parts.
    #[cfg_attr(
        feature = "server",
        schema(minimum = 1, maximum = 1000000000, nullable = false)
    )]
    per_contributor: Option<u64>,
}

/// The unvalidated shape of a config, as it arrives over the wire.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    slot: Span,
    windows: Vec<Span>,
    #[serde(default)]
    offset: i64,
    #[serde(default)]
    ties: Ties,
    #[serde(default, skip_serializing_if = "Aggregate::sums")]
    aggregate: Aggregate,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rank: Option<RankedTotals>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    snapshots: Option<SnapshotPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    review: Option<ReviewPolicy>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    watch: Vec<Watch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    changes: Option<ChangesKept>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    layout: Option<Layout>,
    #[serde(default = "one_shard", skip_serializing_if = "is_one_shard")]
    shards: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    per_contributor_member: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    per_contributor: Option<u64>,
}

fn one_shard() -> u32 {
    1
}

fn is_one_shard(shards: &u32) -> bool {
    *shards == 1
}

impl TryFrom<RawConfig> for BoardConfig {
    type Error = Error;
    fn try_from(raw: RawConfig) -> Result<Self, Error> {
        BoardConfig::new(raw.slot, raw.windows)?
            .with_offset(raw.offset)?
            .with_ties(raw.ties)
            .with_aggregate(raw.aggregate)
            .with_rank(raw.rank.unwrap_or(raw.aggregate.default_rank()))?
            .with_snapshots(raw.snapshots)
            .with_layout(raw.layout)
            .with_shards(raw.shards)?
            .with_review(raw.review)
            .with_watch(raw.watch)?
            .with_changes_kept(raw.changes)
            .with_contributor_cap(raw.per_contributor_member)?
            .with_contributor_budget(raw.per_contributor)
    }
}

impl From<BoardConfig> for RawConfig {
    fn from(c: BoardConfig) -> Self {
        RawConfig {
            slot: c.slot,
            windows: c.windows,
            offset: c.offset,
            ties: c.ties,
            aggregate: c.aggregate,
            // Left out when the aggregate's default (configs written before the option
            // read the same).
            rank: (c.rank != c.aggregate.default_rank()).then_some(c.rank),
            snapshots: c.snapshots,
            review: c.review,
            watch: c.watch,
            changes: c.changes,
            layout: c.layout,
            shards: c.shards,
            per_contributor_member: c.per_contributor_member,
            per_contributor: c.per_contributor,
        }
    }
}

impl BoardConfig {
    /// Most windows a board may have.
    pub const MAX_WINDOWS: usize = 8;
    /// Most shards a board may have.
    pub const MAX_SHARDS: u32 = 32;
    /// The largest `per_contributor_member` and `per_contributor`.
    pub const MAX_CONTRIBUTOR_CAP: u64 = 1_000_000_000;
    /// Most slots a window may span (`W / L`), which bounds catch-up and history reads.
    pub const MAX_SLOTS_PER_WINDOW: u64 = 100_000;

    /// A config with slot length `slot` and `windows` (ascending, each a multiple of `slot`).
    pub fn new(slot: Span, windows: Vec<Span>) -> Result<Self, Error> {
        let invalid = |reason: String| Err(Error::InvalidConfig { reason });
        if windows.is_empty() {
            return invalid("a board needs at least one window".into());
        }
        if windows.len() > Self::MAX_WINDOWS {
            return invalid(format!("a board has at most {} windows", Self::MAX_WINDOWS));
        }
        for pair in windows.windows(2) {
            if pair[0] >= pair[1] {
                return invalid(format!(
                    "windows must be strictly increasing, but {} is followed by {}",
                    pair[0], pair[1]
                ));
            }
        }
        for w in &windows {
            if !w.seconds().is_multiple_of(slot.seconds()) {
                return invalid(format!(
                    "window {w} is not a multiple of the slot length {slot}"
                ));
            }
            if w.seconds() / slot.seconds() > Self::MAX_SLOTS_PER_WINDOW {
                return invalid(format!(
                    "window {w} spans more than {} slots of {slot}",
                    Self::MAX_SLOTS_PER_WINDOW
                ));
            }
        }
        Ok(BoardConfig {
            slot,
            windows,
            offset: 0,
            ties: Ties::Competition,
            aggregate: Aggregate::Sum,
            rank: RankedTotals::Positive,
            snapshots: None,
            review: None,
            watch: Vec::new(),
            changes: None,
            layout: None,
            shards: 1,
            per_contributor_member: None,
            per_contributor: None,
        })
    }

    /// Parses a slot length and windows written as spans (`"1h"`, `["1h", "24h"]`).
    pub fn parse(slot: &str, windows: &[&str]) -> Result<Self, Error> {
        let windows = windows
            .iter()
            .map(|w| Span::parse(w))
            .collect::<Result<Vec<_>, _>>()?;
        BoardConfig::new(Span::parse(slot)?, windows)
    }

    /// Shifts slot boundaries by `offset` seconds (`-slot < offset < slot`), e.g. to align
    /// one-day slots on a local midnight. Stored normalised to `0 <= offset < slot`.
    pub fn with_offset(mut self, offset: i64) -> Result<Self, Error> {
        let l = self.slot.secs_i64();
        if offset <= -l || offset >= l {
            return Err(Error::InvalidConfig {
                reason: format!(
                    "offset {offset} must be within ±{} (the slot length)",
                    l - 1
                ),
            });
        }
        self.offset = offset.rem_euclid(l);
        Ok(self)
    }

    /// Ranks equal totals by `ties` (competition by default).
    pub fn with_ties(mut self, ties: Ties) -> Self {
        self.ties = ties;
        self
    }

    /// Ranks the totals `rank` says (positive ones by default). A board that ranks every
    /// non-zero total ranks ties by competition or position: dense ranks are kept for
    /// positive totals only ([`Error::InvalidConfig`] with `"ties":"dense"`; give the
    /// ties first).
    pub fn with_rank(mut self, rank: RankedTotals) -> Result<Self, Error> {
        self.rank = rank;
        self.check_rank()?;
        Ok(self)
    }

    /// Keeps `aggregate` of each member's events (a sum by default), ranking every
    /// value on a max, min or latest board (see [`with_rank`](Self::with_rank)).
    pub fn with_aggregate(mut self, aggregate: Aggregate) -> Self {
        self.aggregate = aggregate;
        self.rank = aggregate.default_rank();
        self
    }

    /// Refuses the combinations of options no store keeps ([`with_rank`](Self::with_rank)
    /// checks them; options set after the rank are checked again when the board is
    /// created): every non-zero total with dense ties; on a max, min or latest board, a rank
    /// other than `all`; `all` on a sum board; on a sharded board, dense ties; a
    /// contributor cap but on a sum board of one shard.
    pub fn check_rank(&self) -> Result<(), Error> {
        let invalid = |reason: String| Err(Error::InvalidConfig { reason });
        if self.rank == RankedTotals::Nonzero && self.ties == Ties::Dense {
            return invalid(
                "\"rank\":\"nonzero\" ranks ties by competition or position, not dense: \
                 leave out \"ties\" or choose \"competition\" or \"position\""
                    .into(),
            );
        }
        let aggregate = self.aggregate.as_str();
        if self.aggregate.sums() {
            if self.rank == RankedTotals::All {
                return invalid(
                    "\"rank\":\"all\" is for max, min and latest boards (a sum board's total of 0 \
                     leaves the window): choose \"positive\" or \"nonzero\""
                        .into(),
                );
            }
        } else if self.rank != RankedTotals::All {
            return invalid(format!(
                "an \"aggregate\":\"{aggregate}\" board ranks every value a member holds: \
                 leave out \"rank\" or set it to \"all\""
            ));
        }
        if self.shards > 1 && self.ties == Ties::Dense {
            return invalid(
                "a sharded board ranks ties by competition or position, not dense (a dense \
                 rank needs the distinct totals of every shard, which no shard keeps): leave \
                 out \"ties\", choose \"competition\" or \"position\", or use one shard"
                    .into(),
            );
        }
        self.check_contributors()
    }

    /// Spreads the board's members over `shards` shards (1 to [`MAX_SHARDS`](Self::MAX_SHARDS);
    /// 1: one key set, as a board without the option).
    pub fn with_shards(mut self, shards: u32) -> Result<Self, Error> {
        if !(1..=Self::MAX_SHARDS).contains(&shards) {
            return Err(Error::InvalidConfig {
                reason: format!(
                    "shards must be between 1 and {}, got {shards}",
                    Self::MAX_SHARDS
                ),
            });
        }
        self.shards = shards;
        Ok(self)
    }

    /// Caps what one contributor's events count for one member in a window at `cap`
    /// (see the field); none: no cap, and no contributors kept. A sum board of one shard.
    pub fn with_contributor_cap(mut self, cap: Option<u64>) -> Result<Self, Error> {
        self.per_contributor_member = cap;
        self.check_contributors()?;
        Ok(self)
    }

    /// Gives each contributor a budget of `budget` in the largest window (see the
    /// field); none: no budget. A sum board of one shard.
    pub fn with_contributor_budget(mut self, budget: Option<u64>) -> Result<Self, Error> {
        self.per_contributor = budget;
        self.check_contributors()?;
        Ok(self)
    }

    /// Refuses a contributor cap or budget outside
    /// 1..=[`MAX_CONTRIBUTOR_CAP`](Self::MAX_CONTRIBUTOR_CAP), or on a board that is not a
    /// sum board of one shard (checked again when the board is created).
    pub fn check_contributors(&self) -> Result<(), Error> {
        let caps = [
            ("per_contributor_member", self.per_contributor_member),
            ("per_contributor", self.per_contributor),
        ];
        for (name, cap) in caps {
            let Some(cap) = cap else { continue };
            let reason = if cap == 0 || cap > Self::MAX_CONTRIBUTOR_CAP {
                format!(
                    "\"{name}\" must be between 1 and {}, got {cap}",
                    Self::MAX_CONTRIBUTOR_CAP
                )
            } else if !self.aggregate.sums() {
                format!(
                    "\"{name}\" is for sum boards (a max, min or latest board keeps one value \
                     per member, not a sum of contributions): leave it out"
                )
            } else if self.shards > 1 {
                format!(
                    "\"{name}\" needs a board of one shard (a contributor's events must be \
                     capped in one step, on one Redis node): leave out \"shards\" or the cap"
                )
            } else {
                continue;
            };
            return Err(Error::InvalidConfig { reason });
        }
        Ok(())
    }

    /// Refuses a recompute of a board that keeps contributors, which no store rebuilds
    /// yet (its totals are kept exact by its writes and retirement).
    pub fn check_recompute(&self) -> Result<(), Error> {
        if self.keeps_contributors() {
            return Err(Error::InvalidConfig {
                reason: "the board keeps contributors (\"per_contributor_member\" or \
                         \"per_contributor\"), which a recompute does not rebuild yet: its \
                         totals are kept exact by its writes and retirement"
                    .into(),
            });
        }
        Ok(())
    }

    /// The per-member contributor cap, if any (see the field).
    pub fn per_contributor_member(&self) -> Option<i64> {
        self.per_contributor_member.map(|cap| cap as i64)
    }

    /// The contributor budget, if any (see the field).
    pub fn per_contributor(&self) -> Option<i64> {
        self.per_contributor.map(|budget| budget as i64)
    }

    /// Whether the board keeps who gave each event (it caps contributors).
    pub fn keeps_contributors(&self) -> bool {
        self.per_contributor_member.is_some() || self.per_contributor.is_some()
    }

    /// How many shards the board's members are spread over (1: not sharded).
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// Takes period snapshots by `policy` (none: `None`).
    pub fn with_snapshots(mut self, policy: Option<SnapshotPolicy>) -> Self {
        self.snapshots = policy;
        self
    }

    /// Keeps slot data in `layout` (`None`: the store's default).
    pub fn with_layout(mut self, layout: Option<Layout>) -> Self {
        self.layout = layout;
        self
    }

    /// The layout asked for, if any (`None`: the store's default).
    pub fn layout(&self) -> Option<Layout> {
        self.layout
    }

    /// This config as compared with a live board's `stored` one: naming no layout, it
    /// takes the board's, whatever `relayout` made it (a service that PUTs its boards at
    /// start keeps matching them).
    pub fn layout_defaulting_to(&self, stored: &BoardConfig) -> BoardConfig {
        self.clone().with_layout(self.layout.or(stored.layout))
    }

    /// The period snapshots policy, if any.
    pub fn snapshots(&self) -> Option<SnapshotPolicy> {
        self.snapshots
    }

    /// Gates the board by `policy` (none: `None`).
    pub fn with_review(mut self, policy: Option<ReviewPolicy>) -> Self {
        self.review = policy;
        self
    }

    /// Whether the board can watch its tops: a sum board of one shard, whose scripts see
    /// its whole ranking in one atomic step.
    pub fn watchable(&self) -> bool {
        self.aggregate.sums() && self.shards == 1
    }

    /// The review gate, if any.
    pub fn review(&self) -> Option<ReviewPolicy> {
        self.review
    }

    /// Watches the tops `watches` (none: empty): a sum board of one shard, one watch per
    /// window of the board ([`Error::InvalidConfig`] otherwise).
    pub fn with_watch(mut self, watches: Vec<Watch>) -> Result<Self, Error> {
        let invalid = |reason: String| Err(Error::InvalidConfig { reason });
        if !(watches.is_empty() || self.watchable()) {
            return invalid(
                "a watch is for a sum board of one shard: leave out \"watch\", or drop \
                 \"aggregate\" and \"shards\""
                    .into(),
            );
        }
        for (i, w) in watches.iter().enumerate() {
            if self.window_index(w.window()).is_none() {
                return invalid(format!(
                    "watch window {} is not one of the board's windows",
                    w.window()
                ));
            }
            if watches[..i].iter().any(|v| v.window() == w.window()) {
                return invalid(format!("window {} is watched twice", w.window()));
            }
        }
        self.watch = watches;
        Ok(self)
    }

    /// The watched tops (empty: none).
    pub fn watch(&self) -> &[Watch] {
        &self.watch
    }

    /// Keeps the watched tops' changes by `kept` (`None`: the default).
    pub fn with_changes_kept(mut self, kept: Option<ChangesKept>) -> Self {
        self.changes = kept;
        self
    }

    /// How many changes are kept and for how long, as asked (`None`: the default).
    pub fn changes_kept(&self) -> Option<ChangesKept> {
        self.changes
    }

    /// Whether `other` differs from this config in its snapshots policy, review gate and
    /// watches only (the options an existing board takes as they are).
    pub fn same_but_live(&self, other: &BoardConfig) -> bool {
        self.with_live_of(other) == *other
    }

    /// This config with `other`'s snapshots policy, review gate and watches (the options a live
    /// board takes as they are; `other` is a config of the same kind of board).
    pub fn with_live_of(&self, other: &BoardConfig) -> BoardConfig {
        let mut config = self.clone().with_snapshots(other.snapshots);
        config.review = other.review;
        config.watch = other.watch.clone();
        config.changes = other.changes;
        config
    }

    /// How equal totals share ranks.
    pub fn ties(&self) -> Ties {
        self.ties
    }

    /// Which totals are ranked.
    pub fn rank(&self) -> RankedTotals {
        self.rank
    }

    /// What the board keeps of a member's events.
    pub fn aggregate(&self) -> Aggregate {
        self.aggregate
    }

    /// The slot length.
    pub fn slot(&self) -> Span {
        self.slot
    }

    /// The windows, smallest first.
    pub fn windows(&self) -> &[Span] {
        &self.windows
    }

    /// The alignment offset in seconds, `0 <= offset < slot`.
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// What differs between this config (the stored one) and `asked`, one item per
    /// field as `offset: stored 0, asked 3600` (the snapshots policy is not compared: a
    /// live board takes it as is). Windows differ unless `asked` has these and larger
    /// ones only, which a live board takes too.
    pub fn differences(&self, asked: &BoardConfig) -> Vec<String> {
        let windows = |w: &[Span]| {
            let list: Vec<String> = w.iter().map(Span::to_string).collect();
            format!("[{}]", list.join(", "))
        };
        let layout = |l: Option<Layout>| l.map_or("default", Layout::as_str);
        let mut found = Vec::new();
        let mut differ = |field: &str, stored: String, wanted: String| {
            if stored != wanted {
                found.push(format!("{field}: stored {stored}, asked {wanted}"));
            }
        };
        differ("slot", self.slot.to_string(), asked.slot.to_string());
        let extended = asked.windows.len() > self.windows.len()
            && asked.windows[..self.windows.len()] == self.windows[..]
            && self.aggregate.sums()
            && !self.keeps_contributors();
        if !extended {
            differ("windows", windows(&self.windows), windows(&asked.windows));
        }
        differ("offset", self.offset.to_string(), asked.offset.to_string());
        differ(
            "ties",
            self.ties.as_str().into(),
            asked.ties.as_str().into(),
        );
        differ(
            "aggregate",
            self.aggregate.as_str().into(),
            asked.aggregate.as_str().into(),
        );
        differ(
            "rank",
            self.rank.as_str().into(),
            asked.rank.as_str().into(),
        );
        differ(
            "layout",
            layout(self.layout).into(),
            layout(asked.layout).into(),
        );
        differ("shards", self.shards.to_string(), asked.shards.to_string());
        let cap = |c: Option<u64>| c.map_or("none".to_owned(), |c| c.to_string());
        differ(
            "per_contributor_member",
            cap(self.per_contributor_member),
            cap(asked.per_contributor_member),
        );
        differ(
            "per_contributor",
            cap(self.per_contributor),
            cap(asked.per_contributor),
        );
        if found.is_empty() {
            found.push(format!(
                "slot {}, windows {}",
                self.slot,
                windows(&self.windows)
            ));
        }
        found
    }

    /// The largest window.
    pub fn largest_window(&self) -> Span {
        *self
            .windows
            .last()
            .expect("a config has at least one window")
    }

    /// The windows `wider` adds to this config, when `wider` is this config plus windows
    /// larger than all of ours (same slot, offset, ties, ranked totals, aggregate, layout,
    /// shards and contributor caps; never on a board keeping contributors): the one change
    /// to the data model a live board takes (its snapshots policy is not compared: see
    /// [`same_but_live`](Self::same_but_live)).
    pub fn extended_by(&self, wider: &BoardConfig) -> Option<Vec<Span>> {
        let n = self.windows.len();
        (wider.slot == self.slot
            && wider.offset == self.offset
            && wider.ties == self.ties
            && wider.rank == self.rank
            && wider.aggregate == self.aggregate
            && wider.layout == self.layout
            && wider.shards == self.shards
            && wider.per_contributor_member == self.per_contributor_member
            && wider.per_contributor == self.per_contributor
            // A board keeping contributors takes no new windows (yet): a window's
            // contributions cannot be built from its slots' totals.
            && !self.keeps_contributors()
            && wider.windows.len() > n
            && wider.windows[..n] == self.windows[..])
            .then(|| wider.windows[n..].to_vec())
    }

    /// The position of `window` among the board's windows.
    pub fn window_index(&self, window: Span) -> Option<usize> {
        self.windows.iter().position(|w| *w == window)
    }

    /// The start (unix seconds) of the slot that contains `t`.
    pub fn slot_start(&self, t: Timestamp) -> i64 {
        let l = self.slot.secs_i64();
        (t.unix_seconds() - self.offset).div_euclid(l) * l + self.offset
    }

    /// The newest slot that window `index` no longer contains at `now`: every slot at or
    /// before it has left the window and is due for retirement.
    pub fn cutoff(&self, index: usize, now: Timestamp) -> i64 {
        self.slot_start(now) - self.windows[index].secs_i64()
    }

    /// The oldest slot that window `index` contains at `now`.
    pub fn window_start(&self, index: usize, now: Timestamp) -> i64 {
        self.cutoff(index, now) + self.slot.secs_i64()
    }

    /// Whether an event in slot `slot` has left every window at `now` (it is too late).
    pub fn is_too_late(&self, slot: i64, now: Timestamp) -> bool {
        slot <= self.cutoff(self.windows.len() - 1, now)
    }
}

#[cfg(test)]
mod tests;
