//! Recompute in Redis: `recompute_begin.lua`, then a bounded scan of every live stage
//! value the window counts (`recompute_scan.lua`), then a fold of the members writes
//! touched meanwhile (`recompute_fold.lua`), then an O(1) swap (`recompute_swap.lua`).
//! A max, min or latest board's scan and swap are in `maxima/recompute.rs`, under the
//! same lease ([`leased`]).
//! Every call is bounded; the recompute holds a lease that each call extends, so a
//! recompute whose process dies expires by itself. See `recompute_begin.lua`.

use redis::Value;
use tokio::task::JoinSet;

use crate::domain::board::Board;
use crate::domain::{RecomputeReport, Ties};
use crate::error::{Error, Result};
use crate::store::redis::board::keys;
use crate::store::redis::conn::refusal::Refusal;
use crate::store::redis::conn::reply::{array, int, string};
use crate::store::redis::conn::{RedisConn, Retry};

/// How long a recompute's lease lasts without a call extending it.
pub(crate) const LEASE_MS: u64 = 10_000;
/// Most fields a scan call adds, and its time budget.
const SCAN_FIELDS: usize = 1000;
const SCAN_BUDGET_US: u64 = 1500;
/// Stage values a fold call reads at most per member (live slots passed x stages), and
/// its time budget: on a long window one member's fold spans calls.
const FOLD_READS: usize = 1000;
const FOLD_BUDGET_US: u64 = 1500;
/// Script calls of a recompute in flight at once, as in retirement: while Redis runs one,
/// the next is on its way, and a recompute keeps its share of Redis beside busy writers.
/// Scans in flight are of different stage hashes (each hash is scanned by one caller, so
/// no value is added twice). Folds run one at a time (a member's fold may span calls).
const LANES: usize = 2;

/// Rebuilds window `window` of the sum board `board` (see the module header).
pub(crate) async fn recompute(
    conn: &RedisConn,
    board: &Board,
    window: usize,
) -> Result<RecomputeReport> {
    leased(conn, board, window, |token| async move {
        run(conn, board, window, &token).await
    })
    .await
}

/// Runs `body` under a recompute's lease of window `window` (`recompute_begin.lua`,
/// with the token it is given), then, when it fails, abandons the recompute at once
/// (`recompute_end.lua`) rather than letting its lease expire. A recompute of the largest
/// window ends with a sweep of the data of members that hold no total there.
pub(crate) async fn leased<F, Fut>(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    body: F,
) -> Result<RecomputeReport>
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = Result<RecomputeReport>>,
{
    let token = crate::store::new_version().to_string();
    let mut begin = conn
        .scripts()
        .recompute_begin
        .key(keys::record(&board.name));
    begin
        .key(keys::rebuild(&board.name))
        .key(keys::rebuild_log(&board.name))
        .key(keys::rebuild_scan(&board.name))
        .key(keys::rebuild_tally(&board.name))
        .key(keys::rebuild_dense(&board.name))
        .key(keys::rebuild_records(&board.name))
        .arg(board.version)
        .arg(board.config.windows()[window].seconds())
        .arg(&token)
        .arg(LEASE_MS);
    // A max, min or latest board's pending member removal is finished first (a few
    // times at most: each finished removal lets the next one begin).
    let mut attempts = 0;
    loop {
        match conn
            .script_or_refusal::<String>(&begin, &board.name, Retry::Never)
            .await?
        {
            Ok(_) => break,
            Err(Refusal::Removing(member)) if attempts < 4 => {
                attempts += 1;
                crate::store::redis::maxima::remove::finish(conn, board, &member).await?;
            }
            Err(refusal) => return Err(refusal.into_error(Some(&board.name))),
        }
    }
    let result = body(token.clone()).await;
    if result.is_ok() && window + 1 == board.config.windows().len() {
        // The rebuilt largest window may have left out a member whose total was drift:
        // its data goes too.
        crate::store::redis::board::member_data::sweep(conn, board).await?;
    }
    if result.is_err() {
        let mut end = conn.scripts().recompute_end.key(keys::record(&board.name));
        end.key(keys::rebuild(&board.name))
            .key(keys::rebuild_log(&board.name))
            .key(keys::rebuild_scan(&board.name))
            .key(keys::rebuild_tally(&board.name))
            .key(keys::rebuild_dense(&board.name))
            .key(keys::rebuild_records(&board.name))
            .arg(&token);
        let _: Result<i64> = conn.script(&end, &board.name, Retry::Idempotent).await;
    }
    result
}

