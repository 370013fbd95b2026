//! Redis's `SLOWLOG`, set to catch every call over 2 ms while a phase runs, and a quiet
//! Redis to start from. A script call is named by its script ([`SlowCall::name`]): the
//! log holds its `EVALSHA` line, whose SHA-1 is looked up among the store's scripts.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use redis::Value;
use redis::aio::MultiplexedConnection;

/// How the store joins a script to the prelude's definitions it uses.
#[allow(unused_imports)] // its tests, which only the library runs
#[path = "../../src/store/redis/conn/prelude.rs"]
mod prelude;

/// The store's scripts as it loads them (`src/store/redis/conn/scripts.rs`): the prelude's
/// definitions each uses, then the script's file, named by its path under `src/store/redis/`.
macro_rules! sources {
    ($($name:literal $(+ $more:literal)*),* $(,)?) => {
        [$((
            $name,
            prelude::joined(concat!(
                include_str!(concat!("../../src/store/redis/", $name, ".lua")),
                $(include_str!(concat!("../../src/store/redis/", $more, ".lua"))),*
            )),
        )),*]
    };
}

/// Every script's name by the SHA-1 of its source (what `EVALSHA` names).
fn script_names() -> &'static HashMap<String, &'static str> {
    static NAMES: OnceLock<HashMap<String, &'static str>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let sources = sources!(
            "contributors/contrib_hold",
            "contributors/contrib_remove",
            "contributors/contrib_retire",
            "contributors/contrib_retract",
            "counters/counter_clean",
            "counters/counter_drop",
            "counters/counter_incr",
            "counters/counter_indexed",
            "counters/counter_unindex",
            "board/create_board",
            "board/data_set",
            "board/data_sweep",
            "board/drop_begin",
            "board/extend_board",
            "board/history",
            "rates/rate_hit",
            "rates/rate_hits" + "rates/rate_play" + "rates/rate_keys",
            "board/read_ranking",
            "board/recompute_begin",
            "board/recompute_end",
            "sums/recompute_fold",
            "maxima/recompute_max_scan",
            "maxima/recompute_max_swap",
            "sums/recompute_scan",
            "sums/recompute_swap",
            "board/relayout",
            "board/relayout_chunk",
            "maxima/remove_max",
            "sums/remove_member",
            "retire/compact_max",
            "retire/compact_move",
            "retire/retire_begin",
            "retire/retire_chunk",
            "retire/retire_max",
            "retire/retire_small",
            "retire/retire_swap",
            "board/set_snapshots",
            "board/snapshot_delivered",
            "board/snapshot_take",
            "stats/stats_record",
            "stats/stats_slowest",
            "trending/trend_create",
            "trending/trend_prune",
            "trending/trend_read",
            "trending/trend_rescale",
            "trending/trend_write",
            "sums/write",
            "maxima/write_max",
            "sums/write_plain",
        );
        sources
            .iter()
            .map(|(name, source)| (redis::Script::new(source).get_hash().to_owned(), *name))
            .collect()
    })
}

/// One call Redis logged: how long it ran and its command line.
pub struct SlowCall {
    pub micros: i64,
    pub args: Vec<String>,
}

impl SlowCall {
    /// What ran: a script's name (`write`, `retire/retire_chunk`, …; `script <sha>` for
    /// one this benchmark does not know), else the command (`ZINCRBY`, …).
    pub fn name(&self) -> String {
        let command = self.args.first().map(String::as_str).unwrap_or("?");
        if !command.eq_ignore_ascii_case("EVALSHA") {
            return command.to_owned();
        }
        let sha = self.args.get(1).map(String::as_str).unwrap_or("");
        match script_names().get(sha) {
            Some(name) => (*name).to_owned(),
            None => format!("script {:.8}", sha),
        }
    }

    /// Whether a retirement pass made it: its scripts, and compaction's converter calls.
    pub fn is_retirement(&self) -> bool {
        let name = self.name();
        name.starts_with("retire/") || name == "relayout_chunk"
    }
}

