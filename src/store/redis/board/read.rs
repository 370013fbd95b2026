//! Rankings from Redis: a page of the top, a member's standing, the ranks of given
//! members and the page around a member, each one `read_ranking.lua` call (one round
//! trip, one consistent view of the window). A member's history is in `history.rs`, a
//! board's description in `describe.rs`.

use redis::Value;

use crate::domain::PageQuery;
use crate::domain::board::Board;
use crate::domain::board::WindowAt;
use crate::domain::{Ahead, AheadProbe, AroundOptions, Order, RankedTotals, Ties};
use crate::domain::{Coverage, WindowState, coverage};
use crate::domain::{Entry, MemberRank, Ranks, Standing, TopPage};
use crate::domain::{Member, ScoreRange, percentile};
use crate::error::{Error, Result};
use crate::store::redis::conn::RedisConn;
use crate::store::redis::conn::reply::{array, int, int_score, opt_int, parse_integer};

/// What `read_ranking.lua` answered: the coverage and the rest of the reply.
struct RankingReply {
    coverage: Coverage,
    rest: Vec<Value>,
}

/// The flags `read_ranking.lua` takes (ARGV[4]): how the board ranks ties, which totals
/// it ranks, and the order and shape asked.
fn flags(board: &Board, order: Order, fill: bool) -> String {
    let mut words = Vec::new();
    if board.config.ties() == Ties::Position {
        words.push("position");
    }
    match board.config.rank() {
        RankedTotals::Positive => {}
        RankedTotals::Nonzero => words.push("nonzero"),
        RankedTotals::All => words.push("all"),
    }
    if order == Order::Asc {
        words.push("asc");
    }
    if fill {
        words.push("fill");
    }
    words.join(" ")
}

#[allow(clippy::too_many_arguments)]
async fn read_ranking(
    conn: &RedisConn,
    at: WindowAt<'_>,
    mode: &str,
    flags: &str,
    args: &[&str],
) -> Result<RankingReply> {
    let WindowAt { board, window, now } = at;
    let windows = board.config.windows();
    let mut invocation = conn
        .scripts()
        .read_ranking
        .key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().index(&board.name))
        .key(conn.keys().totals(&board.name, windows, window))
        // On a dense board, its distinct totals (KEYS[4]); the tally is not read.
        .key(
            conn.keys()
                .window_dense(board, window)
                .into_iter()
                .nth(1)
                .into_iter()
                .collect::<Vec<_>>(),
        )
        .arg(board.version)
        .arg(windows[window].seconds())
        .arg(mode)
        .arg(flags)
        .arg(args);
    let reply: Value = conn.read_script(&invocation, &board.name).await?;
    let mut items = array(reply, "read_ranking")?;
    if items.len() < 4 {
        return Err(Error::store("read_ranking answered too little"));
    }
    let rest = items.split_off(4);
    let first_pending = opt_int(&items[0], "pending slot")?;
    let newest = opt_int(&items[1], "newest slot")?;
    let state = WindowState {
        since: opt_int(&items[2], "since")?,
        building: items[3] != Value::Nil,
    };
    let slots = coverage(&board.config, window, now, first_pending, newest, state);
    let coverage = Coverage::of(&board.config, window, now, slots);
    Ok(RankingReply { coverage, rest })
}

/// `read_ranking.lua`'s ARGV[5] and ARGV[6], then `members` (ARGV[7…]).
fn with_members<'a>(fixed: [&'a str; 2], members: &'a [Member]) -> Vec<&'a str> {
    fixed
        .into_iter()
        .chain(members.iter().map(Member::as_str))
        .collect()
}

/// A `top` or `around` reply's runs: its numbers (`items`) and the texts they end with
/// (the runs' totals and members, joined by byte 255; see `read_ranking.lua`).
struct Runs<'a> {
    items: &'a [Value],
    texts: Option<&'a [u8]>,
}

impl<'a> Runs<'a> {
    /// The runs of `rest`, a `top` or `around` reply after its coverage.
    fn of(rest: &'a [Value]) -> Result<Self> {
        let Some((Value::BulkString(texts), items)) = rest.split_last() else {
            return Err(Error::store("read_ranking answered no texts"));
        };
        Ok(Runs {
            items,
            texts: Some(texts),
        })
    }

