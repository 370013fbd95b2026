//! Every Redis key name rollboard uses, in one place.
//!
//! All keys of a board carry the `{<board>}` hash tag, so on Redis Cluster they live on
//! one node and every multi-key script of a board is atomic. The registry of boards is
//! global and is only ever touched by its own single-key commands.

use crate::domain::board::Board;
use crate::domain::counter::CounterName;
use crate::domain::stats::{StatsContext, StatsKind};
use crate::domain::{BoardName, Span, Ties};
use crate::rates::{RateKey, RateTiers};

/// `rate_{<key, %-encoded>}_<tiers fingerprint>`: a rate key's time ring. The encoding
/// has no `{`, `}` or `:`, so the tag is the whole key and no two keys share one; the
/// fingerprint keeps rings written under other tiers from being misread.
pub(crate) fn rate(key: &RateKey, tiers: &RateTiers) -> String {
    format!("rate_{{{}}}_{}", key.encoded(), tiers.fingerprint())
}

/// The set of board names.
pub(crate) const REGISTRY: &str = "rollboard:boards";

/// `board_{<board>}`: the board record (config, version, watermarks).
pub(crate) fn record(name: &BoardName) -> String {
    format!("board_{{{name}}}")
}

/// `trend_{<board>}`: a trending board's stored values (negated forward-decayed sums).
pub(crate) fn trend(name: &BoardName) -> String {
    format!("trend_{{{name}}}")
}

/// `trend_{<board>}_next`: a trending board's rescale build, renamed over `trend_…`.
pub(crate) fn trend_next(name: &BoardName) -> String {
    format!("trend_{{{name}}}_next")
}

/// `idem_{<board>}_<version>_<key>`: the record of a trending board's write made under
/// an idempotency key (the same shape of name as a windowed board's).
pub(crate) fn trend_idempotency(board: &crate::domain::TrendingBoard, key: &str) -> String {
    format!("idem_{{{}}}_{}_{key}", board.name, board.version)
}

/// `slots_{<board>}`: the index of live slots, score = slot start.
pub(crate) fn index(name: &BoardName) -> String {
    format!("slots_{{{name}}}")
}

/// `rebuild_{<board>}`: the totals a recompute is building (see `recompute_begin.lua`).
pub(crate) fn rebuild(name: &BoardName) -> String {
    format!("rebuild_{{{name}}}")
}

/// `rebuild_tally_{<board>}`, dense boards only: the tally of a recompute's build, as
/// `tally_…` is of the totals; renamed over the window's tally with the build.
pub(crate) fn rebuild_tally(name: &BoardName) -> String {
    format!("rebuild_tally_{{{name}}}")
}

/// `rebuild_dense_{<board>}`, dense boards only: the distinct totals of a recompute's
/// build; renamed over the window's `dense_…` with the build.
pub(crate) fn rebuild_dense(name: &BoardName) -> String {
    format!("rebuild_dense_{{{name}}}")
}

/// `rebuild_records_{<board>}`: a max, min or latest board's records (as `peaks_…` or
/// `newest_…`) a recompute is building; renamed over them with the build.
pub(crate) fn rebuild_records(name: &BoardName) -> String {
    format!("rebuild_records_{{{name}}}")
}

/// `rebuild_log_{<board>}`: members a recompute must compute afresh.
pub(crate) fn rebuild_log(name: &BoardName) -> String {
    format!("rebuild_log_{{{name}}}")
}

/// `rebuild_scan_{<board>}`: how far a recompute's scan got in each stage hash.
pub(crate) fn rebuild_scan(name: &BoardName) -> String {
    format!("rebuild_scan_{{{name}}}")
}

/// `journal_{<board>}`: tokens of writes applied exactly once (see `write.lua`).
pub(crate) fn journal(name: &BoardName) -> String {
    format!("journal_{{{name}}}")
}

/// `idem_{<board>}_<incarnation>_<key>`: the record of a write made under an idempotency
/// key (see `write.lua`), expiring by itself. The incarnation (the board's first version)
/// keeps a re-created board from reading the records of the one dropped before it, and
/// keeps the records of this one across its config changes (a window added, a reshard:
/// a new version), so a retry after one is still applied once.
pub(crate) fn idempotency(board: &Board, key: &str) -> String {
    format!("idem_{{{}}}_{}_{key}", board.name, board.incarnation)
}

/// `stats_{<board>}` for the first window, `stats_{<board>}_<W>` for the others.
pub(crate) fn totals(name: &BoardName, windows: &[Span], window: usize) -> String {
    format!("stats_{}", window_suffix(name, windows, window))
}

/// `tally_{<board>}[_<W>]`, dense boards only: a window's positive totals, field = a
/// total, value = how many members hold it (see `retally` in `lua/totals.lua`).
pub(crate) fn tally(name: &BoardName, windows: &[Span], window: usize) -> String {
    format!("tally_{}", window_suffix(name, windows, window))
}

