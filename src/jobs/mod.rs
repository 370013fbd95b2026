//! Batch jobs a forum's cron or an operator runs: import a backlog, export a ranking,
//! recompute totals, import the source article's layout, apply migrations. The CLI is a
//! thin shell over these.

pub mod csv_safe;
pub mod export;
pub mod import;
pub mod legacy;
pub mod migrate;
pub mod prefix_move;
mod scan;

/// A batch a job wrote, split for its report: events applied, events older than the
/// board's windows (skipped, not failures), and the other rejections with their index in
/// the batch.
pub(crate) fn tally(outcome: crate::BatchOutcome) -> (u64, u64, Vec<(usize, crate::Error)>) {
    let (mut too_late, mut rejected) = (0, Vec::new());
    for r in outcome.rejected {
        match r.error {
            crate::Error::TooLate { .. } => too_late += 1,
            error => rejected.push((r.index, error)),
        }
    }
    (outcome.accepted as u64, too_late, rejected)
}