async fn run(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    token: &str,
) -> Result<RecomputeReport> {
    let mut report = RecomputeReport {
        windows: vec![board.config.windows()[window]],
        ..RecomputeReport::default()
    };
    // Scan: every stage the window counts, of every live slot (a compact slot's stage is
    // scanned bucket by bucket, by the same calls).
    let mut hashes = Vec::new();
    for slot in live_slots(conn, board).await? {
        for stage in 0..=window {
            hashes.push((slot, keys::stage(&board.name, slot, stage)));
        }
    }
    scan_in_lanes(&mut report, hashes, |(slot, hash)| {
        let (conn, board, token) = (conn.clone(), board.clone(), token.to_owned());
        async move { scan(&conn, &board, &token, slot, &hash).await }
    })
    .await?;
    // Fold the log, then swap. One fold call at a time: a member's fold may span calls,
    // and each call goes on from where the last one left it.
    let mut slots = live_slots(conn, board).await?;
    let mut at = Position::default();
    loop {
        match fold(conn, board, window, token, &slots, &at).await? {
            Folded::SlotsChanged => slots = live_slots(conn, board).await?,
            Folded::At(position) => at = position,
            Folded::Left {
                left,
                folded,
                position,
            } => {
                report.calls += 1;
                report.members_folded += folded;
                at = position;
                if left == 0 && at.member.is_empty() && swap(conn, board, window, token).await? {
                    report.calls += 1;
                    return Ok(report);
                }
            }
        }
    }
}

/// Scans one stage of slot `slot` (its hash, or its buckets on a compact slot) to its
/// end: returns the calls made and the fields added.
async fn scan(
    conn: &RedisConn,
    board: &Board,
    token: &str,
    slot: i64,
    hash: &str,
) -> Result<(u64, u64)> {
    let (mut calls, mut fields) = (0, 0);
    let mut cursor = "0".to_owned();
    loop {
        let mut scan = conn.scripts().recompute_scan.key(keys::record(&board.name));
        scan.key(keys::rebuild(&board.name))
            .key(hash)
            .key(keys::rebuild_scan(&board.name))
            .key(keys::slot_geometry(&board.name))
            .key(build_dense(board))
            .arg(board.version)
            .arg(token)
            .arg(LEASE_MS)
            .arg(&cursor)
            .arg(SCAN_FIELDS)
            .arg(SCAN_BUDGET_US)
            .arg(slot);
        // Idempotent: the script checks `cursor` against the one it recorded, so a call
        // sent again after its reply was lost adds nothing (see recompute_scan.lua).
        let reply: Value = conn.script(&scan, &board.name, Retry::Idempotent).await?;
        let items = array(reply, "recompute_scan")?;
        calls += 1;
        fields += items
            .get(1)
            .map(|v| int(v, "added"))
            .transpose()?
            .unwrap_or(0) as u64;
        cursor = string(&items[0], "cursor")?;
        if cursor == "done" {
            return Ok((calls, fields));
        }
    }
}

/// Adds a finished scan's counts to the report.
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

pub(crate) async fn live_slots(conn: &RedisConn, board: &Board) -> Result<Vec<i64>> {
    crate::store::redis::board::slot_index::live_slots(conn, &board.name).await
}

/// Where the fold is: the member being folded and the last slot summed for it (both
/// empty when no member is half folded).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Position {
    member: String,
    slot: String,
}

