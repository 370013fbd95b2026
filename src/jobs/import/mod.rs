//! Importing a backlog of timestamped events, streamed in constant memory through the
//! same exact write path as every other write.
//!
//! Input is JSON lines (`{"member": "post:1", "delta": 1, "at": 1700000000}`) or CSV
//! (`member,delta,at`, header optional); `delta` defaults to 1 and `at` to now. An
//! export (`rank`, `member`, `score`) imports too: its score is taken as the delta. The
//! formats live in [`format`](self::Format); this module is the pipeline. A reader
//! thread parses the input into batches and hands them over a bounded channel, so
//! memory stays the same whatever the input's size; batches are written a few at a
//! time, and their outcomes counted into the report.

use std::io::Read;

use serde::Serialize;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::{Error, Rollboard};

mod format;

pub use format::Format;
use format::Parsed;

/// How an import runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportOptions {
    /// The format; `None` guesses from the first line (`{` means JSON).
    pub format: Option<Format>,
    /// Count malformed lines and go on, instead of stopping at the first.
    pub skip_bad: bool,
    /// Events per write.
    pub batch_size: usize,
    /// Writes in flight at once.
    pub in_flight: usize,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            format: None,
            skip_bad: false,
            batch_size: 1000,
            in_flight: 4,
        }
    }
}

/// A problem with one line of the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineProblem {
    /// The line number, from 1.
    pub line: u64,
    /// What is wrong.
    pub message: String,
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    /// Lines read (blank lines and a CSV header included).
    pub lines: u64,
    /// Events applied.
    pub imported: u64,
    /// Events older than the board's largest window: skipped, not failures.
    pub too_late: u64,
    /// Events the board rejected otherwise (in the future, out of range, bad member…).
    pub rejected: u64,
    /// Lines that are not events (only with `skip_bad`).
    pub bad_lines: u64,
    /// The first problems met, with their line numbers.
    pub problems: Vec<LineProblem>,
}

/// Problems kept in the report.
const KEPT_PROBLEMS: usize = 10;

impl ImportReport {
    fn problem(&mut self, line: u64, message: String) {
        if self.problems.len() < KEPT_PROBLEMS {
            self.problems.push(LineProblem { line, message });
        }
    }
}

/// Why an import stopped.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A line is not an event (and `skip_bad` is off). Lines before it were imported.
    #[error("line {line}: {message} ({imported} events before it were imported)")]
    Malformed {
        /// Its number, from 1.
        line: u64,
        /// What is wrong.
        message: String,
        /// Events imported before the import stopped.
        imported: u64,
    },
    /// The board or the store failed.
    #[error(transparent)]
    Store(#[from] Error),
    /// The input could not be read.
    #[error("reading the input: {0}")]
    Io(#[from] std::io::Error),
}

/// Imports every event of `input` into `board`. `progress` is called with the report so
/// far after each batch is written.
pub async fn import(
    boards: &Rollboard,
    board: &str,
    input: impl Read + Send + 'static,
    options: ImportOptions,
    progress: impl Fn(&ImportReport),
) -> Result<ImportReport, ImportError> {
    boards.board(board).await?;
    let batch_size = options.batch_size.max(1);
    let (batches, mut inbox) = mpsc::channel::<Vec<Parsed>>(options.in_flight.max(1));
    let format = options.format;
    let reader =
        tokio::task::spawn_blocking(move || read_batches(input, format, batch_size, &batches));

    let mut report = ImportReport::default();
    let mut writes: JoinSet<(Vec<u64>, Result<crate::BatchOutcome, Error>)> = JoinSet::new();
    let mut stop: Option<ImportError> = None;
    while let Some(batch) = inbox.recv().await {
        report.lines = batch.last().map_or(report.lines, |(line, _)| *line);
        let mut events = Vec::with_capacity(batch.len());
        let mut lines = Vec::with_capacity(batch.len());
        for (line, parsed) in batch {
            match parsed {
                Ok(event) => {
                    events.push(event);
                    lines.push(line);
                }
                Err(message) if options.skip_bad => {
                    report.bad_lines += 1;
                    report.problem(line, message);
                }
                Err(message) => {
                    stop = Some(ImportError::Malformed {
                        line,
                        message,
                        imported: 0,
                    });
                    break;
                }
            }
        }
        if !events.is_empty() {
            while writes.len() >= options.in_flight.max(1) {
                absorb(&mut writes, &mut report, &progress).await?;
            }
            let (boards, board) = (boards.clone(), board.to_owned());
            writes.spawn(async move {
                let outcome = boards.incr_batch(&board, &events).await;
                (lines, outcome)
            });
        }
        if stop.is_some() {
            break;
        }
    }
    drop(inbox);
    while !writes.is_empty() {
        absorb(&mut writes, &mut report, &progress).await?;
    }
    if let Some(ImportError::Malformed { line, message, .. }) = stop {
        return Err(ImportError::Malformed {
            line,
            message,
            imported: report.imported,
        });
    }
    reader
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))??;
    Ok(report)
}

/// Waits for one write and adds its outcome to the report.
async fn absorb(
    writes: &mut JoinSet<(Vec<u64>, Result<crate::BatchOutcome, Error>)>,
    report: &mut ImportReport,
    progress: &impl Fn(&ImportReport),
) -> Result<(), ImportError> {
    let Some(joined) = writes.join_next().await else {
        return Ok(());
    };
    let (lines, outcome) = joined.map_err(|e| Error::Store(format!("import task failed: {e}")))?;
    let outcome = outcome?;
    report.imported += outcome.accepted as u64;
    for r in outcome.rejected {
        if matches!(r.error, Error::TooLate { .. }) {
            report.too_late += 1;
        } else {
            report.rejected += 1;
            report.problem(lines[r.index], r.error.to_string());
        }
    }
    progress(report);
    Ok(())
}

/// The reader thread: parses `input` and sends batches of `batch_size` lines until the
/// input ends (or the receiver goes away).
fn read_batches(
    input: impl Read,
    format: Option<Format>,
    batch_size: usize,
    batches: &mpsc::Sender<Vec<Parsed>>,
) -> std::io::Result<()> {
    let mut batch = Vec::with_capacity(batch_size);
    for parsed in format::parse(input, format)? {
        batch.push(parsed?);
        if batch.len() == batch_size {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(batch_size));
            if batches.blocking_send(full).is_err() {
                return Ok(());
            }
        }
    }
    if !batch.is_empty() {
        let _ = batches.blocking_send(batch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_go_out_in_batches_of_batch_size_with_their_numbers() {
        let (tx, mut rx) = mpsc::channel(10);
        let input = "a,1\nb,2\n\"c\nd\",3\ne,4\nf,5\n";
        read_batches(input.as_bytes(), Some(Format::Csv), 2, &tx).unwrap();
        drop(tx);
        let mut batches = Vec::new();
        while let Ok(batch) = rx.try_recv() {
            let lines: Vec<(u64, String)> = batch
                .into_iter()
                .map(|(line, event)| (line, event.unwrap().member))
                .collect();
            batches.push(lines);
        }
        let expected: [&[(u64, &str)]; 3] =
            [&[(1, "a"), (2, "b")], &[(3, "c\nd"), (5, "e")], &[(6, "f")]];
        let expected: Vec<Vec<(u64, String)>> = expected
            .iter()
            .map(|b| b.iter().map(|(l, m)| (*l, m.to_string())).collect())
            .collect();
        assert_eq!(batches, expected);
    }
}
