//! Trending boards in Redis: the record `board_{<b>}` (kind `trending`, half-life,
//! floor, max age, landmark; its fields: [`board_record`](crate::store::redis::board::board_record)), the
//! stored values `trend_{<b>}` (a zset of negated forward-decayed sums) and, while a
//! rescale runs, its build `trend_{<b>}_next`. Every multi-key step is one script
//! (`lua/trend_*.lua`); see `docs/design.md`, "Trending boards". This module creates,
//! lists, writes and maintains (rescale, prune) them, and assembles the
//! [`TrendingStore`]; the reads are in [`trending_read`](read).

pub(crate) mod read;

use async_trait::async_trait;
use redis::Value;

use super::RedisStore;
use crate::domain::AroundQuery;
use crate::domain::PageQuery;
use crate::domain::trending::WRITE_LIMIT_HALF_LIVES;
use crate::domain::{
    BoardName, Member, Timestamp, TrendAt, TrendCounts, TrendCreated, TrendMaintenance,
    TrendOptions, TrendPage, TrendRange, TrendRanks, TrendStanding, TrendWrite, TrendingBoard,
    TrendingConfig,
};
use crate::error::{Error, Result};
use crate::store::redis::board::board_record::parse_trending;
use crate::store::redis::board::registry;
use crate::store::redis::conn::keys::Keys;
use crate::store::redis::conn::refusal::Refusal;
use crate::store::redis::conn::reply::int;
use crate::store::redis::conn::{RedisConn, Retry};
use crate::store::redis::sums::budget::Budget;
use crate::store::{TrendKeyed, TrendingStore, WriteKey, new_version};
use read::{around, counts, ranks, standing, top};

