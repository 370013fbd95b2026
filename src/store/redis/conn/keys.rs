//! Every Redis key name rollboard uses, in one place, each starting with the
//! deployment's key prefix (`key_prefix`, none by default), so that rollboard can share a
//! Redis with an application.
//!
//! All keys of a board carry the `{<board>}` hash tag, so on Redis Cluster they live on
//! one node and every multi-key script of a board is atomic. The registry of boards is
//! global and is only ever touched by its own single-key commands. The prefix holds no
//! brace, so the tag stays the board's own.

use crate::domain::board::Board;
use crate::domain::counter::CounterName;
use crate::domain::stats::{StatsContext, StatsKind};
use crate::domain::{BoardName, Span, Ties};
use crate::rates::{RateKey, RateTiers};

/// `text` with the glob characters of a `MATCH` pattern (`SCAN`, `HSCAN`) escaped.
pub(crate) fn glob_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// The contributor and member of a field of a slot stage's contributions (`<stage>:c`,
/// `lua/contributors.lua`): `<by>\n<member>`, `\n<by>\n<member>` (a refused part), or
/// `<by>` (its likes' budget use in the slot; member `""`).
pub(crate) fn contribution_field(field: &str) -> (&str, &str) {
    let pair = field.strip_prefix('\n').unwrap_or(field);
    pair.split_once('\n').unwrap_or((pair, ""))
}

/// The names of rollboard's keys, each starting with the deployment's key prefix
/// ([`RedisOptions::key_prefix`](super::options::RedisOptions::key_prefix), empty by
/// default).
#[derive(Debug, Clone, Default)]
pub(crate) struct Keys {
    prefix: std::sync::Arc<str>,
}

impl Keys {
    /// The names of keys starting with `prefix`.
    pub(crate) fn new(prefix: &str) -> Keys {
        Keys {
            prefix: prefix.into(),
        }
    }

    /// `rate_{<key, %-encoded>}_<tiers fingerprint>`: a rate key's time ring. The encoding
    /// has no `{`, `}` or `:`, so the tag is the whole key and no two keys share one; the
    /// fingerprint keeps rings written under other tiers from being misread.
    pub(crate) fn rate(&self, key: &RateKey, tiers: &RateTiers) -> String {
        format!(
            "{}rate_{{{}}}_{}",
            self.prefix,
            key.encoded(),
            tiers.fingerprint()
        )
    }

    /// The set of board names.
    pub(crate) fn registry(&self) -> String {
        self.prefixed("rollboard:boards")
    }

    /// `rollboard:hidden`: the members hidden on every board, boards created later too.
    pub(crate) fn hidden_everywhere(&self) -> String {
        self.prefixed("rollboard:hidden")
    }

    /// `rollboard:quarantined`: the contributors quarantined on every board, boards
    /// created later too.
    pub(crate) fn quarantined(&self) -> String {
        self.prefixed("rollboard:quarantined")
    }

    /// `rollboard:moderation`: the moderation log, a stream (field `e`: the entry's JSON).
    pub(crate) fn moderation_log(&self) -> String {
        self.prefixed("rollboard:moderation")
    }

    /// `board_{<board>}`: the board record (config, version, watermarks).
    pub(crate) fn record(&self, name: &BoardName) -> String {
        self.tagged("board", name)
    }

    /// `board_{<board>}:ctr:<by>`: a contributor's sums on a board keeping contributors
    /// (`lua/contributors.lua`, which names it the same way).
    pub(crate) fn contributor(&self, name: &BoardName, by: &str) -> String {
        format!("{}:ctr:{by}", self.record(name))
    }

    /// `board_{<board>}:ctrs`: a board's contributors (`lua/contributors.lua`).
    pub(crate) fn contributors(&self, name: &BoardName) -> String {
        format!("{}:ctrs", self.record(name))
    }

