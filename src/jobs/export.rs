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
use crate::{Error, Rollboard, Span};

/// What an export wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ExportReport {
    /// Ranked entries written.
    pub entries: u64,
    /// Hidden members written (with [`ExportOptions::hidden`]).
    pub hidden: u64,
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

/// How to export: the window, how many entries, the format, and whether to mark and
/// write the hidden members too.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExportOptions {
    /// The window; the board's first by default.
    pub window: Option<Span>,
    /// Most ranked entries to write (all when `None`).
    pub limit: Option<u64>,
    /// JSON lines or CSV.
    pub format: Format,
    /// CSV members in their spreadsheet-safe form ([`csv_safe`](super::csv_safe)).
    pub csv_safe: bool,
    /// After the ranking, the board's hidden members that hold a value in the window,
    /// each marked: `{"member","score","hidden":true}` (no rank); CSV gains a `hidden`
    /// column (`true` on theirs, empty on ranked rows, whose rank theirs leave empty).
    pub hidden: bool,
}

/// Writes up to `limit` entries (all when `None`) of `window`'s ranking to `out`.
pub async fn export(
    boards: &Rollboard,
    board: &str,
    window: Option<Span>,
    limit: Option<u64>,
    format: Format,
    out: impl Write,
) -> Result<ExportReport, ExportError> {
    let options = ExportOptions {
        window,
        limit,
        format,
        ..ExportOptions::default()
    };
    export_with(boards, board, &options, out).await
}

/// [`export`] with every option.
pub async fn export_with(
    boards: &Rollboard,
    board: &str,
    options: &ExportOptions,
    out: impl Write,
) -> Result<ExportReport, ExportError> {
    let (window, limit) = (options.window, options.limit);
    let mut report = ExportReport::default();
    let mut sink = Sink::new(options, out)?;
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
            sink.row(Some(e.rank), &e.member, e.score)?;
        }
        report.entries += page.entries.len() as u64;
        if (page.entries.len() as u64) < wanted {
            break;
        }
    }
    if options.hidden {
        let hidden = boards.windowed(board).hidden_members(window).await?;
        for member in hidden.members {
            if let Some(score) = member.score {
                sink.row(None, &member.member, score)?;
                report.hidden += 1;
            }
        }
    }
    sink.finish()?;
    Ok(report)
}

/// One exported row, as JSON writes it.
#[derive(Serialize)]
struct Row<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    rank: Option<u64>,
    member: &'a str,
    score: i64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    hidden: bool,
}

/// Where entries go, in their format.
enum Sink<W: Write> {
    Json(W),
    /// The writer, whether members take their safe form, and whether rows are marked
    /// hidden or not.
    Csv(Box<csv::Writer<W>>, bool, bool),
}

impl<W: Write> Sink<W> {
    fn new(options: &ExportOptions, out: W) -> std::io::Result<Self> {
        Ok(match options.format {
            Format::Json => Sink::Json(out),
            Format::Csv => {
                let mut w = csv::Writer::from_writer(out);
                let mut header = vec!["rank", "member", "score"];
                if options.hidden {
                    header.push("hidden");
                }
                w.write_record(header).map_err(io)?;
                Sink::Csv(Box::new(w), options.csv_safe, options.hidden)
            }
        })
    }

    /// A ranked entry (`rank`), or a hidden member (`None`).
    fn row(&mut self, rank: Option<u64>, member: &str, score: i64) -> std::io::Result<()> {
        match self {
            Sink::Json(out) => {
                let hidden = rank.is_none();
                let row = Row {
                    rank,
                    member,
                    score,
                    hidden,
                };
                serde_json::to_writer(&mut *out, &row).map_err(std::io::Error::other)?;
                out.write_all(b"\n")
            }
            Sink::Csv(w, safe, marked) => {
                let member = if *safe {
                    super::csv_safe::protect(member)
                } else {
                    member.into()
                };
                let rank = rank.map(|r| r.to_string()).unwrap_or_default();
                let mut record = vec![rank, member.into_owned(), score.to_string()];
                if *marked {
                    let hidden = if record[0].is_empty() { "true" } else { "" };
                    record.push(hidden.to_owned());
                }
                w.write_record(record).map_err(io)
            }
        }
    }

    fn finish(self) -> std::io::Result<()> {
        match self {
            Sink::Json(mut out) => out.flush(),
            Sink::Csv(mut w, ..) => w.flush(),
        }
    }
}

fn io(e: csv::Error) -> std::io::Error {
    std::io::Error::other(e.to_string())
}