/// Waits until Redis has freed what earlier phases unlinked: its background thread
/// would otherwise compete with the next phase, and make `used_memory` drop under it.
pub async fn settle(conn: &mut MultiplexedConnection) {
    loop {
        let info: String = redis::cmd("INFO")
            .arg("memory")
            .query_async(&mut *conn)
            .await
            .unwrap();
        if info_field(&info, "lazyfree_pending_objects") == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// An integer field of an `INFO` answer (0 when absent).
pub fn info_field(info: &str, name: &str) -> i64 {
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Once Redis is settled, logs every call slower than 2 ms from now on (up to 100,000),
/// and forgets earlier ones.
pub async fn reset(conn: &mut MultiplexedConnection) {
    reset_over(conn, 2000).await;
}

/// [`reset`], logging every call slower than `micros` instead.
pub async fn reset_over(conn: &mut MultiplexedConnection, micros: i64) {
    settle(conn).await;
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(micros)
        .arg("slowlog-max-len")
        .arg(100_000)
        .query_async(conn)
        .await
        .unwrap();
    let _: () = redis::cmd("SLOWLOG")
        .arg("RESET")
        .query_async(conn)
        .await
        .unwrap();
}

/// The calls logged since [`reset`] (all of them). `BENCH_SHOW_SLOWLOG=1` prints them.
pub async fn slow_calls(conn: &mut MultiplexedConnection) -> Vec<SlowCall> {
    let slow: Vec<Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query_async(conn)
        .await
        .unwrap();
    let calls: Vec<SlowCall> = slow
        .iter()
        .filter_map(|entry| match entry {
            Value::Array(fields) => match (fields.get(2), fields.get(3)) {
                (Some(Value::Int(micros)), Some(Value::Array(args))) => Some(SlowCall {
                    micros: *micros,
                    args: args.iter().map(text).collect(),
                }),
                _ => None,
            },
            _ => None,
        })
        .collect();
    if std::env::var("BENCH_SHOW_SLOWLOG").is_ok() {
        for call in &calls {
            eprintln!("slow call: {} us {:.200}", call.micros, call.args.join(" "));
        }
    }
    calls
}

fn text(value: &Value) -> String {
    match value {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        other => format!("{other:?}"),
    }
}

/// The slow calls of a recompute phase, told apart from the writers' meanwhile.
pub struct RecomputeSlow<'a> {
    /// The recompute's own: its script calls (they name its build as their second key)
    /// and the swap's `UNLINK` and `RENAME`.
    pub own: Vec<&'a SlowCall>,
    /// The other script calls: the writers' batches.
    pub writers: Vec<&'a SlowCall>,
    /// Slow commands on a single element run inside scripts (`SADD`, `ZINCRBY`, `HSCAN
    /// COUNT 50`, …): each takes microseconds, so over 2 ms it was stalled (Redis
    /// preempted on its core), and so was the call around it.
    pub stalls: usize,
}

/// Splits the calls logged during a recompute into its own, the writers' and stalls.
pub fn split_recompute(slow: &[SlowCall]) -> RecomputeSlow<'_> {
    let script = |call: &&SlowCall| call.args.first().is_some_and(|c| c == "EVALSHA");
    let (own, writers): (Vec<_>, Vec<_>) = slow.iter().filter(script).partition(|call| {
        call.args
            .get(4)
            .is_some_and(|key| key.starts_with("rebuild_"))
    });
    let (swap, inner): (Vec<_>, Vec<_>) = slow
        .iter()
        .filter(|call| !script(call))
        .partition(|call| matches!(call.args[0].as_str(), "RENAME" | "UNLINK"));
    RecomputeSlow {
        own: own.into_iter().chain(swap).collect(),
        writers,
        stalls: inner.iter().filter(|call| call.args.len() <= 5).count(),
    }
}

/// Per script (or command) of `calls`: how many took over `micros`, of how many logged,
/// and the longest, e.g. `retire/retire_chunk 2 of 2 over 2.0 ms (longest 2.11 ms)`;
/// "none" without calls.
pub fn per_script<'a>(calls: impl IntoIterator<Item = &'a SlowCall>, micros: i64) -> String {
    let mut by_name: BTreeMap<String, (usize, usize, i64)> = BTreeMap::new();
    for call in calls {
        let entry = by_name.entry(call.name()).or_default();
        entry.0 += usize::from(call.micros > micros);
        entry.1 += 1;
        entry.2 = entry.2.max(call.micros);
    }
    if by_name.is_empty() {
        return "none".into();
    }
    by_name
        .iter()
        .map(|(name, (over, logged, longest))| {
            format!(
                "{name} {over} of {logged} over {:.1} ms (longest {:.2} ms)",
                micros as f64 / 1000.0,
                *longest as f64 / 1000.0
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The report's text for some slow calls: "none", or their count and the longest.
pub fn describe<'a>(calls: impl IntoIterator<Item = &'a SlowCall>) -> String {
    let micros: Vec<i64> = calls.into_iter().map(|c| c.micros).collect();
    match micros.iter().max() {
        None => "none".into(),
        Some(us) => format!("{} (longest {:.2} ms)", micros.len(), *us as f64 / 1000.0),
    }
}