    /// `board_{<board>}:hidden`: a sum board's hidden members (field = member), and
    /// `<totals>:hidden` beside each window's totals: their totals (`hide.lua`); then the
    /// review gate's (`lua/review.lua`): `board_{<board>}:allowed`, `:bars`, `:held` (the
    /// members it held, a stream) and `:held_sent` (the review webhook's cursor); then the
    /// watched tops' (`lua/watch.lua`): `:watch`, `:changes` (see [`changes`](Self::changes))
    /// and `:changes_sent` (the changes webhook's cursor).
    pub(crate) fn hidden(&self, name: &BoardName, windows: &[Span]) -> Vec<String> {
        let totals = self.all_totals(name, windows).into_iter();
        let record = self.record(name);
        let review = [
            "allowed",
            "bars",
            "held",
            "held_sent",
            "watch",
            "changes",
            "changes_sent",
        ]
        .map(|k| format!("{record}:{k}"));
        totals
            .chain([record.clone()])
            .map(|key| format!("{key}:hidden"))
            .chain(review)
            .collect()
    }

    /// `board_{<board>}:changes`: the changes of the board's watched tops, a stream (see
    /// `lua/watch.lua`).
    pub(crate) fn changes(&self, name: &BoardName) -> String {
        format!("{}:changes", self.record(name))
    }

    /// `board_{<board>}:watch`: the watched tops as last recorded, and the newest change
    /// id trimmed (see `lua/watch.lua`).
    pub(crate) fn watched(&self, name: &BoardName) -> String {
        format!("{}:watch", self.record(name))
    }

    /// `trend_{<board>}`: a trending board's stored values (negated forward-decayed sums).
    pub(crate) fn trend(&self, name: &BoardName) -> String {
        self.tagged("trend", name)
    }

    /// `trend_{<board>}_next`: a trending board's rescale build, renamed over `trend_…`.
    pub(crate) fn trend_next(&self, name: &BoardName) -> String {
        format!("{}trend_{{{name}}}_next", self.prefix)
    }

    /// `idem_{<board>}_<version>_<key>`: the record of a trending board's write made under
    /// an idempotency key (the same shape of name as a windowed board's).
    pub(crate) fn trend_idempotency(
        &self,
        board: &crate::domain::TrendingBoard,
        key: &str,
    ) -> String {
        format!(
            "{}idem_{{{}}}_{}_{key}",
            self.prefix, board.name, board.version
        )
    }

    /// `slots_{<board>}`: the index of live slots, score = slot start.
    pub(crate) fn index(&self, name: &BoardName) -> String {
        self.tagged("slots", name)
    }

    /// `rebuild_{<board>}`: the totals a recompute is building (see `recompute_begin.lua`).
    pub(crate) fn rebuild(&self, name: &BoardName) -> String {
        self.tagged("rebuild", name)
    }

    /// `rebuild_tally_{<board>}`, dense boards only: the tally of a recompute's build, as
    /// `tally_…` is of the totals; renamed over the window's tally with the build.
    pub(crate) fn rebuild_tally(&self, name: &BoardName) -> String {
        self.tagged("rebuild_tally", name)
    }

    /// `rebuild_dense_{<board>}`, dense boards only: the distinct totals of a recompute's
    /// build; renamed over the window's `dense_…` with the build.
    pub(crate) fn rebuild_dense(&self, name: &BoardName) -> String {
        self.tagged("rebuild_dense", name)
    }

    /// `rebuild_records_{<board>}`: a max, min or latest board's records (as `peaks_…` or
    /// `newest_…`) a recompute is building; renamed over them with the build.
    pub(crate) fn rebuild_records(&self, name: &BoardName) -> String {
        self.tagged("rebuild_records", name)
    }

    /// `rebuild_log_{<board>}`: members a recompute must compute afresh.
    pub(crate) fn rebuild_log(&self, name: &BoardName) -> String {
        self.tagged("rebuild_log", name)
    }

    /// `rebuild_scan_{<board>}`: how far a recompute's scan got in each stage hash.
    pub(crate) fn rebuild_scan(&self, name: &BoardName) -> String {
        self.tagged("rebuild_scan", name)
    }

    /// `journal_{<board>}`: tokens of writes applied exactly once (see `write.lua`).
    pub(crate) fn journal(&self, name: &BoardName) -> String {
        self.tagged("journal", name)
    }

