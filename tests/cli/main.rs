//! The `rollboard` binary: batch commands against a real Redis, refusals and one-line
//! errors with a non-zero exit.

mod deploy_sample;
#[path = "../common/dystats.rs"]
mod dystats;
mod errors;
mod help;
mod killed_retirement;
mod killed_retraction;
mod logs;
mod reload;
#[path = "../common/redis.rs"]
mod test_redis;

use std::process::{Command, Output};
use std::sync::Arc;

use rollboard::{BoardConfig, Event, ManualClock, Rollboard, Settings, Timestamp, TrendingConfig};
use test_redis::{TestRedis, unique};

fn rollboard(args: &[&str], redis_url: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rollboard"));
    command.args(args);
    for var in [
        "REDIS_URL",
        "ROLLBOARD_BIND",
        "ROLLBOARD_WRITE_TOKEN",
        "ROLLBOARD_ADMIN_TOKEN",
        "RUST_LOG",
    ] {
        command.env_remove(var);
    }
    if let Some(url) = redis_url {
        command.env("REDIS_URL", url);
    }
    command.output().expect("run rollboard")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A board whose events were written three hours ago (by the real clock), so that a
/// retirement pass now has two slots to retire from its 1h window.
async fn overdue_board(redis: &TestRedis) -> String {
    let now = Timestamp::now_utc().unix_seconds();
    let clock = ManualClock::new(Timestamp::from_unix_seconds(now - 3 * 3600).unwrap());
    let boards = Rollboard::with(
        redis.store().await,
        Arc::new(clock.clone()),
        Settings::default(),
    );
    let board = unique("cli");
    boards
        .create(&board, BoardConfig::parse("1h", &["1h", "24h"]).unwrap())
        .await
        .unwrap();
    boards
        .windowed(&board)
        .incr("post:1", 4, None)
        .await
        .unwrap();
    clock.advance_secs(3600);
    boards
        .windowed(&board)
        .incr("post:2", 2, None)
        .await
        .unwrap();
    boards
        .windowed(&board)
        .incr("post:1", 1, None)
        .await
        .unwrap();
    board
}

#[tokio::test]
async fn retire_runs_one_pass_and_reports_it() {
    let redis = TestRedis::start().await;
    let board = overdue_board(&redis).await;
    let out = rollboard(&["retire"], Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!(
            "{board}: 2 slot retirements, 3 fields subtracted, 2 members reached zero"
        )),
        "{text}"
    );
    let boards = Rollboard::redis(&redis.url).await.unwrap();
    assert!(
        boards
            .windowed(&board)
            .top(None, 0, 10)
            .await
            .unwrap()
            .entries
            .is_empty()
    );
    let day = boards
        .windowed(&board)
        .top(Some("24h".parse().unwrap()), 0, 10)
        .await
        .unwrap();
    assert_eq!(
        day.entries.iter().map(|e| e.score).collect::<Vec<_>>(),
        [5, 2]
    );
    // A second pass finds nothing to do.
    let again = rollboard(&["retire"], Some(&redis.url));
    assert!(!stdout(&again).contains(&board), "{}", stdout(&again));
}

#[tokio::test]
async fn top_prints_a_ranking_as_text_or_json() {
    let redis = TestRedis::start().await;
    let board = overdue_board(&redis).await;
    let out = rollboard(&["top", &board, "--window", "24h"], Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<String> = stdout(&out)
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert!(
        lines[0].starts_with(&format!("{board} · last 1d · slots ")),
        "{}",
        lines[0]
    );
    assert_eq!(
        lines[1..],
        ["1 post:1 5".to_owned(), "2 post:2 2".to_owned()]
    );

    let json = rollboard(
        &["top", &board, "--window", "24h", "--limit", "1", "--json"],
        Some(&redis.url),
    );
    let page: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(page["kind"], "windowed");
    assert_eq!(page["window"], "1d");
    assert_eq!(
        page["entries"],
        serde_json::json!([{"rank": 1, "member": "post:1", "score": 5}])
    );

    // The bottom of the ranking: lowest first, the board's ranks, offset from the bottom.
    let bottom = rollboard(
        &["top", &board, "--window", "24h", "--order", "asc"],
        Some(&redis.url),
    );
    assert!(bottom.status.success(), "{}", stderr(&bottom));
    let lines: Vec<String> = stdout(&bottom)
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(lines, ["2 post:2 2".to_owned(), "1 post:1 5".to_owned()]);
    let json = rollboard(
        &[
            "top", &board, "--window", "24h", "--order", "asc", "--offset", "1", "--json",
        ],
        Some(&redis.url),
    );
    let page: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        page["entries"],
        serde_json::json!([{"rank": 1, "member": "post:1", "score": 5}])
    );
    let bad = rollboard(&["top", &board, "--order", "up"], Some(&redis.url));
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("invalid value 'up' for '--order <ORDER>'"),
        "{}",
        stderr(&bad)
    );
}

