//! The recompute lease every family's recompute runs under: `recompute_begin.lua` takes
//! it (a max board's pending member removal finished first), each call of the recompute
//! extends it, and `recompute_end.lua` gives it up when the recompute fails, so a
//! recompute whose process dies expires by itself. Also what the families' recomputes
//! share: scans in lanes and the build's dense keys.

use redis::{ScriptInvocation, Value};
use tokio::task::JoinSet;

use super::family::Family;
use crate::domain::RecomputeReport;
use crate::domain::board::Board;
use crate::error::{Error, Result};
use crate::store::redis::conn::keys::Keys;
use crate::store::redis::conn::refusal::Refusal;
use crate::store::redis::conn::reply::{array, int, string};
use crate::store::redis::conn::{RedisConn, Retry};

/// How long a recompute's lease lasts without a call extending it.
pub(crate) const LEASE_MS: u64 = 10_000;

/// Script calls of a recompute in flight at once, as in retirement: while Redis runs one,
/// the next is on its way, and a recompute keeps its share of Redis beside busy writers.
/// Scans in flight are of different hashes (each is scanned by one caller, so no value
/// is added twice).
const LANES: usize = 2;

/// Runs `body` under a recompute's lease of window `window` (`recompute_begin.lua`,
/// with the token it is given), then, when it fails, abandons the recompute at once
/// (`recompute_end.lua`) rather than letting its lease expire. A pending member removal
/// of the board is finished first, by its `family`. A recompute of the largest window
/// ends with a sweep of the data of members that hold no total there.
pub(crate) async fn leased<F, Fut>(
    conn: &RedisConn,
    family: &dyn Family,
    board: &Board,
    window: usize,
    body: F,
) -> Result<RecomputeReport>
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = Result<RecomputeReport>>,
{
    let token = crate::store::new_version().to_string();
    let mut begin = conn.scripts().recompute_begin.prepare_invoke();
    rebuild_keys(&mut begin, conn.keys(), board)
        .arg(board.version)
        .arg(board.config.windows()[window].seconds())
        .arg(&token)
        .arg(LEASE_MS);
    // A few times at most: each finished removal lets the next one begin.
    let mut attempts = 0;
    loop {
        match conn
            .script_or_refusal::<String>(&begin, &board.name, Retry::Never)
            .await?
        {
            Ok(_) => break,
            Err(Refusal::Removing(member)) if attempts < 4 => {
                attempts += 1;
                family.finish_removal(conn, board, &member).await?;
            }
            Err(refusal) => return Err(refusal.into_error(Some(&board.name))),
        }
    }
    let result = body(token.clone()).await;
    if result.is_ok() && window + 1 == board.config.windows().len() {
        // The rebuilt largest window may have left out a member whose total was drift:
        // its data goes too.
        super::member_data::sweep(conn, board).await?;
    }
    if result.is_err() {
        let mut end = conn.scripts().recompute_end.prepare_invoke();
        rebuild_keys(&mut end, conn.keys(), board).arg(&token);
        let _: Result<i64> = conn.script(&end, &board.name, Retry::Idempotent).await;
    }
    result
}

/// The keys of `recompute_begin.lua` and `recompute_end.lua`: the record and the build's.
fn rebuild_keys<'a, 'b>(
    call: &'b mut ScriptInvocation<'a>,
    keys: &Keys,
    board: &Board,
) -> &'b mut ScriptInvocation<'a> {
    let name = &board.name;
    call.key(keys.record(name))
        .key(keys.rebuild(name))
        .key(keys.rebuild_log(name))
        .key(keys.rebuild_scan(name))
        .key(keys.rebuild_tally(name))
        .key(keys.rebuild_dense(name))
        .key(keys.rebuild_records(name))
}

/// Runs `scan` on each of `items`, [`LANES`] in flight, adding each one's calls and
/// values scanned to `report`.
pub(crate) async fn scan_in_lanes<I, F, Fut>(
    report: &mut RecomputeReport,
    items: Vec<I>,
    scan: F,
) -> Result<()>
where
    F: Fn(I) -> Fut,
    Fut: Future<Output = Result<(u64, u64)>> + Send + 'static,
{
    let mut scans = JoinSet::new();
    for item in items {
        if scans.len() == LANES
            && let Some(joined) = scans.join_next().await
        {
            absorb_scan(report, joined)?;
        }
        scans.spawn(scan(item));
    }
    while let Some(joined) = scans.join_next().await {
        absorb_scan(report, joined)?;
    }
    Ok(())
}

/// Adds a finished scan's counts to the report.
fn absorb_scan(
    report: &mut RecomputeReport,
    joined: std::result::Result<Result<(u64, u64)>, tokio::task::JoinError>,
) -> Result<()> {
    let (calls, fields) =
        joined.map_err(|e| Error::store(format!("recompute task failed: {e}")))??;
    report.calls += calls;
    report.fields_scanned += fields;
    Ok(())
}

/// A scan step's reply, `{cursor, count}` (`count` absent: 0), from `script`: the
/// cursor to go on from and what the step counted.
pub(crate) fn scan_step(reply: Value, script: &str) -> Result<(String, u64)> {
    let items = array(reply, script)?;
    let counted = items.get(1).map(|v| int(v, script)).transpose()?;
    let cursor = string(items.first().unwrap_or(&Value::Nil), script)?;
    Ok((cursor, counted.unwrap_or(0) as u64))
}
