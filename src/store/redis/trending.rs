//! Trending boards in Redis: the record `board_{<b>}` (kind `trending`, half-life,
//! floor, max age, landmark), the stored values `trend_{<b>}` (a zset of negated
//! forward-decayed sums) and, while a rescale runs, its build `trend_{<b>}_next`. Every
//! multi-key step is one script (`lua/trend_*.lua`); see `docs/design.md`, "Trending
//! boards".

use async_trait::async_trait;
use redis::Value;

use super::RedisStore;
use super::board_record::{TREND_FIELDS, parse_trending};
use super::conn::{RedisConn, Retry};
use super::refusal::Refusal;
use super::reply::{array, int, opt_string, string};
use super::{keys, registry};
use crate::domain::trending::{WRITE_LIMIT_HALF_LIVES, decayed, page_ranks};
use crate::domain::{
    BoardName, Member, Timestamp, TrendCounts, TrendCreated, TrendEntry, TrendMaintenance,
    TrendOptions, TrendPage, TrendRange, TrendRank, TrendRanks, TrendStanding, TrendWrite,
    TrendingBoard, TrendingConfig, percentile,
};
use crate::error::{Error, Result};
use crate::store::{TrendKeyed, TrendingStore, WriteKey, new_version};

async fn create(
    conn: &RedisConn,
    name: &BoardName,
    config: &TrendingConfig,
    now: Timestamp,
) -> Result<TrendCreated> {
    let mut invocation = conn.scripts().trend_create.key(keys::record(name));
    invocation
        .arg(new_version())
        .arg(config.half_life().seconds())
        .arg(config.floor().to_string())
        .arg(config.max_age().seconds())
        .arg(now.unix_millis());
    // Idempotent: sent again, the script finds the record it made and answers it.
    let reply: Vec<Value> = match conn
        .script_or_refusal(&invocation, name, Retry::Idempotent)
        .await?
    {
        Ok(reply) => reply,
        // A drop that stopped half-way (a crash) blocks the name until a drop finishes it.
        Err(Refusal::Dropping) => {
            super::boards::drop(conn, name).await?;
            conn.script(&invocation, name, Retry::Idempotent).await?
        }
        Err(refusal) => return Err(refusal.into_error(Some(name))),
    };
    let state = int(&reply[0], "trend_create")?;
    if state == 2 {
        return Err(Error::BoardKind {
            board: name.to_string(),
            kind: "windowed",
        });
    }
    let board = parse_trending(name, &reply[1..])?;
    registry::register(conn, name).await?;
    if state == 1 {
        Ok(TrendCreated::New(board))
    } else if board.config == *config {
        Ok(TrendCreated::Existing(board))
    } else {
        Err(Error::TrendingConflict {
            board: name.to_string(),
            existing: board.config,
        })
    }
}

async fn load(conn: &RedisConn, name: &BoardName) -> Result<Option<TrendingBoard>> {
    // A read (Idempotent).
    let fields: Vec<Value> = conn
        .query(
            redis::cmd("HMGET")
                .arg(keys::record(name))
                .arg(TREND_FIELDS)
                .arg("kind")
                .arg("dropping"),
            Some(name),
            Retry::Idempotent,
        )
        .await?;
    let n = TREND_FIELDS.len();
    if fields[0] == Value::Nil || fields[n + 1] != Value::Nil {
        return Ok(None);
    }
    if opt_string(&fields[n], "kind")?.as_deref() != Some("trending") {
        return Err(Error::BoardKind {
            board: name.to_string(),
            kind: "windowed",
        });
    }
    parse_trending(name, &fields[..n]).map(Some)
}

