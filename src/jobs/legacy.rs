//! Importing a board kept in the source article's layout (`DyStats`, seed 002).
//!
//! That layout keeps, for a board `NAME`: a hash `slot_NAME_<ts>` per interval (`ts` the
//! interval's start in unix seconds; field a member, value the sum of its increments in
//! the interval), a zset `stats_NAME` of running totals, and `last_slot_NAME`.
//!
//! The import finds the slot hashes with `SCAN MATCH` (a one-off job; no hot path scans),
//! keeps the keys that are exactly `slot_NAME_<digits>`, and takes them oldest first. Each
//! hash is read with `HSCAN`, its fields sorted by member, and written at the slot's start
//! in chunks through [`Windowed::incr_batch_once`](crate::Windowed::incr_batch_once), each
//! with the token `legacy:<key>:<chunk>`: a run that stops half-way (or two runs at once)
//! counts every field exactly once when run again. The legacy writers must be stopped
//! first: a field that changes between runs would be cut into other chunks.
//!
//! Windows: the article retires a slot only once it is older than the current hour minus
//! `period + interval`, and only at the first write of a new interval, so its "24 h"
//! totals (hourly slots) hold 25 to 26 slots. rollboard's windows are exact: legacy slots
//! older than the board's largest window are skipped and counted, not failures. A board
//! whose largest window is `period + 2 × interval` (26 h for 24 h of hourly slots) holds
//! every slot the article keeps, and its totals equal `stats_NAME` exactly.
//!
//! Slot starts: the article aligns slots to the hour of the machine's local time. A new
//! board takes its alignment offset from the legacy slots (unless one is given); a slot
//! that does not fall on the board's slot boundaries stops the import before it writes.

use serde::Serialize;

use super::scan::scan_suffixes;
use crate::store::{RedisConn, Retry};
use crate::{BoardConfig, Error, Event, RedisOptions, Rollboard, Span, Timestamp};

/// What to import, and where to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyImport {
    /// The legacy board's name: the `NAME` of `slot_NAME_<ts>`.
    pub legacy: String,
    /// The rollboard board to import into (created when missing).
    pub board: String,
    /// The board's slot length.
    pub slot: Span,
    /// The board's windows.
    pub windows: Vec<Span>,
    /// The board's alignment offset; `None` takes it from the legacy slots.
    pub offset: Option<i64>,
    /// Unlink the legacy keys once every field is imported (kept when any was rejected).
    pub delete_legacy: bool,
    /// Fields per write (at most the library's `events_per_call`).
    pub chunk: usize,
    /// How to connect to the Redis holding the legacy keys (TLS CA, timeouts).
    pub redis: RedisOptions,
}

impl LegacyImport {
    /// Imports `legacy` into `board` with hourly slots and `windows`.
    pub fn new(legacy: &str, board: &str, slot: Span, windows: Vec<Span>) -> Self {
        LegacyImport {
            legacy: legacy.to_owned(),
            board: board.to_owned(),
            slot,
            windows,
            offset: None,
            delete_legacy: false,
            chunk: 1000,
            redis: RedisOptions::default(),
        }
    }
}

/// What a legacy import did. Every field read is counted in exactly one of `imported`,
/// `already_imported`, `too_late`, `rejected` and `empty`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LegacyReport {
    /// The board imported into, with its config.
    pub board: String,
    /// Its config.
    pub config: BoardConfig,
    /// Legacy slot hashes found.
    pub slots: u64,
    /// Legacy slots older than the board's largest window: skipped.
    pub slots_too_late: u64,
    /// Fields read (one per slot and member).
    pub fields: u64,
    /// Fields applied by this run.
    pub imported: u64,
    /// Fields an earlier run had applied (their chunk's token was in the journal).
    pub already_imported: u64,
    /// Fields in slots older than the largest window.
    pub too_late: u64,
    /// Fields the board refused (a member it cannot take, a total out of range).
    pub rejected: u64,
    /// Fields whose value is 0 (nothing to carry).
    pub empty: u64,
    /// The first refusals, as `key field: reason`.
    pub problems: Vec<String>,
    /// Legacy keys unlinked (with `delete_legacy`).
    pub deleted_keys: u64,
}