enum Folded {
    /// The live slots changed: list them again.
    SlotsChanged,
    /// The fold is elsewhere than the caller thought (a lost reply's call ran).
    At(Position),
    Left {
        left: u64,
        folded: u64,
        position: Position,
    },
}

/// One `recompute_fold.lua` call: the next live slots after `at`, at most `FOLD_READS`
/// stage values per member.
async fn fold(
    conn: &RedisConn,
    board: &Board,
    window: usize,
    token: &str,
    slots: &[i64],
    at: &Position,
) -> Result<Folded> {
    let stages = window + 1;
    let after: Option<i64> = if at.slot.is_empty() {
        None
    } else {
        Some(
            at.slot
                .parse()
                .map_err(|_| Error::store(format!("recompute_fold named slot {:?}", at.slot)))?,
        )
    };
    let per_call = (FOLD_READS / stages).max(1);
    let passed: Vec<i64> = slots
        .iter()
        .copied()
        .filter(|s| after.is_none_or(|a| *s > a))
        .take(per_call)
        .collect();
    let mut call = conn.scripts().recompute_fold.key(keys::record(&board.name));
    call.key(keys::rebuild(&board.name))
        .key(keys::rebuild_log(&board.name))
        .key(keys::index(&board.name))
        .key(keys::slot_geometry(&board.name));
    for slot in &passed {
        for stage in 0..stages {
            call.key(keys::stage(&board.name, *slot, stage));
        }
    }
    call.key(build_dense(board));
    call.arg(board.version)
        .arg(token)
        .arg(LEASE_MS)
        .arg(stages)
        .arg(&at.member)
        .arg(&at.slot)
        .arg(passed.len())
        .arg(&passed)
        .arg(FOLD_BUDGET_US);
    // Idempotent: the script checks `at` against where the fold is, so a call sent again
    // after its reply was lost does nothing twice (see recompute_fold.lua).
    let reply: Value = conn.script(&call, &board.name, Retry::Idempotent).await?;
    let items = array(reply, "recompute_fold")?;
    let position = |member: &Value, slot: &Value| -> Result<Position> {
        Ok(Position {
            member: string(member, "member")?,
            slot: string(slot, "slot")?,
        })
    };
    match items.as_slice() {
        [Value::BulkString(b)] if b.as_slice() == b"slots" => Ok(Folded::SlotsChanged),
        [Value::BulkString(b), member, slot] if b.as_slice() == b"at" => {
            Ok(Folded::At(position(member, slot)?))
        }
        [left, folded, member, slot] => Ok(Folded::Left {
            left: int(left, "left")? as u64,
            folded: int(folded, "folded")? as u64,
            position: position(member, slot)?,
        }),
        _ => Err(Error::store(format!("recompute_fold answered {items:?}"))),
    }
}

/// On a dense board, the build's tally and distinct totals; nothing on a competition
/// board.
pub(crate) fn build_dense(board: &Board) -> Vec<String> {
    if board.config.ties() == Ties::Dense {
        vec![
            keys::rebuild_tally(&board.name),
            keys::rebuild_dense(&board.name),
        ]
    } else {
        Vec::new()
    }
}

/// Swaps the build in when the log is empty; `false` when more must be folded first.
async fn swap(conn: &RedisConn, board: &Board, window: usize, token: &str) -> Result<bool> {
    let windows = board.config.windows();
    let mut call = conn.scripts().recompute_swap.key(keys::record(&board.name));
    call.key(keys::rebuild(&board.name))
        .key(keys::rebuild_log(&board.name))
        .key(keys::totals(&board.name, windows, window))
        .key(keys::rebuild_scan(&board.name))
        .key(keys::window_dense(board, window))
        .key(build_dense(board))
        .arg(board.version)
        .arg(token)
        .arg(windows[window].seconds());
    let reply: Value = conn.script(&call, &board.name, Retry::Never).await?;
    let items = array(reply, "recompute_swap")?;
    Ok(matches!(items.first(), Some(Value::BulkString(b)) if b.as_slice() == b"done"))
}
