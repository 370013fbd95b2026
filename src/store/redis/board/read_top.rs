//! The most-called read, a page of a window's ranking highest first, by plain commands in
//! one `MULTI`/`EXEC`: the board record's guard and watermark, the two slots that bound
//! the window's coverage, and the page with the entries before it the window's tie
//! reach holds (`conn/tie_reach.rs`) and one after it; and when the window's last read
//! of a page ending there found it cut through a tie group, that group's first members
//! in member order, by its score. Redis spends about a third of what `read_ranking.lua`
//! costs on it (no script to run, no reply turned into Lua tables and back).
//!
//! It answers what `read_ranking.lua` answers, read at the same single instant, or
//! nothing when the page needs more than those commands can tell, and the script reads
//! it: a tie group cut by the page's first entry that goes on past what was read, or by
//! its last entry when its score was not known (its members are ordered by member
//! ascending, which `ZREVRANGE` reverses), a window behind (the oldest slot still in its
//! totals is found by the watermark this read only learns), dense ranks (counted on
//! another zset), an ascending page or a score range; and on a cluster, a transaction
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
    let totals = conn.keys().totals(&board.name, config.windows(), window);
    // `reach` entries before the page (as many as there are) and after it; after it one
    // when the group its last entry cut is read by its score.
    let end = offset + limit;
    let plan = conn.tie_reach().plan(&totals, end);
    let first = offset.saturating_sub(plan.reach);
    let after = if plan.edge.is_some() { 1 } else { plan.reach };
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
        .arg(&totals)
        .arg(first)
        .arg(end + after - 1)
        .arg("WITHSCORES");
    if let Some(score) = plan.edge {
        // The group the page's last entry cut last time, member ascending: as many as
        // the positions it can hold in what was read.
        pipe.cmd("ZRANGE")
            .arg(&totals)
            .arg(score)
            .arg(score)
            .arg("BYSCORE")
            .arg("LIMIT")
            .arg(0)
            .arg(end - first);
    }
    let Some(reply) = conn
        .read_transaction::<Vec<Value>>(&pipe, &board.name)
        .await?
    else {
        return Ok(None);
    };
    let replies = 4 + usize::from(plan.edge.is_some());
    if reply.len() != replies {
        let got = reply.len();
        return Err(Error::store(format!("the top read answered {got} replies")));
    }
    let mut reply = reply.into_iter();
    let mut next = || reply.next().expect("counted");
    let (record, older, newest, raw) = (next(), next(), next(), next());
    let group = plan.edge.map(|_| next());
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

    // What was read, highest first, while ranked, and whether the ranking ends in it.
    let rule = config.rank();
    let raw = array(raw, "top page")?;
    let mut ends = raw.len() / 2 < (end + after - first) as usize;
    let mut read = Vec::with_capacity(raw.len() / 2);
    let mut items = raw.into_iter();
    while let (Some(member), Some(score)) = (items.next(), items.next()) {
        let score = int_score(&score)?;
        if !rule.ranks(score) {
            ends = true;
            break;
        }
        read.push((into_string(member, "member")?, score));
    }
    // The page is read[lo..hi]; its first tie group starts at `from`, its last starts at
    // `last` and ends at `to`: the first must be whole in what was read, the last too
    // unless its first members were read by its score.
    let lo = ((offset - first) as usize).min(read.len());
    let hi = read.len().min(lo + limit as usize);
    let (mut from, mut last, mut to) = (lo, hi, hi);
    if lo < hi {
        while from > 0 && read[from - 1].1 == read[lo].1 {
            from -= 1;
        }
        while last > from && read[last - 1].1 == read[hi - 1].1 {
            last -= 1;
        }
        while to < read.len() && read[to].1 == read[hi - 1].1 {
            to += 1;
        }
    }
    let cut = (to > hi).then(|| read[hi - 1].1);
    let top = lo == hi || from > 0 || first == 0;
    let bottom = lo == hi || to < read.len() || ends;
    // The entries before (and unless read by its score, after) the page that show where
    // its groups end.
    let needed = match plan.edge {
        Some(_) => top.then_some(lo - from),
        None => (top && bottom).then_some((lo - from).max(to - hi)),
    };
    let needed = needed.map(|n| n as u64 + 1);
    conn.tie_reach().learn(&totals, end, plan, needed, cut);
    // The cut group's first members, in member order, when it was read by its score
    // (never fewer than the page holds of it, all read at one instant).
    let group = match (group, cut) {
        (Some(group), Some(score)) if plan.edge == Some(score) => {
            let members = array(group, "tie group")?;
            (members.len() >= hi - last).then_some((members, score))
        }
        _ => None,
    };
    if !top || !(bottom || group.is_some()) {
        return Ok(None);
    }
    // Each tie group into member order (ZREVRANGE reads it member descending); the cut
    // one from its first members, in order already.
    read.truncate(if group.is_some() { last } else { to });
    read.drain(..from);
    for run in read.chunk_by_mut(|a, b| a.1 == b.1) {
        run.reverse();
    }
    if let Some((members, score)) = group {
        for member in members.into_iter().take(hi - last) {
            read.push((into_string(member, "member")?, score));
        }
    }
    let mut entries = rank_run(read, first + from as u64, config.ties());
    entries.truncate(hi - from);
    entries.drain(..lo - from);
    Ok(Some(TopPage::new(board.name.clone(), coverage, entries)))
}

/// The slot start of a one-slot `ZRANGE` of the slot index, if it found one.
fn slot(reply: Value) -> Result<Option<i64>> {
    array(reply, "slot index")?
        .first()
        .map_or(Ok(None), |v| opt_int(v, "slot"))
}