/// Why a legacy import stopped.
#[derive(Debug, thiserror::Error)]
pub enum LegacyError {
    /// The legacy keys are not in the article's layout, or do not fit the board.
    #[error("{0}")]
    Layout(String),
    /// The board or the store failed.
    #[error(transparent)]
    Store(#[from] Error),
}

/// Problems kept in the report.
const KEPT_PROBLEMS: usize = 10;

impl LegacyReport {
    fn problem(&mut self, problem: String) {
        if self.problems.len() < KEPT_PROBLEMS {
            self.problems.push(problem);
        }
    }
}

/// Imports the legacy board `job.legacy` from the Redis at `url` into `job.board`.
/// `progress` is called with the report so far after each chunk.
pub async fn import_legacy(
    boards: &Rollboard,
    url: &str,
    job: &LegacyImport,
    progress: impl Fn(&LegacyReport),
) -> Result<LegacyReport, LegacyError> {
    let conn = RedisConn::connect_to_scan(url, &job.redis, "import-legacy").await?;
    let slots = legacy_slots(&conn, &job.legacy).await?;
    let config = board_config(job, &slots)?;
    let slot = config.slot().secs_i64();
    for (key, ts) in &slots {
        if (ts - config.offset()).rem_euclid(slot) != 0 {
            return Err(LegacyError::Layout(format!(
                "{key} does not start a slot of board {} ({} slots at offset {} s; it is at offset {} s): \
                 give the board that offset, or a slot length that divides the legacy interval",
                job.board,
                config.slot(),
                config.offset(),
                ts.rem_euclid(slot)
            )));
        }
    }
    // The board made, or found with this config, or extended to it: `config` is its config.
    boards.create(&job.board, config.clone()).await?;

    let mut report = LegacyReport {
        board: job.board.clone(),
        config: config.clone(),
        slots: slots.len() as u64,
        slots_too_late: 0,
        fields: 0,
        imported: 0,
        already_imported: 0,
        too_late: 0,
        rejected: 0,
        empty: 0,
        problems: Vec::new(),
        deleted_keys: 0,
    };
    let chunk = job.chunk.clamp(1, boards.settings().events_per_call.max(1));
    for (key, ts) in &slots {
        if config.is_too_late(*ts, boards.now()) {
            let fields: u64 = conn
                .query(redis::cmd("HLEN").arg(key), None, Retry::Idempotent)
                .await?;
            report.slots_too_late += 1;
            report.fields += fields;
            report.too_late += fields;
            progress(&report);
            continue;
        }
        let at = Timestamp::from_unix_seconds(*ts)?;
        let fields = read_slot(&conn, key).await?;
        report.fields += fields.len() as u64;
        let mut events = Vec::with_capacity(fields.len());
        for (member, value) in fields {
            let Ok(member) = String::from_utf8(member) else {
                report.rejected += 1;
                report.problem(format!("{key}: a member is not UTF-8"));
                continue;
            };
            match value.parse::<i64>() {
                Ok(0) => report.empty += 1,
                Ok(delta) => events.push(Event::new(member, delta).at(at)),
                Err(_) => {
                    return Err(LegacyError::Layout(format!(
                        "{key} field {member:?}: value {value:?} is not an integer"
                    )));
                }
            }
        }
        for (i, events) in events.chunks(chunk).enumerate() {
            let token = format!("legacy:{key}:{i}");
            match boards
                .windowed(&job.board)
                .incr_batch_once(events, &token)
                .await?
            {
                None => report.already_imported += events.len() as u64,
                Some(outcome) => {
                    let (applied, too_late, rejected) = super::tally(outcome);
                    report.imported += applied;
                    report.too_late += too_late;
                    report.rejected += rejected.len() as u64;
                    for (index, error) in rejected {
                        let member = &events[index].member;
                        report.problem(format!("{key} {member:?}: {error}"));
                    }
                }
            }
            progress(&report);
        }
    }
    if job.delete_legacy && report.rejected == 0 {
        report.deleted_keys = delete_legacy(&conn, &job.legacy, &slots).await?;
    }
    Ok(report)
}

/// The config to create the board with: the job's, aligned on the legacy slots unless
/// the job gives an offset.
fn board_config(job: &LegacyImport, slots: &[(String, i64)]) -> Result<BoardConfig, LegacyError> {
    let config = BoardConfig::new(job.slot, job.windows.clone())?;
    let offset = match (job.offset, slots.first()) {
        (Some(offset), _) => offset,
        (None, Some((_, ts))) => ts.rem_euclid(job.slot.secs_i64()),
        (None, None) => 0,
    };
    Ok(config.with_offset(offset)?)
}

/// The legacy slot hashes of `name` as `(key, ts)`, oldest first.
async fn legacy_slots(conn: &RedisConn, name: &str) -> Result<Vec<(String, i64)>, LegacyError> {
    let prefix = format!("slot_{name}_");
    let mut slots = Vec::new();
    for suffix in scan_suffixes(conn, &prefix, |_| true).await? {
        // `slot_NAME_x_123` belongs to a board named `NAME_x`.
        if !suffix.is_empty()
            && suffix.bytes().all(|b| b.is_ascii_digit())
            && let Ok(ts) = suffix.parse::<i64>()
        {
            slots.push((format!("{prefix}{suffix}"), ts));
        }
    }
    slots.sort_unstable_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    Ok(slots)
}

/// The names of the legacy boards in the Redis at `url`: every `NAME` of a
/// `last_slot_NAME` key (the article sets it at a board's first write), sorted.
pub async fn find_legacy_boards(url: &str, redis: &RedisOptions) -> Result<Vec<String>, Error> {
    let conn = RedisConn::connect_to_scan(url, redis, "import-legacy").await?;
    scan_suffixes(&conn, "last_slot_", |_| true).await
}

/// Every field of the hash `key`, as `(member, value)`, sorted by member.
async fn read_slot(conn: &RedisConn, key: &str) -> Result<Vec<(Vec<u8>, String)>, LegacyError> {
    let mut fields = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, page): (u64, Vec<(Vec<u8>, String)>) = conn
            .query(
                redis::cmd("HSCAN")
                    .arg(key)
                    .arg(cursor)
                    .arg("COUNT")
                    .arg(1000),
                None,
                Retry::Idempotent,
            )
            .await?;
        fields.extend(page);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    // HSCAN may return a field twice while the hash is resized.
    fields.sort_unstable();
    fields.dedup_by(|a, b| a.0 == b.0);
    Ok(fields)
}

