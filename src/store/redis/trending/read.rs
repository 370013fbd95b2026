//! Reads of a trending board in Redis, all through `trend_read.lua` (one mode per
//! read: `top`, `member`, `ranks`, `around`, `counts`): the script answers stored values
//! (negated forward-decayed sums) and the landmark, and the client decays them to `now`
//! and ranks them. Every read is [`Retry::Idempotent`].

use redis::Value;

use crate::domain::PageQuery;
use crate::domain::trending::{decayed, page_ranks};
use crate::domain::{AroundQuery, Order};
use crate::domain::{
    Member, Timestamp, TrendAt, TrendCounts, TrendEntry, TrendPage, TrendRange, TrendRank,
    TrendRanks, TrendStanding, TrendingBoard, percentile,
};
use crate::error::{Error, Result};
use crate::store::redis::conn::reply::{array, int, opt_int, string};
use crate::store::redis::conn::{RedisConn, Retry};

/// Runs `trend_read.lua` in `mode` with `args`: the landmark and the rest of the reply.
async fn read(
    conn: &RedisConn,
    board: &TrendingBoard,
    mode: &str,
    args: &[String],
) -> Result<(i64, Vec<Value>)> {
    let mut invocation = conn
        .scripts()
        .trend_read
        .key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().trend(&board.name))
        .arg(board.version)
        .arg(mode)
        .arg(args);
    // A read (Idempotent).
    let reply: Vec<Value> = conn
        .script(&invocation, &board.name, Retry::Idempotent)
        .await?;
    let mut reply = reply.into_iter();
    let landmark = int(
        &reply.next().ok_or_else(|| short("trend_read"))?,
        "landmark",
    )?;
    Ok((landmark, reply.collect()))
}

fn short(what: &str) -> Error {
    Error::store(format!("short reply for {what}"))
}

/// A stored value as Redis prints it (negated), as the positive stored sum.
fn value(v: &Value) -> Result<f64> {
    let text = string(v, "trend value")?;
    text.parse::<f64>()
        .map(|x| -x)
        .map_err(|_| Error::store(format!("bad trend value {text:?}")))
}

/// Pairs `member, value, ...` as `(member, positive stored sum)`, ranked ones only.
fn pairs(items: Value) -> Result<Vec<(String, f64)>> {
    let items = array(items, "trend items")?;
    let mut out = Vec::with_capacity(items.len() / 2);
    for pair in items.chunks(2) {
        let v = value(pair.get(1).ok_or_else(|| short("trend items"))?)?;
        if v > 0.0 {
            out.push((string(&pair[0], "member")?, v));
        }
    }
    Ok(out)
}

fn page(
    board: &TrendingBoard,
    now: Timestamp,
    landmark: i64,
    items: Vec<(String, f64)>,
    offset: u64,
    better: u64,
) -> TrendPage {
    let h = board.config.half_life_ms();
    let values: Vec<f64> = items.iter().map(|(_, v)| *v).collect();
    let ranks = page_ranks(&values, offset, better);
    TrendPage {
        board: board.name.clone(),
        at: now.unix_seconds_f64(),
        age_ms: 0,
        entries: items
            .into_iter()
            .zip(ranks)
            .map(|((member, v), rank)| TrendEntry {
                rank,
                member,
                score: decayed(v, now.unix_millis(), landmark, h),
            })
            .collect(),
    }
}

pub(crate) async fn top(
    conn: &RedisConn,
    at: TrendAt<'_>,
    query: PageQuery<TrendRange>,
) -> Result<TrendPage> {
    let TrendAt { board, now } = at;
    let (range, order, offset, limit) = query.parts();
    let bound = |b: Option<f64>| b.map(|x| x.to_string()).unwrap_or_default();
    let mut args = vec![
        offset.to_string(),
        limit.to_string(),
        now.unix_millis().to_string(),
        bound(range.min()),
        bound(range.max()),
    ];
    if order == Order::Asc {
        args.push("asc".to_owned());
    }
    let (landmark, rest) = read(conn, board, "top", &args).await?;
    let mut rest = rest.into_iter();
    let better = int(&rest.next().ok_or_else(|| short("top"))?, "better")? as u64;
    let above = int(&rest.next().ok_or_else(|| short("top"))?, "above")? as u64;
    let items = pairs(rest.next().ok_or_else(|| short("top"))?)?;
    let from = int(&rest.next().ok_or_else(|| short("top"))?, "from")? as u64;
    Ok(in_order(
        page(board, now, landmark, items, above + from, better),
        order,
    ))
}