    /// `idem_{<board>}_<incarnation>_<key>`: the record of a write made under an idempotency
    /// key (see `write.lua`), expiring by itself. The incarnation (the board's first version)
    /// keeps a re-created board from reading the records of the one dropped before it, and
    /// keeps the records of this one across its config changes (a window added, a reshard:
    /// a new version), so a retry after one is still applied once.
    pub(crate) fn idempotency(&self, board: &Board, key: &str) -> String {
        format!(
            "{}idem_{{{}}}_{}_{key}",
            self.prefix, board.name, board.incarnation
        )
    }

    /// `stats_{<board>}` for the first window, `stats_{<board>}_<W>` for the others.
    pub(crate) fn totals(&self, name: &BoardName, windows: &[Span], window: usize) -> String {
        self.per_window("stats_", name, windows, window)
    }

    /// `tally_{<board>}[_<W>]`, dense boards only: a window's positive totals, field = a
    /// total, value = how many members hold it (see `retally` in `lua/totals.lua`).
    pub(crate) fn tally(&self, name: &BoardName, windows: &[Span], window: usize) -> String {
        self.per_window("tally_", name, windows, window)
    }

    /// `dense_{<board>}[_<W>]`, dense boards only: a window's distinct positive totals, a
    /// zset with member = score = the total, for dense ranks in O(log D).
    pub(crate) fn dense(&self, name: &BoardName, windows: &[Span], window: usize) -> String {
        self.per_window("dense_", name, windows, window)
    }

    /// `snap_{<board>}_<W>`: window `W`'s period snapshots, a stream whose entry IDs are the
    /// boundaries in milliseconds (see `snapshot_take.lua`).
    pub(crate) fn snapshots(&self, name: &BoardName, window: Span) -> String {
        format!("{}snap_{{{name}}}_{}", self.prefix, window.seconds())
    }

    /// `snapsent_{<board>}`: per window (field = its seconds), the newest boundary whose
    /// snapshot was delivered to the snapshot webhook.
    pub(crate) fn snapshot_cursors(&self, name: &BoardName) -> String {
        self.tagged("snapsent", name)
    }

    /// On a dense board, the tally and distinct-totals keys of every window, in pairs,
    /// smallest window first, then those of a recompute's build; nothing on a competition
    /// board.
    pub(crate) fn all_dense(&self, board: &Board) -> Vec<String> {
        if board.config.ties() != Ties::Dense {
            return Vec::new();
        }
        self.dense_keys(&board.name, board.config.windows())
    }

    /// The tally and distinct-totals keys of every window of a board with `windows`, in
    /// pairs, smallest window first, then those of a recompute's build (whatever its ties).
    pub(crate) fn dense_keys(&self, name: &BoardName, windows: &[Span]) -> Vec<String> {
        (0..windows.len())
            .flat_map(|j| [self.tally(name, windows, j), self.dense(name, windows, j)])
            .chain([self.rebuild_tally(name), self.rebuild_dense(name)])
            .collect()
    }

    /// On a dense board, window `window`'s tally and distinct-totals keys; nothing on a
    /// competition board.
    pub(crate) fn window_dense(&self, board: &Board, window: usize) -> Vec<String> {
        if board.config.ties() != Ties::Dense {
            return Vec::new();
        }
        let windows = board.config.windows();
        vec![
            self.tally(&board.name, windows, window),
            self.dense(&board.name, windows, window),
        ]
    }

    /// On a dense board, a recompute's build's tally and distinct totals; nothing on a
    /// competition board.
    pub(crate) fn build_dense(&self, board: &Board) -> Vec<String> {
        if board.config.ties() != Ties::Dense {
            return Vec::new();
        }
        vec![
            self.rebuild_tally(&board.name),
            self.rebuild_dense(&board.name),
        ]
    }

    /// The totals keys of every window, smallest window first.
    pub(crate) fn all_totals(&self, name: &BoardName, windows: &[Span]) -> Vec<String> {
        (0..windows.len())
            .map(|j| self.totals(name, windows, j))
            .collect()
    }

