//! A reshard's records on Redis (see [`ShardMoves`](crate::store::ShardMoves)): the shard
//! count and the reshard's state on shard 0's record (`reshard_set.lua`); per shard the
//! set `moved_{<board>}` of members marked moved off it (`moved_mark.lua`) and the hash
//! `moving_{<board>}` of moves under way (`moved_stash.lua`), both dropped when the
//! reshard ends (`moved_clear.lua`); the tokens of a move's writes, dropped from the
//! board's journal once the move is done; and the members of a board's live slots,
//! read stage by stage (a compact slot's by bucket).

mod gate;

use std::collections::{HashMap, HashSet};

pub(crate) use gate::{allowed, gate_epoch, gate_top, publish_bars, set_allowed};

use crate::domain::Member;
use crate::domain::board::{Board, Resharding};
use crate::error::Result;
use crate::store::redis::board::boards::slot_geometries;
use crate::store::redis::conn::keys;
use crate::store::redis::conn::{RedisConn, Retry};

pub(crate) async fn set_shards(
    conn: &RedisConn,
    board: &Board,
    shards: u32,
    resharding: Option<Resharding>,
) -> Result<Board> {
    let next = board.resharded(shards, resharding)?;
    let version = crate::store::new_version();
    let mut invocation = conn
        .scripts()
        .reshard_set
        .key(conn.keys().record(&board.name));
    invocation
        .arg(board.version)
        .arg(version)
        .arg(shards)
        .arg(resharding.map(Resharding::stored).unwrap_or_default());
    // Never re-sent: a second call would find the new version and answer STALE.
    let _: i64 = conn.script(&invocation, &board.name, Retry::Never).await?;
    Ok(Board { version, ..next })
}

pub(crate) async fn mark(conn: &RedisConn, board: &Board, members: &[Member]) -> Result<()> {
    let mut invocation = conn
        .scripts()
        .moved_mark
        .key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().moved(&board.name))
        .arg(board.version);
    for member in members {
        invocation.arg(member.as_str());
    }
    let _: i64 = conn
        .script(&invocation, &board.name, Retry::IdempotentWrite)
        .await?;
    Ok(())
}

pub(crate) async fn moved(
    conn: &RedisConn,
    board: &Board,
    members: &[Member],
) -> Result<Vec<bool>> {
    if members.is_empty() {
        return Ok(Vec::new());
    }
    let mut cmd = redis::cmd("SMISMEMBER");
    cmd.arg(conn.keys().moved(&board.name));
    for member in members {
        cmd.arg(member.as_str());
    }
    let found: Vec<i64> = conn
        .query(&cmd, Some(&board.name), Retry::Idempotent)
        .await?;
    Ok(found.into_iter().map(|f| f == 1).collect())
}

pub(crate) async fn clear(conn: &RedisConn, board: &Board) -> Result<()> {
    let mut invocation = conn
        .scripts()
        .moved_clear
        .key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().moved(&board.name))
        .key(conn.keys().moving(&board.name))
        .arg(board.version);
    let _: i64 = conn
        .script(&invocation, &board.name, Retry::IdempotentWrite)
        .await?;
    Ok(())
}

pub(crate) async fn stash(
    conn: &RedisConn,
    board: &Board,
    member: &Member,
    stash: &str,
) -> Result<String> {
    let mut invocation = conn
        .scripts()
        .moved_stash
        .key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().moving(&board.name))
        .arg(board.version)
        .arg(member.as_str())
        .arg(stash);
    conn.script(&invocation, &board.name, Retry::IdempotentWrite)
        .await
}

pub(crate) async fn stashed(conn: &RedisConn, board: &Board) -> Result<Vec<(Member, String)>> {
    let stashed: Vec<(String, String)> = conn
        .query(
            redis::cmd("HGETALL").arg(conn.keys().moving(&board.name)),
            Some(&board.name),
            Retry::Idempotent,
        )
        .await?;
    // The field "" (no member) holds the lease.
    stashed
        .into_iter()
        .filter(|(m, _)| !m.is_empty())
        .map(|(m, s)| Ok((Member::parse(&m)?, s)))
        .collect()
}

pub(crate) async fn unstash(conn: &RedisConn, board: &Board, member: &Member) -> Result<()> {
    let _: i64 = conn
        .query(
            redis::cmd("HDEL")
                .arg(conn.keys().moving(&board.name))
                .arg(member.as_str()),
            Some(&board.name),
            Retry::IdempotentWrite,
        )
        .await?;
    Ok(())
}

pub(crate) async fn forget_tokens(
    conn: &RedisConn,
    board: &Board,
    tokens: &[String],
) -> Result<()> {
    if tokens.is_empty() {
        return Ok(());
    }
    let _: i64 = conn
        .query(
            redis::cmd("HDEL")
                .arg(conn.keys().journal(&board.name))
                .arg(tokens),
            Some(&board.name),
            Retry::IdempotentWrite,
        )
        .await?;
    Ok(())
}

pub(crate) async fn lease(
    conn: &RedisConn,
    board: &Board,
    holder: &str,
    now_ms: i64,
    until_ms: i64,
) -> Result<bool> {
    let mut invocation = conn
        .scripts()
        .moved_lease
        .key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().moving(&board.name))
        .arg(board.version)
        .arg(holder)
        .arg(now_ms)
        .arg(until_ms);
    let taken: i64 = conn
        .script(&invocation, &board.name, Retry::IdempotentWrite)
        .await?;
    Ok(taken == 1)
}

/// Every member of a live slot of the board: each stage of each slot scanned (`HSCAN`;
/// a compact slot's buckets read whole, `HKEYS`: a bucket is small). Reads only, so a
/// slot retired meanwhile is just found empty.
pub(crate) async fn slot_members(conn: &RedisConn, board: &Board) -> Result<Vec<Member>> {
    let name = &board.name;
    let slots = crate::store::redis::board::slot_index::live_slots(conn, name).await?;
    let buckets: HashMap<i64, u64> = slot_geometries(conn, name).await?.into_iter().collect();
    let mut members: HashSet<String> = HashSet::new();
    for slot in slots {
        // A slot being relaid out holds values in both forms: read both.
        let buckets = buckets.get(&slot).copied().unwrap_or(0);
        for stage in conn.keys().stages(board, slot) {
            let found = |field, _| {
                members.insert(field);
            };
            conn.scan_fields(name, &stage, "*", found).await?;
            for i in 0..buckets {
                let fields: Vec<String> = conn
                    .query(
                        redis::cmd("HKEYS").arg(keys::bucket(&stage, i)),
                        Some(name),
                        Retry::Idempotent,
                    )
                    .await?;
                members.extend(fields);
            }
        }
    }
    members
        .into_iter()
        .map(|m| Member::parse(&m))
        .collect::<Result<_>>()
}