/// A page read highest first, in `order`.
fn in_order(mut page: TrendPage, order: Order) -> TrendPage {
    if order == Order::Asc {
        page.entries.reverse();
    }
    page
}

pub(crate) async fn standing(
    conn: &RedisConn,
    at: TrendAt<'_>,
    member: &Member,
) -> Result<Option<TrendStanding>> {
    let TrendAt { board, now } = at;
    let (landmark, rest) = read(conn, board, "member", &[member.as_str().to_owned()]).await?;
    if rest.first().is_none_or(|v| *v == Value::Nil) {
        return Ok(None);
    }
    if rest.len() < 4 {
        return Err(short("member"));
    }
    let v = value(&rest[0])?;
    // Nil for a value not ranked (a negative score).
    let better = opt_int(&rest[1], "better")?;
    let below = int(&rest[2], "below")? as u64;
    let ranked = int(&rest[3], "ranked")? as u64;
    Ok(Some(TrendStanding {
        member: member.as_str().to_owned(),
        score: decayed(v, now.unix_millis(), landmark, board.config.half_life_ms()),
        rank: better.map(|b| b as u64 + 1),
        percentile: percentile(below, ranked),
        at: now.unix_seconds_f64(),
        age_ms: 0,
    }))
}

pub(crate) async fn ranks(
    conn: &RedisConn,
    at: TrendAt<'_>,
    members: &[Member],
) -> Result<TrendRanks> {
    let TrendAt { board, now } = at;
    let args: Vec<String> = members.iter().map(|m| m.as_str().to_owned()).collect();
    let (landmark, rest) = read(conn, board, "ranks", &args).await?;
    let items = array(
        rest.into_iter().next().ok_or_else(|| short("ranks"))?,
        "ranks",
    )?;
    let h = board.config.half_life_ms();
    let mut entries = Vec::with_capacity(members.len());
    for (member, pair) in members.iter().zip(items.chunks(2)) {
        let member = member.as_str().to_owned();
        entries.push(if pair[0] == Value::Nil {
            TrendRank {
                member,
                score: 0.0,
                rank: None,
            }
        } else {
            TrendRank {
                member,
                score: decayed(value(&pair[0])?, now.unix_millis(), landmark, h),
                rank: opt_int(&pair[1], "better")?.map(|b| b as u64 + 1),
            }
        });
    }
    Ok(TrendRanks {
        board: board.name.clone(),
        at: now.unix_seconds_f64(),
        age_ms: 0,
        entries,
    })
}

pub(crate) async fn around(
    conn: &RedisConn,
    at: TrendAt<'_>,
    query: AroundQuery<'_>,
) -> Result<Option<TrendPage>> {
    let AroundQuery { member, n, options } = query;
    let TrendAt { board, now } = at;
    let mut args = vec![member.as_str().to_owned(), n.to_string()];
    if options.fill {
        args.push("fill".to_owned());
    }
    let (landmark, rest) = read(conn, board, "around", &args).await?;
    if rest.first().is_none_or(|v| *v == Value::Nil) {
        return Ok(None);
    }
    let mut rest = rest.into_iter();
    let from = int(&rest.next().ok_or_else(|| short("around"))?, "from")? as u64;
    let better = int(&rest.next().ok_or_else(|| short("around"))?, "better")? as u64;
    let items = pairs(rest.next().ok_or_else(|| short("around"))?)?;
    Ok(Some(in_order(
        page(board, now, landmark, items, from, better),
        options.order,
    )))
}

pub(crate) async fn counts(conn: &RedisConn, board: &TrendingBoard) -> Result<TrendCounts> {
    let (landmark, rest) = read(conn, board, "counts", &[]).await?;
    let number = |i: usize, what: &str| -> Result<i64> {
        int(rest.get(i).ok_or_else(|| short("counts"))?, what)
    };
    Ok(TrendCounts {
        members: number(0, "members")?.max(0) as u64,
        ranked: number(1, "ranked")?.max(0) as u64,
        landmark_ms: landmark,
        rescaling: number(2, "rescaling")? == 1,
    })
}
