//! Windowed boards in Redis: create, extend, load, list, drop.
//!
//! The record `board_{<board>}` (its fields: [`board_record`](super::board_record)) is
//! made by `create_board.lua`, and a board is listed in the registry
//! ([`registry`](super::registry)) once it exists. Extending a board whose largest
//! window still has frozen slots to consume needs a retirement first: [`extend`] says
//! so, and the store, which knows retirement, retires and tries again. A drop unlinks
//! plain slots' stage hashes and compact slots' buckets (their geometry gives the
//! count), found through the slot index ([`slot_index`](super::slot_index)).

use std::collections::BTreeSet;

use redis::Value;

use super::board_record::{RECORD_FIELDS, TREND_FIELDS, parse_board, parse_trending};
use super::board_record::{parse_windows, record_read};
use super::geometry::bucket_count;
use super::{registry, slot_index};
use crate::domain::any_board::AnyBoard;
use crate::domain::board::{Board, Created};
use crate::domain::{BoardConfig, BoardName, Layout, Span, Timestamp};
use crate::error::{Error, Result};
use crate::store::new_version;
use crate::store::redis::conn::keys::{self, Keys, contribution_field};
use crate::store::redis::conn::refusal::Refusal;
use crate::store::redis::conn::reply::{int, opt_string};
use crate::store::redis::conn::{RedisConn, Retry};

/// Keys deleted per `UNLINK` while dropping a board.
const UNLINK_BATCH: usize = 500;

/// What [`create`] did: made or found the board, or found one to extend.
pub(crate) enum Creating {
    /// Made, or found as asked.
    Done(Created),
    /// The board exists with fewer windows: extend it ([`extend`]).
    Extend(Extension),
}

/// Makes the board `name` with `config`, or finds it; a board that exists with fewer
/// windows is answered as an [`Extension`] for the caller to apply.
pub(crate) async fn create(
    conn: &RedisConn,
    name: &BoardName,
    config: &BoardConfig,
    now: Timestamp,
) -> Result<Creating> {
    let windows = config.windows();
    let mut invocation = conn.scripts().create_board.key(conn.keys().record(name));
    invocation
        .arg(new_version())
        .arg(config.slot().seconds())
        .arg(join_seconds(windows))
        .arg(config.offset())
        .arg(now.unix_millis())
        .arg(config.ties().as_str())
        .arg(config.layout().map_or("", Layout::as_str))
        .arg(config.rank().as_str())
        .arg(config.aggregate().as_str())
        .arg(config.shards())
        .arg(
            config
                .per_contributor_member()
                .map_or(String::new(), |c| c.to_string()),
        )
        .arg(
            config
                .per_contributor()
                .map_or(String::new(), |c| c.to_string()),
        );
    for (j, w) in windows.iter().enumerate() {
        invocation.arg(w.seconds()).arg(config.cutoff(j, now));
    }
    // Idempotent: sent again, the script finds the record it made and answers it.
    let reply: Vec<Value> = match conn
        .script_or_refusal(&invocation, name, Retry::IdempotentWrite)
        .await?
    {
        Ok(reply) => reply,
        // A drop that stopped half-way (a crash) blocks the name until a drop finishes it.
        Err(Refusal::Dropping) => {
            drop(conn, name).await?;
            conn.script(&invocation, name, Retry::IdempotentWrite)
                .await?
        }
        Err(refusal) => return Err(refusal.into_error(Some(name))),
    };
    let created = int(&reply[0], "create_board")? == 1;
    let mut board = parse_board(name, &reply[1..])?;
    let config = &config.layout_defaulting_to(&board.config);
    // The snapshots policy, the review gate and the watches are the options a live board
    // takes as they are: set them first, so the comparisons below see the rest of the config (not
    // on a PUT refused as a conflict).
    let compatible =
        board.config.same_but_live(config) || board.config.extended_by(config).is_some();
    if compatible && board.config.snapshots() != config.snapshots() {
        set_snapshots(conn, &board, config).await?;
    }
    if compatible && board.config.review() != config.review() {
        let review = config.review().map(|r| r.above_rank());
        crate::store::redis::sums::review::set_review(conn, &board, review).await?;
    }
    if compatible
        && (board.config.watch() != config.watch()
            || board.config.changes_kept() != config.changes_kept())
    {
        crate::store::redis::sums::changes::set_watch(conn, &board, config).await?;
    }
    if compatible {
        board.config = board.config.with_live_of(config);
    }
    // The registry is a global key: its own command, never inside a board's script. A
    // crash right here leaves the board unlisted; `load` lists it again (see there).
    registry::register(conn, name).await?;
    if created {
        Ok(Creating::Done(Created::New(board)))
    } else if board.config == *config {
        Ok(Creating::Done(Created::Existing(board)))
    } else if let Some(added) = board.config.extended_by(config) {
        Ok(Creating::Extend(Extension {
            existing: board,
            config: config.clone(),
            added,
        }))
    } else {
        Err(Error::BoardConflict {
            board: name.to_string(),
            existing: Box::new(board.config),
            asked: Box::new(config.clone()),
        })
    }
}