async fn list(conn: &RedisConn) -> Result<Vec<TrendingBoard>> {
    let names = registry::registered_names(conn).await?;
    let mut boards = Vec::new();
    for name in names {
        match load(conn, &name).await {
            Ok(Some(board)) => boards.push(board),
            Ok(None) | Err(Error::BoardKind { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(boards)
}

/// The board's three keys: record, stored values, rescale build.
fn board_keys(name: &BoardName) -> [String; 3] {
    [
        keys::record(name),
        keys::trend(name),
        keys::trend_next(name),
    ]
}

async fn write(
    conn: &RedisConn,
    board: &TrendingBoard,
    now: Timestamp,
    writes: &[TrendWrite],
    key: Option<&WriteKey>,
) -> Result<TrendKeyed> {
    if writes.is_empty() && key.is_none() {
        return Ok(TrendKeyed::Applied);
    }
    let [record, values, next] = board_keys(&board.name);
    let mut invocation = conn.scripts().trend_write.key(record);
    invocation
        .key(values)
        .key(next)
        .arg(board.version)
        .arg(WRITE_LIMIT_HALF_LIVES);
    match key {
        Some(key) => {
            let ttl_ms = key.ttl.secs_i64() * 1000;
            invocation
                .key(keys::trend_idempotency(board, &key.name))
                .arg(&key.fingerprint)
                .arg(now.unix_millis())
                .arg(now.unix_millis() + ttl_ms)
                .arg(ttl_ms);
        }
        None => {
            invocation.arg("").arg(0).arg(0).arg(0);
        }
    }
    for w in writes {
        invocation.arg(&w.member).arg(w.delta).arg(w.at_ms);
    }
    for _ in 0..2 {
        // Never re-sent: ZINCRBY would count the events twice (with a key, a re-sent call
        // would be answered as a replay; the client re-sends under its key instead).
        match conn
            .script_or_refusal::<Vec<i64>>(&invocation, &board.name, Retry::Never)
            .await?
        {
            Ok(reply) => {
                return match reply.as_slice() {
                    [1, ..] => Ok(TrendKeyed::Applied),
                    [4, first] => Ok(TrendKeyed::Replayed {
                        now: Timestamp::from_unix_millis(*first)?,
                    }),
                    [5] => Ok(TrendKeyed::Reused),
                    other => Err(Error::Store(format!("trend_write.lua answered {other:?}"))),
                };
            }
            // The maintenance pass has not run for hundreds of half-lives: finish a
            // rescale to now, then send the write again (the refusal applied nothing).
            Err(Refusal::Rescale) => {
                let options = TrendOptions {
                    rescale_after: 1,
                    ..TrendOptions::default()
                };
                while rescale_step(conn, board, now, options).await?.0 == 1 {}
            }
            Err(refusal) => return Err(refusal.into_error(Some(&board.name))),
        }
    }
    Err(Error::Store(format!(
        "trending board {:?}: an event is still too far from the landmark after a rescale",
        board.name.as_str()
    )))
}

/// Runs `trend_read.lua` in `mode` with `args`: the landmark and the rest of the reply.
async fn read(
    conn: &RedisConn,
    board: &TrendingBoard,
    mode: &str,
    args: &[String],
) -> Result<(i64, Vec<Value>)> {
    let mut invocation = conn.scripts().trend_read.key(keys::record(&board.name));
    invocation
        .key(keys::trend(&board.name))
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
    Error::Store(format!("short reply for {what}"))
}

/// A stored value as Redis prints it (negated), as the positive stored sum.
fn value(v: &Value) -> Result<f64> {
    let text = string(v, "trend value")?;
    text.parse::<f64>()
        .map(|x| -x)
        .map_err(|_| Error::Store(format!("bad trend value {text:?}")))
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

async fn top(
    conn: &RedisConn,
    board: &TrendingBoard,
    now: Timestamp,
    range: TrendRange,
    offset: u64,
    limit: u64,
) -> Result<TrendPage> {
    let bound = |b: Option<f64>| b.map(|x| x.to_string()).unwrap_or_default();
    let args = [
        offset.to_string(),
        limit.to_string(),
        now.unix_millis().to_string(),
        bound(range.min()),
        bound(range.max()),
    ];
    let (landmark, rest) = read(conn, board, "top", &args).await?;
    let mut rest = rest.into_iter();
    let better = int(&rest.next().ok_or_else(|| short("top"))?, "better")? as u64;
    let above = int(&rest.next().ok_or_else(|| short("top"))?, "above")? as u64;
    let items = pairs(rest.next().ok_or_else(|| short("top"))?)?;
    Ok(page(board, now, landmark, items, above + offset, better))
}

async fn standing(
    conn: &RedisConn,
    board: &TrendingBoard,
    now: Timestamp,
    member: &Member,
) -> Result<Option<TrendStanding>> {
    let (landmark, rest) = read(conn, board, "member", &[member.as_str().to_owned()]).await?;
    if rest.first().is_none_or(|v| *v == Value::Nil) {
        return Ok(None);
    }
    if rest.len() < 4 {
        return Err(short("member"));
    }
    let v = value(&rest[0])?;
    let better = int(&rest[1], "better")? as u64;
    let below = int(&rest[2], "below")? as u64;
    let ranked = int(&rest[3], "ranked")? as u64;
    Ok(Some(TrendStanding {
        member: member.as_str().to_owned(),
        score: decayed(v, now.unix_millis(), landmark, board.config.half_life_ms()),
        rank: better + 1,
        percentile: percentile(below, ranked),
        at: now.unix_seconds_f64(),
    }))
}

async fn ranks(
    conn: &RedisConn,
    board: &TrendingBoard,
    now: Timestamp,
    members: &[Member],
) -> Result<TrendRanks> {
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
                rank: Some(int(&pair[1], "better")? as u64 + 1),
            }
        });
    }
    Ok(TrendRanks {
        board: board.name.clone(),
        at: now.unix_seconds_f64(),
        entries,
    })
}

async fn around(
    conn: &RedisConn,
    board: &TrendingBoard,
    now: Timestamp,
    member: &Member,
    n: u64,
) -> Result<Option<TrendPage>> {
    let (landmark, rest) = read(
        conn,
        board,
        "around",
        &[member.as_str().to_owned(), n.to_string()],
    )
    .await?;
    if rest.first().is_none_or(|v| *v == Value::Nil) {
        return Ok(None);
    }
    let mut rest = rest.into_iter();
    let from = int(&rest.next().ok_or_else(|| short("around"))?, "from")? as u64;
    let better = int(&rest.next().ok_or_else(|| short("around"))?, "better")? as u64;
    let items = pairs(rest.next().ok_or_else(|| short("around"))?)?;
    Ok(Some(page(board, now, landmark, items, from, better)))
}

async fn counts(conn: &RedisConn, board: &TrendingBoard) -> Result<TrendCounts> {
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

/// One rescale step: `(state, copied)`, state 0 = none due, 1 = under way, 2 = finished.
async fn rescale_step(
    conn: &RedisConn,
    board: &TrendingBoard,
    now: Timestamp,
    options: TrendOptions,
) -> Result<(i64, u64)> {
    let [record, values, next] = board_keys(&board.name);
    let mut invocation = conn.scripts().trend_rescale.key(record);
    invocation
        .key(values)
        .key(next)
        .arg(board.version)
        .arg(now.unix_millis())
        .arg(options.rescale_after)
        .arg(options.chunk);
    // Idempotent: a step sent again copies the next batch (or the same one again),
    // overwriting with values that are right at that moment; the cursor is shared.
    let (state, copied): (i64, i64) = conn
        .script(&invocation, &board.name, Retry::Idempotent)
        .await?;
    Ok((state, copied.max(0) as u64))
}

/// One prune chunk: members removed, or -1 while a rescale runs.
async fn prune_chunk(
    conn: &RedisConn,
    board: &TrendingBoard,
    now: Timestamp,
    chunk: usize,
) -> Result<i64> {
    let mut invocation = conn.scripts().trend_prune.key(keys::record(&board.name));
    invocation
        .key(keys::trend(&board.name))
        .arg(board.version)
        .arg(now.unix_millis())
        .arg(chunk);
    // Idempotent: sent again, it removes what is below the floor at the same `now`.
    conn.script(&invocation, &board.name, Retry::Idempotent)
        .await
}

async fn maintain(
    conn: &RedisConn,
    board: &TrendingBoard,
    now: Timestamp,
    options: TrendOptions,
) -> Result<TrendMaintenance> {
    let mut done = TrendMaintenance::default();
    let mut steps = 0;
    loop {
        if steps >= options.max_steps {
            done.rescaling = true;
            return Ok(done);
        }
        steps += 1;
        let (state, copied) = rescale_step(conn, board, now, options).await?;
        done.copied += copied;
        match state {
            0 => break,
            2 => {
                done.rescaled = true;
                break;
            }
            _ => {}
        }
    }
    while steps < options.max_steps {
        steps += 1;
        let removed = prune_chunk(conn, board, now, options.chunk).await?;
        if removed < 0 {
            // Another process started a rescale meanwhile; the next pass prunes.
            break;
        }
        done.pruned += removed as u64;
        if (removed as usize) < options.chunk {
            break;
        }
    }
    Ok(done)
}

#[async_trait]
impl TrendingStore for RedisStore {
    async fn create_trending(
        &self,
        name: &BoardName,
        config: &TrendingConfig,
        now: Timestamp,
    ) -> Result<TrendCreated> {
        create(&self.conn, name, config, now).await
    }

    async fn list_trending(&self) -> Result<Vec<TrendingBoard>> {
        list(&self.conn).await
    }

    async fn trend_counts(&self, board: &TrendingBoard) -> Result<TrendCounts> {
        counts(&self.conn, board).await
    }

    async fn trend_write(
        &self,
        board: &TrendingBoard,
        now: Timestamp,
        writes: &[TrendWrite],
    ) -> Result<()> {
        write(&self.conn, board, now, writes, None)
            .await
            .map(|_| ())
    }

    async fn trend_write_keyed(
        &self,
        board: &TrendingBoard,
        now: Timestamp,
        writes: &[TrendWrite],
        key: &WriteKey,
    ) -> Result<TrendKeyed> {
        write(&self.conn, board, now, writes, Some(key)).await
    }

    async fn trend_top(
        &self,
        board: &TrendingBoard,
        now: Timestamp,
        range: TrendRange,
        offset: u64,
        limit: u64,
    ) -> Result<TrendPage> {
        top(&self.conn, board, now, range, offset, limit).await
    }

    async fn trend_standing(
        &self,
        board: &TrendingBoard,
        now: Timestamp,
        member: &Member,
    ) -> Result<Option<TrendStanding>> {
        standing(&self.conn, board, now, member).await
    }

    async fn trend_ranks(
        &self,
        board: &TrendingBoard,
        now: Timestamp,
        members: &[Member],
    ) -> Result<TrendRanks> {
        ranks(&self.conn, board, now, members).await
    }

    async fn trend_around(
        &self,
        board: &TrendingBoard,
        now: Timestamp,
        member: &Member,
        n: u64,
    ) -> Result<Option<TrendPage>> {
        around(&self.conn, board, now, member, n).await
    }

    async fn trend_maintain(
        &self,
        board: &TrendingBoard,
        now: Timestamp,
        options: TrendOptions,
    ) -> Result<TrendMaintenance> {
        maintain(&self.conn, board, now, options).await
    }
}
