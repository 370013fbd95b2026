//! Sum boards in Redis, and the write path the max, min and latest boards share: a
//! [`WriteCall`](write_call::WriteCall) with its budget, sent as summed entries or events
//! (`write.lua`, `write_plain.lua`), once under a token or an idempotency key, with the
//! standing it asks for; batch ingest; member removal; and recompute under a lease.

pub(crate) mod budget;
pub(crate) mod ingest;
pub(crate) mod once;
pub(crate) mod recompute;
pub(crate) mod standing;
pub(crate) mod write;
pub(crate) mod write_call;