/// Sets (or clears) the board's snapshots policy to `config`'s.
async fn set_snapshots(conn: &RedisConn, board: &Board, config: &BoardConfig) -> Result<()> {
    let policy = config.snapshots().map(|p| p.stored()).unwrap_or_default();
    let mut invocation = conn
        .scripts()
        .set_snapshots
        .key(conn.keys().record(&board.name));
    invocation.arg(board.version).arg(policy);
    // Idempotent: it sets a value; sent again, it sets the same value.
    conn.script::<i64>(&invocation, &board.name, Retry::Idempotent)
        .await
        .map(|_| ())
}

/// A board to extend by larger windows: what [`create`] answers when the config asked
/// for extends the existing board's.
pub(crate) struct Extension {
    /// The board as it is.
    pub(crate) existing: Board,
    /// The config asked for.
    config: BoardConfig,
    /// The windows it adds.
    added: Vec<Span>,
}

impl Extension {
    /// The error of an extension that kept being refused: every retirement froze new
    /// slots of the largest window before the next attempt.
    pub(crate) fn kept_freezing(&self) -> Error {
        Error::store(format!(
            "board {:?}: its largest window kept freezing new slots; try again",
            self.existing.name.as_str()
        ))
    }
}

/// One attempt to add the larger windows of `extension` to its board; `None` when its
/// largest window still has frozen slots to consume (see `extend_board.lua`): the
/// caller retires the board first, then tries again.
pub(crate) async fn extend(conn: &RedisConn, extension: &Extension) -> Result<Option<Created>> {
    let Extension {
        existing,
        config,
        added,
    } = extension;
    let version = new_version();
    let mut invocation = conn
        .scripts()
        .extend_board
        .key(conn.keys().record(&existing.name));
    invocation
        .arg(existing.version)
        .arg(version)
        .arg(join_seconds(config.windows()))
        .arg(existing.config.largest_window().seconds())
        .arg(config.slot().seconds());
    for w in added {
        invocation.arg(w.seconds());
    }
    // Never re-sent: a second call would find the new version and answer STALE.
    match conn
        .script_or_refusal::<String>(&invocation, &existing.name, Retry::Never)
        .await?
    {
        Ok(_) => Ok(Some(Created::Extended(Board {
            config: config.clone(),
            version,
            ..existing.clone()
        }))),
        Err(Refusal::RetireFirst) => Ok(None),
        Err(refusal) => Err(refusal.into_error(Some(&existing.name))),
    }
}

/// The board of either kind, if it exists and is not being dropped: one read of its
/// record tells the kind. A live board missing from the registry (its creator stopped
/// between the two steps of `create`) is registered here, so the first process to touch
/// it again heals the registry.
pub(crate) async fn load(conn: &RedisConn, name: &BoardName) -> Result<Option<AnyBoard>> {
    // Two commands, not a pipeline: the registry is a global key, in another hash slot
    // than the board's on Redis Cluster. Both are reads (Idempotent).
    let (fields, listed): (Vec<Value>, bool) = futures_util::future::try_join(
        conn.query(
            &any_record_read(conn.keys(), name),
            Some(name),
            Retry::Idempotent,
        ),
        conn.query(
            redis::cmd("SISMEMBER")
                .arg(conn.keys().registry())
                .arg(name.as_str()),
            Some(name),
            Retry::Idempotent,
        ),
    )
    .await?;
    let Some(board) = parse_any(name, &fields)? else {
        return Ok(None);
    };
    if !listed {
        registry::register(conn, name).await?;
    }
    Ok(Some(board))
}

/// The read of a board's record of either kind (see [`parse_any`]).
fn any_record_read(keys: &Keys, name: &BoardName) -> redis::Cmd {
    let mut read = record_read(keys, name);
    read.arg(TREND_FIELDS);
    read
}

/// The board of either kind an [`any_record_read`] found; `None` without a record (a
/// drop or create that stopped half-way) or for one being dropped.
fn parse_any(name: &BoardName, fields: &[Value]) -> Result<Option<AnyBoard>> {
    let n = RECORD_FIELDS.len();
    if fields[0] == Value::Nil || fields[n] != Value::Nil {
        return Ok(None);
    }
    Ok(Some(
        if opt_string(&fields[n + 1], "kind")?.as_deref() == Some("trending") {
            parse_trending(name, &fields[n + 2..])?.into()
        } else {
            parse_board(name, &fields[..n])?.into()
        },
    ))
}