    /// Stage `stage` (from 0) of a slot: `slot_{<board>}_<ts>` holds events written before
    /// any window froze the slot; `slot_{<board>}_<ts>_<k>` those written after `k` windows
    /// froze it, plus what retirement of window `k` handed on.
    pub(crate) fn stage(&self, name: &BoardName, slot: i64, stage: usize) -> String {
        let (mut slot_text, mut stage_text) = (itoa::Buffer::new(), itoa::Buffer::new());
        let (sep, stage_text) = match stage {
            0 => ("", ""),
            _ => ("_", stage_text.format(stage)),
        };
        let slot = slot_text.format(slot);
        let name = name.as_str();
        [&self.prefix, "slot_{", name, "}_", slot, sep, stage_text].concat()
    }

    /// `slot_{<board>}_`: what every stage key of the board starts with (as
    /// [`stage`](Self::stage) names them).
    pub(crate) fn slot_prefix(&self, name: &BoardName) -> String {
        format!("{}slot_{{{name}}}_", self.prefix)
    }

    /// All stage keys of a slot, stage 0 first.
    pub(crate) fn stages<'a>(
        &'a self,
        board: &'a Board,
        slot: i64,
    ) -> impl Iterator<Item = String> + 'a {
        (0..board.config.windows().len()).map(move |k| self.stage(&board.name, slot, k))
    }

    /// `peaks_{<board>}`: a max or min board's peak lists, field = member, value = the
    /// `<slot>:<value>` pairs of its live slots that no newer slot matches (see `peaks_add`
    /// in `lua/maxima.lua`).
    pub(crate) fn peaks(&self, name: &BoardName) -> String {
        self.tagged("peaks", name)
    }

    /// `newest_{<board>}`: a latest board's newest events, field = member, value =
    /// `<slot>:<at>:<value>` (see `newest_add` in `lua/maxima.lua`).
    pub(crate) fn newest(&self, name: &BoardName) -> String {
        self.tagged("newest", name)
    }

    /// What a max, min or latest board's writes and retirement keep per member: its peak
    /// lists, or its newest events.
    pub(crate) fn records(&self, board: &Board) -> String {
        if board.config.aggregate().latest() {
            self.newest(&board.name)
        } else {
            self.peaks(&board.name)
        }
    }

    /// `data_{<board>}`: member data, field = member, value = its JSON text; a field lives
    /// as long as the member's total in the largest window (see `add_total` and `bulk_add`
    /// in `lua/totals.lua`).
    pub(crate) fn data(&self, name: &BoardName) -> String {
        self.tagged("data", name)
    }

    /// `moved_{<board>}`: on a shard of a sharded board, the members a reshard marked
    /// moved off it (a set; writers send them to their new shard).
    pub(crate) fn moved(&self, name: &BoardName) -> String {
        self.tagged("moved", name)
    }

    /// `moving_{<board>}`: on a shard of a sharded board, the moves a reshard has under way:
    /// field = member, value = what it takes (a stash, see `sharded/reshard.rs`).
    pub(crate) fn moving(&self, name: &BoardName) -> String {
        self.tagged("moving", name)
    }

    /// `slotgeo_{<board>}`: the geometry of each compact slot, field `<ts>` = `"<L> <p>
    /// <count>"` (linear hashing: `2^L + p` buckets); a slot without a field is plain.
    pub(crate) fn slot_geometry(&self, name: &BoardName) -> String {
        self.tagged("slotgeo", name)
    }

    /// The index of counters: a hash, field = counter name, value = the generation listed.
    /// Written only when a counter is first seen (see `counter_incr.lua`).
    pub(crate) fn counter_index(&self) -> String {
        self.prefixed("rollboard:counters")
    }

    /// `counter_{<counter>}`: a counter's record (precisions, generation, listed mark).
    pub(crate) fn counter_record(&self, name: &CounterName) -> String {
        self.tagged("counter", name.as_str())
    }

    /// `counterconf_{<counter>}`: a counter's own precisions (seconds, comma-separated),
    /// when it has some; set by `PUT /v1/counters/{name}`, read by `counter_incr.lua`.
    pub(crate) fn counter_config(&self, name: &CounterName) -> String {
        self.tagged("counterconf", name.as_str())
    }

    /// `count_{<counter>}_<p>`: a counter's samples at precision `p` seconds, field = slice
    /// start.
    pub(crate) fn counter_samples(&self, name: &CounterName, precision: Span) -> String {
        format!("{}count_{{{name}}}_{}", self.prefix, precision.seconds())
    }

    /// `stat_{<context>}_<kind>`: the newest hour of a (context, kind); the context encoded
    /// by [`StatsContext::key_part`], so it is a hash tag of its own.
    pub(crate) fn stat_newest(&self, context: &StatsContext, kind: &StatsKind) -> String {
        format!("{}stat_{{{}}}_{kind}", self.prefix, context.key_part())
    }

    /// `statprev_{<context>}_<kind>`: the hour before the newest.
    pub(crate) fn stat_before(&self, context: &StatsContext, kind: &StatsKind) -> String {
        format!("{}statprev_{{{}}}_{kind}", self.prefix, context.key_part())
    }

    /// `slowest_{<kind>}`: a kind's slowest contexts, score = mean.
    pub(crate) fn slowest(&self, kind: &StatsKind) -> String {
        self.tagged("slowest", kind.as_str())
    }

    /// `slowest_meta_{<kind>}`: per context in the list, `hour:count` of its mean.
    pub(crate) fn slowest_meta(&self, kind: &StatsKind) -> String {
        self.tagged("slowest_meta", kind.as_str())
    }

    /// `stat_kinds`: every stats kind recorded (member = kind, score = the newest hour it was
    /// registered in). A key of its own (its own slot on a Cluster), written by one `ZADD`
    /// per kind, process and hour beside the record, never by the record script.
    pub(crate) fn stat_kinds(&self) -> String {
        self.prefixed("stat_kinds")
    }

    /// `name` under the prefix (the untagged names, and the migrations' own).
    pub(crate) fn prefixed(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// `<prefix><head>_{<tag>}`: the name of a key tagged with `tag`. Names on the hot
    /// paths are joined with `concat`, not `format!`, which cost a like ~5% of the
    /// service's instructions for its keys.
    fn tagged(&self, head: &str, tag: impl AsRef<str>) -> String {
        [&self.prefix, head, "_{", tag.as_ref(), "}"].concat()
    }

    /// `<prefix><head>{<board>}` for the first window, `…_<W>` (seconds) for the others.
    fn per_window(&self, head: &str, name: &BoardName, windows: &[Span], window: usize) -> String {
        let mut seconds = itoa::Buffer::new();
        let (sep, seconds) = match window {
            0 => ("", ""),
            _ => ("_", seconds.format(windows[window].seconds())),
        };
        [&self.prefix, head, "{", name.as_str(), "}", sep, seconds].concat()
    }
}

