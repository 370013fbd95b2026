//! The board record `board_{<board>}`, of either kind, as the client reads it: which
//! fields describe a board, and how they parse into a [`Board`] or a [`TrendingBoard`].
//!
//! A windowed board's record is a hash: `version`, `slot`, `windows` (seconds,
//! comma-separated), `offset`, `created_ms`, `ties`, `snapshots` (`top,keep`, when the
//! board takes period snapshots), `layout` (when one was asked for), `rank` (`nonzero` on a board that ranks every
//! non-zero total, `all` on one that ranks every value; absent: positive totals only),
//! `aggregate` (`max` or `min`; absent: a sum board), `shards` (absent: 1), `resharding`
//! (while the shard count changes: `<to>` or `sweep <from>`, see [`Resharding`]),
//! `incarnation` (the first version, naming idempotency records; absent: the version,
//! on a board whose version never changed since it was made before the field), `pins`
//! (JSON: the members pinned on the first page of its top, see `pins_set.lua`), `review`
//! (the review gate's K), `watch` (the watched tops, see [`Watch::stored`]), `changes_kept` (see
//! [`ChangesKept::stored`]), `per_contributor_member` and `per_contributor` (the
//! contributor cap and budget), and per window
//! `wm:<W>` (watermark) and `done:<W>` (retired through); `dropping` while a drop is
//! under way. A trending board's record has `kind` = `trending`, `version`,
//! `half_life`, `floor`, `max_age`, `created_ms` and its landmark.
//!
//! Nothing here talks to Redis: the modules that read records (`boards`, `trending`,
//! `read`) send the reads and hand the replies to these functions.

use redis::Value;

use crate::domain::board::{Board, Resharding};
use crate::domain::{
    Aggregate, BoardConfig, BoardName, ChangesKept, Layout, RankedTotals, ReviewPolicy,
    SnapshotPolicy, Span, Watch,
};
use crate::domain::{Ties, Timestamp};
use crate::domain::{TrendingBoard, TrendingConfig};
use crate::error::{Error, Result};
use crate::store::redis::conn::keys::Keys;
use crate::store::redis::conn::reply::{int, opt_string, string};

/// The record fields that describe a windowed board, in the order [`parse_board`] reads
/// them.
pub(crate) const RECORD_FIELDS: &[&str] = &[
    "version",
    "slot",
    "windows",
    "offset",
    "created_ms",
    "ties",
    "snapshots",
    "layout",
    "rank",
    "aggregate",
    "shards",
    "resharding",
    "incarnation",
    "pins",
    "review",
    "watch",
    "changes_kept",
    "per_contributor_member",
    "per_contributor",
];

/// The read of a board's record: its fields, then `dropping` and `kind`.
pub(crate) fn record_read(keys: &Keys, name: &BoardName) -> redis::Cmd {
    let mut cmd = redis::cmd("HMGET");
    cmd.arg(keys.record(name))
        .arg(RECORD_FIELDS)
        .arg("dropping")
        .arg("kind");
    cmd
}

