//! Exporting a board's ranking, in rank order, for a job that stores the hourly
//! ranking elsewhere. JSON lines (`{"rank":1,"member":"post:1","score":12}`) or CSV
//! (`rank,member,score` with a header). Either imports back (`import` takes the score
//! as the delta). CSV members are written exactly, quoted when they hold a comma, a
//! quote, a line break or surrounding spaces; with `csv_safe` in the spreadsheet-safe
//! form of [`csv_safe`](super::csv_safe).
//!
//! The export reads pages of 1000 in rank order; writes that land meanwhile can move
//! members between pages, so a busy board's export is a near-snapshot, not an atomic one.

use std::io::Write;

use serde::Serialize;

use super::import::Format;
use crate::{Entry, Error, Rollboard, Span};

/// What an export wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ExportReport {
    /// Entries written.
    pub entries: u64,
    /// Oldest slot the totals include (unix seconds), from the first page.
    pub from: i64,
    /// End of the newest slot the totals include (unix seconds), from the first page.
    pub to: i64,
}

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The board or the store failed.
    #[error(transparent)]
    Store(#[from] Error),
    /// The output could not be written.
    #[error("writing the output: {0}")]
    Io(#[from] std::io::Error),
}

const PAGE: u64 = 1000;

/// Writes up to `limit` entries (all when `None`) of `window`'s ranking to `out`.
pub async fn export(
    boards: &Rollboard,
    board: &str,
    window: Option<Span>,
    limit: Option<u64>,
    format: Format,
    out: impl Write,
) -> Result<ExportReport, ExportError> {
    export_with(boards, board, window, limit, format, false, out).await
}

/// [`export`], with CSV members in their spreadsheet-safe form when `csv_safe`.
pub async fn export_with(
    boards: &Rollboard,
    board: &str,
    window: Option<Span>,
    limit: Option<u64>,
    format: Format,
    csv_safe: bool,
    out: impl Write,
) -> Result<ExportReport, ExportError> {
    let mut report = ExportReport::default();
    let mut sink = Sink::new(format, csv_safe, out)?;
    loop {
        let wanted = limit.map_or(PAGE, |l| (l - report.entries).min(PAGE));
        if wanted == 0 {
            break;
        }
        let page = boards
            .windowed(board)
            .top(window, report.entries, wanted)
            .await?;
        if report.entries == 0 {
            report.from = page.from;
            report.to = page.to;
        }
        for e in &page.entries {
            sink.entry(e)?;
        }
        report.entries += page.entries.len() as u64;
        if (page.entries.len() as u64) < wanted {
            break;
        }
    }
    sink.finish()?;
    Ok(report)
}

/// Where entries go, in their format.
enum Sink<W: Write> {
    Json(W),
    /// The writer, and whether members take their safe form.
    Csv(Box<csv::Writer<W>>, bool),
}

impl<W: Write> Sink<W> {
    fn new(format: Format, csv_safe: bool, out: W) -> std::io::Result<Self> {
        Ok(match format {
            Format::Json => Sink::Json(out),
            Format::Csv => {
                let mut w = csv::Writer::from_writer(out);
                w.write_record(["rank", "member", "score"]).map_err(io)?;
                Sink::Csv(Box::new(w), csv_safe)
            }
        })
    }

    fn entry(&mut self, e: &Entry) -> std::io::Result<()> {
        match self {
            Sink::Json(out) => {
                serde_json::to_writer(&mut *out, e).map_err(std::io::Error::other)?;
                out.write_all(b"\n")
            }
            Sink::Csv(w, safe) => {
                let member = if *safe {
                    super::csv_safe::protect(&e.member)
                } else {
                    e.member.as_str().into()
                };
                w.write_record([&e.rank.to_string(), &*member, &e.score.to_string()])
                    .map_err(io)
            }
        }
    }

    fn finish(self) -> std::io::Result<()> {
        match self {
            Sink::Json(mut out) => out.flush(),
            Sink::Csv(mut w, _) => w.flush(),
        }
    }
}

fn io(e: csv::Error) -> std::io::Error {
    std::io::Error::other(e.to_string())
}
