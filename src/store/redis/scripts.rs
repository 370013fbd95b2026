//! The Lua scripts, loaded from their own files, each sent after the definitions of
//! `lua/prelude.lua` it uses (the board-record guard, the recompute lease, the server
//! clock and more that the scripts share; see `prelude.rs`). Each is called by SHA and
//! reloaded by `redis::Script` when Redis answers `NOSCRIPT` (after a restart or
//! `SCRIPT FLUSH`).

use std::sync::LazyLock;

use redis::Script;

use super::prelude::joined;

/// A script's source: the prelude's definitions it uses, then the file `lua/<name>.lua`
/// (`<name>` may name a subfolder: `retire/retire_begin`).
macro_rules! source {
    ($name:literal) => {
        joined(include_str!(concat!("lua/", $name, ".lua")))
    };
}

macro_rules! script {
    ($name:literal) => {
        Script::new(&source!($name))
    };
}

/// The source of `rate_hits.lua`, for the `SCRIPT LOAD` that precedes re-sending a
/// pipeline of its calls (scripts in a pipeline are not reloaded by the client).
pub(super) static RATE_HITS_SOURCE: LazyLock<String> = LazyLock::new(|| source!("rate_hits"));

/// The source of `retire/retire_small.lua`, for the same reason (retirement pipelines its calls
/// over many boards).
pub(super) static RETIRE_SMALL_SOURCE: LazyLock<String> =
    LazyLock::new(|| source!("retire/retire_small"));

/// One handle per script; building one hashes its source once.
pub(super) struct Scripts {
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
}

impl Scripts {
    pub fn new() -> Self {
        Scripts {
            counter_clean: script!("counter_clean"),
            counter_drop: script!("counter_drop"),
            counter_incr: script!("counter_incr"),
            counter_indexed: script!("counter_indexed"),
            counter_unindex: script!("counter_unindex"),
            stats_record: script!("stats_record"),
            stats_slowest: script!("stats_slowest"),
            compact_move: script!("retire/compact_move"),
            create_board: script!("create_board"),
            data_set: script!("data_set"),
            data_sweep: script!("data_sweep"),
            drop_begin: script!("drop_begin"),
            extend_board: script!("extend_board"),
            history: script!("history"),
            moved_clear: script!("moved_clear"),
            moved_lease: script!("moved_lease"),
            moved_mark: script!("moved_mark"),
            moved_stash: script!("moved_stash"),
            rate_hit: script!("rate_hit"),
            rate_hits: Script::new(&RATE_HITS_SOURCE),
            write: script!("write"),
            write_plain: script!("write_plain"),
            write_max: script!("write_max"),
            read_ranking: script!("read_ranking"),
            recompute_begin: script!("recompute_begin"),
            recompute_end: script!("recompute_end"),
            recompute_fold: script!("recompute_fold"),
            recompute_scan: script!("recompute_scan"),
            recompute_swap: script!("recompute_swap"),
            recompute_max_scan: script!("recompute_max_scan"),
            recompute_max_swap: script!("recompute_max_swap"),
            relayout: script!("relayout"),
            relayout_chunk: script!("relayout_chunk"),
            remove_member: script!("remove_member"),
            remove_max: script!("remove_max"),
            compact_max: script!("retire/compact_max"),
            retire_begin: script!("retire/retire_begin"),
            retire_chunk: script!("retire/retire_chunk"),
            retire_small: Script::new(&RETIRE_SMALL_SOURCE),
            retire_max: script!("retire/retire_max"),
            retire_swap: script!("retire/retire_swap"),
            reshard_set: script!("reshard_set"),
            set_snapshots: script!("set_snapshots"),
            snapshot_append: script!("snapshot_append"),
            snapshot_delivered: script!("snapshot_delivered"),
            snapshot_take: script!("snapshot_take"),
            trend_create: script!("trend_create"),
            trend_prune: script!("trend_prune"),
            trend_read: script!("trend_read"),
            trend_rescale: script!("trend_rescale"),
            trend_write: script!("trend_write"),
        }
    }
}
