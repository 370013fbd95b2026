//! Batch jobs a forum's cron or an operator runs: import a backlog, export a ranking,
//! recompute totals, import the source article's layout, apply migrations. The CLI is a
//! thin shell over these.

pub mod export;
pub mod import;
pub mod legacy;
pub mod migrate;