/// The heads of rollboard's tagged key names, each followed by a hash tag (`{…}`).
#[cfg(any(feature = "server", test))]
const TAGGED_HEADS: &[&str] = &[
    "rate_",
    "board_",
    "trend_",
    "idem_",
    "slots_",
    "rebuild_",
    "rebuild_tally_",
    "rebuild_dense_",
    "rebuild_records_",
    "rebuild_log_",
    "rebuild_scan_",
    "journal_",
    "stats_",
    "tally_",
    "dense_",
    "snap_",
    "snapsent_",
    "slot_",
    "peaks_",
    "newest_",
    "data_",
    "moved_",
    "moving_",
    "slotgeo_",
    "counter_",
    "counterconf_",
    "count_",
    "stat_",
    "statprev_",
    "slowest_",
    "slowest_meta_",
];

/// rollboard's key names without a hash tag (the migrations lock, a lease, is left out).
#[cfg(any(feature = "server", test))]
const UNTAGGED: &[&str] = &[
    "rollboard:boards",
    "rollboard:counters",
    "rollboard:hidden",
    "rollboard:migrations",
    "rollboard:moderation",
    "stat_kinds",
];

/// Whether `name`, with any prefix taken off, is the name of one of rollboard's keys
/// (for moving a deployment under another prefix, `jobs/prefix_move.rs`).
#[cfg(any(feature = "server", test))]
pub(crate) fn is_rollboard_name(name: &str) -> bool {
    UNTAGGED.contains(&name)
        || name
            .split_once('{')
            .is_some_and(|(head, _)| TAGGED_HEADS.contains(&head))
}

/// The scripts' word for a max, min or latest board: `latest` or `max`.
pub(crate) fn mode(board: &Board) -> &'static str {
    if board.config.aggregate().latest() {
        "latest"
    } else {
        "max"
    }
}

