//! Board records in Redis: create, load, list, drop.
//!
//! The record `board_{<board>}` is a hash: `version`, `slot`, `windows` (seconds,
//! comma-separated), `offset`, `created_ms`, and per window `wm:<W>` (watermark) and
//! `done:<W>` (retired through); `dropping` while a drop is under way.

use redis::Value;

use super::RedisStore;
use super::keys;
use super::reply::{int, opt_string, string};
use crate::board::{Board, Created};
use crate::domain::{BoardConfig, BoardName, Span, Timestamp};
use crate::error::{Error, Result};
use crate::retire::RetireOptions;
use crate::store::new_version;

/// Keys deleted per `UNLINK` while dropping a board.
const UNLINK_BATCH: usize = 500;

pub(super) async fn create(
    store: &RedisStore,
    name: &BoardName,
    config: &BoardConfig,
    now: Timestamp,
) -> Result<Created> {
    let windows = config.windows();
    let mut invocation = store.scripts.create_board.key(keys::record(name));
    invocation
        .arg(new_version())
        .arg(config.slot().seconds())
        .arg(join_seconds(windows))
        .arg(config.offset())
        .arg(now.unix_millis());
    for (j, w) in windows.iter().enumerate() {
        invocation.arg(w.seconds()).arg(config.cutoff(j, now));
    }
    let reply: Vec<Value> = store.invoke(&invocation, name, false).await?;
    let created = int(&reply[0], "create_board")? == 1;
    let board = parse_board(name, &reply[1..])?;
    // The registry is a global key: its own command, never inside a board's script.
    store
        .query::<i64>(
            redis::cmd("SADD").arg(keys::REGISTRY).arg(name.as_str()),
            Some(name),
        )
        .await?;
    if created {
        Ok(Created::New(board))
    } else if board.config == *config {
        Ok(Created::Existing(board))
    } else if let Some(added) = board.config.extended_by(config) {
        extend(store, &board, config, &added, now).await
    } else {
        Err(Error::BoardConflict {
            board: name.to_string(),
            existing: board.config,
        })
    }
}

/// Adds `added` (larger windows) to `existing`, retiring first when its largest window
/// still has frozen slots to consume (see `extend_board.lua`).
async fn extend(
    store: &RedisStore,
    existing: &Board,
    config: &BoardConfig,
    added: &[Span],
    now: Timestamp,
) -> Result<Created> {
    for _ in 0..5 {
        let version = new_version();
        let mut invocation = store.scripts.extend_board.key(keys::record(&existing.name));
        invocation
            .arg(existing.version)
            .arg(version)
            .arg(join_seconds(config.windows()))
            .arg(existing.config.largest_window().seconds())
            .arg(config.slot().seconds());
        for w in added {
            invocation.arg(w.seconds());
        }
        match store
            .invoke::<String>(&invocation, &existing.name, false)
            .await
        {
            Ok(_) => {
                return Ok(Created::Extended(Board {
                    config: config.clone(),
                    version,
                    ..existing.clone()
                }));
            }
            Err(Error::Store(m)) if m.starts_with("RETIRE") => {
                super::retire::retire(store, existing, now, RetireOptions::default()).await?;
            }
            Err(e) => return Err(e),
        }
    }
    Err(Error::Store(format!(
        "board {:?}: its largest window kept freezing new slots; try again",
        existing.name.as_str()
    )))
}

pub(super) async fn load(store: &RedisStore, name: &BoardName) -> Result<Option<Board>> {
    let reply: Vec<Value> = store
        .query(
            redis::cmd("HMGET")
                .arg(keys::record(name))
                .arg(RECORD_FIELDS)
                .arg("dropping"),
            Some(name),
        )
        .await?;
    if reply[0] == Value::Nil || reply[RECORD_FIELDS.len()] != Value::Nil {
        return Ok(None);
    }
    parse_board(name, &reply[..RECORD_FIELDS.len()]).map(Some)
}

