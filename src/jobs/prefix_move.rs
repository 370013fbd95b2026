//! Moving a deployment's keys under the key prefix (`rollboard migrate
//! --move-from-prefix OLD`): an unprefixed deployment under `app1:`, say. Each key of
//! rollboard's under `OLD` (boards, their records and slots, counters, stats, rates,
//! idempotency records, the applied migrations) is renamed to the same name under the
//! configured prefix, its hash tag unchanged; a key of anyone else is never touched.
//! Nothing moves while any of the new names is taken. Run it with every rollboard of the
//! deployment stopped: a write during the move goes to the old names. A move cut short
//! is finished by running it again. On a single Redis only (it scans the keys).

use crate::store::{RedisConn, Retry, is_rollboard_name};
use crate::{Error, KeyPrefix};

use super::scan::scan_suffixes;

/// Keys renamed, or checked, per round trip.
const BATCH: usize = 1000;

/// Why the keys were not moved.
#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    /// The old prefix is the configured one.
    #[error("the keys are already under the key prefix {0:?}: give the old prefix")]
    SamePrefix(String),
    /// Names under the configured prefix are taken (a service already ran under it).
    #[error(
        "{count} of the new names are taken, such as {first:?}: a rollboard already wrote \
         under the key prefix; drop what it wrote there (or pick another prefix) and run \
         the move again. Nothing was moved"
    )]
    Taken {
        /// How many.
        count: usize,
        /// The first.
        first: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] Error),
}

/// Moves rollboard's keys from under `from` to under `conn`'s prefix; how many moved.
pub(crate) async fn move_keys(conn: &RedisConn, from: &KeyPrefix) -> Result<u64, MoveError> {
    let to = conn.keys().prefixed("");
    if from.as_str() == to {
        return Err(MoveError::SamePrefix(to));
    }
    let names = scan_suffixes(conn, from.as_str(), is_rollboard_name).await?;
    let mut taken = Vec::new();
    for batch in names.chunks(BATCH) {
        let mut exists = redis::pipe();
        for name in batch {
            exists.cmd("EXISTS").arg(format!("{to}{name}"));
        }
        let found: Vec<u64> = conn.query_pipe(&exists, None, Retry::Idempotent).await?;
        taken.extend(
            batch
                .iter()
                .zip(found)
                .filter(|(_, n)| *n > 0)
                .map(|(k, _)| k),
        );
    }
    if let Some(first) = taken.first() {
        return Err(MoveError::Taken {
            count: taken.len(),
            first: format!("{to}{first}"),
        });
    }
    let script = redis::Script::new(include_str!("lua/prefix_move.lua"));
    let mut moved = 0;
    for batch in names.chunks(BATCH) {
        let mut call = script.prepare_invoke();
        for name in batch {
            call.key(format!("{}{name}", from.as_str()))
                .key(format!("{to}{name}"));
        }
        // Idempotent: an old name already moved is gone, and skipped.
        let (done, taken): (u64, usize) = conn.invoke(&call, Retry::Idempotent).await?;
        moved += done;
        if taken > 0 {
            return Err(MoveError::Taken {
                count: 1,
                first: format!("{to}{}", batch[taken - 1]),
            });
        }
    }
    Ok(moved)
}
