//! Watched tops on Redis (`lua/watch.lua`; docs/design.md, "Rank changes"): setting
//! them (`watch_set.lua`), reading the stream of their changes (`changes_read.lua`), and
//! the changes webhook's cursor.

use redis::Value;

use crate::domain::board::Board;
use crate::domain::{BoardConfig, Change, ChangeCause, ChangeType, Span, Timestamp, Watch};
use crate::error::{Error, Result};
use crate::store::redis::conn::{RedisConn, Retry};

/// The version a script that may record changes expects (its ARGV[1]): on a watched
/// board with the caller's `now` and, when given, the `cause` of what it records (`lua/base.lua`,
/// `board_record`), so that the changes' times follow the service's clock.
pub(crate) fn stamped_version(board: &Board, now: Timestamp, cause: Option<ChangeCause>) -> String {
    if board.config.watch().is_empty() {
        return board.version.to_string();
    }
    let cause = cause.map(ChangeCause::as_str).unwrap_or_default();
    format!("{}@{}:{cause}", board.version, now.unix_millis().max(0))
}

/// Sets, changes or clears the board's watched tops and how long their changes are kept
/// to `config`'s (`watch_set.lua`), recording what that does to each top as changes
/// caused by `watch`.
pub(crate) async fn set_watch(conn: &RedisConn, board: &Board, config: &BoardConfig) -> Result<()> {
    let mut invocation = conn
        .scripts()
        .watch_set
        .key(conn.keys().record(&board.name));
    invocation
        .arg(board.version)
        .arg(Watch::stored(config.watch()).unwrap_or_default())
        .arg(
            config
                .changes_kept()
                .map(|k| k.stored())
                .unwrap_or_default(),
        );
    // Idempotent: sent again, it finds the tops recorded and records nothing.
    let _: i64 = conn
        .script(&invocation, &board.name, Retry::IdempotentWrite)
        .await?;
    Ok(())
}

/// Up to `limit` changes of the board after the change `after` (from the oldest kept
/// when `None`), oldest first; [`Error::ChangesTrimmed`] when some after it are gone.
/// With `newest_first`, the newest before `after` (from the newest), newest first.
pub(crate) async fn changes(
    conn: &RedisConn,
    board: &Board,
    after: Option<&str>,
    limit: usize,
    newest_first: bool,
) -> Result<Vec<Change>> {
    let mut invocation = conn
        .scripts()
        .changes_read
        .key(conn.keys().changes(&board.name));
    invocation.key(conn.keys().watched(&board.name));
    invocation
        .arg(after.unwrap_or(""))
        .arg(limit)
        .arg(u8::from(newest_first));
    let reply: Vec<Value> = conn.read_script(&invocation, &board.name).await?;
    if reply.len() < 2 {
        return Err(Error::ChangesTrimmed {
            board: board.name.to_string(),
            after: after.unwrap_or_default().to_owned(),
        });
    }
    let entries: Vec<(String, Vec<(String, String)>)> =
        redis::from_redis_value(reply[1].clone())
            .map_err(|e| Error::store(format!("changes of {}: {e}", board.name)))?;
    entries
        .into_iter()
        .map(|(id, fields)| change(id, &fields))
        .collect()
}

/// The change a stream entry `id` with `fields` records (see `lua/watch.lua`).
fn change(id: String, fields: &[(String, String)]) -> Result<Change> {
    let corrupt = |what: &str| Error::store(format!("change {id}: {what}"));
    let get = |name: &str| {
        fields
            .iter()
            .find(|(f, _)| f == name)
            .map(|(_, v)| v.as_str())
    };
    let number = |name: &str| get(name).map(|v| v.parse::<i64>().map_err(|_| corrupt(name)));
    let kind = match get("t") {
        Some("entered") => ChangeType::Entered,
        Some("left") => ChangeType::Left,
        Some("moved") => ChangeType::Moved,
        _ => return Err(corrupt("t")),
    };
    let window = number("w")
        .ok_or_else(|| corrupt("w"))??
        .try_into()
        .ok()
        .and_then(|w| Span::from_seconds(w).ok())
        .ok_or_else(|| corrupt("w"))?;
    let rank = number("r").transpose()?.map(|r| r as u64);
    let from = number("f").transpose()?.map(|r| r as u64);
    Ok(Change {
        kind,
        member: get("m").ok_or_else(|| corrupt("m"))?.to_owned(),
        window,
        rank,
        score: number("s").ok_or_else(|| corrupt("s"))??,
        from,
        to: (kind == ChangeType::Moved).then_some(rank).flatten(),
        passed: passed(get("p").unwrap_or("")).ok_or_else(|| corrupt("p"))?,
        cause: get("c")
            .and_then(ChangeCause::parse)
            .ok_or_else(|| corrupt("c"))?,
        at: number("a").ok_or_else(|| corrupt("a"))??,
        id,
    })
}

/// The members of a `p` field, each written `<bytes>:<member>`.
fn passed(mut text: &str) -> Option<Vec<String>> {
    let mut members = Vec::new();
    while !text.is_empty() {
        let (len, rest) = text.split_once(':')?;
        let len: usize = len.parse().ok()?;
        members.push(rest.get(..len)?.to_owned());
        text = &rest[len..];
    }
    Some(members)
}

/// The changes webhook's cursor of the board (`board_{b}:changes_sent`), first moved up
/// to `delivered` when given.
pub(crate) async fn changes_cursor(
    conn: &RedisConn,
    board: &Board,
    delivered: Option<&str>,
) -> Result<Option<String>> {
    super::review::cursor(conn, board, "changes_sent", delivered).await
}
