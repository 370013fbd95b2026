//! The import's input formats: JSON lines and CSV, parsed line by line into events, each
//! with its line number, or with why the line is not an event.
//!
//! JSON lines: `{"member": "post:1", "delta": 1, "at": 1700000000}`, blank lines skipped.
//! CSV: `member,delta,at` by position, or by the names of a header line; an export's
//! `rank,member,score` header takes the score as the delta. `delta` defaults to 1 and
//! `at` to now. Members are taken exactly, spaces included (only the numbers and the
//! header's names are trimmed); with `csv_safe`, one leading `'` is taken off each CSV
//! member (see [`csv_safe`](crate::jobs::csv_safe)).

use std::io::{self, BufRead, BufReader, Lines, Read};
use std::iter::Enumerate;

use serde::Deserialize;

use crate::{Event, Timestamp};

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

/// One parsed line: its number (from 1) and the event, or why it is not one.
pub(super) type Parsed = (u64, Result<Event, String>);

/// The parsed lines of `input`, in order; the format is guessed from the first line when
/// `None` (`{` means JSON). Fails only when the input cannot be read.
pub(super) fn parse<R: Read>(
    input: R,
    format: Option<Format>,
    csv_safe: bool,
) -> io::Result<ParsedLines<R>> {
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
    Ok(match format {
        Format::Json => ParsedLines::Json(input.lines().enumerate()),
        Format::Csv => ParsedLines::Csv {
            records: csv::ReaderBuilder::new()
                .has_headers(false)
                .flexible(true)
                .from_reader(input)
                .into_records()
                .enumerate(),
            columns: Columns {
                csv_safe,
                ..Columns::POSITIONAL
            },
        },
    })
}

/// An iterator over the parsed lines of an input.
pub(super) enum ParsedLines<R: Read> {
    /// JSON lines, numbered from 0.
    Json(Enumerate<Lines<BufReader<R>>>),
    /// CSV records, numbered from 0, and which column holds what.
    Csv {
        records: Enumerate<csv::StringRecordsIntoIter<BufReader<R>>>,
        columns: Columns,
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
            ParsedLines::Csv { records, columns } => loop {
                let (n, record) = records.next()?;
                let line = match &record {
                    Ok(r) => r.position().map_or(n as u64 + 1, |p| p.line()),
                    Err(e) => e.position().map_or(n as u64 + 1, |p| p.line()),
                };
                let parsed = match record {
                    Err(e) => Err(e.to_string()),
                    Ok(r) if n == 0 && Columns::is_header(&r) => {
                        *columns = Columns::from_header(&r, columns.csv_safe);
                        continue;
                    }
                    Ok(r) => columns.event(&r),
                };
                return Some(Ok((line, parsed)));
            },
        }
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
    })
}

/// Which CSV column holds what.
#[derive(Debug, Clone, Copy)]
pub(super) struct Columns {
    member: usize,
    delta: Option<usize>,
    at: Option<usize>,
    /// Members are in their spreadsheet-safe form.
    csv_safe: bool,
}

impl Columns {
    /// Without a header: `member,delta,at`.
    const POSITIONAL: Columns = Columns {
        member: 0,
        delta: Some(1),
        at: Some(2),
        csv_safe: false,
    };

    fn is_header(record: &csv::StringRecord) -> bool {
        record.iter().any(|f| f.trim() == "member")
    }

    fn from_header(record: &csv::StringRecord, csv_safe: bool) -> Columns {
        let find = |name: &str| record.iter().position(|f| f.trim() == name);
        Columns {
            member: find("member").unwrap_or(0),
            delta: find("delta").or_else(|| find("score")),
            at: find("at"),
            csv_safe,
        }
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
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &str, format: Option<Format>) -> Vec<Parsed> {
        parse(input.as_bytes(), format, false)
            .unwrap()
            .collect::<io::Result<_>>()
            .unwrap()
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
        let spaced = parse_all("\" lead\", 2 , 100 \ntrail ,3\n", Some(Format::Csv));
        let events: Vec<(String, i64)> = spaced
            .into_iter()
            .map(|(_, e)| e.unwrap())
            .map(|e| (e.member, e.delta))
            .collect();
        assert_eq!(events, [(" lead".to_owned(), 2), ("trail ".to_owned(), 3)]);
        let bad = parse_all("a,one,1\n", Some(Format::Csv));
        assert_eq!(
            bad[0].1.as_ref().unwrap_err(),
            "delta \"one\" is not an integer"
        );
    }
}
