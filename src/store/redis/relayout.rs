//! Changing a board's layout online (`relayout.lua`): the record's `layout` decides the
//! layout of slots created from then on; live slots keep theirs until they retire,
//! since every script reads a slot's layout per slot (`docs/design.md`, "Relayout").

use super::conn::{RedisConn, Retry};
use super::keys;
use crate::board::Board;
use crate::domain::{Layout, RelayoutReport};
use crate::error::Result;

pub(super) async fn relayout(
    conn: &RedisConn,
    board: &Board,
    layout: Layout,
) -> Result<RelayoutReport> {
    let mut invocation = conn.scripts().relayout.key(keys::record(&board.name));
    invocation
        .key(keys::index(&board.name))
        .key(keys::slot_geometry(&board.name))
        .arg(board.version)
        .arg(layout.as_str());
    // Idempotent: it sets a value and counts; sent again, it sets the same value.
    let (live, compact): (u64, u64) = conn
        .script(&invocation, &board.name, Retry::Idempotent)
        .await?;
    Ok(RelayoutReport {
        layout,
        live_slots: live,
        old_layout_slots: match layout {
            Layout::Compact => live - compact,
            Layout::Plain => compact,
        },
    })
}
