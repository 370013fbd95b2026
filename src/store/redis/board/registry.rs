//! The registry of boards, `rollboard:boards` ([`conn.keys().registry()`]): a set of the names of every
//! board of either kind, which is how boards are listed without a `KEYS` or `SCAN`.
//!
//! The registry is a global key, in another hash slot than any board's on Redis
//! Cluster, so it is changed by its own commands, never inside a board's script. Every
//! call here is [`Retry::Idempotent`]: adding or removing a name twice is adding or
//! removing it once, and listing is a read.

use crate::domain::BoardName;
use crate::error::Result;
use crate::store::redis::conn::{RedisConn, Retry};

/// Adds `name` to the registry of boards.
pub(crate) async fn register(conn: &RedisConn, name: &BoardName) -> Result<()> {
    conn.query::<i64>(
        redis::cmd("SADD")
            .arg(conn.keys().registry())
            .arg(name.as_str()),
        Some(name),
        Retry::Idempotent,
    )
    .await
    .map(|_| ())
}

/// Removes `name` from the registry of boards.
pub(crate) async fn unregister(conn: &RedisConn, name: &BoardName) -> Result<()> {
    conn.query::<i64>(
        redis::cmd("SREM")
            .arg(conn.keys().registry())
            .arg(name.as_str()),
        Some(name),
        Retry::Idempotent,
    )
    .await
    .map(|_| ())
}

/// The names in the registry of boards (of either kind), sorted (`SMEMBERS`, a read:
/// Idempotent).
pub(crate) async fn registered_names(conn: &RedisConn) -> Result<Vec<BoardName>> {
    let names: Vec<String> = conn
        .query(
            redis::cmd("SMEMBERS").arg(conn.keys().registry()),
            None,
            Retry::Idempotent,
        )
        .await?;
    let mut names: Vec<BoardName> = names
        .iter()
        .filter_map(|n| BoardName::parse_stored(n).ok())
        .collect();
    names.sort();
    Ok(names)
}
