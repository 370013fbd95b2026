//! A shard's part in the review gate across the shards of a sharded board on Redis
//! (docs/design.md, "A review gate on a sharded board"): the numbers of publications on
//! shard 0 (`gate_epoch.lua`), each shard's top allowed members (`gate_top.lua`),
//! publishing the bars across the shards (`gate_publish.lua`), and
//! its allowed set `board_{b}:allowed`, whose marks a reshard moves with their members.

use crate::domain::board::Board;
use crate::domain::{GateBar, Member};
use crate::error::Result;
use crate::store::redis::conn::{RedisConn, Retry};

/// See [`ShardMoves::gate_epoch`](crate::store::ShardMoves::gate_epoch).
pub(crate) async fn gate_epoch(conn: &RedisConn, board: &Board) -> Result<u64> {
    let mut invocation = conn
        .scripts()
        .gate_epoch
        .key(conn.keys().record(&board.name));
    invocation.arg(board.version);
    // A retry may skip a number: numbers only need to grow.
    conn.script(&invocation, &board.name, Retry::IdempotentWrite)
        .await
}

/// See [`ShardMoves::gate_top`](crate::store::ShardMoves::gate_top).
pub(crate) async fn gate_top(
    conn: &RedisConn,
    board: &Board,
    k: u32,
) -> Result<Vec<Vec<(i64, String)>>> {
    let mut invocation = conn.scripts().gate_top.key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().all_totals(&board.name, board.config.windows()))
        .arg(board.version)
        .arg(k);
    let windows: Vec<Vec<(String, i64)>> = conn.read_script(&invocation, &board.name).await?;
    let swapped = windows
        .into_iter()
        .map(|w| w.into_iter().map(|(m, t)| (t, m)).collect());
    Ok(swapped.collect())
}

/// See [`ShardMoves::publish_bars`](crate::store::ShardMoves::publish_bars).
pub(crate) async fn publish_bars(
    conn: &RedisConn,
    board: &Board,
    epoch: u64,
    bars: &[Option<GateBar>],
) -> Result<()> {
    let mut invocation = conn
        .scripts()
        .gate_publish
        .key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().all_totals(&board.name, board.config.windows()))
        .arg(board.version)
        .arg(epoch);
    for bar in bars {
        invocation.arg(GateBar::text(bar.as_ref()));
    }
    // Idempotent: sent again, it finds its number taken and the gate applied.
    let _: i64 = conn
        .script(&invocation, &board.name, Retry::IdempotentWrite)
        .await?;
    Ok(())
}

/// See [`ShardMoves::allowed`](crate::store::ShardMoves::allowed).
pub(crate) async fn allowed(conn: &RedisConn, board: &Board) -> Result<Vec<Member>> {
    let key = allowed_key(conn, board);
    let members = conn.set_members(&key, Some(&board.name)).await?;
    members.iter().map(|m| Member::parse(m)).collect()
}

/// See [`ShardMoves::set_allowed`](crate::store::ShardMoves::set_allowed).
pub(crate) async fn set_allowed(
    conn: &RedisConn,
    board: &Board,
    members: &[Member],
    allowed: bool,
) -> Result<()> {
    let items: Vec<&str> = members.iter().map(Member::as_str).collect();
    let key = allowed_key(conn, board);
    conn.set_change(&key, Some(&board.name), &items, allowed)
        .await?;
    Ok(())
}

/// `board_{b}:allowed`.
fn allowed_key(conn: &RedisConn, board: &Board) -> String {
    format!("{}:allowed", conn.keys().record(&board.name))
}
