//! Importing a backlog of timestamped events, streamed in constant memory through the
//! same exact write path as every other write.
//!
//! Input is JSON lines (`{"member": "post:1", "delta": 1, "at": 1700000000}`) or CSV
//! (`member,delta,at`, header optional); `delta` defaults to 1 and `at` to now. An
//! export (`rank`, `member`, `score`) imports too: its score is taken as the delta. A
//! reader thread parses the input into batches and hands them over a bounded channel,
//! so memory stays the same whatever the input's size.

use std::io::{BufRead, BufReader, Read};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::{Error, Event, Rollboard, Timestamp};

/// The input's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per line.
    Json,
    /// Comma-separated values.
    Csv,
}

impl Format {
    /// `"json"` or `"csv"`.
    pub fn parse(text: &str) -> Option<Format> {
        match text {
            "json" | "jsonl" | "ndjson" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            _ => None,
        }
    }
}

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

/// One parsed line: its number and the event, or why it is not one.
type Parsed = (u64, Result<Event, String>);

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

/// The reader thread: parses `input` and sends batches until the input ends (or the
/// receiver goes away).
fn read_batches(
    input: impl Read,
    format: Option<Format>,
    batch_size: usize,
    batches: &mpsc::Sender<Vec<Parsed>>,
) -> std::io::Result<()> {
    let mut input = BufReader::with_capacity(64 * 1024, input);
    let format = match format {
        Some(f) => f,
        None => {
            let head = input.fill_buf()?;
            let first = head.iter().find(|b| !b.is_ascii_whitespace());
            if first == Some(&b'{') {
                Format::Json
            } else {
                Format::Csv
            }
        }
    };
    let mut batch = Vec::with_capacity(batch_size);
    let send = |batch: &mut Vec<Parsed>| {
        let full = std::mem::replace(batch, Vec::with_capacity(batch_size));
        batches.blocking_send(full).is_ok()
    };
    match format {
        Format::Json => {
            for (number, line) in input.lines().enumerate() {
                let line = line?;
                if line.trim().is_empty() {
                    continue;
                }
                batch.push((number as u64 + 1, json_event(&line)));
                if batch.len() == batch_size && !send(&mut batch) {
                    return Ok(());
                }
            }
        }
        Format::Csv => {
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(false)
                .flexible(true)
                .trim(csv::Trim::All)
                .from_reader(input);
            let mut columns = Columns::POSITIONAL;
            for (n, record) in reader.records().enumerate() {
                let line = match &record {
                    Ok(r) => r.position().map_or(n as u64 + 1, |p| p.line()),
                    Err(e) => e.position().map_or(n as u64 + 1, |p| p.line()),
                };
                let parsed = match record {
                    Err(e) => Err(e.to_string()),
                    Ok(r) if n == 0 && Columns::is_header(&r) => {
                        columns = Columns::from_header(&r);
                        continue;
                    }
                    Ok(r) => columns.event(&r),
                };
                batch.push((line, parsed));
                if batch.len() == batch_size && !send(&mut batch) {
                    return Ok(());
                }
            }
        }
    }
    if !batch.is_empty() {
        send(&mut batch);
    }
    Ok(())
}

/// A JSON line: an event, or an exported entry (its `score` taken as the delta).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonLine {
    member: String,
    delta: Option<i64>,
    score: Option<i64>,
    #[allow(dead_code)]
    rank: Option<u64>,
    at: Option<f64>,
}

fn json_event(line: &str) -> Result<Event, String> {
    let l: JsonLine = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let at =
        l.at.map(Timestamp::from_unix_seconds_f64)
            .transpose()
            .map_err(|e| e.to_string())?;
    Ok(Event {
        member: l.member,
        delta: l.delta.or(l.score).unwrap_or(1),
        at,
    })
}

/// Which CSV column holds what.
#[derive(Debug, Clone, Copy)]
struct Columns {
    member: usize,
    delta: Option<usize>,
    at: Option<usize>,
}

impl Columns {
    /// Without a header: `member,delta,at`.
    const POSITIONAL: Columns = Columns {
        member: 0,
        delta: Some(1),
        at: Some(2),
    };

    fn is_header(record: &csv::StringRecord) -> bool {
        record.iter().any(|f| f == "member")
    }

    fn from_header(record: &csv::StringRecord) -> Columns {
        let find = |name: &str| record.iter().position(|f| f == name);
        Columns {
            member: find("member").unwrap_or(0),
            delta: find("delta").or_else(|| find("score")),
            at: find("at"),
        }
    }

    fn event(&self, record: &csv::StringRecord) -> Result<Event, String> {
        let member = record
            .get(self.member)
            .ok_or("no member column")?
            .to_owned();
        let field = |i: Option<usize>| i.and_then(|i| record.get(i)).filter(|f| !f.is_empty());
        let delta = match field(self.delta) {
            None => 1,
            Some(d) => d
                .parse()
                .map_err(|_| format!("delta {d:?} is not an integer"))?,
        };
        let at = match field(self.at) {
            None => None,
            Some(a) => {
                let seconds: f64 = a
                    .parse()
                    .map_err(|_| format!("at {a:?} is not unix seconds"))?;
                Some(Timestamp::from_unix_seconds_f64(seconds).map_err(|e| e.to_string())?)
            }
        };
        Ok(Event { member, delta, at })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &str, format: Option<Format>) -> Vec<Parsed> {
        let (tx, mut rx) = mpsc::channel(100);
        read_batches(input.as_bytes().to_vec().as_slice(), format, 2, &tx).unwrap();
        drop(tx);
        let mut all = Vec::new();
        while let Ok(batch) = rx.try_recv() {
            all.extend(batch);
        }
        all
    }

    #[test]
    fn json_lines_with_defaults_blank_lines_and_bad_lines() {
        let parsed = parse_all(
            "{\"member\":\"a\"}\n\n{\"member\":\"b\",\"delta\":-2,\"at\":5}\nnope\n",
            None,
        );
        assert_eq!(parsed.len(), 3);
        assert_eq!(parsed[0].0, 1);
        assert_eq!(parsed[0].1.as_ref().unwrap().delta, 1);
        assert_eq!(parsed[1].0, 3);
        assert_eq!(parsed[1].1.as_ref().unwrap().at.unwrap().unix_seconds(), 5);
        assert_eq!(parsed[2].0, 4);
        assert!(parsed[2].1.is_err());
    }

    #[test]
    fn csv_with_or_without_header_and_quoted_members() {
        let plain = parse_all("a,2,100\n\"b,c\",,\n", Some(Format::Csv));
        let events: Vec<(String, i64)> = plain
            .into_iter()
            .map(|(_, e)| e.unwrap())
            .map(|e| (e.member, e.delta))
            .collect();
        assert_eq!(events, [("a".to_owned(), 2), ("b,c".to_owned(), 1)]);
        let exported = parse_all("rank,member,score\n1,x,7\n2,y,3\n", None);
        let events: Vec<(u64, String, i64)> = exported
            .into_iter()
            .map(|(l, e)| (l, e.unwrap()))
            .map(|(l, e)| (l, e.member, e.delta))
            .collect();
        assert_eq!(events, [(2, "x".to_owned(), 7), (3, "y".to_owned(), 3)]);
        let bad = parse_all("a,one,1\n", Some(Format::Csv));
        assert_eq!(
            bad[0].1.as_ref().unwrap_err(),
            "delta \"one\" is not an integer"
        );
    }
}
