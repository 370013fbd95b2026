//! Who gave to one member (a moderator's "who liked this post?"): the member's pairs are
//! found in each live slot's stage contributions (`HSCAN MATCH *\n<member>`, as a
//! member's removal finds them: it costs the stages' pairs, an admin read, not a hot
//! path), which give their refused parts (kept in the stages only) and, where window 1
//! keeps no sums ([`first_window_derived`]), its admitted ones; then each contributor's
//! other sums for the member are read from its `ctr` hash, 500 to a pipeline. Reads
//! only: a slot retired meanwhile is found empty.

use std::collections::{BTreeMap, HashMap};

use crate::domain::board::Board;
use crate::domain::{Given, Member, WindowContributors};
use crate::error::Result;
use crate::store::redis::board::slot_index::live_slots;
use crate::store::redis::conn::keys::contribution_field;
use crate::store::redis::conn::{RedisConn, Retry, glob_escape};

use super::first_window_derived;

/// Contributors whose sums one pipeline reads.
const READ_AT_ONCE: usize = 500;

/// Who gave to `member` inside each window of `board`, the first `limit` of each.
pub(crate) async fn member_contributions(
    conn: &RedisConn,
    board: &Board,
    member: &Member,
    limit: usize,
) -> Result<Vec<WindowContributors>> {
    if !board.config.keeps_contributors() {
        return Ok(Vec::new());
    }
    let windows = board.config.windows();
    let found = contributors_of(conn, board, member.as_str()).await?;
    let contributors: Vec<&String> = found.keys().collect();
    let derived = first_window_derived(board);
    let fields: Vec<String> = windows
        .iter()
        .flat_map(|w| {
            let field = format!("{}\n{member}", w.seconds());
            [format!("!{field}"), field]
        })
        .collect();
    let mut given: Vec<Vec<(String, Given)>> = vec![Vec::new(); windows.len()];
    let keys = conn.keys();
    for chunk in contributors.chunks(READ_AT_ONCE) {
        let mut pipe = redis::pipe();
        for by in chunk {
            pipe.cmd("HMGET")
                .arg(keys.contributor(&board.name, by))
                .arg(&fields);
        }
        let sums: Vec<Vec<Option<i64>>> = conn
            .query_pipe(&pipe, Some(&board.name), Retry::Idempotent)
            .await?;
        for (by, sums) in chunk.iter().zip(sums) {
            let stages = &found[*by];
            for (j, parts) in sums.chunks(2).enumerate() {
                let [held, admitted] = [0, 1].map(|x| parts[x].unwrap_or(0));
                // Refused parts count in the windows of their stage and after.
                let refused = stages[..=j].iter().map(|[refused, _]| refused).sum();
                let admitted = match (j, derived) {
                    (0, true) if held == 0 => stages[0][1],
                    (0, true) => 0,
                    _ => admitted,
                };
                let sums = Given {
                    admitted,
                    refused,
                    held,
                };
                given[j].push(((*by).clone(), sums));
            }
        }
    }
    let cap = board.config.per_contributor_member();
    Ok(windows
        .iter()
        .zip(given)
        .map(|(w, given)| WindowContributors::of(*w, cap, given, limit))
        .collect())
}

/// Every contributor holding a pair with `member` in a live slot's stage, with what its
/// refused and admitted parts there sum to, stage by stage.
async fn contributors_of(
    conn: &RedisConn,
    board: &Board,
    member: &str,
) -> Result<BTreeMap<String, Vec<[i64; 2]>>> {
    let pattern = format!("*\n{}", glob_escape(member));
    let n = board.config.windows().len();
    // Per slot, stage, contributor and kind, its part (a field HSCAN gives twice counts
    // once).
    let mut parts = HashMap::new();
    for slot in live_slots(conn, &board.name).await? {
        for (k, stage) in conn.keys().stages(board, slot).enumerate() {
            let key = format!("{stage}:c");
            conn.scan_fields(&board.name, &key, &pattern, |field, value| {
                let (by, m) = contribution_field(&field);
                if m == member {
                    let kind = usize::from(!field.starts_with('\n'));
                    parts.insert((slot, k, by.to_owned(), kind), value.parse().unwrap_or(0));
                }
            })
            .await?;
        }
    }
    let mut found = BTreeMap::new();
    for ((_, k, by, kind), part) in parts {
        found.entry(by).or_insert_with(|| vec![[0, 0]; n])[k][kind] += part;
    }
    Ok(found)
}