/// Bucket `i` of a compact slot's stage `stage_key` (a key of [`stage`]).
pub(crate) fn bucket(stage_key: &str, i: u64) -> String {
    format!("{stage_key}:{i}")
}

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
            pins: Vec::new(),
        };
        let k = Keys::default();
        assert_eq!(k.record(&board.name), "board_{hot}");
        assert_eq!(k.index(&board.name), "slots_{hot}");
        assert_eq!(k.slot_geometry(&board.name), "slotgeo_{hot}");
        assert_eq!(bucket("slot_{hot}_7200_1", 3), "slot_{hot}_7200_1:3");
        assert_eq!(
            k.all_totals(&board.name, board.config.windows()),
            ["stats_{hot}", "stats_{hot}_86400"]
        );
        let keys: Vec<String> = k.stages(&board, 7200).collect();
        assert_eq!(keys, ["slot_{hot}_7200", "slot_{hot}_7200_1"]);
        assert_eq!(k.idempotency(&board, "k-1"), "idem_{hot}_1_k-1");
        assert_eq!(
            k.snapshots(&board.name, board.config.windows()[1]),
            "snap_{hot}_86400"
        );
        assert!(k.all_dense(&board).is_empty());
        let dense_board = Board {
            config: board.config.clone().with_ties(Ties::Dense),
            ..board
        };
        assert_eq!(
            k.all_dense(&dense_board),
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

    #[test]
    fn every_name_is_known_as_rollboard_s() {
        let k = Keys::default();
        let board = Board {
            name: BoardName::parse("hot").unwrap(),
            config: BoardConfig::parse("1h", &["1h", "24h"]).unwrap(),
            version: 1,
            created_at: Timestamp::from_unix_seconds(0).unwrap(),
            incarnation: 1,
            resharding: None,
            pins: Vec::new(),
        };
        let (name, windows) = (&board.name, board.config.windows());
        let counter = CounterName::parse("views").unwrap();
        let (context, kind) = (
            StatsContext::parse("home").unwrap(),
            StatsKind::parse("T").unwrap(),
        );
        let mut names = vec![
            k.registry(),
            k.record(name),
            k.trend(name),
            k.trend_next(name),
            k.index(name),
            k.rebuild(name),
            k.rebuild_records(name),
            k.rebuild_log(name),
            k.rebuild_scan(name),
            k.journal(name),
            k.idempotency(&board, "x"),
            k.snapshots(name, windows[1]),
            k.snapshot_cursors(name),
            k.peaks(name),
            k.newest(name),
            k.data(name),
            k.moved(name),
            k.moving(name),
            k.slot_geometry(name),
            k.counter_index(),
            k.counter_record(&counter),
            k.counter_config(&counter),
            k.counter_samples(&counter, windows[0]),
            k.stat_newest(&context, &kind),
            k.stat_before(&context, &kind),
            k.slowest(&kind),
            k.slowest_meta(&kind),
            k.stat_kinds(),
            k.prefixed("rollboard:migrations"),
            bucket(&k.stage(name, 0, 1), 3),
        ];
        names.extend(k.dense_keys(name, windows));
        names.extend(k.all_totals(name, windows));
        for name in &names {
            assert!(is_rollboard_name(name), "{name}");
        }
        for other in [
            "slot_likes_7200",
            "stats_likes",
            "rollboard:migrations:lock",
            "board_x",
        ] {
            assert!(!is_rollboard_name(other), "{other}");
        }
    }

    #[test]
    fn a_prefix_starts_every_name_and_leaves_the_hash_tag_alone() {
        let k = Keys::new("app1:");
        let name = BoardName::parse("hot").unwrap();
        assert_eq!(k.record(&name), "app1:board_{hot}");
        assert_eq!(k.stage(&name, 7200, 1), "app1:slot_{hot}_7200_1");
        assert_eq!(k.registry(), "app1:rollboard:boards");
        assert_eq!(k.stat_kinds(), "app1:stat_kinds");
        assert_eq!(
            k.prefixed("rollboard:migrations"),
            "app1:rollboard:migrations"
        );
    }
}
