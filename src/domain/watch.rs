//! Watches (`watch: [{"window": "24h", "top": 10}]` in a board's config) and the rank
//! changes they emit (docs/design.md, "Rank changes"): who entered, left or moved in a
//! window's top N, in the same atomic step as the change that caused it.

use serde::{Deserialize, Serialize};

use super::error::Error;
use super::span::Span;
use super::timestamp::Timestamp;

/// One watch: the top `top` of the window `window`, as `top?window=W&limit=N` answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawWatch", into = "RawWatch")]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Watch {
    /// The window watched, one of the board's.
    #[cfg_attr(feature = "server", schema(value_type = String, example = "24h"))]
    window: Span,
    /// How many of its first members are watched, 1..=100.
    #[cfg_attr(feature = "server", schema(minimum = 1, maximum = 100))]
    top: u32,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWatch {
    window: Span,
    top: u32,
}

impl TryFrom<RawWatch> for Watch {
    type Error = Error;
    fn try_from(raw: RawWatch) -> Result<Self, Error> {
        Watch::new(raw.window, raw.top)
    }
}

impl From<Watch> for RawWatch {
    fn from(w: Watch) -> Self {
        RawWatch {
            window: w.window,
            top: w.top,
        }
    }
}

impl Watch {
    /// The largest `top`.
    pub const MAX_TOP: u32 = 100;

    /// Watches the first `top` (1..=100) members of `window`.
    pub fn new(window: Span, top: u32) -> Result<Self, Error> {
        if !(1..=Self::MAX_TOP).contains(&top) {
            return Err(Error::InvalidConfig {
                reason: format!(
                    "watch.top must be between 1 and {}, got {top}",
                    Self::MAX_TOP
                ),
            });
        }
        Ok(Watch { window, top })
    }

    /// The window watched.
    pub fn window(&self) -> Span {
        self.window
    }

    /// How many of its first members are watched.
    pub fn top(&self) -> u32 {
        self.top
    }

    /// The watches as a board record keeps them: `<W seconds>:<top>` each, spaces
    /// between; `None` for none.
    pub fn stored(watches: &[Watch]) -> Option<String> {
        let words: Vec<String> = watches
            .iter()
            .map(|w| format!("{}:{}", w.window.seconds(), w.top))
            .collect();
        (!words.is_empty()).then(|| words.join(" "))
    }

    /// The watches of a record's `stored` text (see [`stored`](Self::stored)).
    pub fn from_stored(text: &str) -> Option<Vec<Watch>> {
        text.split_whitespace()
            .map(|word| {
                let (w, top) = word.split_once(':')?;
                Watch::new(Span::from_seconds(w.parse().ok()?).ok()?, top.parse().ok()?).ok()
            })
            .collect()
    }
}

/// How many of a board's changes are kept, and for how long (`changes: {"keep": 10000,
/// "keep_for": "7d"}` in its config; these by default): the oldest go past either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawKept", into = "RawKept")]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct ChangesKept {
    /// Most changes kept, 1..=1000000 (10000 by default).
    #[cfg_attr(feature = "server", schema(minimum = 1, maximum = 1000000))]
    keep: u32,
    /// How long a change is kept (7 days by default), at least a minute.
    #[cfg_attr(feature = "server", schema(value_type = String, example = "7d"))]
    keep_for: Span,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKept {
    keep: u32,
    keep_for: Span,
}

impl TryFrom<RawKept> for ChangesKept {
    type Error = Error;
    fn try_from(raw: RawKept) -> Result<Self, Error> {
        ChangesKept::new(raw.keep, raw.keep_for)
    }
}

impl From<ChangesKept> for RawKept {
    fn from(k: ChangesKept) -> Self {
        RawKept {
            keep: k.keep,
            keep_for: k.keep_for,
        }
    }
}

impl Default for ChangesKept {
    fn default() -> Self {
        ChangesKept {
            keep: 10_000,
            keep_for: Span::from_seconds(7 * 86_400).expect("7 days is a span"),
        }
    }
}

