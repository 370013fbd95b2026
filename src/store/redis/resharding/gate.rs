//! A shard's part in the review gate across the shards of a sharded board on Redis
//! (docs/design.md, "A review gate on a sharded board"): its top allowed members and the
//! bars published to it (`gate_top.lua`), publishing new ones (`gate_publish.lua`), and
//! its allowed set `board_{b}:allowed`, whose marks a reshard moves with their members.

use redis::Value;

use crate::domain::board::Board;
use crate::domain::{GateBar, Member, ShardGate};
use crate::error::{Error, Result};
use crate::store::redis::conn::reply::string;
use crate::store::redis::conn::{RedisConn, Retry};

/// See [`ShardMoves::shard_gate`](crate::store::ShardMoves::shard_gate).
pub(crate) async fn shard_gate(conn: &RedisConn, board: &Board, k: u32) -> Result<ShardGate> {
    let mut invocation = conn.scripts().gate_top.key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().all_totals(&board.name, board.config.windows()))
        .arg(board.version)
        .arg(k);
    let reply: Vec<Value> = conn.read_script(&invocation, &board.name).await?;
    let n = reply.len() / 2;
    let mut gate = ShardGate::default();
    for window in &reply[..n] {
        let flat: Vec<(String, i64)> = redis::from_redis_value(window.clone())
            .map_err(|e| Error::store(format!("gate_top: {e}")))?;
        gate.allowed
            .push(flat.into_iter().map(|(m, t)| (t, m)).collect());
    }
    for bar in &reply[n..] {
        gate.published
            .push(GateBar::parse(&string(bar, "gate_top")?)?);
    }
    Ok(gate)
}

/// See [`ShardMoves::publish_bars`](crate::store::ShardMoves::publish_bars).
pub(crate) async fn publish_bars(
    conn: &RedisConn,
    board: &Board,
    bars: &[Option<GateBar>],
) -> Result<()> {
    let mut invocation = conn
        .scripts()
        .gate_publish
        .key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().all_totals(&board.name, board.config.windows()))
        .arg(board.version);
    for bar in bars {
        invocation.arg(GateBar::text(bar.as_ref()));
    }
    // Idempotent: sent again, it sets the same bars and finds the gate applied.
    let _: i64 = conn
        .script(&invocation, &board.name, Retry::IdempotentWrite)
        .await?;
    Ok(())
}

/// See [`ShardMoves::allowed`](crate::store::ShardMoves::allowed).
pub(crate) async fn allowed(conn: &RedisConn, board: &Board) -> Result<Vec<Member>> {
    let mut cmd = redis::cmd("SMEMBERS");
    cmd.arg(allowed_key(conn, board));
    let members: Vec<String> = conn
        .query(&cmd, Some(&board.name), Retry::Idempotent)
        .await?;
    members.iter().map(|m| Member::parse(m)).collect()
}

/// See [`ShardMoves::set_allowed`](crate::store::ShardMoves::set_allowed).
pub(crate) async fn set_allowed(
    conn: &RedisConn,
    board: &Board,
    members: &[Member],
    allowed: bool,
) -> Result<()> {
    if members.is_empty() {
        return Ok(());
    }
    let mut cmd = redis::cmd(if allowed { "SADD" } else { "SREM" });
    cmd.arg(allowed_key(conn, board));
    for member in members {
        cmd.arg(member.as_str());
    }
    // Idempotent: a set's add or removal, twice, leaves what once did.
    let _: i64 = conn
        .query(&cmd, Some(&board.name), Retry::IdempotentWrite)
        .await?;
    Ok(())
}

/// `board_{b}:allowed`.
fn allowed_key(conn: &RedisConn, board: &Board) -> String {
    format!("{}:allowed", conn.keys().record(&board.name))
}
