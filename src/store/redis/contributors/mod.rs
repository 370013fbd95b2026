//! Contributors in Redis (a sum board with `per_contributor_member` or
//! `per_contributor`; keys and their meaning in `lua/contributors.lua`): writes go
//! through `write.lua` in mode `events`, each event with its contributor; here are the
//! rest. A slot's contributions leave a window before its member values ([`retire`]), a
//! removed member's go before its values ([`remove`]), a contributor's are taken back
//! ([`retract`]) or quarantined ([`quarantine`]), its sums read back as they are kept ([`contributions`]), and a
//! member's contributors found ([`members`]).

pub(crate) mod members;
pub(crate) mod quarantine;
pub(crate) mod remove;
pub(crate) mod retire;
pub(crate) mod retract;
mod walk;

use std::collections::HashMap;

use crate::domain::board::Board;
use crate::domain::{Contributor, Given, WindowContributions};
use crate::error::{Error, Result};
use crate::store::redis::conn::{RedisConn, Retry};

/// What `by` gave inside each window of `board` (as retired so far): one `HGETALL` of
/// its sums, `board_{b}:ctr:<by>` (fields `<W>\n<member>`: admitted, `\n<W>\n<member>`:
/// refused, `!<W>\n<member>`: admitted while quarantined, `u`: the budget used, `@...`:
/// its index, `q`: its quarantine).
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
    let sums: HashMap<String, String> = conn
        .query(&cmd, Some(&board.name), Retry::Idempotent)
        .await?;
    let mut per_window: Vec<HashMap<String, Given>> = vec![HashMap::new(); windows.len()];
    for (field, sum) in sums {
        // The budget used, the quarantine flag and the index retraction walks.
        if field == "u" || field == "q" || field.starts_with('@') {
            continue;
        }
        let sum: i64 = sum
            .parse()
            .map_err(|_| Error::store(format!("{key} holds {sum:?} in {field:?}")))?;
        let (kind, rest) = match field.strip_prefix(['\n', '!']) {
            Some(rest) => (field.as_bytes()[0], rest),
            None => (0, field.as_str()),
        };
        let (window, member) = rest
            .split_once('\n')
            .ok_or_else(|| Error::store(format!("{key} has a bad field {field:?}")))?;
        let j = window
            .parse::<u64>()
            .ok()
            .and_then(|w| windows.iter().position(|s| s.seconds() == w))
            .ok_or_else(|| {
                Error::store(format!("{key} names no window of the board: {field:?}"))
            })?;
        let given = per_window[j].entry(member.to_owned()).or_default();
        match kind {
            b'\n' => given.refused = sum,
            b'!' => given.held = sum,
            _ => given.admitted = sum,
        }
    }
    let cap = board.config.per_contributor_member();
    Ok(windows
        .iter()
        .zip(per_window)
        .map(|(w, members)| WindowContributions::of(*w, cap, members.into_iter().collect()))
        .collect())
}
