//! Taking back a contributor's contributions to one board (`contrib_retract.lua`), walking
//! its index ([`walk`](super::walk::walk)).

use crate::domain::board::Board;
use crate::domain::{ChangeStamp, Contributor, Retracted};
use crate::error::Result;
use crate::store::redis::conn::RedisConn;
use crate::store::redis::conn::options::RetireOptions;

/// Takes back `by`'s contributions to `board` in the slots from `from` on (all when
/// `None`): what it took back.
pub(crate) async fn retract(
    conn: &RedisConn,
    board: &Board,
    by: &Contributor,
    from: Option<i64>,
    stamp: ChangeStamp,
    options: &RetireOptions,
) -> Result<Retracted> {
    let since = from.map(|s| s.to_string()).unwrap_or_default();
    let args = [since];
    let script = &conn.scripts().contrib_retract;
    let [contributions, events] =
        super::walk::walk(conn, script, board, (by, &args), stamp, options).await?;
    Ok(Retracted {
        contributions,
        events,
    })
}
