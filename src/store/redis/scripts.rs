//! The Lua scripts, loaded from their own files. Each is called by SHA and reloaded
//! by `redis::Script` when Redis answers `NOSCRIPT` (after a restart or `SCRIPT FLUSH`).

use redis::Script;

/// One handle per script; building one hashes its source once.
pub(super) struct Scripts {
    pub create_board: Script,
    pub drop_begin: Script,
    pub extend_board: Script,
    pub history: Script,
    pub write: Script,
    pub read_ranking: Script,
    pub recompute_begin: Script,
    pub recompute_end: Script,
    pub recompute_fold: Script,
    pub recompute_scan: Script,
    pub recompute_swap: Script,
    pub remove_member: Script,
    pub retire_begin: Script,
    pub retire_chunk: Script,
}

impl Scripts {
    pub fn new() -> Self {
        Scripts {
            create_board: Script::new(include_str!("lua/create_board.lua")),
            drop_begin: Script::new(include_str!("lua/drop_begin.lua")),
            extend_board: Script::new(include_str!("lua/extend_board.lua")),
            history: Script::new(include_str!("lua/history.lua")),
            write: Script::new(include_str!("lua/write.lua")),
            read_ranking: Script::new(include_str!("lua/read_ranking.lua")),
            recompute_begin: Script::new(include_str!("lua/recompute_begin.lua")),
            recompute_end: Script::new(include_str!("lua/recompute_end.lua")),
            recompute_fold: Script::new(include_str!("lua/recompute_fold.lua")),
            recompute_scan: Script::new(include_str!("lua/recompute_scan.lua")),
            recompute_swap: Script::new(include_str!("lua/recompute_swap.lua")),
            remove_member: Script::new(include_str!("lua/remove_member.lua")),
            retire_begin: Script::new(include_str!("lua/retire_begin.lua")),
            retire_chunk: Script::new(include_str!("lua/retire_chunk.lua")),
        }
    }
}
