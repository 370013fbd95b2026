//! Reads from Redis: rankings through `read_ranking.lua` (one round trip), a member's
//! history through `history.lua` (one consistent view per slot), a board's description
//! through pipelines.

use redis::Value;

use super::board_record::version_matches;
use super::conn::{RedisConn, Retry};
use super::keys;
use super::reply::{array, int, opt_int, parse_integer, string};
use crate::board::{Board, BoardStatus, WindowStatus, to_datetime};
use crate::domain::{Entry, History, MemberRank, Point, Ranks, Standing, TopPage};
use crate::domain::{Member, ScoreRange, Timestamp, percentile};
use crate::error::{Error, Result};
use crate::store::{WindowState, behind, complete_from, coverage};

/// What `read_ranking.lua` answered: the coverage and the rest of the reply.
struct RankingReply {
    from: i64,
    to: i64,
    rest: Vec<Value>,
}

async fn read_ranking(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    now: Timestamp,
    mode: &str,
    args: &[&str],
) -> Result<RankingReply> {
    let windows = board.config.windows();
    let mut invocation = conn.scripts().read_ranking.key(keys::record(&board.name));
    invocation
        .key(keys::index(&board.name))
        .key(keys::totals(&board.name, windows, window))
        // On a dense board, its distinct totals (KEYS[4]); the tally is not read.
        .key(
            keys::window_dense(board, window)
                .into_iter()
                .nth(1)
                .into_iter()
                .collect::<Vec<_>>(),
        )
        .arg(board.version)
        .arg(windows[window].seconds())
        .arg(mode)
        .arg(args);
    let reply: Value = conn
        .script(&invocation, &board.name, Retry::Idempotent)
        .await?;
    let mut items = array(reply, "read_ranking")?;
    if items.len() < 4 {
        return Err(Error::Store("read_ranking answered too little".into()));
    }
    let rest = items.split_off(4);
    let first_pending = opt_int(&items[0], "pending slot")?;
    let newest = opt_int(&items[1], "newest slot")?;
    let state = WindowState {
        since: opt_int(&items[2], "since")?,
        building: items[3] != Value::Nil,
    };
    let (from, to) = coverage(&board.config, window, now, first_pending, newest, state);
    Ok(RankingReply { from, to, rest })
}

fn entries(items: &[Value]) -> Result<Vec<Entry>> {
    items
        .chunks(3)
        .map(|e| match e {
            [rank, member, score] => Ok(Entry {
                rank: int(rank, "rank")? as u64,
                member: string(member, "member")?,
                score: score_of(score)?,
            }),
            _ => Err(Error::Store("read_ranking answered a partial entry".into())),
        })
        .collect()
}

fn score_of(v: &Value) -> Result<i64> {
    let text = string(v, "score")?;
    parse_integer(&text).ok_or_else(|| Error::Store(format!("score {text:?} is not an integer")))
}

pub(super) async fn top(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    now: Timestamp,
    range: ScoreRange,
    offset: u64,
    limit: u64,
) -> Result<TopPage> {
    let args = [offset, limit].map(|n| n.to_string());
    let bounds = [range.min(), range.max()].map(|n| n.to_string());
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    if range != ScoreRange::ALL {
        args.extend(bounds.iter().map(String::as_str));
    }
    let r = read_ranking(conn, board, window, now, "top", &args).await?;
    let (behind, lag_ms) = behind(&board.config, window, now, r.from);
    Ok(TopPage {
        board: board.name.clone(),
        window: board.config.windows()[window],
        from: r.from,
        to: r.to,
        behind,
        lag_ms,
        entries: entries(&r.rest)?,
    })
}

pub(super) async fn standing(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    now: Timestamp,
    member: &Member,
) -> Result<Option<Standing>> {
    let r = read_ranking(conn, board, window, now, "member", &[member.as_str()]).await?;
    let [score, rank, below, ranked] = r.rest.as_slice() else {
        return Ok(None);
    };
    let (behind, lag_ms) = behind(&board.config, window, now, r.from);
    Ok(Some(Standing {
        member: member.to_string(),
        score: score_of(score)?,
        rank: int(rank, "rank")? as u64,
        percentile: percentile(int(below, "below")? as u64, int(ranked, "ranked")? as u64),
        window: board.config.windows()[window],
        from: r.from,
        to: r.to,
        behind,
        lag_ms,
    }))
}