/// `dense_{<board>}[_<W>]`, dense boards only: a window's distinct positive totals, a
/// zset with member = score = the total, for dense ranks in O(log D).
pub(crate) fn dense(name: &BoardName, windows: &[Span], window: usize) -> String {
    format!("dense_{}", window_suffix(name, windows, window))
}

/// `snap_{<board>}_<W>`: window `W`'s period snapshots, a stream whose entry IDs are the
/// boundaries in milliseconds (see `snapshot_take.lua`).
pub(crate) fn snapshots(name: &BoardName, window: Span) -> String {
    format!("snap_{{{name}}}_{}", window.seconds())
}

/// `snapsent_{<board>}`: per window (field = its seconds), the newest boundary whose
/// snapshot was delivered to the snapshot webhook.
pub(crate) fn snapshot_cursors(name: &BoardName) -> String {
    format!("snapsent_{{{name}}}")
}

/// `{<board>}` for the first window, `{<board>}_<W>` for the others.
fn window_suffix(name: &BoardName, windows: &[Span], window: usize) -> String {
    if window == 0 {
        format!("{{{name}}}")
    } else {
        format!("{{{name}}}_{}", windows[window].seconds())
    }
}

/// On a dense board, the tally and distinct-totals keys of every window, in pairs,
/// smallest window first, then those of a recompute's build; nothing on a competition
/// board.
pub(crate) fn all_dense(board: &Board) -> Vec<String> {
    if board.config.ties() != Ties::Dense {
        return Vec::new();
    }
    dense_keys(&board.name, board.config.windows())
}

/// The tally and distinct-totals keys of every window of a board with `windows`, in
/// pairs, smallest window first, then those of a recompute's build (whatever its ties).
pub(crate) fn dense_keys(name: &BoardName, windows: &[Span]) -> Vec<String> {
    (0..windows.len())
        .flat_map(|j| [tally(name, windows, j), dense(name, windows, j)])
        .chain([rebuild_tally(name), rebuild_dense(name)])
        .collect()
}

/// On a dense board, window `window`'s tally and distinct-totals keys; nothing on a
/// competition board.
pub(crate) fn window_dense(board: &Board, window: usize) -> Vec<String> {
    if board.config.ties() != Ties::Dense {
        return Vec::new();
    }
    let windows = board.config.windows();
    vec![
        tally(&board.name, windows, window),
        dense(&board.name, windows, window),
    ]
}

/// The totals keys of every window, smallest window first.
pub(crate) fn all_totals(name: &BoardName, windows: &[Span]) -> Vec<String> {
    (0..windows.len())
        .map(|j| totals(name, windows, j))
        .collect()
}

/// Stage `stage` (from 0) of a slot: `slot_{<board>}_<ts>` holds events written before
/// any window froze the slot; `slot_{<board>}_<ts>_<k>` those written after `k` windows
/// froze it, plus what retirement of window `k` handed on.
pub(crate) fn stage(name: &BoardName, slot: i64, stage: usize) -> String {
    if stage == 0 {
        format!("slot_{{{name}}}_{slot}")
    } else {
        format!("slot_{{{name}}}_{slot}_{stage}")
    }
}

/// All stage keys of a slot, stage 0 first.
pub(crate) fn stages(board: &Board, slot: i64) -> impl Iterator<Item = String> + '_ {
    (0..board.config.windows().len()).map(move |k| stage(&board.name, slot, k))
}

/// `peaks_{<board>}`: a max or min board's peak lists, field = member, value = the
/// `<slot>:<value>` pairs of its live slots that no newer slot matches (see `peaks_add`
/// in `lua/maxima.lua`).
pub(crate) fn peaks(name: &BoardName) -> String {
    format!("peaks_{{{name}}}")
}

/// `newest_{<board>}`: a latest board's newest events, field = member, value =
/// `<slot>:<at>:<value>` (see `newest_add` in `lua/maxima.lua`).
pub(crate) fn newest(name: &BoardName) -> String {
    format!("newest_{{{name}}}")
}

/// What a max, min or latest board's writes and retirement keep per member: its peak
/// lists, or its newest events.
pub(crate) fn records(board: &Board) -> String {
    if board.config.aggregate().latest() {
        newest(&board.name)
    } else {
        peaks(&board.name)
    }
}

/// The scripts' word for a max, min or latest board: `latest` or `max`.
pub(crate) fn mode(board: &Board) -> &'static str {
    if board.config.aggregate().latest() {
        "latest"
    } else {
        "max"
    }
}

/// `data_{<board>}`: member data, field = member, value = its JSON text; a field lives
/// as long as the member's total in the largest window (see `add_total` and `bulk_add`
/// in `lua/totals.lua`).
pub(crate) fn data(name: &BoardName) -> String {
    format!("data_{{{name}}}")
}