/// A trending board's top too, its scores decayed to the moment of the read (`at`), as
/// the HTTP API answers it (`kind` first).
#[tokio::test]
async fn top_prints_a_trending_ranking() {
    let redis = TestRedis::start().await;
    let boards = Rollboard::new(redis.store().await);
    let board = unique("clitrend");
    let config = TrendingConfig::parse("1h").unwrap();
    boards.create(&board, config).await.unwrap();
    let written = Timestamp::now_utc();
    let events = [("alice", 3), ("bob", 1)].map(|(m, d)| Event::new(m, d).at(written));
    boards.write_events(&board, &events).await.unwrap();

    let json = rollboard(&["top", &board, "--json"], Some(&redis.url));
    assert!(json.status.success(), "{}", stderr(&json));
    let page: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(page["kind"], "trending");
    assert_eq!(page["board"], board.as_str());
    // Forward decay: each score is its delta times 2^-(age / half-life).
    let age = page["at"].as_f64().unwrap() - written.unix_millis() as f64 / 1000.0;
    assert!((0.0..60.0).contains(&age), "read {age} s after the write");
    let factor = (-age / 3600.0).exp2();
    let entries = page["entries"].as_array().unwrap();
    let got: Vec<(u64, &str)> = entries
        .iter()
        .map(|e| (e["rank"].as_u64().unwrap(), e["member"].as_str().unwrap()))
        .collect();
    assert_eq!(got, [(1, "alice"), (2, "bob")]);
    for (entry, delta) in entries.iter().zip([3.0, 1.0]) {
        let score = entry["score"].as_f64().unwrap();
        assert!((score / (delta * factor) - 1.0).abs() < 1e-9, "{entry}");
    }

    let text = rollboard(&["top", &board], Some(&redis.url));
    assert!(text.status.success(), "{}", stderr(&text));
    let out = stdout(&text);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with(&format!("{board} · trending · at ")),
        "{out}"
    );
    let members: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(members, ["alice", "bob"], "{out}");
}

#[tokio::test]
async fn failures_are_one_line_and_non_zero() {
    let redis = TestRedis::start().await;
    let board = overdue_board(&redis).await;
    let cases: Vec<(Vec<&str>, Option<&str>, &str)> = vec![
        (
            vec!["retire"],
            None,
            "rollboard: `rollboard retire` needs REDIS_URL",
        ),
        (
            vec!["top", "nope"],
            Some(redis.url.as_str()),
            "rollboard: board \"nope\" does not exist",
        ),
        (
            vec!["top", "x", "--window", "soon"],
            Some(redis.url.as_str()),
            "rollboard: invalid duration \"soon\"",
        ),
        (
            vec!["top", &board, "--limit", "0"],
            Some(redis.url.as_str()),
            "rollboard: invalid query: limit must be between 1 and 1000, got 0",
        ),
        (
            vec!["serve", "--bind", "0.0.0.0:0"],
            None,
            "rollboard: refusing to listen on 0.0.0.0:0 without",
        ),
        (
            vec!["serve", "--config", "/no/such/file.toml"],
            None,
            "rollboard: cannot read /no/such/file.toml",
        ),
        (
            vec!["top", "x"],
            Some("redis://127.0.0.1:1/"),
            "rollboard: store unavailable",
        ),
    ];
    for (args, url, message) in cases {
        let out = rollboard(&args, url);
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?} succeeded");
        let last = err.lines().last().unwrap_or("");
        assert!(last.starts_with(message), "{args:?}: {err}");
    }
    let usage = rollboard(&["top"], None);
    assert_eq!(
        usage.status.code(),
        Some(2),
        "missing argument is a usage error"
    );
}