impl ChangesKept {
    /// The most changes a board may keep.
    pub const MAX_KEEP: u32 = 1_000_000;

    /// Keeps the newest `keep` (1..=1000000) changes, each for `keep_for` (a minute or more).
    pub fn new(keep: u32, keep_for: Span) -> Result<Self, Error> {
        if !(1..=Self::MAX_KEEP).contains(&keep) || keep_for.seconds() < 60 {
            return Err(Error::InvalidConfig {
                reason: format!(
                    "changes.keep must be between 1 and {}, got {keep}, and changes.keep_for at \
                     least 1m, got {keep_for}",
                    Self::MAX_KEEP
                ),
            });
        }
        Ok(ChangesKept { keep, keep_for })
    }

    /// Most changes kept.
    pub fn keep(&self) -> u32 {
        self.keep
    }

    /// How long a change is kept.
    pub fn keep_for(&self) -> Span {
        self.keep_for
    }

    /// As a board record keeps it: `<keep> <keep_for ms>`.
    pub fn stored(&self) -> String {
        format!("{} {}", self.keep, self.keep_for.seconds() * 1000)
    }

    /// The retention of a record's `stored` text (see [`stored`](Self::stored)).
    pub fn from_stored(text: &str) -> Option<Self> {
        let (keep, ms) = text.split_once(' ')?;
        let seconds = ms.parse::<u64>().ok()? / 1000;
        ChangesKept::new(keep.parse().ok()?, Span::from_seconds(seconds).ok()?).ok()
    }
}

/// What happened to a member in a watched top N.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub enum ChangeType {
    /// It came into the top N.
    Entered,
    /// It went out of it.
    Left,
    /// It stayed in, at another rank.
    Moved,
}

/// What caused a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub enum ChangeCause {
    /// A write (events posted).
    Write,
    /// A slot left the window (its retirement).
    Retire,
    /// A member was removed from the board.
    Remove,
    /// A window's totals were rebuilt from its slots.
    Recompute,
    /// A trim removed the members under a window's top.
    Trim,
    /// A member was hidden, denied or held by the review gate.
    Hide,
    /// A member was shown again or allowed.
    Show,
    /// The watch itself was added, changed or removed (its top N as of then).
    Watch,
    /// A contributor's contributions were taken back.
    Retract,
    /// A contributor was quarantined: what it gave stopped counting.
    Quarantine,
    /// A contributor was released: what it gave counts again.
    Release,
}

/// The cause and time a store call that changes a board's public totals gives the
/// changes of its watched tops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeStamp {
    pub cause: ChangeCause,
    /// The service's now.
    pub now: Timestamp,
}

impl ChangeCause {
    /// The cause as the stores record it.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeCause::Write => "write",
            ChangeCause::Retire => "retire",
            ChangeCause::Remove => "remove",
            ChangeCause::Recompute => "recompute",
            ChangeCause::Trim => "trim",
            ChangeCause::Hide => "hide",
            ChangeCause::Show => "show",
            ChangeCause::Watch => "watch",
            ChangeCause::Retract => "retract",
            ChangeCause::Quarantine => "quarantine",
            ChangeCause::Release => "release",
        }
    }

    /// The cause a store recorded as `text`.
    pub fn parse(text: &str) -> Option<Self> {
        [
            ChangeCause::Write,
            ChangeCause::Retire,
            ChangeCause::Remove,
            ChangeCause::Recompute,
            ChangeCause::Trim,
            ChangeCause::Hide,
            ChangeCause::Show,
            ChangeCause::Watch,
            ChangeCause::Retract,
            ChangeCause::Quarantine,
            ChangeCause::Release,
        ]
        .into_iter()
        .find(|c| c.as_str() == text)
    }
}

