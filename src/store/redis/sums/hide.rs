//! Hiding members of a board and showing them again: `hide.lua` calls of at most
//! [`MEMBERS_PER_CALL`] members each, every window at once (docs/design.md, "Hidden
//! members"); listing them (`read_hidden.lua`); and setting a board's pins
//! (`pins_set.lua`).

use crate::domain::Timestamp;
use crate::domain::board::{Board, WindowAt};
use crate::domain::{Member, Pin};
use crate::error::{Error, Result};
use crate::store::new_version;
use crate::store::redis::conn::{RedisConn, Retry};
use redis::ScriptInvocation;

/// The most members one `hide.lua` call moves, so that no call holds Redis long.
const MEMBERS_PER_CALL: usize = 256;

/// Hides `members` (`hidden`) or shows them again; how many changed.
pub(crate) async fn set_hidden(
    conn: &RedisConn,
    board: &Board,
    members: &[Member],
    hidden: bool,
    now: Timestamp,
) -> Result<u64> {
    let windows = board.config.windows();
    let mut changed = 0;
    for chunk in members.chunks(MEMBERS_PER_CALL) {
        let mut invocation = conn.scripts().hide.key(conn.keys().record(&board.name));
        invocation
            .key(conn.keys().all_totals(&board.name, windows))
            .key(conn.keys().all_dense(board))
            .arg(super::changes::stamped_version(board, now, None))
            .arg(windows.len())
            .arg(if hidden { "hide" } else { "show" })
            .arg(if board.config.aggregate().sums() {
                ""
            } else {
                "1"
            });
        for member in chunk {
            invocation.arg(member.as_str());
        }
        // Idempotent: a replay finds the members hidden (shown) already and changes
        // nothing.
        let n: u64 = conn
            .script(&invocation, &board.name, Retry::IdempotentWrite)
            .await?;
        changed += n;
    }
    Ok(changed)
}

/// The board's hidden members and their totals in `at`'s window (one `read_hidden.lua`
/// call), in [`ranked_hidden`](crate::store::ranked_hidden) order.
pub(crate) async fn hidden_members(
    conn: &RedisConn,
    at: WindowAt<'_>,
) -> Result<Vec<(String, Option<i64>)>> {
    let invocation = read_hidden(conn, at, "hidden");
    let flat: Vec<(String, String)> = conn.read_script(&invocation, &at.board.name).await?;
    let members = flat
        .into_iter()
        .map(|(member, total)| Ok((member, number(total)?)));
    Ok(crate::store::ranked_hidden(members.collect::<Result<_>>()?))
}

/// A `read_hidden.lua` call in `mode` (`hidden` or `held`) of `at`'s window.
pub(crate) fn read_hidden<'a>(
    conn: &'a RedisConn,
    at: WindowAt<'_>,
    mode: &str,
) -> ScriptInvocation<'a> {
    let board = at.board;
    let windows = board.config.windows();
    let ties = board.config.ties();
    let mut invocation = conn
        .scripts()
        .read_hidden
        .key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().totals(&board.name, windows, at.window))
        .arg(board.version)
        .arg(mode)
        .arg(match ties {
            crate::domain::Ties::Position => "position",
            crate::domain::Ties::Dense => "dense",
            crate::domain::Ties::Competition => "",
        });
    if ties == crate::domain::Ties::Dense {
        invocation.key(conn.keys().dense(&board.name, windows, at.window));
    }
    invocation
}

/// A number `read_hidden.lua` answered ('' for none).
pub(crate) fn number(text: String) -> Result<Option<i64>> {
    let number = (!text.is_empty()).then(|| text.parse::<i64>());
    number.transpose().map_err(|e| Error::store(e.to_string()))
}

/// Sets the board's pins under a new version (`pins_set.lua`): the board as stored now.
pub(crate) async fn set_pins(conn: &RedisConn, board: &Board, pins: &[Pin]) -> Result<Board> {
    let version = new_version();
    let json = if pins.is_empty() {
        String::new()
    } else {
        serde_json::to_string(pins).map_err(|e| Error::store(e.to_string()))?
    };
    let mut invocation = conn.scripts().pins_set.key(conn.keys().record(&board.name));
    invocation.arg(board.version).arg(version).arg(json);
    // Never re-sent: a second call would find the new version and answer STALE.
    let _: i64 = conn.script(&invocation, &board.name, Retry::Never).await?;
    Ok(Board {
        version,
        pins: pins.to_vec(),
        ..board.clone()
    })
}
