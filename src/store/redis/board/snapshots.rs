//! Period snapshots in Redis: one stream per window, `snap_{<board>}_<W>`, whose entry
//! IDs are the boundaries in milliseconds. `snapshot_take.lua` checks the retired-through
//! marks, reads each window's top and appends it in one step, so a snapshot never sees a
//! window before its retirement and two replicas cannot both append one boundary.
//! `snapshot_append.lua` appends leaders given by the caller the same way (a sharded
//! board's, merged from its shards).

use redis::Value;

use crate::domain::board::Board;
use crate::domain::{Entry, Snapshot, SnapshotPass, SnapshotRange, Timestamp, rank_prefix};
use crate::error::{Error, Result};
use crate::store::redis::conn::reply::{array, int, opt_int, parse_integer, string};
use crate::store::redis::conn::{RedisConn, Retry};

pub(crate) async fn take(conn: &RedisConn, board: &Board, now: Timestamp) -> Result<SnapshotPass> {
    let windows = board.config.windows();
    let mut invocation = conn
        .scripts()
        .snapshot_take
        .key(conn.keys().record(&board.name));
    for j in 0..windows.len() {
        invocation.key(conn.keys().totals(&board.name, windows, j));
    }
    for w in windows {
        invocation.key(conn.keys().snapshots(&board.name, *w));
    }
    invocation
        .arg(board.version)
        .arg(board.config.slot_start(now))
        .arg(now.unix_millis());
    for w in windows {
        invocation.arg(w.seconds());
    }
    // Idempotent: sent again after a lost reply, the script finds the boundary's entries
    // and appends nothing (XADD refuses an ID not above the stream's last).
    let reply: Value = conn
        .script(&invocation, &board.name, Retry::Idempotent)
        .await?;
    pass(reply, "snapshot_take")
}

/// Appends `tops[j]`, when given, as window `j`'s snapshot at `slot_start(now)`, once
/// (`snapshot_append.lua`).
pub(crate) async fn append(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    tops: &[Option<Vec<Entry>>],
) -> Result<SnapshotPass> {
    let windows = board.config.windows();
    let mut invocation = conn
        .scripts()
        .snapshot_append
        .key(conn.keys().record(&board.name));
    invocation
        .arg(board.version)
        .arg(board.config.slot_start(now))
        .arg(now.unix_millis());
    for (w, entries) in windows.iter().zip(tops) {
        let Some(entries) = entries else { continue };
        invocation
            .key(conn.keys().snapshots(&board.name, *w))
            .arg(entries.len());
        for entry in entries {
            invocation.arg(&entry.member).arg(entry.score);
        }
    }
    // Idempotent, as `take`: sent again, XADD refuses the boundary's ID.
    let reply: Value = conn
        .script(&invocation, &board.name, Retry::Idempotent)
        .await?;
    pass(reply, "snapshot_append")
}

/// A snapshot script's answer: `{'off'}`, `{'wait'}` or `{'done', appended}`.
fn pass(reply: Value, script: &str) -> Result<SnapshotPass> {
    let items = array(reply, script)?;
    match items.as_slice() {
        [status] if string(status, "status")? == "off" => Ok(SnapshotPass::Off),
        [status] if string(status, "status")? == "wait" => Ok(SnapshotPass::Waiting),
        [status, appended] if string(status, "status")? == "done" => Ok(SnapshotPass::Done {
            appended: int(appended, "appended")? as u64,
        }),
        _ => Err(Error::store(format!("{script} answered {items:?}"))),
    }
}

pub(crate) async fn list(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    range: SnapshotRange,
) -> Result<Vec<Snapshot>> {
    let span = board.config.windows()[window];
    let end = range.to.map_or("+".to_owned(), |t| format!("{}", t * 1000));
    let start = range
        .from
        .map_or("-".to_owned(), |t| format!("{}", t * 1000));
    let (command, first, second) = if range.oldest_first {
        ("XRANGE", start, end)
    } else {
        ("XREVRANGE", end, start)
    };
    // A read: Idempotent.
    let reply: Value = conn
        .query(
            redis::cmd(command)
                .arg(conn.keys().snapshots(&board.name, span))
                .arg(first)
                .arg(second)
                .arg("COUNT")
                .arg(range.limit),
            Some(&board.name),
            Retry::Idempotent,
        )
        .await?;
    array(reply, command)?
        .into_iter()
        .map(|entry| parse_entry(board, span, entry))
        .collect()
}

pub(crate) async fn cursor(conn: &RedisConn, board: &Board, window: usize) -> Result<Option<i64>> {
    let span = board.config.windows()[window];
    // A read: Idempotent.
    let value: Value = conn
        .query(
            redis::cmd("HGET")
                .arg(conn.keys().snapshot_cursors(&board.name))
                .arg(span.seconds()),
            Some(&board.name),
            Retry::Idempotent,
        )
        .await?;
    opt_int(&value, "snapshot cursor")
}

pub(crate) async fn advance_cursor(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    boundary: i64,
) -> Result<i64> {
    let span = board.config.windows()[window];
    let mut invocation = conn
        .scripts()
        .snapshot_delivered
        .key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().snapshot_cursors(&board.name))
        .arg(board.version)
        .arg(span.seconds())
        .arg(boundary);
    // Idempotent: it only ever raises the cursor to `boundary`; sent again, it finds it
    // there.
    conn.script::<i64>(&invocation, &board.name, Retry::Idempotent)
        .await
}

/// A stream entry `[id, [at, <ms>, member, score, …]]` as a snapshot.
fn parse_entry(board: &Board, window: crate::domain::Span, entry: Value) -> Result<Snapshot> {
    let bad = |what: &str| Error::store(format!("snapshot entry of {:?}: bad {what}", board.name));
    let Ok([id, fields]) = <[Value; 2]>::try_from(array(entry, "snapshot entry")?) else {
        return Err(bad("shape"));
    };
    let id = string(&id, "id")?;
    let ms = id
        .split_once('-')
        .and_then(|(ms, _)| ms.parse::<i64>().ok())
        .ok_or_else(|| bad("id"))?;
    let fields = array(fields, "snapshot fields")?;
    if fields.len() < 2 || fields.len() % 2 != 0 {
        return Err(bad("fields"));
    }
    let taken_ms = parse_integer(&string(&fields[1], "at")?).ok_or_else(|| bad("at"))?;
    let pairs = fields[2..]
        .chunks(2)
        .map(|pair| {
            let member = string(&pair[0], "member")?;
            let score = parse_integer(&string(&pair[1], "score")?).ok_or_else(|| bad("score"))?;
            Ok((member, score))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Snapshot {
        window,
        boundary: ms / 1000,
        taken_ms,
        entries: rank_prefix(pairs, board.config.ties()),
    })
}