/// One member's change in a watched top N.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Change {
    /// The change's id, increasing per board (`<ms>-<n>`): resume after it with
    /// `?after=`.
    pub id: String,
    /// Entered, left or moved.
    #[serde(rename = "type")]
    pub kind: ChangeType,
    /// The member.
    pub member: String,
    /// The watched window.
    #[cfg_attr(feature = "server", schema(value_type = String, example = "24h"))]
    pub window: Span,
    /// Its rank in the top N now (`null` once it left).
    pub rank: Option<u64>,
    /// Its public total in the window now (0 when it holds none, or is hidden).
    pub score: i64,
    /// `moved`, `left`: its rank before.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub from: Option<u64>,
    /// `moved`: its rank now.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub to: Option<u64>,
    /// `moved`: the members it passed (moving up) or that passed it (moving down), at
    /// most 10.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub passed: Vec<String>,
    /// What caused it.
    pub cause: ChangeCause,
    /// When: the write's time, the boundary at which a slot left the window, or the
    /// time of a removal, recompute, trim, hide or show (unix milliseconds).
    pub at: i64,
}

/// A page of a board's changes: what `GET /v1/boards/{board}/changes` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct ChangePage {
    /// The board.
    pub board: String,
    /// The changes after the one asked, oldest first.
    pub changes: Vec<Change>,
}

/// The most members a `moved` change lists as passed.
pub const MAX_PASSED: usize = 10;

/// A watched top N as a store keeps it between two changes: its entries in ranking
/// order.
pub type TopList = Vec<super::Entry>;

/// The changes that take `window`'s top N from `old` to `new`, caused by `cause` at
/// `at`, without their ids, in the order both stores record them: those that left (old
/// order), then each member of `new` that entered or moved (new order). `score_now`
/// gives the public total now of a member that left.
pub fn diff_top<'a>(
    old: &'a TopList,
    new: &'a TopList,
    mut score_now: impl FnMut(&str) -> i64,
    (window, cause, at): (Span, ChangeCause, i64),
) -> Vec<Change> {
    use std::collections::HashMap;
    let ranks = |top: &'a TopList| top.iter().map(|e| (e.member.as_str(), e.rank)).collect();
    let (before, after): (HashMap<&str, u64>, HashMap<&str, u64>) = (ranks(old), ranks(new));
    let rank_in = |ranks: &HashMap<&str, u64>, m: &str| ranks.get(m).copied().unwrap_or(u64::MAX);
    let change = |kind, member: &str, rank, score, from, passed| Change {
        id: String::new(),
        kind,
        member: member.to_owned(),
        window,
        rank,
        score,
        from,
        to: (kind == ChangeType::Moved).then_some(rank).flatten(),
        passed,
        cause,
        at,
    };
    let mut out = Vec::new();
    for e in old {
        if !after.contains_key(e.member.as_str()) {
            let score = score_now(&e.member);
            let left = change(
                ChangeType::Left,
                &e.member,
                None,
                score,
                Some(e.rank),
                Vec::new(),
            );
            out.push(left);
        }
    }
    for e in new {
        let (member, rank, score) = (&e.member, e.rank, e.score);
        let Some(&was) = before.get(member.as_str()) else {
            let entered = change(
                ChangeType::Entered,
                member,
                Some(rank),
                score,
                None,
                Vec::new(),
            );
            out.push(entered);
            continue;
        };
        if was == rank {
            continue;
        }
        // Up: those it passed, in old order; down: those that passed it, in new order.
        let up = rank < was;
        let (listed, other) = if up { (old, &after) } else { (new, &before) };
        let mine = if up { (was, rank) } else { (rank, was) };
        let passed = listed
            .iter()
            .filter(|x| x.rank < mine.0 && rank_in(other, &x.member) > mine.1)
            .map(|x| x.member.clone())
            .take(MAX_PASSED)
            .collect();
        out.push(change(
            ChangeType::Moved,
            member,
            Some(rank),
            score,
            Some(was),
            passed,
        ));
    }
    out
}
