//! Importing a backlog of timestamped events, streamed in constant memory through the
//! same exact write path as every other write.
//!
//! Input is JSON lines (`{"member": "post:1", "delta": 1, "at": 1700000000}`) or CSV
//! with a header line (`member,delta,at`), in the format the caller names; `delta`
//! defaults to 1 and `at` to now. An export (`rank`, `member`, `score`) imports too: its
//! score is taken as the delta. On a max, min or latest board (`"aggregate"`) the delta
//! (or score) is the event's value. The formats live in [`format`](self::Format); this
//! module is the pipeline.
//!
//! Two passes. The first reads the whole input, copying it to a spool file (unlinked at
//! once, so it goes with the process) while it checks every line: a malformed line
//! stops the import there, **nothing written** (unless `skip_bad`), and a dry run stops
//! after it with the count of events. The second reads the spool: a reader thread
//! parses it into batches and hands them over a bounded channel, so memory stays the
//! same whatever the input's size; batches are written a few at a time, and their
//! outcomes counted into the report.
//!
//! Every batch is written under an idempotency key made of the import's *run id* and its
//! line numbers, applied at most once per key (see
//! [`Windowed::write_keyed`](crate::Windowed::write_keyed)). An import that stopped (its
//! store failed, a reply was lost) is finished exactly by running it again on the same
//! input with the same run id within the keys' time to live (`idempotency_ttl`, 24 h by
//! default): batches already applied are skipped. Without a run id each import gets a fresh
//! one, so importing a file twice counts it twice.

use std::fs::File;
use std::io::{Read, Seek};

use serde::Serialize;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::{Error, Fingerprint, IdempotencyKey, Rollboard};

/// Longest run id: its batches' keys (`import:<run id>:<line>-<line>`) stay within the
/// 255 characters of an idempotency key.
const MAX_RUN_ID: usize = 200;

mod format;

pub use format::Format;
use format::Parsed;

/// How an import runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportOptions {
    /// The format (default JSON lines): never guessed from the content.
    pub format: Format,
    /// Import the events of the well-formed lines and count the malformed ones, instead
    /// of refusing the whole input for its first malformed line.
    pub skip_bad: bool,
    /// Check the whole input and report what would be imported, writing nothing.
    pub dry_run: bool,
    /// Events per write.
    pub batch_size: usize,
    /// Writes in flight at once.
    pub in_flight: usize,
    /// The run id: batches written under it before (by a run that stopped) are skipped.
    /// `None` makes a fresh one.
    pub run_id: Option<String>,
    /// CSV members are in the spreadsheet-safe form of an export with `csv_safe`: one
    /// leading `'` is taken off each (see [`csv_safe`](crate::jobs::csv_safe)).
    pub csv_safe: bool,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            format: Format::Json,
            skip_bad: false,
            dry_run: false,
            batch_size: 1000,
            in_flight: 4,
            run_id: None,
            csv_safe: false,
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
    /// The run id its batches were written under (give it again to finish a stopped run).
    pub run_id: String,
    /// Lines read (blank lines and a CSV header included).
    pub lines: u64,
    /// Well-formed events in the input (what a dry run would import).
    pub events: u64,
    /// Events applied.
    pub imported: u64,
    /// Events of batches an earlier run with the same run id applied: skipped.
    pub already_imported: u64,
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
    /// A line is not an event (and `skip_bad` is off): nothing was imported.
    #[error("line {line}: {message} (nothing was imported)")]
    Malformed {
        /// Its number, from 1.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// The board or the store failed before anything was written.
    #[error(transparent)]
    Store(#[from] Error),
    /// The store failed while writing: the batches written so far are applied, and a
    /// batch whose reply was lost may be. Running the import again with `run_id`
    /// applies the rest exactly once.
    #[error(
        "{source} ({imported} events imported; run the import again with run id {run_id:?} \
         to finish it exactly once)"
    )]
    Stopped {
        /// What failed.
        source: Error,
        /// Events imported before it stopped.
        imported: u64,
        /// The run id to give again.
        run_id: String,
    },
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
    // On a max, min or latest board a line's delta (or an export's score) is the event's value,
    // so an export imports back.
    let values = !boards.board(board).await?.config.aggregate().sums();
    let run_id = options
        .run_id
        .clone()
        .unwrap_or_else(|| format!("{:x}", crate::store::new_version()));
    if run_id.len() > MAX_RUN_ID {
        return Err(Error::InvalidIdempotencyKey {
            reason: format!("the run id is longer than {MAX_RUN_ID} characters"),
        }
        .into());
    }
    IdempotencyKey::parse(&run_id).map_err(|e| match e {
        Error::InvalidIdempotencyKey { reason } => Error::InvalidIdempotencyKey {
            reason: format!("run id {run_id:?}: {reason}"),
        },
        other => other,
    })?;
    let (format, csv_safe, skip_bad) = (options.format, options.csv_safe, options.skip_bad);
    let (spool, mut report) =
        tokio::task::spawn_blocking(move || check(input, format, csv_safe, skip_bad))
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))??;
    if let (false, Some(first)) = (skip_bad, report.problems.first()) {
        return Err(ImportError::Malformed {
            line: first.line,
            message: first.message.clone(),
        });
    }
    report.run_id = run_id.clone();
    if options.dry_run {
        return Ok(report);
    }

    let batch_size = options.batch_size.max(1);
    let (batches, mut inbox) = mpsc::channel::<Vec<Parsed>>(options.in_flight.max(1));
    let reader = tokio::task::spawn_blocking(move || {
        read_batches(spool, format, csv_safe, batch_size, &batches)
    });

    let mut writes: JoinSet<Written> = JoinSet::new();
    while let Some(batch) = inbox.recv().await {
        let mut events = Vec::with_capacity(batch.len());
        let mut lines = Vec::with_capacity(batch.len());
        // A malformed line was counted by the first pass (which refused the input for
        // it unless `skip_bad`): skipped here.
        for (line, parsed) in batch {
            if let Ok(mut event) = parsed {
                if values {
                    event.value = Some(event.delta);
                }
                events.push(event);
                lines.push(line);
            }
        }
        if !events.is_empty() {
            while writes.len() >= options.in_flight.max(1) {
                absorb(&mut writes, &mut report, &progress).await?;
            }
            let (boards, board) = (boards.clone(), board.to_owned());
            // The batch's lines name it: the same input gives the same keys.
            let key = format!("import:{run_id}:{}-{}", lines[0], lines[lines.len() - 1]);
            let key = IdempotencyKey::parse(&key)?;
            writes.spawn(async move {
                let fingerprint = Fingerprint::of_events(&events);
                let outcome = boards
                    .windowed(&board)
                    .write_keyed(&events, &key, &fingerprint)
                    .await
                    .map(|k| (!k.replayed).then_some(k.outcome));
                (lines, events.len(), outcome)
            });
        }
    }
    drop(inbox);
    while !writes.is_empty() {
        absorb(&mut writes, &mut report, &progress).await?;
    }
    reader
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))??;
    Ok(report)
}

