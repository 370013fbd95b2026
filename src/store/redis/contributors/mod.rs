//! Contributors in Redis (a sum board with `per_contributor_member`; keys and their
//! meaning in `lua/contributors.lua`): writes go through `write.lua` in mode `events`,
//! each event with its contributor; here are the rest. A slot's contributions leave a
//! window before its member values ([`retire`]), a removed member's go before its
//! values ([`remove`]), and a contributor's sums are read back as they are kept
//! ([`contributions`]).

pub(crate) mod remove;
pub(crate) mod retire;

use std::collections::HashMap;

use crate::domain::board::Board;
use crate::domain::{Contributor, WindowContributions};
use crate::error::{Error, Result};
use crate::store::redis::conn::{RedisConn, Retry};

/// What `by` gave inside each window of `board` (as retired so far): one
/// `HGETALL` of its sums, `board_{b}:ctr:<by>` (fields `<W>\n<member>`).
pub(crate) async fn contributions(
    conn: &RedisConn,
    board: &Board,
    by: &Contributor,
) -> Result<Vec<WindowContributions>> {
    let windows = board.config.windows();
    if !board.config.keeps_contributors() {
        return Ok(Vec::new());
    }
    let key = conn.keys().contributor(&board.name, by.as_str());
    let mut cmd = redis::cmd("HGETALL");
    cmd.arg(&key);
    let sums: HashMap<String, i64> = conn
        .query(&cmd, Some(&board.name), Retry::Idempotent)
        .await?;
    let mut per_window: Vec<Vec<(String, i64)>> = vec![Vec::new(); windows.len()];
    for (field, sum) in sums {
        let (window, member) = field
            .split_once('\n')
            .ok_or_else(|| Error::store(format!("{key} has a bad field {field:?}")))?;
        let j = window
            .parse::<u64>()
            .ok()
            .and_then(|w| windows.iter().position(|s| s.seconds() == w))
            .ok_or_else(|| {
                Error::store(format!("{key} names no window of the board: {field:?}"))
            })?;
        per_window[j].push((member.to_owned(), sum));
    }
    let cap = board.config.per_contributor_member();
    Ok(windows
        .iter()
        .zip(per_window)
        .map(|(w, members)| WindowContributions::of(*w, cap, members))
        .collect())
}
