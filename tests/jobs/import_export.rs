//! Import (a backlog through the exact write path) and export (the ranking in rank
//! order), and that one reads what the other writes.

use std::io::Write;
use std::process::Command;

use rand::{Rng, SeedableRng};
use rollboard::jobs::export::export;
use rollboard::jobs::import::{Format, ImportError, ImportOptions, import};

use crate::support::{START, TestRedis, board, boards, oracle, ranking, unique};

#[tokio::test]
async fn an_import_of_100k_events_equals_the_oracle() {
    let redis = TestRedis::start().await;
    let (boards, _clock) = boards(&redis).await;
    let b = board(&boards, "1h", &["1h", "24h"]).await;
    // 100,000 events over the last 26 hours: those older than 24 h are too late.
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut text = String::new();
    let mut accepted = Vec::new();
    let mut too_late = 0;
    for _ in 0..100_000 {
        let member = format!("post:{}", rng.random_range(0..2_000));
        let delta: i64 = if rng.random_bool(0.9) {
            rng.random_range(1..4)
        } else {
            -1
        };
        let at = START - rng.random_range(0..26 * 3600);
        text.push_str(&format!(
            "{{\"member\":\"{member}\",\"delta\":{delta},\"at\":{at}}}\n"
        ));
        let slot = at - at.rem_euclid(3600);
        if slot <= START - 24 * 3600 {
            too_late += 1;
        } else {
            accepted.push((slot, member, delta));
        }
    }
    let report = import(
        &boards,
        &b,
        std::io::Cursor::new(text.into_bytes()),
        ImportOptions::default(),
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(
        (report.lines, report.imported, report.too_late),
        (100_000, accepted.len() as u64, too_late)
    );
    assert_eq!((report.rejected, report.bad_lines), (0, 0));
    assert_eq!(
        ranking(&boards, &b, "1h").await,
        oracle(&accepted, START - 3600)
    );
    assert_eq!(
        ranking(&boards, &b, "24h").await,
        oracle(&accepted, START - 24 * 3600)
    );
}

#[tokio::test]
async fn a_malformed_line_stops_the_import_with_its_number_unless_skipped() {
    let redis = TestRedis::start().await;
    let (boards, _clock) = boards(&redis).await;
    let b = board(&boards, "1h", &["1h"]).await;
    let text = "member,delta\npost:1,2\npost:2,two\npost:3,1\n";
    let csv = ImportOptions {
        format: Format::Csv,
        ..ImportOptions::default()
    };
    let err = import(
        &boards,
        &b,
        std::io::Cursor::new(text.as_bytes().to_vec()),
        csv.clone(),
        |_| {},
    )
    .await
    .unwrap_err();
    let ImportError::Malformed { line, message } = &err else {
        panic!("{err}")
    };
    assert_eq!(
        (*line, message.as_str()),
        (3, "delta \"two\" is not an integer")
    );
    assert_eq!(
        err.to_string(),
        "line 3: delta \"two\" is not an integer (nothing was imported)"
    );
    // The line before it was not written either.
    assert!(ranking(&boards, &b, "1h").await.is_empty());

    // A dry run says what would be imported, and writes nothing.
    let dry = ImportOptions {
        skip_bad: true,
        dry_run: true,
        ..csv.clone()
    };
    let report = import(
        &boards,
        &b,
        std::io::Cursor::new(text.as_bytes().to_vec()),
        dry,
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(
        (
            report.lines,
            report.events,
            report.bad_lines,
            report.imported
        ),
        (4, 2, 1, 0)
    );
    assert!(ranking(&boards, &b, "1h").await.is_empty());

    let options = ImportOptions {
        skip_bad: true,
        ..csv
    };
    let report = import(
        &boards,
        &b,
        std::io::Cursor::new(text.as_bytes().to_vec()),
        options,
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(
        (report.imported, report.bad_lines, report.problems[0].line),
        (2, 1, 3)
    );
    let totals = ranking(&boards, &b, "1h").await;
    assert_eq!(
        totals.into_iter().collect::<Vec<_>>(),
        [("post:1".to_owned(), 2), ("post:3".to_owned(), 1)]
    );
}

#[tokio::test]
async fn an_export_imports_back_to_the_same_ranking_in_json_and_csv() {
    let redis = TestRedis::start().await;
    let (boards, _clock) = boards(&redis).await;
    let a = board(&boards, "1h", &["1h", "24h"]).await;
    let events: Vec<rollboard::Event> = (0..2_500)
        .map(|i| rollboard::Event::new(format!("m,{}\"q", i % 1_300), 1 + (i % 5) as i64))
        .collect();
    boards
        .windowed(&a)
        .incr_batch(&events[..1000])
        .await
        .unwrap();
    boards
        .windowed(&a)
        .incr_batch(&events[1000..2000])
        .await
        .unwrap();
    boards
        .windowed(&a)
        .incr_batch(&events[2000..])
        .await
        .unwrap();
    let original = ranking(&boards, &a, "24h").await;
    assert_eq!(original.len(), 1_300);
    for format in [Format::Json, Format::Csv] {
        let mut out = Vec::new();
        let report = export(
            &boards,
            &a,
            Some("24h".parse().unwrap()),
            None,
            format,
            &mut out,
        )
        .await
        .unwrap();
        assert_eq!(report.entries, 1_300);
        let copy = board(&boards, "1h", &["1h", "24h"]).await;
        let options = ImportOptions {
            format,
            ..ImportOptions::default()
        };
        let imported = import(&boards, &copy, std::io::Cursor::new(out), options, |_| {})
            .await
            .unwrap();
        assert_eq!(imported.imported, 1_300);
        assert_eq!(ranking(&boards, &copy, "24h").await, original, "{format:?}");
    }
    let mut limited = Vec::new();
    export(&boards, &a, None, Some(3), Format::Csv, &mut limited)
        .await
        .unwrap();
    let text = String::from_utf8(limited).unwrap();
    assert_eq!(
        text.lines().count(),
        4,
        "a header and three entries:\n{text}"
    );
    assert!(text.starts_with("rank,member,score\n1,"));
}

/// Members that CSV or a spreadsheet treats specially, each with its own score.
const AWKWARD: [&str; 12] = [
    " lead",
    "trail ",
    " both ",
    "a,b",
    "q\"uote",
    "multi\nline",
    "=SUM(A1)",
    "+1",
    "-x",
    "@me",
    "'q",
    "\ttab",
];

/// Exports `board`'s 1h ranking as CSV (safe or not) and imports it into a new board.
async fn csv_round_trip(
    boards: &rollboard::Rollboard,
    board_name: &str,
    export_safe: bool,
    import_safe: bool,
) -> (String, std::collections::BTreeMap<String, i64>) {
    let mut out = Vec::new();
    let options = rollboard::jobs::export::ExportOptions {
        format: Format::Csv,
        csv_safe: export_safe,
        ..Default::default()
    };
    rollboard::jobs::export::export_with(boards, board_name, &options, &mut out)
        .await
        .unwrap();
    let text = String::from_utf8(out.clone()).unwrap();
    let copy = board(boards, "1h", &["1h"]).await;
    let options = ImportOptions {
        format: Format::Csv,
        csv_safe: import_safe,
        ..ImportOptions::default()
    };
    let report = import(boards, &copy, std::io::Cursor::new(out), options, |_| {})
        .await
        .unwrap();
    assert_eq!(report.imported, AWKWARD.len() as u64, "{report:?}");
    (text, ranking(boards, &copy, "1h").await)
}

#[tokio::test]
async fn csv_export_then_import_gives_back_the_same_members_exactly() {
    let redis = TestRedis::start().await;
    let (boards, _clock) = boards(&redis).await;
    let a = board(&boards, "1h", &["1h"]).await;
    let events: Vec<rollboard::Event> = AWKWARD
        .iter()
        .enumerate()
        .map(|(i, m)| rollboard::Event::new(*m, 100 - i as i64))
        .collect();
    boards.windowed(&a).incr_batch(&events).await.unwrap();
    let original = ranking(&boards, &a, "1h").await;
    let expected: std::collections::BTreeMap<String, i64> = AWKWARD
        .iter()
        .enumerate()
        .map(|(i, m)| (m.to_string(), 100 - i as i64))
        .collect();
    assert_eq!(original, expected);

    // As they are: exact, spaces, quotes, commas and line breaks included.
    let (text, plain) = csv_round_trip(&boards, &a, false, false).await;
    assert_eq!(plain, expected);
    assert!(text.contains("\n7,=SUM(A1),94\n"), "{text}");

    // The safe form: a quote in front of what a spreadsheet would run, undone on import.
    let (text, safe) = csv_round_trip(&boards, &a, true, true).await;
    assert_eq!(safe, expected);
    for line in [
        "7,'=SUM(A1),94",
        "8,'+1,93",
        "9,'-x,92",
        "10,'@me,91",
        "11,''q,90",
    ] {
        assert!(text.contains(&format!("\n{line}\n")), "{line} in {text}");
    }
    assert!(text.contains("\n1, lead,100\n"), "{text}");

    // A safe export imported without the option keeps the quotes: nothing is guessed.
    let (_, kept) = csv_round_trip(&boards, &a, true, false).await;
    let quoted: std::collections::BTreeMap<String, i64> = expected
        .iter()
        .map(|(m, s)| (rollboard::jobs::csv_safe::protect(m).into_owned(), *s))
        .collect();
    assert_eq!(kept, quoted);
}

#[tokio::test]
async fn the_cli_imports_a_file_and_reports_a_bad_line_by_number() {
    let redis = TestRedis::start().await;
    let (boards, _clock) = boards(&redis).await;
    let b = board(&boards, "1h", &["24h"]).await;
    let dir = std::env::temp_dir().join(unique("import"));
    std::fs::create_dir_all(&dir).unwrap();
    let now = rollboard::Timestamp::now_utc().unix_seconds();
    let good = dir.join("good.jsonl");
    let mut f = std::fs::File::create(&good).unwrap();
    writeln!(f, "{{\"member\":\"a\",\"delta\":3,\"at\":{now}}}").unwrap();
    writeln!(f, "{{\"member\":\"b\",\"at\":{}}}", now - 3 * 86_400).unwrap();
    writeln!(f, "{{\"member\":\"a\"}}").unwrap();
    drop(f);
    let run = |file: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_rollboard"))
            .args(["import", &b, file.to_str().unwrap()])
            .env("REDIS_URL", &redis.url)
            .output()
            .unwrap()
    };
    let out = run(&good);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.starts_with(&format!(
            "imported 2 events into {b} (1 too late, skipped; 0 rejected; 0 bad lines; 0 imported before by this run id) from 3 lines"
        )),
        "{summary}"
    );
    assert_eq!(ranking(&boards, &b, "24h").await.get("a"), Some(&4));

    // Wrong files: each refused with its line named, and the board untouched.
    let before = ranking(&boards, &b, "24h").await;
    for (name, text, error) in [
        (
            "bad.csv",
            "member,delta,at\na,1,\nb,1,\nc,1,yesterday\n",
            "line 4: at \"yesterday\" is not unix seconds",
        ),
        (
            "prose.csv",
            "this is not json\n{\"member\":\"x\"}\n",
            "line 1: unknown column \"this is not json\"",
        ),
        ("json.csv", "{\"member\":\"x\"}\n", "line 1: unknown column"),
        ("headless.csv", "a,1\n", "line 1: unknown column \"a\""),
        (
            "short.csv",
            "member,delta\na,1\nb\n",
            "line 3: 1 fields, but the header has 2",
        ),
        (
            "prose.jsonl",
            "this is not json\n",
            "line 1: expected ident",
        ),
        (
            "broken.jsonl",
            "{\"member\":\"a\"}\n{\"member\":\"b\"\n",
            "line 2: EOF while parsing an object",
        ),
        (
            "delta.jsonl",
            "{\"member\":\"a\"}\n{\"member\":\"b\",\"delta\":\"two\"}\n",
            "line 2: invalid type: string \"two\", expected i64",
        ),
    ] {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let out = run(&file);
        assert_eq!(out.status.code(), Some(1), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with(&format!("rollboard: {error}"))
                && err.trim_end().ends_with("(nothing was imported)"),
            "{name}: {err}"
        );
        assert_eq!(ranking(&boards, &b, "24h").await, before, "{name}");
    }

    // The format is named or in the extension, never guessed.
    let unnamed = dir.join("events.txt");
    std::fs::write(&unnamed, "member\na\n").unwrap();
    let out = run(&unnamed);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        format!(
            "rollboard: cannot tell the format of {} from its extension: name it with \
             --format csv or --format jsonl (or name the file .csv or .jsonl)",
            unnamed.display()
        )
    );
    let stdin = Command::new(env!("CARGO_BIN_EXE_rollboard"))
        .args(["import", &b, "-"])
        .env("REDIS_URL", &redis.url)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&stdin.stderr).trim_end(),
        "rollboard: reading stdin needs --format csv or --format jsonl"
    );
    let named = Command::new(env!("CARGO_BIN_EXE_rollboard"))
        .args([
            "import",
            &b,
            unnamed.to_str().unwrap(),
            "--format",
            "csv",
            "--dry-run",
        ])
        .env("REDIS_URL", &redis.url)
        .output()
        .unwrap();
    assert!(named.status.success());
    assert_eq!(
        String::from_utf8_lossy(&named.stdout).trim_end(),
        format!(
            "dry run: 1 events in 2 lines would be imported into {b} (0 bad lines); nothing was written"
        )
    );
    assert_eq!(ranking(&boards, &b, "24h").await, before);
}