/// The ranks of `members` in one `read_ranking.lua` call (one round trip, O(k log N)).
pub(super) async fn ranks(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    now: Timestamp,
    members: &[Member],
) -> Result<Ranks> {
    let args: Vec<&str> = ["", ""]
        .into_iter()
        .chain(members.iter().map(Member::as_str))
        .collect();
    let r = read_ranking(conn, board, window, now, "ranks", &args).await?;
    if r.rest.len() != 2 * members.len() {
        return Err(Error::Store(format!(
            "read_ranking answered {} values for {} members",
            r.rest.len(),
            members.len()
        )));
    }
    let entries = members
        .iter()
        .zip(r.rest.chunks(2))
        .map(|(member, pair)| {
            let (score, rank) = match pair {
                [Value::Nil, _] => (0, None),
                [score, rank] => (score_of(score)?, Some(int(rank, "rank")? as u64)),
                _ => unreachable!("chunks of a slice of even length are pairs"),
            };
            Ok(MemberRank {
                member: member.to_string(),
                score,
                rank,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let (behind, lag_ms) = behind(&board.config, window, now, r.from);
    Ok(Ranks {
        board: board.name.clone(),
        window: board.config.windows()[window],
        from: r.from,
        to: r.to,
        behind,
        lag_ms,
        entries,
    })
}

pub(super) async fn around(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    now: Timestamp,
    member: &Member,
    n: u64,
) -> Result<Option<TopPage>> {
    let r = read_ranking(
        conn,
        board,
        window,
        now,
        "around",
        &[member.as_str(), &n.to_string()],
    )
    .await?;
    if r.rest.is_empty() {
        return Ok(None);
    }
    let (behind, lag_ms) = behind(&board.config, window, now, r.from);
    Ok(Some(TopPage {
        board: board.name.clone(),
        window: board.config.windows()[window],
        from: r.from,
        to: r.to,
        behind,
        lag_ms,
        entries: entries(&r.rest)?,
    }))
}

/// Stage keys one `history.lua` call reads at most (about a microsecond each), so every
/// call stays short however many live slots the largest window holds.
const HISTORY_KEYS_PER_CALL: usize = 1024;

/// What `history.lua` answered.
enum HistoryReply {
    /// The member's non-zero points in the range, and the newest live slot.
    Points {
        newest: Option<i64>,
        points: Vec<Point>,
    },
    /// The range holds slots that were not passed: the live slots from its lower bound.
    Slots(Vec<i64>),
}

/// The member's points in every live slot from the largest window's start, in calls of
/// at most [`HISTORY_KEYS_PER_CALL`] stage keys over consecutive ranges of slots; each
/// call sums all stages of its slots atomically, so a value that retirement moves from
/// one stage to the next is counted exactly once.
pub(super) async fn history(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
    member: &Member,
) -> Result<History> {
    let config = &board.config;
    let largest = config.windows().len() - 1;
    let from = config.window_start(largest, now);
    let per_call = (HISTORY_KEYS_PER_CALL / config.windows().len()).max(1);
    let mut lower = from;
    // Live slots from `lower` on, as last listed: the first `per_call` go in the next call.
    let mut listed: Vec<i64> = Vec::new();
    let mut points = Vec::new();
    let newest = loop {
        let upper = listed.get(per_call).copied();
        let passed = &listed[..listed.len().min(per_call)];
        match history_range(conn, board, member, lower, upper, passed, per_call + 1).await? {
            HistoryReply::Slots(slots) => listed = slots,
            HistoryReply::Points {
                newest,
                points: found,
            } => {
                points.extend(found);
                let Some(upper) = upper else {
                    break newest;
                };
                listed.drain(..per_call);
                lower = upper;
            }
        }
    };
    Ok(History {
        member: member.to_string(),
        slot: config.slot(),
        from,
        to: coverage(config, largest, now, None, newest, WindowState::default()).1,
        points,
    })
}

/// One `history.lua` call over the slots in `[lower, upper)` (`upper` `None`: no bound).
async fn history_range(
    conn: &RedisConn,
    board: &Board,
    member: &Member,
    lower: i64,
    upper: Option<i64>,
    slots: &[i64],
    listing: usize,
) -> Result<HistoryReply> {
    let mut invocation = conn.scripts().history.key(keys::record(&board.name));
    invocation.key(keys::index(&board.name));
    invocation.key(keys::slot_geometry(&board.name));
    for slot in slots {
        for key in keys::stages(board, *slot) {
            invocation.key(key);
        }
    }
    invocation
        .arg(board.version)
        .arg(lower)
        .arg(upper.map_or_else(|| "+inf".to_owned(), |u| format!("({u}")))
        .arg(member.as_str())
        .arg(board.config.windows().len())
        .arg(listing)
        .arg(slots);
    let reply: Value = conn
        .script(&invocation, &board.name, Retry::Idempotent)
        .await?;
    let items = array(reply, "history")?;
    let [kind, newest, rest @ ..] = items.as_slice() else {
        return Err(Error::Store("history answered too little".into()));
    };
    match string(kind, "history reply")?.as_str() {
        "slots" => Ok(HistoryReply::Slots(
            rest.iter().map(|s| int(s, "slot")).collect::<Result<_>>()?,
        )),
        "points" => Ok(HistoryReply::Points {
            newest: opt_int(newest, "newest slot")?,
            points: rest
                .chunks(2)
                .map(|p| match p {
                    [slot, value] => Ok(Point {
                        slot: int(slot, "slot")?,
                        value: int(value, "value")?,
                    }),
                    _ => Err(Error::Store("history answered a partial point".into())),
                })
                .collect::<Result<_>>()?,
        }),
        other => Err(Error::Store(format!("history answered {other:?}"))),
    }
}

pub(super) async fn pending_windows(conn: &RedisConn, board: &Board) -> Result<Vec<usize>> {
    let fields: Vec<String> = board
        .config
        .windows()
        .iter()
        .map(|w| format!("building:{}", w.seconds()))
        .collect();
    let marks: Vec<Value> = conn
        .query(
            redis::cmd("HMGET")
                .arg(keys::record(&board.name))
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

pub(super) async fn describe(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
) -> Result<BoardStatus> {
    let config = &board.config;
    let windows = config.windows();
    let record = keys::record(&board.name);
    let index = keys::index(&board.name);
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
        let totals = keys::totals(&board.name, windows, j);
        pipe.cmd("ZCARD").arg(&totals);
        pipe.cmd("ZCOUNT").arg(&totals).arg("(0").arg("+inf");
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
            return Err(Error::Store(
                "the board record answered a partial window".into(),
            ));
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