/// A batch written: its events' line numbers, its size, and what the store did.
type Written = (Vec<u64>, usize, Result<Option<crate::BatchOutcome>, Error>);

/// Waits for one write and adds its outcome to the report.
async fn absorb(
    writes: &mut JoinSet<Written>,
    report: &mut ImportReport,
    progress: &impl Fn(&ImportReport),
) -> Result<(), ImportError> {
    let Some(joined) = writes.join_next().await else {
        return Ok(());
    };
    let (lines, size, outcome) =
        joined.map_err(|e| Error::store(format!("import task failed: {e}")))?;
    let outcome = outcome.map_err(|source| ImportError::Stopped {
        source,
        imported: report.imported,
        run_id: report.run_id.clone(),
    })?;
    let Some(outcome) = outcome else {
        report.already_imported += size as u64;
        progress(report);
        return Ok(());
    };
    let (applied, too_late, rejected) = super::tally(outcome);
    report.imported += applied;
    report.too_late += too_late;
    report.rejected += rejected.len() as u64;
    for (index, error) in rejected {
        report.problem(lines[index], error.to_string());
    }
    progress(report);
    Ok(())
}

/// The first pass: reads all of `input` into a spool file while checking every line.
/// Returns the spool, rewound, and the report of what it holds (`lines`, `events`, the
/// malformed lines); without `skip_bad` it stops at the first malformed line.
fn check(
    input: impl Read,
    format: Format,
    csv_safe: bool,
    skip_bad: bool,
) -> std::io::Result<(File, ImportReport)> {
    // Already unlinked: the spool goes with the file handle.
    let mut spool = tempfile::tempfile()?;
    let mut report = ImportReport::default();
    let copy = Tee {
        input,
        copy: &mut spool,
    };
    for parsed in format::parse(copy, format, csv_safe) {
        let (line, event) = parsed?;
        report.lines = line;
        match event {
            Ok(_) => report.events += 1,
            Err(message) => {
                report.bad_lines += 1;
                report.problem(line, message);
                if !skip_bad {
                    break;
                }
            }
        }
    }
    spool.rewind()?;
    Ok((spool, report))
}

/// Reads `input`, writing what it read to `copy`.
struct Tee<'a, R> {
    input: R,
    copy: &'a mut File,
}

impl<R: Read> Read for Tee<'_, R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let n = self.input.read(buffer)?;
        std::io::Write::write_all(self.copy, &buffer[..n])?;
        Ok(n)
    }
}

/// The reader thread: parses `input` and sends batches of `batch_size` lines until the
/// input ends (or the receiver goes away).
fn read_batches(
    input: impl Read,
    format: Format,
    csv_safe: bool,
    batch_size: usize,
    batches: &mpsc::Sender<Vec<Parsed>>,
) -> std::io::Result<()> {
    let mut batch = Vec::with_capacity(batch_size);
    for parsed in format::parse(input, format, csv_safe) {
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
        let input = "member,delta\na,1\nb,2\n\"c\nd\",3\ne,4\nf,5\n";
        read_batches(input.as_bytes(), Format::Csv, false, 2, &tx).unwrap();
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
            [&[(2, "a"), (3, "b")], &[(4, "c\nd"), (6, "e")], &[(7, "f")]];
        let expected: Vec<Vec<(u64, String)>> = expected
            .iter()
            .map(|b| b.iter().map(|(l, m)| (*l, m.to_string())).collect())
            .collect();
        assert_eq!(batches, expected);
    }
}
