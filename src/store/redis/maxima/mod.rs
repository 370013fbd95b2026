//! Max, min and latest boards in Redis: one value per slot and member, kept by their own
//! scripts (`write_max.lua`, `remove_max.lua`, `recompute_max_*.lua`) on the sums' write
//! path and recompute lease. Their retirement is in `retire/`.

pub(crate) mod recompute;
pub(crate) mod remove;
pub(crate) mod write;