pub(crate) async fn list(conn: &RedisConn) -> Result<Vec<AnyBoard>> {
    let names = registry::registered_names(conn).await?;
    let reads: Vec<redis::Cmd> = names
        .iter()
        .map(|name| any_record_read(conn.keys(), name))
        .collect();
    // The records, read in pipelines (reads: Idempotent) so that listing many boards
    // costs few round trips; on a Cluster, where a pipeline may not cross hash slots,
    // one read per board, many at once.
    let records: Vec<Vec<Value>> = if conn.is_cluster() {
        let mut records = Vec::with_capacity(names.len());
        for (names, reads) in names
            .chunks(LIST_IN_FLIGHT)
            .zip(reads.chunks(LIST_IN_FLIGHT))
        {
            let mut part = Vec::with_capacity(reads.len());
            for (name, read) in names.iter().zip(reads) {
                part.push(conn.query(read, Some(name), Retry::Idempotent));
            }
            records.extend(futures_util::future::try_join_all(part).await?);
        }
        records
    } else {
        let mut records = Vec::with_capacity(names.len());
        for part in reads.chunks(LIST_PIPELINE) {
            let mut pipe = redis::pipe();
            for read in part {
                pipe.add_command(read.clone());
            }
            let replies: Vec<Vec<Value>> = conn.query_pipe(&pipe, None, Retry::Idempotent).await?;
            records.extend(replies);
        }
        records
    };
    let mut boards = Vec::with_capacity(names.len());
    for (name, fields) in names.iter().zip(records) {
        // A name without a record is a drop or create that stopped half-way, and one
        // being dropped is going: skip them.
        boards.extend(parse_any(name, &fields)?);
    }
    Ok(boards)
}

/// Board records read per pipeline when listing boards.
const LIST_PIPELINE: usize = 512;

/// Record reads in flight at once when listing the boards of a Cluster.
const LIST_IN_FLIGHT: usize = 64;

pub(crate) async fn drop(conn: &RedisConn, name: &BoardName) -> Result<bool> {
    let invocation = conn.scripts().drop_begin.key(conn.keys().record(name));
    let windows: Option<String> = conn.script(&invocation, name, Retry::Idempotent).await?;
    if windows.as_deref() == Some("trending") {
        unlink(
            conn,
            name,
            &[conn.keys().trend(name), conn.keys().trend_next(name)],
        )
        .await?;
    } else if let Some(windows) = &windows {
        // Writes and retirements now fail on the `dropping` mark; delete the slot hashes
        // (found through the index), then totals and index, then unlist the board, then
        // delete the record. A dropper that dies half-way leaves the record, so the next
        // drop (or create) finishes the job.
        let windows = parse_windows(windows)?;
        let index = conn.keys().index(name);
        let slots = slot_index::live_slots(conn, name).await?;
        let stage_keys: Vec<String> = slots
            .iter()
            .flat_map(|s| (0..windows.len()).map(move |k| conn.keys().stage(name, *s, k)))
            .collect();
        for batch in stage_keys.chunks(UNLINK_BATCH) {
            unlink(conn, name, batch).await?;
        }
        drop_contributions(conn, name, &slots, windows.len()).await?;
        // Compact slots' buckets, every stage of each slot with a geometry (its bucket
        // count). The geometry hash goes with the totals below, after its buckets, so a
        // drop that dies half-way still finds them.
        for (slot, buckets) in slot_geometries(conn, name).await? {
            let bucket_keys: Vec<String> = (0..windows.len())
                .flat_map(|k| {
                    let stage = conn.keys().stage(name, slot, k);
                    (0..buckets).map(move |i| keys::bucket(&stage, i))
                })
                .collect();
            for batch in bucket_keys.chunks(UNLINK_BATCH) {
                unlink(conn, name, batch).await?;
            }
        }
        let mut rest = conn.keys().all_totals(name, &windows);
        // A dense board's tallies (absent keys on a competition board, so always named:
        // the record being dropped no longer says which it was).
        rest.extend(conn.keys().dense_keys(name, &windows));
        rest.extend(conn.keys().hidden(name, &windows));
        rest.push(conn.keys().rebuild(name));
        rest.push(conn.keys().rebuild_records(name));
        rest.push(conn.keys().rebuild_log(name));
        rest.push(conn.keys().rebuild_scan(name));
        rest.push(conn.keys().journal(name));
        // Period snapshot streams (absent when the board took none).
        rest.extend(windows.iter().map(|w| conn.keys().snapshots(name, *w)));
        rest.push(conn.keys().snapshot_cursors(name));
        rest.push(conn.keys().slot_geometry(name));
        rest.push(conn.keys().data(name));
        rest.push(conn.keys().moved(name));
        rest.push(conn.keys().moving(name));
        rest.push(conn.keys().peaks(name));
        rest.push(conn.keys().newest(name));
        rest.push(index);
        unlink(conn, name, &rest).await?;
        // The board's idempotency records (`idem_{b}_<version>_…`) are left to expire by
        // themselves: their names carry the version, so no later incarnation sees them,
        // and finding them would take a SCAN of the whole keyspace (one node's, on a
        // cluster).
    }
    // Unlisted while the record still blocks a new incarnation (create_board.lua refuses
    // while `dropping` is set), so a create that follows lists its board after this.
    registry::unregister(conn, name).await?;
    if windows.is_some() {
        unlink(conn, name, &[conn.keys().record(name)]).await?;
    }
    Ok(windows.is_some())
}

