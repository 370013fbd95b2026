//! The numbered migrations `rollboard migrate` applies, in order, each once per Redis
//! (the runner, its record and its lock are in `src/jobs/migrate.rs`).
//!
//! A migration is an async function of a [`Context`](super::Context) returning a one-line summary. It
//! must be idempotent: a process that stalls past the lock's lease, or is killed half-way
//! and run again, may run it twice. To add one: a file `NNNN_what.rs` here and its entry
//! at the end of [`ALL`] with the next number; numbers are never reused or reordered.

use super::Migration;

#[path = "0001_legacy_layout.rs"]
mod legacy_layout;

/// Every migration, in order.
pub(super) const ALL: &[Migration] = &[Migration {
    id: 1,
    name: "legacy_layout",
    about: "import boards kept in the source article's layout (slot_<NAME>_<ts>, stats_<NAME>, \
            last_slot_<NAME>) into the boards the config declares for them",
    run: |context| Box::pin(legacy_layout::run(context)),
}];
