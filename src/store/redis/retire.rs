//! Retirement in Redis: for each window, smallest first, freeze it up to its cutoff
//! (`retire_begin.lua`) and subtract every slot that left it, one bounded chunk per
//! `retire_chunk.lua` call. Every call is idempotent, so a pass can stop anywhere (crash,
//! `max_chunks`) and any later pass, from this process or another, finishes the job.

use redis::Value;

use super::RedisStore;
use super::keys;
use super::reply::{array, int, string};
use crate::board::Board;
use crate::domain::Timestamp;
use crate::error::{Error, Result};
use crate::retire::{RetireOptions, RetireReport};

/// Slots listed per `retire_begin.lua` call.
const SLOTS_PER_LISTING: usize = 256;

pub(super) async fn retire(
    store: &RedisStore,
    board: &Board,
    now: Timestamp,
    options: RetireOptions,
) -> Result<RetireReport> {
    let windows = board.config.windows();
    let mut report = RetireReport::default();
    let mut budget = options.max_chunks;
    for j in 0..windows.len() {
        let cutoff = board.config.cutoff(j, now);
        loop {
            let slots = begin(store, board, j, cutoff).await?;
            if slots.is_empty() {
                break;
            }
            for slot in slots {
                let mut cursor = "0".to_owned();
                loop {
                    if budget == Some(0) {
                        return Ok(report);
                    }
                    budget = budget.map(|b| b - 1);
                    let chunk = chunk(store, board, j, slot, &cursor, options.chunk_size).await?;
                    report.chunks += 1;
                    report.fields_subtracted += chunk.subtracted;
                    report.members_zeroed += chunk.zeroed;
                    match chunk.cursor {
                        None => {
                            report.slots_retired += 1;
                            break;
                        }
                        Some(next) => cursor = next,
                    }
                }
            }
        }
    }
    report.complete = true;
    Ok(report)
}

/// The window name fields the scripts need: this window and the next smaller one.
fn window_args(board: &Board, window: usize) -> (u64, String) {
    let windows = board.config.windows();
    let previous = match window {
        0 => String::new(),
        j => windows[j - 1].seconds().to_string(),
    };
    (windows[window].seconds(), previous)
}

/// Freezes `window` up to `cutoff` and lists slots it still has to subtract.
async fn begin(store: &RedisStore, board: &Board, window: usize, cutoff: i64) -> Result<Vec<i64>> {
    let (this, previous) = window_args(board, window);
    let mut invocation = store.scripts.retire_begin.key(keys::record(&board.name));
    invocation
        .key(keys::index(&board.name))
        .arg(board.version)
        .arg(this)
        .arg(previous)
        .arg(cutoff)
        .arg(SLOTS_PER_LISTING);
    let reply: Value = store.invoke(&invocation, &board.name, true).await?;
    let items = array(reply, "retire_begin")?;
    items.iter().skip(1).map(|v| int(v, "slot")).collect()
}

struct Chunk {
    /// `None` when the slot is finished for this window.
    cursor: Option<String>,
    subtracted: u64,
    zeroed: u64,
}

async fn chunk(
    store: &RedisStore,
    board: &Board,
    window: usize,
    slot: i64,
    cursor: &str,
    count: usize,
) -> Result<Chunk> {
    let (this, previous) = window_args(board, window);
    let last = window + 1 == board.config.windows().len();
    let mut invocation = store.scripts.retire_chunk.key(keys::record(&board.name));
    invocation
        .key(keys::index(&board.name))
        .key(keys::totals(&board.name, board.config.windows(), window))
        .key(keys::stage(&board.name, slot, window));
    if !last {
        invocation.key(keys::stage(&board.name, slot, window + 1));
    }
    invocation
        .arg(board.version)
        .arg(this)
        .arg(previous)
        .arg(slot)
        .arg(cursor)
        .arg(count);
    let reply: Value = store.invoke(&invocation, &board.name, true).await?;
    let items = array(reply, "retire_chunk")?;
    let [cursor, subtracted, zeroed] = items.as_slice() else {
        return Err(Error::Store(format!("retire_chunk answered {items:?}")));
    };
    let cursor = string(cursor, "cursor")?;
    Ok(Chunk {
        cursor: (cursor != "done").then_some(cursor),
        subtracted: int(subtracted, "subtracted")? as u64,
        zeroed: int(zeroed, "zeroed")? as u64,
    })
}