    /// The next number: a count or a rank.
    fn number(&mut self, what: &str) -> Result<i64> {
        int(next(&mut self.items)?, what)
    }

    /// The next text: a total or a member.
    fn text(&mut self, what: &str) -> Result<&'a str> {
        let texts = self
            .texts
            .ok_or_else(|| Error::store(format!("read_ranking answered no {what}")))?;
        let (text, rest) = match texts.iter().position(|&b| b == 255) {
            Some(end) => (&texts[..end], Some(&texts[end + 1..])),
            None => (texts, None),
        };
        self.texts = rest;
        std::str::from_utf8(text)
            .map_err(|_| Error::store(format!("read_ranking answered a {what} not UTF-8")))
    }
}

/// Reads `read_ranking.lua`'s runs off the front of `runs` until `count` entries are
/// read (all of them when `None`), in the order `order` asks (the script answers
/// highest first). A run is its first rank, headed by minus its length when it holds
/// more than one, then in the texts its total and its members; its ranks go up by one
/// a member when `ties` are by position.
fn entries(
    runs: &mut Runs<'_>,
    count: Option<usize>,
    ties: Ties,
    order: Order,
) -> Result<Vec<Entry>> {
    let position = ties == Ties::Position;
    let mut entries = Vec::with_capacity(count.unwrap_or(runs.items.len()));
    while count.map_or(!runs.items.is_empty(), |count| entries.len() < count) {
        let head = runs.number("rank")?;
        let (length, first_rank) = match head {
            ..0 => (head.unsigned_abs(), runs.number("rank")? as u64),
            _ => (1, head as u64),
        };
        let total = runs.text("total")?;
        let score = parse_integer(total)
            .ok_or_else(|| Error::store(format!("read_ranking answered {total:?} for a total")))?;
        for k in 0..length {
            entries.push(Entry {
                rank: first_rank + if position { k } else { 0 },
                member: runs.text("member")?.to_owned(),
                score,
                data: None,
                pinned: false,
                movement: None,
            });
        }
    }
    if count.is_some_and(|count| entries.len() != count) {
        return Err(Error::store("read_ranking answered a run past its page"));
    }
    if order == Order::Asc {
        entries.reverse();
    }
    Ok(entries)
}

/// The first of `items`, taken off them.
fn next<'a>(items: &mut &'a [Value]) -> Result<&'a Value> {
    let (first, rest) = items
        .split_first()
        .ok_or_else(|| Error::store("read_ranking answered a partial run"))?;
    *items = rest;
    Ok(first)
}

pub(crate) async fn top(
    conn: &RedisConn,
    at: WindowAt<'_>,
    page: PageQuery<ScoreRange>,
) -> Result<TopPage> {
    let (range, order, offset, limit) = page.parts();
    if range == ScoreRange::ALL
        && order == Order::Desc
        && let Some(page) = super::read_top::top_desc(conn, at, offset, limit).await?
    {
        return Ok(page);
    }
    let args = [offset, limit].map(|n| n.to_string());
    let bounds = [range.lowest(at.board.config.rank()), range.max()].map(|n| n.to_string());
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    if range != ScoreRange::ALL {
        args.extend(bounds.iter().map(String::as_str));
    }
    let flags = flags(at.board, order, false);
    let r = read_ranking(conn, at, "top", &flags, &args).await?;
    let ties = at.board.config.ties();
    let entries = entries(&mut Runs::of(&r.rest)?, None, ties, order)?;
    Ok(TopPage::new(at.board.name.clone(), r.coverage, entries))
}

