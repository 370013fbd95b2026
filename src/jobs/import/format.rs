//! The import's input formats: JSON lines and CSV, parsed line by line into events, each
//! with its line number, or with why the line is not an event. The format is always
//! named (or taken from a file's extension), never guessed from the content.
//!
//! JSON lines: `{"member": "post:1", "delta": 1, "at": 1700000000}`, blank lines skipped,
//! no other field. CSV (RFC 4180): a **required** header line naming the columns,
//! `member` and optionally `delta` and `at` (an export's `rank` and `score` too: the score
//! is taken as the delta), in any order; every row has exactly the header's fields.
//! `delta` defaults to 1 and `at` to now. Members are taken exactly, spaces included
//! (only the numbers and the header's names are trimmed); with `csv_safe`, one leading
//! `'` is taken off each CSV member (see [`csv_safe`](crate::jobs::csv_safe)).

use std::io::{self, BufRead, BufReader, Lines, Read};
use std::iter::Enumerate;

use serde::Deserialize;

use crate::{Event, Timestamp};

/// The input's format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per line.
    #[default]
    Json,
    /// Comma-separated values with a header line.
    Csv,
}

impl Format {
    /// `"jsonl"` (or `"json"`, `"ndjson"`) or `"csv"`.
    pub fn parse(text: &str) -> Option<Format> {
        match text {
            "json" | "jsonl" | "ndjson" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            _ => None,
        }
    }

    /// The format a file's extension names (`.csv`, `.jsonl`, `.ndjson`, `.json`), if
    /// any.
    pub fn of_path(path: &std::path::Path) -> Option<Format> {
        Format::parse(&path.extension()?.to_str()?.to_ascii_lowercase())
    }
}

/// One parsed line: its number (from 1) and the event, or why it is not one.
pub(super) type Parsed = (u64, Result<Event, String>);

/// The parsed lines of `input` in `format`, in order. Fails only when the input cannot
/// be read.
pub(super) fn parse<R: Read>(input: R, format: Format, csv_safe: bool) -> ParsedLines<R> {
    let input = BufReader::with_capacity(64 * 1024, input);
    match format {
        Format::Json => ParsedLines::Json(input.lines().enumerate()),
        Format::Csv => ParsedLines::Csv {
            records: Box::new(
                csv::ReaderBuilder::new()
                    .has_headers(false)
                    .from_reader(input)
                    .into_records()
                    .enumerate(),
            ),
            columns: Err(NO_HEADER.to_owned()),
            csv_safe,
        },
    }
}

/// Why a CSV row has no meaning: the header before it is missing or wrong.
const NO_HEADER: &str =
    "no valid header line (line 1 names the columns: member, and optionally delta, at and by)";

/// An iterator over the parsed lines of an input.
pub(super) enum ParsedLines<R: Read> {
    /// JSON lines, numbered from 0.
    Json(Enumerate<Lines<BufReader<R>>>),
    /// CSV records, numbered from 0 (boxed: the reader is large), and which column holds
    /// what (once the header is read; why not otherwise).
    Csv {
        records: Box<Enumerate<csv::StringRecordsIntoIter<BufReader<R>>>>,
        columns: Result<Columns, String>,
        csv_safe: bool,
    },
}

impl<R: Read> Iterator for ParsedLines<R> {
    type Item = io::Result<Parsed>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            ParsedLines::Json(lines) => loop {
                let (number, line) = lines.next()?;
                let line = match line {
                    Ok(line) => line,
                    Err(e) => return Some(Err(e)),
                };
                if !line.trim().is_empty() {
                    return Some(Ok((number as u64 + 1, json_event(&line))));
                }
            },
            ParsedLines::Csv {
                records,
                columns,
                csv_safe,
            } => loop {
                let (n, record) = records.next()?;
                let line = match &record {
                    Ok(r) => r.position().map_or(n as u64 + 1, |p| p.line()),
                    Err(e) => e.position().map_or(n as u64 + 1, |p| p.line()),
                };
                let parsed = match record {
                    Err(e) => Err(csv_error(&e)),
                    Ok(r) if n == 0 => match Columns::from_header(&r, *csv_safe) {
                        Ok(header) => {
                            *columns = Ok(header);
                            continue;
                        }
                        Err(why) => Err(why),
                    },
                    Ok(r) => match columns {
                        Ok(columns) => columns.event(&r),
                        Err(_) => Err(NO_HEADER.to_owned()),
                    },
                };
                return Some(Ok((line, parsed)));
            },
        }
    }
}

/// What the csv crate says of a row, without the position (the line is named beside it).
fn csv_error(error: &csv::Error) -> String {
    match error.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("{len} fields, but the header has {expected_len}"),
        _ => error.to_string(),
    }
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
    by: Option<String>,
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
        value: None,
        at,
        data: None,
        by: l.by,
    })
}

/// Which CSV column holds what.
#[derive(Debug, Clone, Copy)]
pub(super) struct Columns {
    member: usize,
    delta: Option<usize>,
    at: Option<usize>,
    by: Option<usize>,
    /// Members are in their spreadsheet-safe form.
    csv_safe: bool,
}

