//! A board's description from Redis: its live slots and, per window, members, ranked
//! members, coverage, retirement and recompute state, read in one pipeline (plus one
//! read per window for its oldest pending slot); and which windows a recompute is
//! building. Every call is a read ([`Retry::Idempotent`]).

use redis::Value;

use super::board_record::version_matches;
use crate::domain::board::{Board, BoardStatus, WindowStatus, to_datetime};
use crate::domain::{RankedTotals, Timestamp};
use crate::domain::{WindowState, complete_from, coverage};
use crate::error::{Error, Result};
use crate::store::redis::conn::reply::{array, int, opt_int};
use crate::store::redis::conn::{RedisConn, Retry};

/// The windows of `board` a recompute is building (`building:<W>` set in its record).
pub(crate) async fn pending_windows(conn: &RedisConn, board: &Board) -> Result<Vec<usize>> {
    let fields: Vec<String> = board
        .config
        .windows()
        .iter()
        .map(|w| format!("building:{}", w.seconds()))
        .collect();
    let marks: Vec<Value> = conn
        .query(
            redis::cmd("HMGET")
                .arg(conn.keys().record(&board.name))
                .arg(fields),
            Some(&board.name),
            Retry::Idempotent,
        )
        .await?;
    Ok(marks
        .iter()
        .enumerate()
        .filter(|(_, m)| **m != Value::Nil)
        .map(|(j, _)| j)
        .collect())
}

/// The description of `board` at `now`: its live slots, and per window its members,
/// coverage and retirement (one pipeline; the board's version is checked in it).
pub(crate) async fn describe(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
) -> Result<BoardStatus> {
    let config = &board.config;
    let windows = config.windows();
    let record = conn.keys().record(&board.name);
    let index = conn.keys().index(&board.name);
    let mut pipe = redis::pipe();
    pipe.cmd("HGET").arg(&record).arg("version");
    pipe.cmd("ZCARD").arg(&index);
    pipe.cmd("ZREVRANGEBYSCORE")
        .arg(&index)
        .arg("+inf")
        .arg("-inf")
        .arg("LIMIT")
        .arg(0)
        .arg(1);
    for (j, w) in windows.iter().enumerate() {
        let w = w.seconds();
        pipe.cmd("HMGET")
            .arg(&record)
            .arg(format!("done:{w}"))
            .arg(format!("since:{w}"))
            .arg(format!("building:{w}"));
        let totals = conn.keys().totals(&board.name, windows, j);
        pipe.cmd("ZCARD").arg(&totals);
        // The ranked members: every member of the totals (on a sum board none holds 0)
        // on a board of non-zero totals or of every value, the positive ones otherwise.
        let floor = match config.rank() {
            RankedTotals::Positive => "(0",
            RankedTotals::Nonzero | RankedTotals::All => "-inf",
        };
        pipe.cmd("ZCOUNT").arg(&totals).arg(floor).arg("+inf");
    }
    let reply: Vec<Value> = conn
        .query_pipe(&pipe, Some(&board.name), Retry::Idempotent)
        .await?;
    if !version_matches(&reply[0], board)? {
        return Err(Error::BoardChanged(board.name.to_string()));
    }
    let live_slots = int(&reply[1], "live slots")? as u64;
    let newest = array(reply[2].clone(), "newest slot")?
        .first()
        .map(|v| int(v, "newest slot"))
        .transpose()?;

    let mut per_window = Vec::with_capacity(windows.len());
    for j in 0..windows.len() {
        let marks = array(reply[3 + 3 * j].clone(), "window fields")?;
        let [done, since, building] = marks.as_slice() else {
            return Err(Error::store("the board record answered a partial window"));
        };
        let retired_through = int(done, "done")?;
        let state = WindowState {
            since: opt_int(since, "since")?,
            building: *building != Value::Nil,
        };
        let members = int(&reply[4 + 3 * j], "members")? as u64;
        let ranked = int(&reply[5 + 3 * j], "ranked")? as u64;
        let pending: Vec<i64> = conn
            .query(
                redis::cmd("ZRANGEBYSCORE")
                    .arg(&index)
                    .arg(format!("({retired_through}"))
                    .arg("+inf")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(1),
                Some(&board.name),
                Retry::Idempotent,
            )
            .await?;
        let (from, to) = coverage(config, j, now, pending.first().copied(), newest, state);
        per_window.push(WindowStatus {
            window: windows[j],
            members,
            ranked,
            from,
            to,
            retired_through,
            lag_seconds: (config.window_start(j, now) - from).max(0) as u64,
            building: state.building,
            complete_from: complete_from(config, j, state.since),
        });
    }
    Ok(BoardStatus {
        name: board.name.clone(),
        config: config.clone(),
        created_at: to_datetime(board.created_at),
        live_slots,
        windows: per_window,
    })
}