/// Likes with who gave them: on a board counting each contributor once per member, an
/// import counts distinct likers (events without `by` in full), as writes do.
const LIKES: &str = "member,by,delta\n\
                     post:1,u1,\n\
                     post:1,u1,\n\
                     post:1,u2,1\n\
                     post:1,u3,\n\
                     post:2,u1,\n\
                     post:2,u1,\n\
                     post:2,,\n\
                     post:3,u2,5\n\
                     post:3,u2,-1\n";

/// `{post:1: 3, post:2: 2, post:3: 1}`: 3 likers; 1 liker and one like without `by`;
/// one liker liking 5 times and taking one back.
fn distinct_likers() -> std::collections::BTreeMap<String, i64> {
    [("post:1", 3), ("post:2", 2), ("post:3", 1)]
        .into_iter()
        .map(|(m, s)| (m.to_owned(), s))
        .collect()
}

fn capped(slot: &str, windows: &[&str]) -> rollboard::BoardConfig {
    rollboard::BoardConfig::parse(slot, windows)
        .unwrap()
        .with_contributor_cap(Some(1))
        .unwrap()
}

#[tokio::test]
async fn an_import_with_a_by_column_counts_distinct_contributors_in_memory() {
    let boards = rollboard::Rollboard::with(
        std::sync::Arc::new(rollboard::MemoryStore::new()),
        std::sync::Arc::new(rollboard::ManualClock::new(crate::support::ts(START))),
        rollboard::Settings::default(),
    );
    boards
        .create("likes", capped("1h", &["1h", "24h"]))
        .await
        .unwrap();
    let csv = ImportOptions {
        format: Format::Csv,
        ..ImportOptions::default()
    };
    let report = import(
        &boards,
        "likes",
        std::io::Cursor::new(LIKES.as_bytes().to_vec()),
        csv,
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(
        (
            report.lines,
            report.events,
            report.imported,
            report.rejected
        ),
        (10, 9, 9, 0)
    );
    assert_eq!(ranking(&boards, "likes", "1h").await, distinct_likers());
    assert_eq!(ranking(&boards, "likes", "24h").await, distinct_likers());
    let u2 = boards.contributions("u2", None).await.unwrap();
    let members: Vec<(String, i64, i64)> = u2.boards[0].windows[1]
        .members
        .iter()
        .map(|c| (c.member.clone(), c.contributed, c.counted))
        .collect();
    assert_eq!(
        members,
        [("post:3".to_owned(), 4, 1), ("post:1".to_owned(), 1, 1)]
    );
}

#[tokio::test]
async fn the_cli_imports_a_by_column_counting_distinct_contributors() {
    let redis = TestRedis::start().await;
    let (boards, _clock) = boards(&redis).await;
    let b = unique("likes");
    boards.create(&b, capped("1h", &["24h"])).await.unwrap();
    let file = std::env::temp_dir().join(format!("{}.csv", unique("likes")));
    std::fs::write(&file, LIKES).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rollboard"))
        .args(["import", &b, file.to_str().unwrap()])
        .env("REDIS_URL", &redis.url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.starts_with(&format!(
            "imported 9 events into {b} (0 too late, skipped; 0 rejected; 0 bad lines; 0 imported before by this run id) from 10 lines"
        )),
        "{summary}"
    );
    assert_eq!(ranking(&boards, &b, "24h").await, distinct_likers());
}
