//! The retirer's conversion of a max, min or latest board's closed slot into buckets
//! (`compact_max.lua`), after a complete retirement pass of a compact board (its record's
//! layout, or the store's default): a first call gives the slot a geometry; the client
//! then reads the slot's plain hash (`HSCAN … COUNT 1000`, while the hash is whole: a
//! scan of a hash being emptied is slow), orders its members by their hash with its bits
//! reversed (so a bucket's members are adjacent), and sends them in calls of at most
//! [`FIELDS_PER_CALL`], each moving what is still there. A slot the largest window froze,
//! a recompute holding the board, or a slot too small to gain is left plain
//! (docs/design.md, "Compact slots of max, min and latest boards").

use redis::Value;

use super::compact::closed_slot;
use crate::domain::board::Board;
use crate::domain::{Layout, Timestamp};
use crate::error::{Error, Result};
use crate::store::redis::board::family::Compacted;
use crate::store::redis::board::layout::member_hash;
use crate::store::redis::conn::keys;
use crate::store::redis::conn::reply::{array, int, string};
use crate::store::redis::conn::{RedisConn, Retry};

/// Fields a call moves: a SHA-1, a share of a bucket's `HMGET` and `HSET` and an `HDEL`
/// each: well under a millisecond a call.
const FIELDS_PER_CALL: usize = 128;
/// `HSCAN`'s `COUNT` when reading the plain hash.
const SCAN_COUNT: usize = 1000;
/// Rounds of reading and moving: a field a scan missed (none comes into the plain hash
/// once the slot has a geometry) is moved by the next round.
const ROUNDS: usize = 4;

/// Converts the slot of `board` that closed at the boundary of `now`, when the board is
/// compact.
pub(crate) async fn compact_closed(
    conn: &RedisConn,
    board: &Board,
    now: Timestamp,
) -> Result<Compacted> {
    let layout = board.config.layout().unwrap_or(conn.layout().default);
    let mut done = Compacted::default();
    if layout != Layout::Compact {
        return Ok(done);
    }
    let slot = closed_slot(board, now);
    let plain = conn.keys().stage(&board.name, slot, 0);
    // The first call only gives the slot its geometry (or declines).
    let Some(mut left) = step(conn, board, slot, &[], &mut done).await? else {
        return Ok(done);
    };
    for _ in 0..ROUNDS {
        if left == 0 {
            done.slots = 1;
            break;
        }
        for call in scan(conn, board, &plain).await?.chunks(FIELDS_PER_CALL) {
            match step(conn, board, slot, call, &mut done).await? {
                Some(still) => left = still,
                None => return Ok(done),
            }
        }
    }
    Ok(done)
}

/// One `compact_max.lua` call moving `fields`: the fields left in the plain hash, or
/// `None` when the slot is to stay as it is.
async fn step(
    conn: &RedisConn,
    board: &Board,
    slot: i64,
    fields: &[String],
    done: &mut Compacted,
) -> Result<Option<u64>> {
    let name = &board.name;
    let mut call = conn.scripts().compact_max.key(conn.keys().record(name));
    call.key(conn.keys().index(name))
        .key(conn.keys().slot_geometry(name))
        .key(conn.keys().stage(name, slot, 0))
        .arg(board.version)
        .arg(slot)
        .arg(board.config.largest_window().seconds())
        .arg(conn.layout().fill)
        .arg(keys::mode(board))
        .arg(fields);
    // Idempotent: sent again, a call finds its fields moved and moves nothing.
    let reply: Value = conn.script(&call, name, Retry::Idempotent).await?;
    let items = array(reply, "compact_max")?;
    match items.as_slice() {
        [state, moved, left] if string(state, "state")? == "ok" => {
            done.fields += int(moved, "moved")? as u64;
            Ok(Some(int(left, "left")? as u64))
        }
        [state, _] if string(state, "state")? == "skip" => Ok(None),
        _ => Err(Error::store(format!("compact_max answered {items:?}"))),
    }
}

/// The members of the plain hash `plain`, each once, ordered by their hash with its
/// bits reversed: a bucket's members adjacent (`bucket_of` keeps a hash's low bits).
async fn scan(conn: &RedisConn, board: &Board, plain: &str) -> Result<Vec<String>> {
    let mut fields: Vec<(u32, String)> = Vec::new();
    let mut cursor = "0".to_owned();
    loop {
        let mut scan = redis::cmd("HSCAN");
        scan.arg(plain).arg(&cursor).arg("COUNT").arg(SCAN_COUNT);
        let (next, flat): (String, Vec<String>) = conn
            .query(&scan, Some(&board.name), Retry::Idempotent)
            .await?;
        fields.extend(
            flat.into_iter()
                .step_by(2)
                .map(|member| (member_hash(&member).reverse_bits(), member)),
        );
        if next == "0" {
            break;
        }
        cursor = next;
    }
    fields.sort_unstable();
    fields.dedup();
    Ok(fields.into_iter().map(|(_, member)| member).collect())
}
