//! The retirer's conversion of a max, min or latest board's closed slot into buckets
//! (`compact_max.lua`), after a complete retirement pass of a compact board (its record's
//! layout, or the store's default): the slot gets a geometry, then steps of at most
//! [`FIELDS_PER_STEP`] fields move its plain hash into its buckets. A slot the largest
//! window froze, a recompute holding the board, or a slot too small to gain is left
//! plain (docs/design.md, "Compact slots of max, min and latest boards").

use redis::Value;

use super::compact::{Compacted, closed_slot};
use crate::board::Board;
use crate::domain::{Layout, Timestamp};
use crate::error::{Error, Result};
use crate::store::redis::conn::{RedisConn, Retry};
use crate::store::redis::keys;
use crate::store::redis::reply::{array, int, string};

/// Fields a step moves: a SHA-1, a share of a bucket's `HMGET` and `HSET` and an `HDEL`
/// each, well under a millisecond a step.
const FIELDS_PER_STEP: usize = 128;
/// Steps at most per conversion (a slot of 2,000,000 fields at the step's size, and
/// rounds again for fields an `HSCAN` left behind).
const MOST_STEPS: usize = 20_000;

/// Converts the slot of `board` that closed at the boundary of `now`, when the board is
/// compact.
pub(super) async fn compact_closed(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
) -> Result<Compacted> {
    let layout = board.config.layout().unwrap_or(conn.layout().default);
    let mut done = Compacted::default();
    if layout != Layout::Compact {
        return Ok(done);
    }
    let name = &board.name;
    let slot = closed_slot(board, now);
    let mut cursor = "0".to_owned();
    for _ in 0..MOST_STEPS {
        let mut step = conn.scripts().compact_max.key(keys::record(name));
        step.key(keys::index(name))
            .key(keys::slot_geometry(name))
            .key(keys::stage(name, slot, 0))
            .arg(board.version)
            .arg(slot)
            .arg(board.config.largest_window().seconds())
            .arg(conn.layout().fill)
            .arg(FIELDS_PER_STEP)
            .arg(&cursor)
            .arg(keys::mode(board));
        // Idempotent: sent again, a step finds its fields moved and moves what is left.
        let reply: Value = conn.script(&step, name, Retry::Idempotent).await?;
        let items = array(reply, "compact_max")?;
        let (state, moved) = match items.as_slice() {
            [state, moved, ..] => (string(state, "state")?, int(moved, "moved")? as u64),
            _ => return Err(Error::store(format!("compact_max answered {items:?}"))),
        };
        done.fields += moved;
        match (state.as_str(), items.get(2)) {
            ("more", Some(next)) => cursor = string(next, "cursor")?,
            ("done", _) => {
                done.slots = 1;
                return Ok(done);
            }
            _ => return Ok(done),
        }
    }
    Ok(done)
}