/// The standings of `members` in one `read_ranking.lua` call (one round trip, O(k log N)).
pub(crate) async fn standings(
    conn: &RedisConn,
    at: WindowAt<'_>,
    members: &[Member],
) -> Result<Vec<Option<Standing>>> {
    let flags = flags(at.board, Order::Desc, false);
    let args = with_members(["", ""], members);
    let r = read_ranking(conn, at, "members", &flags, &args).await?;
    let Some((ranked, rest)) = r.rest.split_first() else {
        return Err(Error::store("read_ranking answered no ranked count"));
    };
    if rest.len() != 3 * members.len() {
        return Err(Error::store(format!(
            "read_ranking answered {} values for {} members",
            rest.len(),
            members.len()
        )));
    }
    let ranked = int(ranked, "ranked")? as u64;
    members
        .iter()
        .zip(rest.chunks(3))
        .map(|(member, triple)| match triple {
            [Value::Nil, ..] => Ok(None),
            [score, _, Value::Int(-1)] => Ok(Some(Standing {
                hidden: true,
                ..Standing::new(member.to_string(), int_score(score)?, None, 0.0, r.coverage)
            })),
            [score, rank, below] => Ok(Some(Standing::new(
                member.to_string(),
                int_score(score)?,
                opt_int(rank, "rank")?.map(|r| r as u64),
                percentile(int(below, "below")? as u64, ranked),
                r.coverage,
            ))),
            _ => unreachable!("chunks of 3"),
        })
        .collect()
}

/// The ranks of `members` in one `read_ranking.lua` call (one round trip, O(k log N)).
pub(crate) async fn ranks(conn: &RedisConn, at: WindowAt<'_>, members: &[Member]) -> Result<Ranks> {
    let flags = flags(at.board, Order::Desc, false);
    let args = with_members(["", ""], members);
    let r = read_ranking(conn, at, "ranks", &flags, &args).await?;
    if r.rest.len() != 2 * members.len() {
        return Err(Error::store(format!(
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
                [score, rank] => (int_score(score)?, opt_int(rank, "rank")?.map(|r| r as u64)),
                _ => unreachable!("chunks of a slice of even length are pairs"),
            };
            Ok(MemberRank {
                member: member.to_string(),
                score,
                rank,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Ranks::new(at.board.name.clone(), r.coverage, entries))
}

/// How many ranked members are ahead of each probe, in one `read_ranking.lua` call
/// (one round trip, O(log N) per probe and O(log N log T) for one in a tie group of T).
pub(crate) async fn count_ahead(
    conn: &RedisConn,
    at: WindowAt<'_>,
    probes: &[AheadProbe],
) -> Result<Ahead> {
    let totals: Vec<String> = probes.iter().map(|p| p.total.to_string()).collect();
    let mut args: Vec<&str> = vec!["", ""];
    for (probe, total) in probes.iter().zip(&totals) {
        args.push(total);
        args.push(probe.member.as_ref().map_or("", Member::as_str));
    }
    let flags = flags(at.board, Order::Desc, false);
    let r = read_ranking(conn, at, "ahead", &flags, &args).await?;
    if r.rest.len() != probes.len() {
        return Err(Error::store(format!(
            "read_ranking answered {} counts for {} probes",
            r.rest.len(),
            probes.len()
        )));
    }
    let counts = r
        .rest
        .iter()
        .map(|c| int(c, "count").map(|c| c as u64))
        .collect::<Result<Vec<_>>>()?;
    Ok(Ahead::new(r.coverage, counts))
}

/// The pages around each of `members` in one `read_ranking.lua` call (one round trip).
pub(crate) async fn arounds(
    conn: &RedisConn,
    at: WindowAt<'_>,
    members: &[Member],
    n: u64,
    options: AroundOptions,
) -> Result<Vec<Option<TopPage>>> {
    let flags = flags(at.board, options.order, options.fill);
    let n = n.to_string();
    let args = with_members(["", &n], members);
    let r = read_ranking(conn, at, "around", &flags, &args).await?;
    let (ties, mut runs) = (at.board.config.ties(), Runs::of(&r.rest)?);
    let mut pages = Vec::with_capacity(members.len());
    for _ in members {
        let count = runs.number("entries")? as usize;
        let entries = entries(&mut runs, Some(count), ties, options.order)?;
        pages.push((count > 0).then(|| TopPage::new(at.board.name.clone(), r.coverage, entries)));
    }
    Ok(pages)
}
