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

/// Whether `board`'s window 1 keeps no counted sums: one slot long, a pair's sum there is
/// what its parts in the stage-1 contributions of the slots add up to
/// (`contrib_derived` in `lua/contributors.lua`).
pub(crate) fn first_window_derived(board: &Board) -> bool {
    board.config.windows()[0] == board.config.slot()
}

/// What `by` gave inside each window of `board` (as retired so far): one `HGETALL` of
/// its sums, `board_{b}:ctr:<by>` (fields `<W>\n<member>`: admitted, `!<W>\n<member>`:
/// admitted while quarantined, `u`: the budget used, `@<slot>\n<member>`: its index, `q`:
/// its quarantine), then, in one pipeline, the stage parts the index names: the refused
/// ones (kept in the stages only) and, where window 1 keeps no sums
/// ([`first_window_derived`]), its admitted ones.
pub(crate) async fn contributions(
    conn: &RedisConn,
    board: &Board,
    by: &Contributor,
) -> Result<Vec<WindowContributions>> {
    let windows = board.config.windows();
    if !board.config.keeps_contributors() {
        return Ok(Vec::new());
    }
    let derived = first_window_derived(board);
    let key = conn.keys().contributor(&board.name, by.as_str());
    let mut cmd = redis::cmd("HGETALL");
    cmd.arg(&key);
    let sums: HashMap<String, String> = conn
        .query(&cmd, Some(&board.name), Retry::Idempotent)
        .await?;
    let mut per_window: Vec<HashMap<String, Given>> = vec![HashMap::new(); windows.len()];
    let mut indexed = Vec::new();
    for (field, sum) in sums {
        if let Some(index) = field.strip_prefix('@') {
            indexed.extend(
                index.split_once('\n').and_then(|(slot, member)| {
                    Some((slot.parse::<i64>().ok()?, member.to_owned()))
                }),
            );
            continue;
        }
        // The budget used and the quarantine flag; a refused sum, which a release
        // before 2026-12-07 kept here, is read from the stages.
        if field == "u" || field == "q" || field.starts_with('\n') {
            continue;
        }
        let sum: i64 = sum
            .parse()
            .map_err(|_| Error::store(format!("{key} holds {sum:?} in {field:?}")))?;
        let (held, rest) = match field.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, field.as_str()),
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
        match held {
            true => given.held = sum,
            // Window 1's, where it keeps none, is an earlier release's: read below.
            false if j == 0 && derived => {}
            false => given.admitted = sum,
        }
    }
    if (derived || board.config.per_contributor().is_some()) && !indexed.is_empty() {
        stage_parts(conn, board, by, &indexed, &mut per_window).await?;
    }
    let cap = board.config.per_contributor_member();
    Ok(windows
        .iter()
        .zip(per_window)
        .map(|(w, members)| WindowContributions::of(*w, cap, members.into_iter().collect()))
        .collect())
}

/// Adds to `per_window` what the stages of the slots `indexed` names hold of `by`'s pairs
/// (slot, member): each refused part to the windows that count its stage, and where
/// window 1 keeps no sums, the admitted part of stage 1 to it (unless held).
async fn stage_parts(
    conn: &RedisConn,
    board: &Board,
    by: &Contributor,
    indexed: &[(i64, String)],
    per_window: &mut [HashMap<String, Given>],
) -> Result<()> {
    let derived = first_window_derived(board);
    let mut pipe = redis::pipe();
    for (slot, member) in indexed {
        let pair = format!("{by}\n{member}");
        for stage in conn.keys().stages(board, *slot) {
            pipe.cmd("HMGET")
                .arg(format!("{stage}:c"))
                .arg(format!("\n{pair}"))
                .arg(&pair);
        }
    }
    let parts: Vec<[Option<i64>; 2]> = conn
        .query_pipe(&pipe, Some(&board.name), Retry::Idempotent)
        .await?;
    let n = per_window.len();
    for ((_, member), stages) in indexed.iter().zip(parts.chunks(n)) {
        for (k, [refused, admitted]) in stages.iter().enumerate() {
            for window in &mut per_window[k..] {
                if let Some(refused) = refused {
                    window.entry(member.clone()).or_default().refused += refused;
                }
            }
            if let (0, true, Some(admitted)) = (k, derived, admitted) {
                let given = per_window[0].entry(member.clone()).or_default();
                if given.held == 0 {
                    given.admitted += admitted;
                }
            }
        }
    }
    Ok(())
}
