//! A reshard's records on Redis (see [`ShardMoves`](crate::store::ShardMoves)): the shard
//! count on shard 0's record (`reshard_set.lua`), the set `moved_{<board>}` of members
//! moved off a shard, which `write.lua`, `write_plain.lua` and `data_set.lua` check while
//! the record has `moved` (`moved_mark.lua`, `moved_clear.lua`), and the members of a
//! board's live slots, read stage by stage (a compact slot's by bucket).

use std::collections::HashSet;

use super::conn::{RedisConn, Retry};
use super::geometry::bucket_count;
use super::keys;
use crate::board::Board;
use crate::domain::Member;
use crate::error::{Error, Result};

/// Fields an `HSCAN` of a plain stage asks for at once.
const SCAN_COUNT: usize = 1_000;

pub(super) async fn set_shards(
    conn: &RedisConn,
    board: &Board,
    shards: u32,
    resharding: Option<u32>,
) -> Result<Board> {
    let version = crate::store::new_version();
    let mut invocation = conn.scripts().reshard_set.key(keys::record(&board.name));
    invocation
        .arg(board.version)
        .arg(version)
        .arg(shards)
        .arg(resharding.map(|r| r.to_string()).unwrap_or_default());
    // Never re-sent: a second call would find the new version and answer STALE.
    let _: i64 = conn.script(&invocation, &board.name, Retry::Never).await?;
    let config = board
        .config
        .clone()
        .with_shards(shards)
        .map_err(|e| Error::store(e.to_string()))?;
    Ok(Board {
        config,
        version,
        resharding,
        ..board.clone()
    })
}

pub(super) async fn mark(conn: &RedisConn, board: &Board, members: &[Member]) -> Result<()> {
    let mut invocation = conn.scripts().moved_mark.key(keys::record(&board.name));
    invocation.key(keys::moved(&board.name)).arg(board.version);
    for member in members {
        invocation.arg(member.as_str());
    }
    let _: i64 = conn
        .script(&invocation, &board.name, Retry::IdempotentWrite)
        .await?;
    Ok(())
}

pub(super) async fn moved(conn: &RedisConn, board: &Board, members: &[Member]) -> Result<Vec<bool>> {
    if members.is_empty() {
        return Ok(Vec::new());
    }
    let mut cmd = redis::cmd("SMISMEMBER");
    cmd.arg(keys::moved(&board.name));
    for member in members {
        cmd.arg(member.as_str());
    }
    let found: Vec<i64> = conn
        .query(&cmd, Some(&board.name), Retry::Idempotent)
        .await?;
    Ok(found.into_iter().map(|f| f == 1).collect())
}

pub(super) async fn clear(conn: &RedisConn, board: &Board) -> Result<()> {
    let mut invocation = conn.scripts().moved_clear.key(keys::record(&board.name));
    invocation.key(keys::moved(&board.name)).arg(board.version);
    let _: i64 = conn
        .script(&invocation, &board.name, Retry::IdempotentWrite)
        .await?;
    Ok(())
}

/// Every member of a live slot of the board: each stage of each slot scanned (`HSCAN`;
/// a compact slot's buckets read whole, `HKEYS`: a bucket is small). Reads only, so a
/// slot retired meanwhile is just found empty.
pub(super) async fn slot_members(conn: &RedisConn, board: &Board) -> Result<Vec<Member>> {
    let name = &board.name;
    let slots = super::slot_index::live_slots(conn, name).await?;
    let mut members: HashSet<String> = HashSet::new();
    for slot in slots {
        let geometry: Option<String> = conn
            .query(
                redis::cmd("HGET").arg(keys::slot_geometry(name)).arg(slot),
                Some(name),
                Retry::Idempotent,
            )
            .await?;
        // A slot being relaid out holds values in both forms: read both.
        let buckets = geometry.as_deref().and_then(bucket_count).unwrap_or(0);
        for stage in keys::stages(board, slot) {
            scan(conn, board, &stage, &mut members).await?;
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

/// The fields of the hash `key`, added to `members`.
async fn scan(
    conn: &RedisConn,
    board: &Board,
    key: &str,
    members: &mut HashSet<String>,
) -> Result<()> {
    let mut cursor = 0u64;
    loop {
        let (next, flat): (u64, Vec<String>) = conn
            .query(
                redis::cmd("HSCAN")
                    .arg(key)
                    .arg(cursor)
                    .arg("COUNT")
                    .arg(SCAN_COUNT),
                Some(&board.name),
                Retry::Idempotent,
            )
            .await?;
        members.extend(flat.into_iter().step_by(2));
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}
