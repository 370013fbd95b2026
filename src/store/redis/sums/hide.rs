//! Hiding a member of a sum board and showing it again: one `hide.lua` call, every
//! window at once (docs/design.md, "Hidden members").

use crate::domain::Member;
use crate::domain::board::Board;
use crate::error::Result;
use crate::store::redis::conn::{RedisConn, Retry};

/// Hides `member` (`hidden`) or shows it again; false when it already was so.
pub(crate) async fn set_hidden(
    conn: &RedisConn,
    board: &Board,
    member: &Member,
    hidden: bool,
) -> Result<bool> {
    let windows = board.config.windows();
    let mut invocation = conn.scripts().hide.key(conn.keys().record(&board.name));
    invocation
        .key(conn.keys().all_totals(&board.name, windows))
        .key(conn.keys().all_dense(board))
        .arg(board.version)
        .arg(windows.len())
        .arg(if hidden { "hide" } else { "show" })
        .arg(member.as_str());
    // Idempotent: a replay finds the member hidden (shown) already and changes nothing.
    let changed: u8 = conn
        .script(&invocation, &board.name, Retry::IdempotentWrite)
        .await?;
    Ok(changed == 1)
}
