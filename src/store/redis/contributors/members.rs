//! Who gave to one member (a moderator's "who liked this post?"): the member's pairs are
//! found in each live slot's stage contributions (`HSCAN MATCH *\n<member>`, as a
//! member's removal finds them: it costs the stages' pairs, an admin read, not a hot
//! path), then each contributor's sums for the member read from its `ctr` hash, 500 to
//! a pipeline. Reads only: a slot retired meanwhile is found empty.

use std::collections::BTreeSet;

use crate::domain::board::Board;
use crate::domain::{Given, Member, WindowContributors};
use crate::error::Result;
use crate::store::redis::board::slot_index::live_slots;
use crate::store::redis::conn::keys::contribution_field;
use crate::store::redis::conn::{RedisConn, Retry, glob_escape};

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
    let contributors = contributors_of(conn, board, member.as_str()).await?;
    let windows = board.config.windows();
    let fields: Vec<String> = windows
        .iter()
        .flat_map(|w| {
            let field = format!("{}\n{member}", w.seconds());
            [format!("\n{field}"), format!("!{field}"), field]
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
            for (j, parts) in sums.chunks(3).enumerate() {
                let [refused, held, admitted] = [0, 1, 2].map(|x| parts[x].unwrap_or(0));
                let sums = Given {
                    admitted,
                    refused,
                    held,
                };
                given[j].push((by.clone(), sums));
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

/// Every contributor holding a pair with `member` in a live slot's stage.
async fn contributors_of(conn: &RedisConn, board: &Board, member: &str) -> Result<Vec<String>> {
    let pattern = format!("*\n{}", glob_escape(member));
    let mut found = BTreeSet::new();
    for slot in live_slots(conn, &board.name).await? {
        for stage in conn.keys().stages(board, slot) {
            let key = format!("{stage}:c");
            conn.scan_fields(&board.name, &key, &pattern, |field| {
                let (by, m) = contribution_field(&field);
                if m == member {
                    found.insert(by.to_owned());
                }
            })
            .await?;
        }
    }
    Ok(found.into_iter().collect())
}
