//! The Lua scripts, loaded from their own files beside the code that calls them, each
//! sent after the definitions of the shared files of `lua/` it uses (the board-record
//! guard, the recompute lease, the server clock and more; see `prelude.rs`). Each is called by SHA and
//! reloaded by `redis::Script` when Redis answers `NOSCRIPT` (after a restart or
//! `SCRIPT FLUSH`).

use std::sync::LazyLock;

use redis::Script;

use super::prelude::joined;

/// A script's source: the prelude's definitions it uses, then its files, each named by
/// its path under `src/store/redis/` (`retire/retire_begin`), in order.
macro_rules! source {
    ($($name:literal),+) => {
        joined(concat!($(include_str!(concat!("../", $name, ".lua"))),+))
    };
}

macro_rules! script {
    ($name:literal) => {
        Script::new(&source!($name))
    };
}

/// The source of `rate_hits.lua` (in three files), for the `SCRIPT LOAD` that precedes re-sending a
/// pipeline of its calls (scripts in a pipeline are not reloaded by the client).
pub(crate) static RATE_HITS_SOURCE: LazyLock<String> =
    LazyLock::new(|| source!("rates/rate_hits", "rates/rate_play", "rates/rate_keys"));

/// The source of `retire/retire_small.lua`, for the same reason (retirement pipelines its calls
/// over many boards).
pub(crate) static RETIRE_SMALL_SOURCE: LazyLock<String> =
    LazyLock::new(|| source!("retire/retire_small"));

/// One handle per script; building one hashes its source once.
pub(crate) struct Scripts {
    pub counter_clean: Script,
    pub counter_drop: Script,
    pub counter_incr: Script,
    pub counter_indexed: Script,
    pub counter_unindex: Script,
    pub stats_record: Script,
    pub stats_slowest: Script,
    pub compact_move: Script,
    pub create_board: Script,
    pub data_set: Script,
    pub data_sweep: Script,
    pub drop_begin: Script,
    pub extend_board: Script,
    pub history: Script,
    pub gate_epoch: Script,
    pub gate_publish: Script,
    pub gate_top: Script,
    pub moved_clear: Script,
    pub moved_lease: Script,
    pub moved_mark: Script,
    pub moved_stash: Script,
    pub rate_hit: Script,
    pub rate_hits: Script,
    pub write: Script,
    pub write_plain: Script,
    pub write_max: Script,
    pub read_ranking: Script,
    pub recompute_begin: Script,
    pub recompute_end: Script,
    pub recompute_fold: Script,
    pub recompute_scan: Script,
    pub recompute_swap: Script,
    pub recompute_max_scan: Script,
    pub recompute_max_swap: Script,
    pub relayout: Script,
    pub relayout_chunk: Script,
    pub remove_member: Script,
    pub hide: Script,
    pub read_hidden: Script,
    pub pins_set: Script,
    pub review_set: Script,
    pub review_decide: Script,
    pub cursor_delivered: Script,
    pub watch_set: Script,
    pub changes_read: Script,
    pub remove_max: Script,
    pub compact_max: Script,
    pub retire_begin: Script,
    pub retire_chunk: Script,
    pub retire_small: Script,
    pub retire_max: Script,
    pub retire_swap: Script,
    pub reshard_set: Script,
    pub set_snapshots: Script,
    pub snapshot_append: Script,
    pub snapshot_delivered: Script,
    pub snapshot_take: Script,
    pub trend_create: Script,
    pub trend_prune: Script,
    pub trend_read: Script,
    pub trend_rescale: Script,
    pub trend_write: Script,
    pub contrib_retire: Script,
    pub contrib_remove: Script,
    pub contrib_retract: Script,
    pub contrib_hold: Script,
}

impl Scripts {
    pub fn new() -> Self {
        Scripts {
            counter_clean: script!("counters/counter_clean"),
            counter_drop: script!("counters/counter_drop"),
            counter_incr: script!("counters/counter_incr"),
            counter_indexed: script!("counters/counter_indexed"),
            counter_unindex: script!("counters/counter_unindex"),
            stats_record: script!("stats/stats_record"),
            stats_slowest: script!("stats/stats_slowest"),
            compact_move: script!("retire/compact_move"),
            create_board: script!("board/create_board"),
            data_set: script!("board/data_set"),
            data_sweep: script!("board/data_sweep"),
            drop_begin: script!("board/drop_begin"),
            extend_board: script!("board/extend_board"),
            history: script!("board/history"),
            gate_epoch: script!("resharding/gate_epoch"),
            gate_publish: script!("resharding/gate_publish"),
            gate_top: script!("resharding/gate_top"),
            moved_clear: script!("resharding/moved_clear"),
            moved_lease: script!("resharding/moved_lease"),
            moved_mark: script!("resharding/moved_mark"),
            moved_stash: script!("resharding/moved_stash"),
            rate_hit: script!("rates/rate_hit"),
            rate_hits: Script::new(&RATE_HITS_SOURCE),
            write: script!("sums/write"),
            write_plain: script!("sums/write_plain"),
            write_max: script!("maxima/write_max"),
            read_ranking: script!("board/read_ranking"),
            recompute_begin: script!("board/recompute_begin"),
            recompute_end: script!("board/recompute_end"),
            recompute_fold: script!("sums/recompute_fold"),
            recompute_scan: script!("sums/recompute_scan"),
            recompute_swap: script!("sums/recompute_swap"),
            recompute_max_scan: script!("maxima/recompute_max_scan"),
            recompute_max_swap: script!("maxima/recompute_max_swap"),
            relayout: script!("board/relayout"),
            relayout_chunk: script!("board/relayout_chunk"),
            remove_member: script!("sums/remove_member"),
            hide: script!("sums/hide"),
            read_hidden: script!("sums/read_hidden"),
            pins_set: script!("sums/pins_set"),
            review_set: script!("sums/review_set"),
            review_decide: script!("sums/review_decide"),
            cursor_delivered: script!("sums/cursor_delivered"),
            watch_set: script!("sums/watch_set"),
            changes_read: script!("sums/changes_read"),
            remove_max: script!("maxima/remove_max"),
            compact_max: script!("retire/compact_max"),
            retire_begin: script!("retire/retire_begin"),
            retire_chunk: script!("retire/retire_chunk"),
            retire_small: Script::new(&RETIRE_SMALL_SOURCE),
            retire_max: script!("retire/retire_max"),
            retire_swap: script!("retire/retire_swap"),
            reshard_set: script!("resharding/reshard_set"),
            set_snapshots: script!("board/set_snapshots"),
            snapshot_append: script!("board/snapshot_append"),
            snapshot_delivered: script!("board/snapshot_delivered"),
            snapshot_take: script!("board/snapshot_take"),
            trend_create: script!("trending/trend_create"),
            trend_prune: script!("trending/trend_prune"),
            trend_read: script!("trending/trend_read"),
            trend_rescale: script!("trending/trend_rescale"),
            trend_write: script!("trending/trend_write"),
            contrib_retire: script!("contributors/contrib_retire"),
            contrib_remove: script!("contributors/contrib_remove"),
            contrib_retract: script!("contributors/contrib_retract"),
            contrib_hold: script!("contributors/contrib_hold"),
        }
    }
}