/// Deletes the contributions of the board `name` (`lua/contributors.lua`), when it
/// has contributors: each contributor's sums (found in the live slots' stage
/// contributions, and those quarantined, whose hash may hold their flag alone), then each
/// live slot's stages' contributions (`<stage>:c`) and history (`<stage 1>:cm`): a drop
/// that dies half-way still finds the contributors left.
async fn drop_contributions(
    conn: &RedisConn,
    name: &BoardName,
    slots: &[i64],
    windows: usize,
) -> Result<()> {
    let keys = conn.keys();
    let mut slot_keys: Vec<String> = slots
        .iter()
        .flat_map(|&s| (0..windows).map(move |k| format!("{}:c", keys.stage(name, s, k))))
        .collect();
    let mut pipe = redis::pipe();
    for key in &slot_keys {
        pipe.cmd("EXISTS").arg(key);
    }
    let exist: Vec<bool> = match slot_keys.is_empty() {
        true => Vec::new(),
        false => {
            conn.query_pipe(&pipe, Some(name), Retry::Idempotent)
                .await?
        }
    };
    let mut contributors = BTreeSet::new();
    for (key, _) in slot_keys.iter().zip(exist).filter(|(_, e)| *e) {
        conn.scan_fields(name, key, "*", |field, _| {
            contributors.insert(contribution_field(&field).0.to_owned());
        })
        .await?;
    }
    let mut cmd = redis::cmd("SMEMBERS");
    cmd.arg(keys.quarantined());
    let quarantined: Vec<String> = conn.query(&cmd, None, Retry::Idempotent).await?;
    contributors.extend(quarantined);
    let sums: Vec<String> = contributors
        .iter()
        .map(|by| keys.contributor(name, by))
        .collect();
    slot_keys.extend(
        slots
            .iter()
            .map(|&s| format!("{}:cm", keys.stage(name, s, 0))),
    );
    for batch in sums
        .chunks(UNLINK_BATCH)
        .chain(slot_keys.chunks(UNLINK_BATCH))
    {
        unlink(conn, name, batch).await?;
    }
    // Kept by versions before 2026-12-05 (their contributors), unused since.
    unlink(conn, name, &[keys.contributors(name)]).await
}

pub(crate) async fn slot_geometries(conn: &RedisConn, name: &BoardName) -> Result<Vec<(i64, u64)>> {
    let geometries: Vec<(String, String)> = conn
        .query(
            redis::cmd("HGETALL").arg(conn.keys().slot_geometry(name)),
            Some(name),
            Retry::Idempotent,
        )
        .await?;
    geometries
        .iter()
        .map(|(slot, geometry)| {
            let parsed = slot.parse::<i64>().ok().zip(bucket_count(geometry));
            parsed.ok_or_else(|| {
                Error::store(format!(
                    "board {:?}: bad slot geometry {slot:?} -> {geometry:?}",
                    name.as_str()
                ))
            })
        })
        .collect()
}

/// Unlinks keys of the board `name` (freed off Redis's main thread).
async fn unlink(conn: &RedisConn, name: &BoardName, keys: &[String]) -> Result<()> {
    conn.query::<i64>(
        redis::cmd("UNLINK").arg(keys),
        Some(name),
        Retry::Idempotent,
    )
    .await
    .map(|_| ())
}

fn join_seconds(spans: &[Span]) -> String {
    spans
        .iter()
        .map(|s| s.seconds().to_string())
        .collect::<Vec<_>>()
        .join(",")
}