/// `moved_{<board>}`: on a shard of a sharded board, the members a reshard marked
/// moved off it (a set; writers send them to their new shard).
pub(crate) fn moved(name: &BoardName) -> String {
    format!("moved_{{{name}}}")
}

/// `moving_{<board>}`: on a shard of a sharded board, the moves a reshard has under way:
/// field = member, value = what it takes (a stash, see `sharded/reshard.rs`).
pub(crate) fn moving(name: &BoardName) -> String {
    format!("moving_{{{name}}}")
}

/// `slotgeo_{<board>}`: the geometry of each compact slot, field `<ts>` = `"<L> <p>
/// <count>"` (linear hashing: `2^L + p` buckets); a slot without a field is plain.
pub(crate) fn slot_geometry(name: &BoardName) -> String {
    format!("slotgeo_{{{name}}}")
}

/// Bucket `i` of a compact slot's stage `stage_key` (a key of [`stage`]).
pub(crate) fn bucket(stage_key: &str, i: u64) -> String {
    format!("{stage_key}:{i}")
}

/// The index of counters: a hash, field = counter name, value = the generation listed.
/// Written only when a counter is first seen (see `counter_incr.lua`).
pub(crate) const COUNTERS: &str = "rollboard:counters";

/// `counter_{<counter>}`: a counter's record (precisions, generation, listed mark).
pub(crate) fn counter_record(name: &CounterName) -> String {
    format!("counter_{{{name}}}")
}

/// `counterconf_{<counter>}`: a counter's own precisions (seconds, comma-separated),
/// when it has some; set by `PUT /v1/counters/{name}`, read by `counter_incr.lua`.
pub(crate) fn counter_config(name: &CounterName) -> String {
    format!("counterconf_{{{name}}}")
}

/// `count_{<counter>}_<p>`: a counter's samples at precision `p` seconds, field = slice
/// start.
pub(crate) fn counter_samples(name: &CounterName, precision: Span) -> String {
    format!("count_{{{name}}}_{}", precision.seconds())
}

/// `stat_{<context>}_<kind>`: the newest hour of a (context, kind); the context encoded
/// by [`StatsContext::key_part`], so it is a hash tag of its own.
pub(crate) fn stat_newest(context: &StatsContext, kind: &StatsKind) -> String {
    format!("stat_{{{}}}_{kind}", context.key_part())
}

/// `statprev_{<context>}_<kind>`: the hour before the newest.
pub(crate) fn stat_before(context: &StatsContext, kind: &StatsKind) -> String {
    format!("statprev_{{{}}}_{kind}", context.key_part())
}

/// `slowest_{<kind>}`: a kind's slowest contexts, score = mean.
pub(crate) fn slowest(kind: &StatsKind) -> String {
    format!("slowest_{{{kind}}}")
}

/// `slowest_meta_{<kind>}`: per context in the list, `hour:count` of its mean.
pub(crate) fn slowest_meta(kind: &StatsKind) -> String {
    format!("slowest_meta_{{{kind}}}")
}

/// `stat_kinds`: every stats kind recorded (member = kind, score = the newest hour it was
/// registered in). A key of its own (its own slot on a Cluster), written by one `ZADD`
/// per kind, process and hour beside the record, never by the record script.
pub(crate) const STAT_KINDS: &str = "stat_kinds";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{BoardConfig, Timestamp};

    #[test]
    fn key_names_follow_the_documented_layout() {
        let board = Board {
            name: BoardName::parse("hot").unwrap(),
            config: BoardConfig::parse("1h", &["1h", "24h"]).unwrap(),
            version: 1,
            created_at: Timestamp::from_unix_seconds(0).unwrap(),
            incarnation: 1,
            resharding: None,
        };
        assert_eq!(record(&board.name), "board_{hot}");
        assert_eq!(index(&board.name), "slots_{hot}");
        assert_eq!(slot_geometry(&board.name), "slotgeo_{hot}");
        assert_eq!(bucket("slot_{hot}_7200_1", 3), "slot_{hot}_7200_1:3");
        assert_eq!(
            all_totals(&board.name, board.config.windows()),
            ["stats_{hot}", "stats_{hot}_86400"]
        );
        let keys: Vec<String> = stages(&board, 7200).collect();
        assert_eq!(keys, ["slot_{hot}_7200", "slot_{hot}_7200_1"]);
        assert_eq!(idempotency(&board, "k-1"), "idem_{hot}_1_k-1");
        assert_eq!(
            snapshots(&board.name, board.config.windows()[1]),
            "snap_{hot}_86400"
        );
        assert!(all_dense(&board).is_empty());
        let dense_board = Board {
            config: board.config.clone().with_ties(Ties::Dense),
            ..board
        };
        assert_eq!(
            all_dense(&dense_board),
            [
                "tally_{hot}",
                "dense_{hot}",
                "tally_{hot}_86400",
                "dense_{hot}_86400",
                "rebuild_tally_{hot}",
                "rebuild_dense_{hot}"
            ]
        );
    }
}
