//! Trending boards in Redis: the record `board_{<b>}` (kind `trending`, half-life,
//! floor, max age, landmark; its fields: [`board_record`](super::board_record)), the
//! stored values `trend_{<b>}` (a zset of negated forward-decayed sums) and, while a
//! rescale runs, its build `trend_{<b>}_next`. Every multi-key step is one script
//! (`lua/trend_*.lua`); see `docs/design.md`, "Trending boards". This module creates,
//! lists, writes and maintains (rescale, prune) them, and assembles the
//! [`TrendingStore`]; the reads are in [`trending_read`](super::trending_read).

use async_trait::async_trait;
use redis::Value;

use super::RedisStore;
use super::board_record::{TREND_FIELDS, parse_trending};
use super::conn::{RedisConn, Retry};
use super::refusal::Refusal;
use super::reply::{int, opt_string};
use super::trending_read::{around, counts, ranks, standing, top};
use super::{keys, registry};
use crate::domain::trending::WRITE_LIMIT_HALF_LIVES;
use crate::domain::{AroundOptions, Order};
use crate::domain::{
    BoardName, Member, Timestamp, TrendCounts, TrendCreated, TrendMaintenance, TrendOptions,
    TrendPage, TrendRange, TrendRanks, TrendStanding, TrendWrite, TrendingBoard, TrendingConfig,
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
                    other => Err(Error::store(format!("trend_write.lua answered {other:?}"))),
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
    Err(Error::store(format!(
        "trending board {:?}: an event is still too far from the landmark after a rescale",
        board.name.as_str()
    )))
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
        order: Order,
        offset: u64,
        limit: u64,
    ) -> Result<TrendPage> {
        top(&self.conn, board, now, range, order, offset, limit).await
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
        options: AroundOptions,
    ) -> Result<Option<TrendPage>> {
        around(&self.conn, board, now, member, n, options).await
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