pub(super) async fn list(store: &RedisStore) -> Result<Vec<Board>> {
    let names: Vec<String> = store
        .query(redis::cmd("SMEMBERS").arg(keys::REGISTRY), None)
        .await?;
    let mut names: Vec<BoardName> = names
        .iter()
        .filter_map(|n| BoardName::parse(n).ok())
        .collect();
    names.sort();
    let mut boards = Vec::with_capacity(names.len());
    for name in names {
        // A name without a record is a drop or create that stopped half-way: skip it.
        if let Some(board) = load(store, &name).await? {
            boards.push(board);
        }
    }
    Ok(boards)
}

pub(super) async fn drop(store: &RedisStore, name: &BoardName) -> Result<bool> {
    let invocation = store.scripts.drop_begin.key(keys::record(name));
    let windows: Option<String> = store.invoke(&invocation, name, true).await?;
    if let Some(windows) = &windows {
        // Writes and retirements now fail on the `dropping` mark; delete the slot hashes
        // (found through the index), then totals, index and record. A dropper that dies
        // half-way leaves the record and index, so the next drop finishes the job.
        let windows = parse_windows(windows)?;
        let index = keys::index(name);
        let slots: Vec<i64> = store
            .query(redis::cmd("ZRANGE").arg(&index).arg(0).arg(-1), Some(name))
            .await?;
        let stage_keys: Vec<String> = slots
            .iter()
            .flat_map(|s| (0..windows.len()).map(move |k| keys::stage(name, *s, k)))
            .collect();
        for batch in stage_keys.chunks(UNLINK_BATCH) {
            store
                .query::<i64>(redis::cmd("UNLINK").arg(batch), Some(name))
                .await?;
        }
        let mut rest = keys::all_totals(name, &windows);
        rest.push(keys::rebuild(name));
        rest.push(keys::rebuild_log(name));
        rest.push(keys::rebuild_scan(name));
        rest.push(keys::journal(name));
        rest.push(index);
        rest.push(keys::record(name));
        store
            .query::<i64>(redis::cmd("UNLINK").arg(rest), Some(name))
            .await?;
    }
    store
        .query::<i64>(
            redis::cmd("SREM").arg(keys::REGISTRY).arg(name.as_str()),
            Some(name),
        )
        .await?;
    Ok(windows.is_some())
}

/// The record fields that describe a board, in the order `parse_board` reads them.
const RECORD_FIELDS: &[&str] = &["version", "slot", "windows", "offset", "created_ms"];

/// A board from its record's `version, slot, windows, offset, created_ms`.
fn parse_board(name: &BoardName, fields: &[Value]) -> Result<Board> {
    let corrupt = |what: &str| Error::Store(format!("board record of {name:?} has a bad {what}"));
    let version = string(&fields[0], "version")?
        .parse::<u64>()
        .map_err(|_| corrupt("version"))?;
    let slot = Span::from_seconds(int(&fields[1], "slot")? as u64).map_err(|_| corrupt("slot"))?;
    let windows = parse_windows(&string(&fields[2], "windows")?)?;
    let offset = int(&fields[3], "offset")?;
    let created_ms = int(&fields[4], "created_ms")?;
    let config = BoardConfig::new(slot, windows)
        .and_then(|c| c.with_offset(offset))
        .map_err(|e| Error::Store(format!("board record of {name:?}: {e}")))?;
    Ok(Board {
        name: name.clone(),
        config,
        version,
        created_at: Timestamp::from_unix_millis(created_ms).map_err(|_| corrupt("created_ms"))?,
    })
}

fn parse_windows(text: &str) -> Result<Vec<Span>> {
    text.split(',')
        .map(|w| {
            w.parse::<u64>()
                .ok()
                .and_then(|s| Span::from_seconds(s).ok())
                .ok_or_else(|| {
                    Error::Store(format!("bad windows field in a board record: {text:?}"))
                })
        })
        .collect()
}

fn join_seconds(spans: &[Span]) -> String {
    spans
        .iter()
        .map(|s| s.seconds().to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The stored version in a reply, for version checks outside scripts.
pub(super) fn version_matches(value: &Value, board: &Board) -> Result<bool> {
    Ok(opt_string(value, "version")?.as_deref() == Some(board.version.to_string().as_str()))
}
