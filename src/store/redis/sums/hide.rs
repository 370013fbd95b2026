//! Hiding members of a sum board and showing them again: `hide.lua` calls of at most
//! [`MEMBERS_PER_CALL`] members each, every window at once (docs/design.md, "Hidden
//! members").

use crate::domain::Member;
use crate::domain::board::Board;
use crate::error::Result;
use crate::store::redis::conn::{RedisConn, Retry};

/// The most members one `hide.lua` call moves, so that no call holds Redis long.
const MEMBERS_PER_CALL: usize = 256;

/// Hides `members` (`hidden`) or shows them again; how many changed.
pub(crate) async fn set_hidden(
    conn: &RedisConn,
    board: &Board,
    members: &[Member],
    hidden: bool,
) -> Result<u64> {
    let windows = board.config.windows();
    let mut changed = 0;
    for chunk in members.chunks(MEMBERS_PER_CALL) {
        let mut invocation = conn.scripts().hide.key(conn.keys().record(&board.name));
        invocation
            .key(conn.keys().all_totals(&board.name, windows))
            .key(conn.keys().all_dense(board))
            .arg(board.version)
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