/// Unlinks the legacy board's keys: its slots, `stats_NAME` and `last_slot_NAME`.
async fn delete_legacy(
    conn: &RedisConn,
    name: &str,
    slots: &[(String, i64)],
) -> Result<u64, LegacyError> {
    let mut pipe = redis::pipe();
    for key in slots
        .iter()
        .map(|(key, _)| key.clone())
        .chain([format!("stats_{name}"), format!("last_slot_{name}")])
    {
        // One key per command: the legacy keys carry no hash tag.
        pipe.cmd("UNLINK").arg(key);
    }
    let counts: Vec<u64> = conn.query_pipe(&pipe, None, Retry::Idempotent).await?;
    Ok(counts.iter().sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_board_is_aligned_on_the_legacy_slots() {
        let hour = Span::parse("1h").unwrap();
        let mut job = LegacyImport::new("likes", "hot", hour, vec![Span::parse("24h").unwrap()]);
        // Slots at 05:30 UTC, as the article writes them on a machine at UTC+5:30.
        let slots = [("slot_likes_1700026200".to_owned(), 1_700_026_200)];
        assert_eq!(board_config(&job, &slots).unwrap().offset(), 1800);
        assert_eq!(board_config(&job, &[]).unwrap().offset(), 0);
        job.offset = Some(600);
        assert_eq!(board_config(&job, &slots).unwrap().offset(), 600);
    }
}
