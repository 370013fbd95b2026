//! The jobs on compact boards (slot data in buckets, see `docs/compact-slots.md`, "Compact
//! slots"): import, export (and back into a plain and a compact board), history after
//! an import, and the legacy import, each exact.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rollboard::jobs::export::export;
use rollboard::jobs::import::{Format, ImportOptions, import};
use rollboard::{BoardConfig, Layout, ManualClock, RedisOptions, Rollboard, Settings};

use crate::legacy::{END, job, legacy_slots, legacy_stats, write_history};
use crate::support::{START, TestRedis, oracle, ranking, ts, unique};

/// A Rollboard whose boards are compact unless they name a layout, clock at `START`.
async fn compact_boards(redis: &TestRedis) -> (Rollboard, ManualClock) {
    let clock = ManualClock::new(ts(START));
    let options = RedisOptions {
        default_layout: Layout::Compact,
        ..RedisOptions::default()
    };
    let boards = Rollboard::with(
        redis.store_with(options).await,
        Arc::new(clock.clone()),
        Settings::default(),
    );
    (boards, clock)
}

/// How many slots of `board` have a geometry (are compact).
async fn compact_slots(redis: &TestRedis, board: &str) -> usize {
    let mut raw = redis.raw().await;
    redis::cmd("HLEN")
        .arg(format!("slotgeo_{{{board}}}"))
        .query_async(&mut raw)
        .await
        .unwrap()
}

#[tokio::test]
async fn import_export_and_history_are_exact_on_a_compact_board() {
    let redis = TestRedis::start().await;
    let (boards, _clock) = compact_boards(&redis).await;
    let b = unique("ci");
    boards
        .create(&b, BoardConfig::parse("1h", &["1h", "24h"]).unwrap())
        .await
        .unwrap();
    // 30,000 events over the last 26 hours: older than 24 h is too late; the rest lands
    // in slots frozen by the 1h window (their second stage) or in the current one.
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let mut text = String::new();
    let mut accepted = Vec::new();
    for _ in 0..30_000 {
        let member = format!("post:{}", rng.random_range(0..1_500));
        let delta: i64 = if rng.random_bool(0.9) { 2 } else { -1 };
        let at = START - rng.random_range(0..26 * 3600);
        text.push_str(&format!(
            "{{\"member\":\"{member}\",\"delta\":{delta},\"at\":{at}}}\n"
        ));
        let slot = at - at.rem_euclid(3600);
        if slot > START - 24 * 3600 {
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
    assert_eq!(report.imported, accepted.len() as u64);
    assert_eq!(
        compact_slots(&redis, &b).await,
        23,
        "every live slot is compact but the open one (written plain until it closes)"
    );
    let day = ranking(&boards, &b, "24h").await;
    assert_eq!(day, oracle(&accepted, START - 24 * 3600));
    assert_eq!(
        ranking(&boards, &b, "1h").await,
        oracle(&accepted, START - 3600)
    );
    // History: a member's value per slot.
    for member in ["post:0", "post:777", "post:1499"] {
        let mut expected = std::collections::BTreeMap::new();
        for (slot, m, delta) in &accepted {
            if m == member {
                *expected.entry(*slot).or_insert(0) += delta;
            }
        }
        expected.retain(|_, v| *v != 0);
        let history = boards.windowed(&b).history(member).await.unwrap();
        let got: std::collections::BTreeMap<i64, i64> =
            history.points.iter().map(|p| (p.slot, p.value)).collect();
        assert_eq!(got, expected, "{member}");
    }
    // The export imports back into a compact and a plain board.
    for layout in [Layout::Compact, Layout::Plain] {
        let mut out = Vec::new();
        let exported = export(
            &boards,
            &b,
            Some("24h".parse().unwrap()),
            None,
            Format::Json,
            &mut out,
        )
        .await
        .unwrap();
        assert_eq!(exported.entries, day.len() as u64);
        let copy = unique("cc");
        boards
            .create(
                &copy,
                BoardConfig::parse("1h", &["1h", "24h"])
                    .unwrap()
                    .with_layout(Some(layout)),
            )
            .await
            .unwrap();
        import(
            &boards,
            &copy,
            std::io::Cursor::new(out),
            ImportOptions::default(),
            |_| {},
        )
        .await
        .unwrap();
        assert_eq!(ranking(&boards, &copy, "24h").await, day, "{layout:?}");
        // The export's totals land in the open slot: plain on both layouts until it
        // closes (the retirer then compacts a compact board's).
        assert_eq!(compact_slots(&redis, &copy).await, 0, "{layout:?}");
        let stored = boards.board(&copy).await.unwrap();
        assert_eq!(stored.config.layout(), Some(layout));
    }
}

#[tokio::test]
async fn the_legacy_import_into_a_compact_board_gives_the_articles_totals() {
    let redis = TestRedis::start().await;
    let (boards, clock) = compact_boards(&redis).await;
    clock.set(ts(END));
    let mut conn = redis.raw().await;
    let name = unique("likes");
    write_history(
        &mut conn,
        &crate::dystats::DyStats::new(&name, 24, 1),
        40,
        7,
    )
    .await;
    let stats = legacy_stats(&mut conn, &name).await;
    let slots = legacy_slots(&mut conn, &name).await;
    let board = unique("all");
    let report = rollboard::jobs::legacy::import_legacy(
        &boards,
        &redis.url,
        &job(&name, &board, &["1h", "26h"]),
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!((report.slots, report.slots_too_late), (26, 0));
    // Every slot but the open one, written plain until it closes.
    assert_eq!(compact_slots(&redis, &board).await, 25);
    assert_eq!(ranking(&boards, &board, "26h").await, stats);
    // Every member's history is its legacy slot values.
    let member = stats.keys().next().unwrap();
    let expected: Vec<(i64, i64)> = slots
        .iter()
        .filter_map(|(slot, values)| values.get(member).map(|v| (*slot, *v)))
        .filter(|(_, v)| *v != 0)
        .collect();
    let history = boards.windowed(&board).history(member).await.unwrap();
    let got: Vec<(i64, i64)> = history.points.iter().map(|p| (p.slot, p.value)).collect();
    assert_eq!(got, expected);
}