/// A board from its record's `version, slot, windows, offset, created_ms, ties,
/// snapshots, layout, rank` (no `ties`: a board made before the option, which ranks by
/// competition; no `snapshots`: a board that takes none; no `layout`: the store's
/// default; no `rank`: positive totals ranked; no `aggregate`: a sum board; no `shards`:
/// one).
pub(crate) fn parse_board(name: &BoardName, fields: &[Value]) -> Result<Board> {
    let corrupt = |what: &str| Error::store(format!("board record of {name:?} has a bad {what}"));
    let version = string(&fields[0], "version")?
        .parse::<u64>()
        .map_err(|_| corrupt("version"))?;
    let slot = Span::from_seconds(int(&fields[1], "slot")? as u64).map_err(|_| corrupt("slot"))?;
    let windows = parse_windows(&string(&fields[2], "windows")?)?;
    let offset = int(&fields[3], "offset")?;
    let created_ms = int(&fields[4], "created_ms")?;
    let ties = opt_string(&fields[5], "ties")?;
    let ties = Ties::from_stored(ties.as_deref()).ok_or_else(|| corrupt("ties"))?;
    let snapshots = match opt_string(&fields[6], "snapshots")? {
        None => None,
        Some(text) => Some(SnapshotPolicy::from_stored(&text).ok_or_else(|| corrupt("snapshots"))?),
    };
    let layout = match opt_string(&fields[7], "layout")? {
        None => None,
        Some(text) => Some(Layout::from_stored(&text).ok_or_else(|| corrupt("layout"))?),
    };
    let rank = opt_string(&fields[8], "rank")?;
    let rank = RankedTotals::from_stored(rank.as_deref()).ok_or_else(|| corrupt("rank"))?;
    let aggregate = opt_string(&fields[9], "aggregate")?;
    let aggregate =
        Aggregate::from_stored(aggregate.as_deref()).ok_or_else(|| corrupt("aggregate"))?;
    let shards = match opt_string(&fields[10], "shards")? {
        None => 1,
        Some(text) => text.parse().map_err(|_| corrupt("shards"))?,
    };
    let config = BoardConfig::new(slot, windows)
        .and_then(|c| c.with_offset(offset))
        .and_then(|c| c.with_shards(shards))
        .and_then(|c| c.with_ties(ties).with_aggregate(aggregate).with_rank(rank))
        .map(|c| c.with_snapshots(snapshots).with_layout(layout))
        .map_err(|e| Error::store(format!("board record of {name:?}: {e}")))?;
    let resharding = match fields.get(11).map(|f| opt_string(f, "resharding")) {
        Some(Ok(Some(text))) => {
            Some(Resharding::from_stored(&text).ok_or_else(|| corrupt("resharding"))?)
        }
        Some(Err(e)) => return Err(e),
        _ => None,
    };
    // Absent on a board whose version never changed since it was made before the field.
    let incarnation = match fields.get(12).map(|f| opt_string(f, "incarnation")) {
        Some(Ok(Some(text))) => text.parse().map_err(|_| corrupt("incarnation"))?,
        Some(Err(e)) => return Err(e),
        _ => version,
    };
    let pins = match fields.get(13).map(|f| opt_string(f, "pins")) {
        Some(Ok(Some(text))) => serde_json::from_str(&text).map_err(|_| corrupt("pins"))?,
        Some(Err(e)) => return Err(e),
        _ => Vec::new(),
    };
    let review = match fields.get(14).map(|f| opt_string(f, "review")) {
        Some(Ok(Some(text))) => Some(
            text.parse()
                .ok()
                .and_then(|k| ReviewPolicy::new(k).ok())
                .ok_or_else(|| corrupt("review"))?,
        ),
        Some(Err(e)) => return Err(e),
        _ => None,
    };
    let watch = match fields.get(15).map(|f| opt_string(f, "watch")) {
        Some(Ok(Some(text))) => Watch::from_stored(&text).ok_or_else(|| corrupt("watch"))?,
        Some(Err(e)) => return Err(e),
        _ => Vec::new(),
    };
    let kept = match fields.get(16).map(|f| opt_string(f, "changes_kept")) {
        Some(Ok(Some(text))) => {
            Some(ChangesKept::from_stored(&text).ok_or_else(|| corrupt("changes_kept"))?)
        }
        Some(Err(e)) => return Err(e),
        _ => None,
    };
    let cap = |i: usize, field: &str| -> Result<Option<u64>> {
        match fields.get(i).map(|f| opt_string(f, field)) {
            Some(Ok(Some(text))) => Ok(Some(text.parse().map_err(|_| corrupt(field))?)),
            Some(Err(e)) => Err(e),
            _ => Ok(None),
        }
    };
    let (member_cap, budget) = (
        cap(17, "per_contributor_member")?,
        cap(18, "per_contributor")?,
    );
    let config = config
        .with_changes_kept(kept)
        .with_contributor_cap(member_cap)?
        .with_contributor_budget(budget)?
        .with_review(review)
        .with_watch(watch)
        .map_err(|e| Error::store(format!("board record of {name:?}: {e}")))?;
    Ok(Board {
        name: name.clone(),
        config,
        version,
        created_at: Timestamp::from_unix_millis(created_ms).map_err(|_| corrupt("created_ms"))?,
        incarnation,
        resharding,
        pins,
    })
}

/// The spans of a record's `windows` field (seconds, comma-separated).
pub(crate) fn parse_windows(text: &str) -> Result<Vec<Span>> {
    text.split(',')
        .map(|w| {
            w.parse::<u64>()
                .ok()
                .and_then(|s| Span::from_seconds(s).ok())
                .ok_or_else(|| {
                    Error::store(format!("bad windows field in a board record: {text:?}"))
                })
        })
        .collect()
}

/// The stored version in a reply, for version checks outside scripts.
pub(crate) fn version_matches(value: &Value, board: &Board) -> Result<bool> {
    Ok(opt_string(value, "version")?.as_deref() == Some(board.version.to_string().as_str()))
}

/// The record fields of a trending board, in the order [`parse_trending`] reads them.
pub(crate) const TREND_FIELDS: &[&str] =
    &["version", "half_life", "floor", "max_age", "created_ms"];

fn corrupt(name: &BoardName, what: &str) -> Error {
    Error::store(format!(
        "trending board record of {name:?} has a bad {what}"
    ))
}

/// A trending board from its record's `version, half_life, floor, max_age, created_ms`.
pub(crate) fn parse_trending(name: &BoardName, fields: &[Value]) -> Result<TrendingBoard> {
    let text = |i: usize| string(&fields[i], TREND_FIELDS[i]);
    let version = text(0)?
        .parse::<u64>()
        .map_err(|_| corrupt(name, "version"))?;
    let half_life = Span::from_seconds(int(&fields[1], "half_life")? as u64)
        .map_err(|_| corrupt(name, "half_life"))?;
    let floor = text(2)?
        .parse::<f64>()
        .map_err(|_| corrupt(name, "floor"))?;
    let max_age = Span::from_seconds(int(&fields[3], "max_age")? as u64)
        .map_err(|_| corrupt(name, "max_age"))?;
    let created_ms = int(&fields[4], "created_ms")?;
    let config = TrendingConfig::new(half_life)
        .and_then(|c| c.with_floor(floor))
        .and_then(|c| c.with_max_age(max_age))
        .map_err(|e| Error::store(format!("trending board record of {name:?}: {e}")))?;
    Ok(TrendingBoard {
        name: name.clone(),
        config,
        version,
        created_at: Timestamp::from_unix_millis(created_ms)
            .map_err(|_| corrupt(name, "created_ms"))?,
    })
}