pub(super) async fn create(
    conn: &RedisConn,
    name: &BoardName,
    config: &TrendingConfig,
    now: Timestamp,
) -> Result<TrendCreated> {
    let mut invocation = conn.scripts().trend_create.key(conn.keys().record(name));
    invocation
        .arg(new_version())
        .arg(config.half_life().seconds())
        .arg(config.floor().to_string())
        .arg(config.max_age().seconds())
        .arg(now.unix_millis());
    // Idempotent: sent again, the script finds the record it made and answers it.
    let reply: Vec<Value> = match conn
        .script_or_refusal(&invocation, name, Retry::IdempotentWrite)
        .await?
    {
        Ok(reply) => reply,
        // A drop that stopped half-way (a crash) blocks the name until a drop finishes it.
        Err(Refusal::Dropping) => {
            crate::store::redis::board::boards::drop(conn, name).await?;
            conn.script(&invocation, name, Retry::IdempotentWrite)
                .await?
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

/// The board's three keys: record, stored values, rescale build.
fn board_keys(keys: &Keys, name: &BoardName) -> [String; 3] {
    [keys.record(name), keys.trend(name), keys.trend_next(name)]
}

/// Events per call of a keyed write at most, whatever the board's cap (the cap is at
/// most the batch maximum too; this keeps a record's count small).
const MAX_CALL_EVENTS: usize = 1000;

/// The name the call of a keyed write starting at event `pos` is recorded under: the key
/// itself for the first call (the name the versions that sent a batch in one call used,
/// so a retry during a rolling deploy reads their record), `<key>\x1f@<pos>` for a later
/// one. No key holds `\x1f`, so no call name is another key.
fn call_name(key: &str, pos: usize) -> String {
    if pos == 0 {
        key.to_owned()
    } else {
        format!("{key}\u{1f}@{pos}")
    }
}

/// What one `trend_write.lua` call did.
enum Call {
    /// Applied its first `applied` events in `us` µs (by the server's clock).
    Applied { applied: usize, us: u64 },
    /// Its record was there: applied before, by a call at `now`, `events` of them (`None`:
    /// a record of a batch sent whole, which covers the rest).
    Found {
        now: Timestamp,
        events: Option<usize>,
    },
    /// The key names another write.
    Reused,
}

/// Sends `writes` (all of them, or a prefix when the call stops at its budget) in one
/// call, under the record `key` names for this call.
async fn call(
    conn: &RedisConn,
    budget: &Budget,
    board: &TrendingBoard,
    now: Timestamp,
    writes: &[TrendWrite],
    key: Option<(&WriteKey, &str)>,
) -> Result<Call> {
    let [record, values, next] = board_keys(conn.keys(), &board.name);
    let mut invocation = conn.scripts().trend_write.key(record);
    invocation
        .key(values)
        .key(next)
        .arg(board.version)
        .arg(WRITE_LIMIT_HALF_LIVES);
    match key {
        Some((key, name)) => {
            let ttl_ms = key.ttl.secs_i64() * 1000;
            invocation
                .key(conn.keys().trend_idempotency(board, name))
                .arg(&key.fingerprint)
                .arg(now.unix_millis())
                .arg(now.unix_millis() + ttl_ms)
                .arg(ttl_ms);
        }
        None => {
            invocation.arg("").arg(0).arg(0).arg(0);
        }
    }
    invocation.arg(budget.limit().arg());
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
                    [1, applied, us] if *applied >= 0 && (*applied as usize) <= writes.len() => {
                        Ok(Call::Applied {
                            applied: *applied as usize,
                            us: (*us).max(0) as u64,
                        })
                    }
                    [4, first, events] => Ok(Call::Found {
                        now: Timestamp::from_unix_millis(*first)?,
                        events: usize::try_from(*events).ok(),
                    }),
                    [5] => Ok(Call::Reused),
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

/// Applies `writes` in bounded calls (see `docs/design.md`, "Trending boards"): each of
/// at most the board's cap of events, each stopping at the call budget; the next call
/// starts after what the previous one applied. Under `key`, each call is recorded under
/// its own name ([`call_name`]) with the events it applied, and a retry follows the
/// recorded calls and applies only what is missing after them.
async fn write(
    conn: &RedisConn,
    budget: &Budget,
    at: TrendAt<'_>,
    writes: &[TrendWrite],
    key: Option<&WriteKey>,
) -> Result<TrendKeyed> {
    let TrendAt { board, now } = at;
    if writes.is_empty() && key.is_none() {
        return Ok(TrendKeyed::Applied);
    }
    let mut pos = 0;
    let mut applied_any = false;
    // Even a keyed write with no events makes one call, so that it is recorded.
    loop {
        let cap = budget.cap(&board.name).min(MAX_CALL_EVENTS);
        let part = &writes[pos..(pos + cap).min(writes.len())];
        let name = key.map(|k| call_name(&k.name, pos));
        let sent = call(conn, budget, board, now, part, key.zip(name.as_deref())).await;
        match sent {
            Ok(Call::Applied { applied, us }) => {
                budget.observe(&board.name, us, applied);
                if applied == 0 && !part.is_empty() {
                    return Err(Error::store("trend_write.lua applied no event of its call"));
                }
                applied_any = true;
                pos += applied;
            }
            Ok(Call::Reused) => return Ok(TrendKeyed::Reused),
            Ok(Call::Found { now: first, events }) => {
                if first != now {
                    if pos == 0 {
                        // The caller admits the events again at the recorded now.
                        return Ok(TrendKeyed::Replayed { now: first });
                    }
                    return Err(Error::store(format!(
                        "the records of idempotency key {:?} disagree (written at {} and {} ms): retried after its time to live?",
                        key.map_or("", |k| k.name.as_str()),
                        first.unix_millis(),
                        now.unix_millis()
                    )));
                }
                let rest = writes.len() - pos;
                let count = events.unwrap_or(rest);
                if count > rest || (count == 0 && rest > 0) {
                    return Err(Error::store(format!(
                        "a record of idempotency key {:?} covers {count} events at {pos} of {}",
                        key.map_or("", |k| k.name.as_str()),
                        writes.len()
                    )));
                }
                pos += count;
            }
            Err(Error::StoreUnavailable(message)) if pos > 0 => {
                return Err(Error::StoreUnavailable(format!(
                    "{message} (not confirmed: the store failed part-way, after {pos} of the batch's {} events were applied; send it under an Idempotency-Key to retry it exactly)",
                    writes.len()
                )));
            }
            Err(e) => return Err(e),
        }
        if pos >= writes.len() {
            break;
        }
    }
    Ok(if applied_any || key.is_none() {
        TrendKeyed::Applied
    } else {
        TrendKeyed::Replayed { now }
    })
}

/// One rescale step: `(state, copied)`, state 0 = none due, 1 = under way, 2 = finished.
async fn rescale_step(
    conn: &RedisConn,
    board: &TrendingBoard,
    now: Timestamp,
    options: TrendOptions,
) -> Result<(i64, u64)> {
    let [record, values, next] = board_keys(conn.keys(), &board.name);
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
    let mut invocation = conn
        .scripts()
        .trend_prune
        .key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().trend(&board.name))
        .arg(board.version)
        .arg(now.unix_millis())
        .arg(chunk);
    // Idempotent: sent again, it removes what is below the floor at the same `now`.
    conn.script(&invocation, &board.name, Retry::Idempotent)
        .await
}

async fn maintain(
    conn: &RedisConn,
    at: TrendAt<'_>,
    options: TrendOptions,
) -> Result<TrendMaintenance> {
    let TrendAt { board, now } = at;
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
    async fn trend_counts(&self, board: &TrendingBoard) -> Result<TrendCounts> {
        counts(&self.conn, board).await
    }

    async fn trend_write(
        &self,
        at: TrendAt<'_>,
        writes: &[TrendWrite],
        key: Option<&WriteKey>,
    ) -> Result<TrendKeyed> {
        let budget = self.sums.ingest.budget();
        write(&self.conn, budget, at, writes, key).await
    }

    async fn trend_top(&self, at: TrendAt<'_>, page: PageQuery<TrendRange>) -> Result<TrendPage> {
        top(&self.conn, at, page).await
    }

    async fn trend_standing(
        &self,
        at: TrendAt<'_>,
        member: &Member,
    ) -> Result<Option<TrendStanding>> {
        standing(&self.conn, at, member).await
    }

    async fn trend_ranks(&self, at: TrendAt<'_>, members: &[Member]) -> Result<TrendRanks> {
        ranks(&self.conn, at, members).await
    }

    async fn trend_around(
        &self,
        at: TrendAt<'_>,
        query: AroundQuery<'_>,
    ) -> Result<Option<TrendPage>> {
        around(&self.conn, at, query).await
    }

    async fn trend_maintain(
        &self,
        at: TrendAt<'_>,
        options: TrendOptions,
    ) -> Result<TrendMaintenance> {
        maintain(&self.conn, at, options).await
    }
}
