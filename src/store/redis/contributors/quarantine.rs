//! Quarantining a contributor on one board, or releasing it (`contrib_hold.lua`): its
//! flag first, then its window sums moved between counted and held fields
//! ([`walk`](super::walk::walk)).

use crate::domain::board::Board;
use crate::domain::{ChangeStamp, Contributor};
use crate::error::Result;
use crate::store::redis::conn::RedisConn;
use crate::store::redis::conn::options::RetireOptions;

/// Holds (`quarantined`) or releases `by` on `board`: how many window sums it moved.
pub(crate) async fn quarantine(
    conn: &RedisConn,
    board: &Board,
    by: &Contributor,
    quarantined: bool,
    stamp: ChangeStamp,
    options: &RetireOptions,
) -> Result<u64> {
    let mode = [if quarantined { "q" } else { "r" }.to_owned()];
    let script = &conn.scripts().contrib_hold;
    let [moved] = super::walk::walk(conn, script, board, (by, &mode), stamp, options).await?;
    Ok(moved)
}
