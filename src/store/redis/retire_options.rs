//! How the Redis store runs a retirement pass: chunk sizes and time budgets of its
//! script calls, the swap path and the compaction that follows. Redis tuning: the
//! [`Store`](crate::store::Store) trait takes none of it; the store holds its own
//! (`RedisOptions::retire`), and `ServerStore::retire_with` takes others for one pass.

/// How a retirement pass of the Redis store runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetireOptions {
    /// Most slot fields one script call subtracts.
    pub chunk_size: usize,
    /// How long one script call may work: it stops before a step (about 50 fields) that
    /// would likely overrun it, so Redis never blocks for long, whatever the machine.
    pub chunk_budget: std::time::Duration,
    /// Stop after this many chunk calls (the pass reports `complete: false`). `None` runs
    /// to the end. A later pass resumes exactly where this one stopped.
    pub max_chunks: Option<usize>,
    /// Compact, after retiring a compact board, the slot that just closed (written plain
    /// while it was open: `docs/design.md`, "Compact slots"), in calls of `chunk_budget`.
    /// `false` retires only (the benchmark times retirement alone).
    pub compact: bool,
    /// Window 1 of a board whose first window is one slot long retires the slot that
    /// closed by a swap (Redis store, `retire_swap.lua`: its totals rebuilt from the
    /// newer slots, the closed slot's stage moved by `RENAME`) when the rebuild reads at
    /// most this many fields (the newer slots' first stage plus the closed slot's
    /// second); otherwise, and with 0, chunk by chunk.
    pub swap_fields: usize,
}

impl Default for RetireOptions {
    fn default() -> Self {
        RetireOptions {
            chunk_size: 1000,
            chunk_budget: std::time::Duration::from_micros(1500),
            max_chunks: None,
            compact: true,
            swap_fields: 600,
        }
    }
}
