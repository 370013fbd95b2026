//! The most-called read, a page of a window's ranking highest first, by plain commands in
//! one `MULTI`/`EXEC`: the board record's guard and watermark, the two slots that bound
//! the window's coverage, and the page with one entry on each side of it. Redis spends
//! about a third of what `read_ranking.lua` costs on it (no script to run, no reply
//! turned into Lua tables and back).
//!
//! It answers what `read_ranking.lua` answers, read at the same single instant, or
//! nothing when the page needs more than those commands can tell, and the script reads
//! it: a tie group cut by the page's first or last entry (its members are ordered by
//! member ascending, which `ZREVRANGE` reverses), a window behind (the oldest slot still
//! in its totals is found by the watermark this read only learns), dense ranks (counted
//! on another zset), an ascending page or a score range; and on a cluster, a transaction
//! the server did not run (a slot moving, a master failing over).

use redis::Value;

use crate::domain::board::WindowAt;
use crate::domain::{Coverage, Ties, TopPage, WindowState, coverage, rank_run};
use crate::error::{Error, Result};
use crate::store::redis::conn::RedisConn;
use crate::store::redis::conn::reply::{
    array, int_score, into_string, opt_int, parse_integer, text,
};

/// The page of ranking positions `offset .. offset + limit` of `at`'s window, highest
/// first; `None` when `read_ranking.lua` must read it (see above).
pub(crate) async fn top_desc(
    conn: &RedisConn,
    at: WindowAt<'_>,
    offset: u64,
    limit: u64,
) -> Result<Option<TopPage>> {
    let WindowAt { board, window, now } = at;
    let config = &board.config;
    if config.ties() == Ties::Dense {
        return Ok(None);
    }
    let seconds = config.windows()[window].seconds();
    let start = config.window_start(window, now);
    let index = conn.keys().index(&board.name);
    // One entry before the page (when there is one) and one after it.
    let first = offset.saturating_sub(1);
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("HMGET")
        .arg(conn.keys().record(&board.name))
        .arg("version")
        .arg("dropping")
        .arg(format!("done:{seconds}"))
        .arg(format!("since:{seconds}"))
        .arg(format!("building:{seconds}"))
        .cmd("ZRANGE")
        .arg(&index)
        .arg(format!("({start}"))
        .arg("-inf")
        .arg("BYSCORE")
        .arg("REV")
        .arg("LIMIT")
        .arg(0)
        .arg(1)
        .cmd("ZRANGE")
        .arg(&index)
        .arg(-1)
        .arg(-1)
        .cmd("ZREVRANGE")
        .arg(conn.keys().totals(&board.name, config.windows(), window))
        .arg(first)
        .arg(offset + limit)
        .arg("WITHSCORES");
    let Some(reply) = conn
        .read_transaction::<Vec<Value>>(&pipe, &board.name)
        .await?
    else {
        return Ok(None);
    };
    let [record, older, newest, raw] = <[Value; 4]>::try_from(reply)
        .map_err(|r| Error::store(format!("the top read answered {} replies", r.len())))?;
    let record = array(record, "board record")?;
    let field = |i: usize| record.get(i).and_then(text);
    if field(0).and_then(|v| v.parse().ok()) != Some(board.version) || field(1).is_some() {
        return Err(Error::BoardChanged(board.name.to_string()));
    }
    let done = field(2).and_then(parse_integer);
    // A slot older than the window newer than its watermark: the totals still hold it.
    if done.is_none() || slot(older)? > done {
        return Ok(None);
    }
    let state = WindowState {
        since: field(3).and_then(parse_integer),
        building: field(4).is_some(),
    };
    let slots = coverage(config, window, now, None, slot(newest)?, state);
    let coverage = Coverage::of(config, window, now, slots);

    // What was read, highest first, while ranked.
    let rule = config.rank();
    let mut read = Vec::new();
    let mut items = array(raw, "top page")?.into_iter();
    while let (Some(member), Some(score)) = (items.next(), items.next()) {
        let score = int_score(&score)?;
        if !rule.ranks(score) {
            break;
        }
        read.push((into_string(member, "member")?, score));
    }
    // The page is read[skip..end]; a tie group crossing either edge needs the script.
    let skip = usize::from(offset > 0);
    let end = read.len().min(skip + limit as usize);
    let total = |i: usize| read.get(i).map(|e| e.1);
    if skip < end && ((skip == 1 && total(0) == total(1)) || total(end) == total(end - 1)) {
        return Ok(None);
    }
    read.truncate(end);
    read.drain(..skip.min(end));
    // Each tie group into member order (ZREVRANGE reads it member descending).
    for group in read.chunk_by_mut(|a, b| a.1 == b.1) {
        group.reverse();
    }
    let entries = rank_run(read, offset, config.ties());
    Ok(Some(TopPage::new(board.name.clone(), coverage, entries)))
}

/// The slot start of a one-slot `ZRANGE` of the slot index, if it found one.
fn slot(reply: Value) -> Result<Option<i64>> {
    array(reply, "slot index")?
        .first()
        .map_or(Ok(None), |v| opt_int(v, "slot"))
}
