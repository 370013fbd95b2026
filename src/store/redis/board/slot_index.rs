//! A board's slot index, `slots_{<board>}`: a zset of the start of every live slot of the
//! board, scored by that start. It is how slots are found (for retirement, a drop, a
//! relayout, a recompute, a member's removal) without a `KEYS` or `SCAN`; the scripts
//! that create and retire slots keep it.

use crate::domain::BoardName;
use crate::error::Result;
use crate::store::redis::conn::{RedisConn, Retry};

/// Every live slot of the board `name`, from its index, oldest first (a read:
/// Idempotent).
pub(crate) async fn live_slots(conn: &RedisConn, name: &BoardName) -> Result<Vec<i64>> {
    conn.query(
        redis::cmd("ZRANGE")
            .arg(conn.keys().index(name))
            .arg(0)
            .arg(-1),
        Some(name),
        Retry::Idempotent,
    )
    .await
}