impl Columns {
    /// The columns a header line names, or what is wrong with it.
    fn from_header(record: &csv::StringRecord, csv_safe: bool) -> Result<Columns, String> {
        let names: Vec<&str> = record.iter().map(str::trim).collect();
        let wanted = "the header line names the columns: member, and optionally delta, at \
                      and by (an export's rank and score too)";
        if let Some(unknown) = names
            .iter()
            .find(|n| !["member", "delta", "at", "by", "rank", "score"].contains(n))
        {
            return Err(format!("unknown column {unknown:?}: {wanted}"));
        }
        if let Some(twice) = names
            .iter()
            .find(|n| names.iter().filter(|m| m == n).count() > 1)
        {
            return Err(format!("column {twice:?} named twice: {wanted}"));
        }
        let find = |name: &str| names.iter().position(|n| *n == name);
        if find("delta").is_some() && find("score").is_some() {
            return Err(format!("both delta and score: {wanted}"));
        }
        Ok(Columns {
            member: find("member").ok_or_else(|| format!("no member column: {wanted}"))?,
            delta: find("delta").or_else(|| find("score")),
            at: find("at"),
            by: find("by"),
            csv_safe,
        })
    }

    fn event(&self, record: &csv::StringRecord) -> Result<Event, String> {
        let member = record.get(self.member).ok_or("no member column")?;
        let member = if self.csv_safe {
            super::super::csv_safe::unprotect(member)
        } else {
            member
        };
        let member = member.to_owned();
        let field = |i: Option<usize>| {
            i.and_then(|i| record.get(i))
                .map(str::trim)
                .filter(|f| !f.is_empty())
        };
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
        Ok(Event {
            member,
            delta,
            value: None,
            at,
            data: None,
            by: field(self.by).map(str::to_owned),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &str, format: Format) -> Vec<Parsed> {
        parse(input.as_bytes(), format, false)
            .collect::<io::Result<_>>()
            .unwrap()
    }

    #[test]
    fn json_lines_with_defaults_blank_lines_and_bad_lines() {
        let parsed = parse_all(
            "{\"member\":\"a\"}\n\n{\"member\":\"b\",\"delta\":-2,\"at\":5}\nnope\n",
            Format::Json,
        );
        assert_eq!(parsed.len(), 3);
        assert_eq!(parsed[0].0, 1);
        assert_eq!(parsed[0].1.as_ref().unwrap().delta, 1);
        assert_eq!(parsed[1].0, 3);
        assert_eq!(parsed[1].1.as_ref().unwrap().at.unwrap().unix_seconds(), 5);
        assert_eq!(parsed[2].0, 4);
        assert!(parsed[2].1.is_err());
    }

    fn events(parsed: Vec<Parsed>) -> Vec<(u64, String, i64)> {
        parsed
            .into_iter()
            .map(|(l, e)| (l, e.unwrap()))
            .map(|(l, e)| (l, e.member, e.delta))
            .collect()
    }

    #[test]
    fn csv_by_its_header_with_quoted_members_and_an_exports_columns() {
        let plain = parse_all("member,delta,at\na,2,100\n\"b,c\",,\n", Format::Csv);
        assert_eq!(
            events(plain),
            [(2, "a".to_owned(), 2), (3, "b,c".to_owned(), 1)]
        );
        let reordered = parse_all("delta, member\n4,x\n", Format::Csv);
        assert_eq!(events(reordered), [(2, "x".to_owned(), 4)]);
        let exported = parse_all("rank,member,score\n1,x,7\n2,y,3\n", Format::Csv);
        assert_eq!(
            events(exported),
            [(2, "x".to_owned(), 7), (3, "y".to_owned(), 3)]
        );
        let spaced = parse_all("member,delta,at\n\" lead\", 2 , 100 \n", Format::Csv);
        assert_eq!(events(spaced), [(2, " lead".to_owned(), 2)]);
        let bad = parse_all("member,delta,at\na,one,1\n", Format::Csv);
        assert_eq!(
            bad[0].1.as_ref().unwrap_err(),
            "delta \"one\" is not an integer"
        );
    }

    #[test]
    fn csv_without_a_valid_header_or_with_a_short_row_is_refused_line_by_line() {
        let prose = parse_all("this is not json\n{\"member\":\"x\"}\n", Format::Csv);
        let errors: Vec<(u64, String)> = prose
            .into_iter()
            .map(|(l, e)| (l, e.unwrap_err()))
            .collect();
        assert_eq!(
            errors,
            [
                (
                    1,
                    "unknown column \"this is not json\": the header line names the columns: \
                     member, and optionally delta, at and by (an export's rank and score too)"
                        .to_owned()
                ),
                (2, NO_HEADER.to_owned()),
            ]
        );
        let headless = parse_all("a,1\n", Format::Csv);
        assert!(
            headless[0]
                .1
                .as_ref()
                .unwrap_err()
                .starts_with("unknown column \"a\"")
        );
        let no_member = parse_all("delta\n1\n", Format::Csv);
        assert!(
            no_member[0]
                .1
                .as_ref()
                .unwrap_err()
                .starts_with("no member column")
        );
        let short = parse_all("member,delta\na,1\nb\n", Format::Csv);
        assert_eq!(
            (short[1].0, short[1].1.as_ref().unwrap_err().as_str()),
            (3, "1 fields, but the header has 2")
        );
    }

    #[test]
    fn the_format_comes_from_the_extension_only() {
        use std::path::Path;
        assert_eq!(Format::of_path(Path::new("a/b.CSV")), Some(Format::Csv));
        for json in ["x.jsonl", "x.ndjson", "x.json"] {
            assert_eq!(
                Format::of_path(Path::new(json)),
                Some(Format::Json),
                "{json}"
            );
        }
        assert_eq!(Format::of_path(Path::new("events.txt")), None);
        assert_eq!(Format::of_path(Path::new("-")), None);
    }
}