#[tokio::test]
async fn serve_creates_the_boards_of_its_config_file_and_refuses_a_conflicting_one() {
    let redis = TestRedis::start().await;
    let board = unique("cfg");
    let dir = std::env::temp_dir().join(unique("rollboard-cfg"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("rollboard.toml");
    std::fs::write(
        &config,
        format!("bind = \"127.0.0.1:0\"\n[[boards]]\nname = \"{board}\"\nslot = \"5m\"\nwindows = [\"1h\"]\n"),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rollboard"))
        .args(["serve", "--config", config.to_str().unwrap()])
        .env("REDIS_URL", &redis.url)
        .env_remove("ROLLBOARD_BIND")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let boards = Rollboard::redis(&redis.url).await.unwrap();
    let mut created = None;
    // Up to 30 s: start-up is slow on a loaded machine. The SIGTERM below may still come
    // before the service serves: it then ends cleanly once it does.
    for _ in 0..1200 {
        if let Ok(b) = boards.board(&board).await {
            created = Some(b);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    assert!(child.wait().unwrap().success());
    assert_eq!(
        created.expect("board created at start-up").config,
        BoardConfig::parse("5m", &["1h"]).unwrap()
    );

    std::fs::write(
        &config,
        format!("[[boards]]\nname = \"{board}\"\nslot = \"1h\"\nwindows = [\"1h\"]\n"),
    )
    .unwrap();
    let out = rollboard(
        &["serve", "--config", config.to_str().unwrap()],
        Some(&redis.url),
    );
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out).lines().last().unwrap_or(""),
        format!(
            "rollboard: board \"{board}\" in the config file differs from the stored one: \
             slot: stored 5m, asked 1h"
        ),
    );
    // The field that differs is named, even one the stored board's summary would hide.
    std::fs::write(
        &config,
        format!("[[boards]]\nname = \"{board}\"\nslot = \"5m\"\nwindows = [\"1h\"]\noffset = 60\n"),
    )
    .unwrap();
    let out = rollboard(
        &["serve", "--config", config.to_str().unwrap()],
        Some(&redis.url),
    );
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out).lines().last().unwrap_or(""),
        format!(
            "rollboard: board \"{board}\" in the config file differs from the stored one: \
             offset: stored 0, asked 60"
        ),
    );
}

#[tokio::test]
async fn recompute_repairs_a_drifted_board_and_says_what_it_did() {
    let redis = TestRedis::start().await;
    let board = overdue_board(&redis).await;
    let mut raw = redis::Client::open(redis.url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let _: () = redis::cmd("ZADD")
        .arg(format!("stats_{{{board}}}_86400"))
        .arg(77)
        .arg("post:2")
        .query_async(&mut raw)
        .await
        .unwrap();
    let out = rollboard(&["recompute", &board, "--window", "24h"], Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with(&format!(
            "recomputed {board} (windows 1d): 3 slot values scanned, 0 members refolded"
        )),
        "{}",
        stdout(&out)
    );
    let boards = Rollboard::redis(&redis.url).await.unwrap();
    let day = boards
        .windowed(&board)
        .top(Some("24h".parse().unwrap()), 0, 10)
        .await
        .unwrap();
    assert_eq!(
        day.entries.iter().map(|e| e.score).collect::<Vec<_>>(),
        [5, 2]
    );
}

#[tokio::test]
async fn reshard_moves_members_and_keeps_every_read() {
    let redis = TestRedis::start().await;
    let board = unique("cli");
    let boards = Rollboard::redis(&redis.url).await.unwrap();
    let config = BoardConfig::parse("1h", &["1h"]).unwrap();
    boards
        .create(&board, config.with_shards(2).unwrap())
        .await
        .unwrap();
    let events: Vec<rollboard::Event> = (0..40)
        .map(|m| rollboard::Event::new(format!("m{m}"), m + 1))
        .collect();
    boards.windowed(&board).incr_batch(&events).await.unwrap();
    let before = boards
        .windowed(&board)
        .top(None, 0, 40)
        .await
        .unwrap()
        .entries;
    let out = rollboard(&["reshard", &board, "--shards", "3"], Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout(&out);
    let moved: u64 = printed
        .strip_prefix(&format!("{board}: 2 shards -> 3; moved "))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{printed}"));
    // A third of the members move to the new shard (each with its one slot value).
    assert!((5..=25).contains(&moved), "{printed}");
    assert!(
        printed.contains(&format!("members ({moved} slot values)")),
        "{printed}"
    );
    let boards = Rollboard::redis(&redis.url).await.unwrap();
    assert_eq!(boards.board(&board).await.unwrap().config.shards(), 3);
    assert_eq!(
        boards
            .windowed(&board)
            .top(None, 0, 40)
            .await
            .unwrap()
            .entries,
        before
    );
    let again = rollboard(&["reshard", &board, "--shards", "3"], Some(&redis.url));
    assert!(
        stdout(&again).starts_with(&format!(
            "{board}: 3 shards -> 3; moved 0 members (0 slot values)"
        )),
        "{}",
        stdout(&again)
    );
    let bad = rollboard(&["reshard", &board, "--shards", "40"], Some(&redis.url));
    assert!(!bad.status.success());
    assert_eq!(stderr(&bad).lines().count(), 1, "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("shards must be between 1 and 32, got 40"),
        "{}",
        stderr(&bad)
    );
}

#[tokio::test]
async fn relayout_switches_new_slots_and_counts_the_old_ones() {
    let redis = TestRedis::start().await;
    // Two live plain slots: compact is the default layout, but each slot was written
    // while open (plain), and nothing compacted them.
    let board = overdue_board(&redis).await;
    let out = rollboard(
        &["relayout", &board, "--layout", "compact"],
        Some(&redis.url),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "{board}: new slots are compact; 2 of 2 live slots keep the old layout until they retire\n"
        )
    );
    let boards = Rollboard::redis(&redis.url).await.unwrap();
    assert_eq!(
        boards.board(&board).await.unwrap().config.layout(),
        Some(rollboard::Layout::Compact)
    );
    let bad = rollboard(&["relayout", &board, "--layout", "round"], Some(&redis.url));
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("round"), "{}", stderr(&bad));
    let missing = rollboard(&["relayout", "nope", "--layout", "plain"], Some(&redis.url));
    assert!(!missing.status.success());
    assert_eq!(
        stderr(&missing).lines().count(),
        1,
        "one line: {}",
        stderr(&missing)
    );
}

#[tokio::test]
async fn relayout_now_converts_the_live_slots_and_reports_them() {
    let redis = TestRedis::start().await;
    // Two live plain slots (each written while open, see above): post:1 in one, post:2
    // and post:1 in the other. Converted to compact, then back to plain.
    let board = overdue_board(&redis).await;
    let out = rollboard(
        &["relayout", &board, "--layout", "compact", "--now"],
        Some(&redis.url),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "{board}: new slots are compact; converted 2 of 2 live slots now (3 values moved)\n"
        )
    );
    let mut raw = redis.raw().await;
    let geometries: i64 = redis::cmd("HLEN")
        .arg(format!("slotgeo_{{{board}}}"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(geometries, 2, "both slots compact");
    let out = rollboard(
        &["relayout", &board, "--layout", "plain", "--now"],
        Some(&redis.url),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("{board}: new slots are plain; converted 2 of 2 live slots now (3 values moved)\n")
    );
    let geometries: i64 = redis::cmd("HLEN")
        .arg(format!("slotgeo_{{{board}}}"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(geometries, 0, "no compact slot left");
    let boards = Rollboard::redis(&redis.url).await.unwrap();
    let history = boards.windowed(&board).history("post:1").await.unwrap();
    assert_eq!(
        history.points.iter().map(|p| p.value).collect::<Vec<_>>(),
        [4, 1]
    );
}

/// A legacy board written by the article's code over the last five hours (real clock).
async fn legacy_board(redis: &TestRedis, name: &str) -> Vec<(String, i64)> {
    let mut conn = redis.raw().await;
    let legacy = dystats::DyStats::new(name, 24, 1);
    let now = Timestamp::now_utc().unix_seconds();
    for i in 0..60i64 {
        let post = format!("post:{}", i % 7);
        legacy
            .incr_stats(&mut conn, &post, 1 + i % 3, now - 5 * 3600 + i * 300)
            .await;
    }
    let mut stats: Vec<(String, i64)> = redis::cmd("ZREVRANGE")
        .arg(format!("stats_{name}"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut conn)
        .await
        .unwrap();
    stats.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    stats
}

async fn top_all(redis: &TestRedis, board: &str, window: &str) -> Vec<(String, i64)> {
    let boards = Rollboard::redis(&redis.url).await.unwrap();
    let page = boards
        .windowed(board)
        .top(Some(window.parse().unwrap()), 0, 1000)
        .await
        .unwrap();
    page.entries
        .into_iter()
        .map(|e| (e.member, e.score))
        .collect()
}

#[tokio::test]
async fn import_legacy_brings_the_articles_board_across_and_can_delete_it() {
    let redis = TestRedis::start().await;
    let name = unique("likes");
    let stats = legacy_board(&redis, &name).await;
    let board = unique("hot");
    let args = [
        "import-legacy",
        &name,
        "--board",
        &board,
        "--windows",
        "1h,24h",
    ];
    let out = rollboard(&args, Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!("imported legacy {name} into {board}: ")),
        "{text}"
    );
    assert!(
        text.contains(", 0 imported before, 0 too late (0 slots), skipped, 0 rejected, "),
        "{text}"
    );
    assert_eq!(top_all(&redis, &board, "24h").await, stats);

    // Again, deleting the legacy keys: nothing is counted twice.
    let out = rollboard(
        &[&args[..], &["--delete-legacy"]].concat(),
        Some(&redis.url),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(" 0 imported, "), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(" legacy keys deleted in "),
        "{}",
        stdout(&out)
    );
    assert_eq!(top_all(&redis, &board, "24h").await, stats);
    let left: Vec<String> = redis::cmd("KEYS")
        .arg(format!("*_{name}*"))
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
    assert_eq!(left, Vec::<String>::new());

    let out = rollboard(
        &["import-legacy", &name, "--board", &board],
        Some(&redis.url),
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--windows"), "{}", stderr(&out));
}

#[tokio::test]
async fn migrate_twice_and_from_two_processes_applies_once() {
    let redis = TestRedis::spawn().await;
    let stats = legacy_board(&redis, "likes").await;
    let dir = std::env::temp_dir().join(unique("rollboard-migrate"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("rollboard.toml");
    std::fs::write(
        &config,
        "[[boards]]\nname = \"hot\"\nslot = \"1h\"\nwindows = [\"24h\"]\nlegacy = \"likes\"\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();

    let out = rollboard(&["migrate", "--status"], Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("0001 legacy_layout    pending: import boards"),
        "{}",
        stdout(&out)
    );

    // Two processes at once: one applies, the other waits and finds it done.
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_rollboard"))
            .args(["migrate", "--config", config])
            .env("REDIS_URL", &redis.url)
            .output()
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(spawn);
        let b = s.spawn(spawn);
        (a.join().unwrap().unwrap(), b.join().unwrap().unwrap())
    });
    assert!(
        a.status.success() && b.status.success(),
        "{} {}",
        stderr(&a),
        stderr(&b)
    );
    let mut summaries = [stdout(&a), stdout(&b)];
    summaries.sort();
    assert!(
        summaries[0].starts_with("0001 legacy_layout: likes -> hot: "),
        "{summaries:?}"
    );
    assert!(
        summaries[0].contains("\nmigrations: 1 applied now, 0 already applied"),
        "{summaries:?}"
    );
    assert!(
        summaries[1].starts_with("migrations: 0 applied now, 1 already applied"),
        "{summaries:?}"
    );
    assert_eq!(top_all(&redis, "hot", "24h").await, stats);

    let out = rollboard(&["migrate", "--config", config], Some(&redis.url));
    assert!(stdout(&out).starts_with("migrations: 0 applied now, 1 already applied"));
    let out = rollboard(&["migrate", "--status"], Some(&redis.url));
    assert!(
        stdout(&out).starts_with("0001 legacy_layout    applied 20"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains(": likes -> hot: "),
        "{}",
        stdout(&out)
    );
    assert_eq!(top_all(&redis, "hot", "24h").await, stats);
}

#[tokio::test]
async fn rate_prints_a_keys_counts_as_text_or_json() {
    let redis = TestRedis::start().await;
    let key = format!("{}:{{ip}} 用", unique("r"));
    let boards = rollboard::Rollboard::with(
        redis.store().await,
        std::sync::Arc::new(rollboard::SystemClock),
        rollboard::Settings::default(),
    );
    boards.rates().hit(&key, 3, None).await.unwrap();
    let out = rollboard(&["rate", &key, "--last", "5m,180d"], Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<String> = stdout(&out)
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert!(
        lines[0].starts_with(&format!("{key} · at ")),
        "{}",
        lines[0]
    );
    assert_eq!(
        lines[1..],
        ["last 5m 3".to_owned(), "last 180d 3".to_owned()]
    );

    let json = rollboard(&["rate", &key, "--last", "5m", "--json"], Some(&redis.url));
    let body: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(body["counts"], serde_json::json!({"5m": 3}));
    assert_eq!(body["key"], serde_json::json!(key));

    let bad = rollboard(&["rate", &key, "--last", "90s"], Some(&redis.url));
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("invalid rate window"),
        "{}",
        stderr(&bad)
    );
}

#[tokio::test]
async fn rate_coverage_full_counts_the_oldest_slot_whole_and_other_names_are_refused() {
    let redis = TestRedis::start().await;
    let boards = rollboard::Rollboard::with(
        redis.store().await,
        std::sync::Arc::new(rollboard::SystemClock),
        rollboard::Settings::default(),
    );
    let counts = |out: &std::process::Output| -> serde_json::Value {
        assert!(out.status.success(), "{}", stderr(out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["counts"].clone()
    };
    let day = |t: rollboard::Timestamp| t.unix_seconds().div_euclid(86_400);
    // A hit two days back, in the day tier's slot before yesterday's: `2d` counts today
    // and yesterday with partial coverage, and that slot too with full coverage. Sent
    // again with a new key should a day end meanwhile (at midnight UTC).
    let key = loop {
        let key = unique("r");
        let now = boards.now();
        let at = rollboard::Timestamp::from_unix_seconds(now.unix_seconds() - 2 * 86_400).unwrap();
        assert_eq!(boards.rates().hit(&key, 3, Some(at)).await.unwrap(), 1);
        let partial = rollboard(
            &["rate", &key, "--last", "2d,3d", "--json"],
            Some(&redis.url),
        );
        let named = rollboard(
            &[
                "rate",
                &key,
                "--last",
                "2d,3d",
                "--coverage",
                "partial",
                "--json",
            ],
            Some(&redis.url),
        );
        let full = rollboard(
            &[
                "rate",
                &key,
                "--last",
                "2d,3d",
                "--coverage",
                "full",
                "--json",
            ],
            Some(&redis.url),
        );
        if day(boards.now()) != day(now) {
            continue;
        }
        assert_eq!(counts(&partial), serde_json::json!({"2d": 0, "3d": 3}));
        assert_eq!(counts(&named), serde_json::json!({"2d": 0, "3d": 3}));
        assert_eq!(counts(&full), serde_json::json!({"2d": 3, "3d": 3}));
        break key;
    };
    let text = rollboard(
        &["rate", &key, "--last", "2d", "--coverage", "full"],
        Some(&redis.url),
    );
    assert!(text.status.success(), "{}", stderr(&text));
    assert!(
        stdout(&text)
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["last", "2d", "3"]),
        "{}",
        stdout(&text)
    );

    let bad = rollboard(&["rate", &key, "--coverage", "all"], Some(&redis.url));
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains(r#"coverage must be "partial" or "full", not "all""#),
        "{}",
        stderr(&bad)
    );
}

#[tokio::test]
async fn clean_counters_runs_one_pass_and_forgets_empty_counters() {
    let redis = TestRedis::spawn().await;
    let boards = Rollboard::new(redis.store().await);
    let (old, live) = (unique("old"), unique("live"));
    // Ten days ago: outside the two slices of time that --keep 2 keeps at every precision.
    let ten_days_ago = Timestamp::from_unix_seconds(Timestamp::now_utc().unix_seconds() - 864_000);
    boards
        .counters()
        .incr(&old, 3, Some(ten_days_ago.unwrap()))
        .await
        .unwrap();
    // Half a minute ahead (inside the allowed skew): kept however long the test takes.
    let soon = Timestamp::now_utc().plus_millis(30_000);
    boards.counters().incr(&live, 1, Some(soon)).await.unwrap();
    let out = rollboard(&["clean-counters", "--keep", "2"], Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "cleaned counters: 2 counters, 7 samples removed, 1 forgotten\n"
    );
    let listed: Vec<String> = boards
        .counters()
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.name.to_string())
        .collect();
    assert_eq!(listed, [live]);
    let again = rollboard(&["clean-counters", "--keep", "2"], Some(&redis.url));
    assert_eq!(
        stdout(&again),
        "cleaned counters: 1 counters, 0 samples removed, 0 forgotten\n"
    );
}

#[tokio::test]
async fn retire_says_when_window_1_went_by_swap() {
    let redis = TestRedis::start().await;
    let now = Timestamp::now_utc().unix_seconds();
    // Slots aligned so that now is half-way through one: the boundary is 30 min away.
    let config = BoardConfig::parse("1h", &["1h", "24h"])
        .unwrap()
        .with_offset((now - 1800).rem_euclid(3600))
        .unwrap();
    let clock = ManualClock::new(Timestamp::from_unix_seconds(now - 3600).unwrap());
    let boards = Rollboard::with(
        redis.store().await,
        Arc::new(clock.clone()),
        Settings::default(),
    );
    let board = unique("cli");
    boards.create(&board, config).await.unwrap();
    // The slot that closed holds more fields than one small-board call takes, so the
    // pass goes window by window; the open slot holds two members.
    let closed: Vec<rollboard::Event> = (0..1500)
        .map(|i| rollboard::Event::new(format!("m{i}"), 1))
        .collect();
    boards.windowed(&board).incr_batch(&closed).await.unwrap();
    clock.advance_secs(3600);
    boards.windowed(&board).incr("m0", 5, None).await.unwrap();
    boards
        .windowed(&board)
        .incr("fresh", 2, None)
        .await
        .unwrap();

    let out = rollboard(&["retire"], Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!(
            "{board}: 1 slot retirements, 1500 fields subtracted, 1499 members reached zero"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "{board}: 1 of them by swap (window 1 rebuilt from the newer slots)"
        )),
        "{text}"
    );
    let boards = Rollboard::redis(&redis.url).await.unwrap();
    let hour = boards.windowed(&board).top(None, 0, 10).await.unwrap();
    assert_eq!(
        hour.entries
            .iter()
            .map(|e| (e.member.as_str(), e.score))
            .collect::<Vec<_>>(),
        [("m0", 5), ("fresh", 2)]
    );
}

#[tokio::test]
async fn hide_and_show_moderate_a_member_on_every_board_and_log_it() {
    // A server of this test's own: hiding on every board reaches all its boards.
    let redis = TestRedis::spawn().await;
    let (board, trend) = (unique("clihide"), unique("clitrend"));
    let boards = Rollboard::redis(&redis.url).await.unwrap();
    let config = BoardConfig::parse("1h", &["1h"]).unwrap();
    boards.create(&board, config.clone()).await.unwrap();
    let trending = rollboard::TrendingConfig::parse("6h").unwrap();
    boards.create(&trend, trending).await.unwrap();
    for (member, delta) in [("post:1", 4), ("post:2", 2)] {
        boards
            .windowed(&board)
            .incr(member, delta, None)
            .await
            .unwrap();
    }
    let members = |boards: &Rollboard| {
        let boards = boards.clone();
        let board = board.clone();
        async move {
            let page = boards.windowed(&board).top(None, 0, 10).await.unwrap();
            page.entries
                .into_iter()
                .map(|e| e.member)
                .collect::<Vec<_>>()
        }
    };

    let args = ["hide", "post:1", "--reason", "spam", "--actor", "ops"];
    let out = rollboard(&args, Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "hid post:1 on 1 boards (every board, boards created later too): 1 changed, 0 already so\n\
             skipped {trend}: board {trend:?} is a trending board\n"
        )
    );
    assert_eq!(members(&boards).await, ["post:2"]);
    let out = rollboard(&["export", &board, "--hidden"], Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "{\"rank\":1,\"member\":\"post:2\",\"score\":2}\n{\"member\":\"post:1\",\"score\":4,\"hidden\":true}\n"
    );

    // Shown on one board while hidden on every board: one line, non-zero, nothing changed.
    let out = rollboard(&["show", "post:1", "--board", &board], Some(&redis.url));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("hidden on every board") && err.lines().count() == 1,
        "{err}"
    );
    assert_eq!(members(&boards).await, ["post:2"]);
    let out = rollboard(&["hide", "post:1", "--reason", ""], Some(&redis.url));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("reason is empty"), "{}", stderr(&out));

    let out = rollboard(&["show", "post:1"], Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("showed post:1 on 1 boards (every board"),
        "{}",
        stdout(&out)
    );
    assert_eq!(members(&boards).await, ["post:1", "post:2"]);
    let log = boards.moderation_log(None, 10).await.unwrap();
    let seen: Vec<_> = log
        .iter()
        .map(|e| (e.action, e.reason.as_deref(), e.actor.as_deref(), e.changed))
        .collect();
    use rollboard::ModerationAction::{Hide, Show};
    assert_eq!(
        seen,
        [(Show, None, None, 1), (Hide, Some("spam"), Some("ops"), 1)]
    );
}

#[tokio::test]
async fn review_lists_a_boards_queue_and_decides_on_a_member() {
    let redis = TestRedis::spawn().await;
    let board = unique("clireview");
    let boards = Rollboard::redis(&redis.url).await.unwrap();
    let policy = rollboard::ReviewPolicy::new(1).unwrap();
    let config = BoardConfig::parse("1h", &["1h"]).unwrap();
    boards
        .create(&board, config.with_review(Some(policy)))
        .await
        .unwrap();
    let w = boards.windowed(&board);
    let note = rollboard::ModerationNote::default();
    w.review("post:1", rollboard::Decision::Allow, &note)
        .await
        .unwrap();
    for (member, delta) in [("post:1", 4), ("post:2", 2), ("post:3", 9)] {
        w.incr(member, delta, None).await.unwrap();
    }
    // post:3 would rank first over the one allowed member: held; post:2 ranks below it.
    let out = rollboard(&["review", &board], Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "post:3\t9\t1\n");
    let top = w.top(None, 0, 10).await.unwrap();
    let members: Vec<_> = top.entries.iter().map(|e| e.member.as_str()).collect();
    assert_eq!(members, ["post:1", "post:2"]);

    let args = ["review", &board, "--allow", "post:3", "--actor", "mod:a"];
    let out = rollboard(&args, Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("allow: post:3 on {board}\n"));
    let top = w.top(None, 0, 10).await.unwrap();
    let members: Vec<_> = top.entries.iter().map(|e| e.member.as_str()).collect();
    assert_eq!(members, ["post:3", "post:1", "post:2"]);
    let out = rollboard(&["review", &board], Some(&redis.url));
    assert_eq!(stdout(&out), "");

    // Both flags: one line, non-zero, nothing changed.
    let args = ["review", &board, "--allow", "a", "--deny", "b"];
    let out = rollboard(&args, Some(&redis.url));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("cannot be used with"),
        "{}",
        stderr(&out)
    );
    let log = boards.moderation_log(None, 10).await.unwrap();
    let seen: Vec<_> = log.iter().map(|e| (e.action, e.actor.as_deref())).collect();
    use rollboard::ModerationAction::Allow;
    assert_eq!(seen, [(Allow, Some("mod:a")), (Allow, None)]);
}

#[tokio::test]
async fn changes_prints_a_watched_tops_changes_after_the_last_one_seen() {
    let redis = TestRedis::spawn().await;
    let board = unique("clichanges");
    let boards = Rollboard::redis(&redis.url).await.unwrap();
    let hour = rollboard::Span::parse("1h").unwrap();
    let watch = vec![rollboard::Watch::new(hour, 2).unwrap()];
    let config = BoardConfig::parse("1h", &["1h"]).unwrap();
    boards
        .create(&board, config.with_watch(watch).unwrap())
        .await
        .unwrap();
    let w = boards.windowed(&board);
    for (member, delta) in [("post:1", 4), ("post:2", 2)] {
        w.incr(member, delta, None).await.unwrap();
    }
    let out = rollboard(&["changes", &board], Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen: Vec<_> = lines
        .iter()
        .map(|c| (c["type"].clone(), c["member"].clone(), c["rank"].clone()))
        .collect();
    use serde_json::json;
    assert_eq!(
        seen,
        [
            (json!("entered"), json!("post:1"), json!(1)),
            (json!("entered"), json!("post:2"), json!(2))
        ]
    );
    // Nothing after the last one; a malformed id: one line, non-zero.
    let last = lines[1]["id"].as_str().unwrap();
    let out = rollboard(&["changes", &board, "--after", last], Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    let out = rollboard(&["changes", &board, "--after", "x"], Some(&redis.url));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("not a change id"), "{}", stderr(&out));
}

#[tokio::test]
async fn quarantine_and_release_a_contributor_on_every_board() {
    let redis = TestRedis::spawn().await;
    let board = unique("cliheld");
    let boards = Rollboard::redis(&redis.url).await.unwrap();
    let config = BoardConfig::parse("1h", &["1h"])
        .unwrap()
        .with_contributor_cap(Some(1))
        .unwrap();
    boards.create(&board, config).await.unwrap();
    let events = [
        Event::new("post:1", 1).by("u1"),
        Event::new("post:1", 1).by("bot"),
        Event::new("post:2", 1).by("bot"),
    ];
    boards.windowed(&board).incr_batch(&events).await.unwrap();
    let top = || async {
        let page = boards.windowed(&board).top(None, 0, 10).await.unwrap();
        let entries = page.entries.into_iter();
        entries.map(|e| (e.member, e.score)).collect::<Vec<_>>()
    };

    let out = rollboard(&["quarantine", "bot"], Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "quarantined bot: 1 boards, 2 window sums moved\n"
    );
    assert_eq!(top().await, [("post:1".to_owned(), 1)]);
    let out = rollboard(&["quarantine", "bot", "--release"], Some(&redis.url));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "released bot: 1 boards, 2 window sums moved\n"
    );
    assert_eq!(
        top().await,
        [("post:1".to_owned(), 2), ("post:2".to_owned(), 1)]
    );
    let out = rollboard(&["quarantine", "b\u{7}t"], Some(&redis.url));
    assert!(!out.status.success());
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}
