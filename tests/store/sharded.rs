//! Sharded boards (`"shards": K`): every read of a sharded board equals the same read of
//! a board of one shard fed the same events (the twin), on every store, and so do its
//! snapshots and its export (which imports back); the shards are hidden, created and
//! dropped with their board; its snapshots wait for its slowest shard; what a sharded
//! board cannot answer exactly is refused with a clear error.

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rollboard::SnapshotPass::{Done, Off, Waiting};
use rollboard::jobs::export::export;
use rollboard::jobs::import::{Format, ImportOptions, import};
use rollboard::{
    Aggregate, AroundOptions, BoardConfig, Error, Event, MemoryStore, Order, Rollboard, ScoreRange,
    SnapshotPolicy, SnapshotRange, Span, Store, Ties, TopPage,
};

use crate::support::{Harness, START, TestRedis, board_names, triples, unique};

on_every_store!(
    reads_of_a_sharded_board_equal_its_twins_with_competition_ties,
    reads_of_a_sharded_board_equal_its_twins_with_position_ties,
    reads_of_a_sharded_min_board_equal_its_twins,
    keyed_writes_apply_each_shards_part_once,
    shards_are_hidden_and_go_with_their_board,
    what_a_sharded_board_cannot_answer_exactly_is_refused,
);

/// Members written: enough that more than 1,000 are ranked, so pages past the first
/// thousand positions are found by the per-shard cut, not by merging the shards' tops.
const MEMBERS: u64 = 1_500;

async fn reads_of_a_sharded_board_equal_its_twins_with_competition_ties(h: Harness) {
    let config = BoardConfig::parse("1h", &["1h", "3h"]).unwrap();
    compare_twins(&h, config, 1).await;
}

async fn reads_of_a_sharded_board_equal_its_twins_with_position_ties(h: Harness) {
    let config = BoardConfig::parse("1h", &["1h", "3h"])
        .unwrap()
        .with_ties(Ties::Position);
    compare_twins(&h, config, 2).await;
}

async fn reads_of_a_sharded_min_board_equal_its_twins(h: Harness) {
    let config = BoardConfig::parse("1h", &["2h"])
        .unwrap()
        .with_aggregate(Aggregate::Min);
    compare_twins(&h, config, 3).await;
}

/// Feeds a board of one shard and one of 3 the same skewed events over three hours
/// (retiring in between), then asks both every read: pages from the top and the bottom
/// at offsets around and past the merge depth, score ranges, standings, ranks of a
/// list, pages around members, histories and the board's state.
async fn compare_twins(h: &Harness, config: BoardConfig, seed: u64) {
    let one = unique("one");
    let three = unique("three");
    let b = &h.boards;
    // The top 25 at each boundary: a tie group may be cut, as in a full page.
    let config = config.with_snapshots(Some(SnapshotPolicy::new(25, 10).unwrap()));
    b.create(&one, config.clone()).await.unwrap();
    let sharded = config.clone().with_shards(3).unwrap();
    b.create(&three, sharded.clone()).await.unwrap();
    assert_eq!(b.board(&three).await.unwrap().config, sharded);

    let mut rng = StdRng::seed_from_u64(seed);
    let sums = config.aggregate() == Aggregate::Sum;
    for hour in 0..3 {
        h.at(hour * 3600 + 60);
        for _ in 0..8 {
            let events: Vec<Event> = (0..400)
                .map(|_| {
                    // Skewed: low member numbers are written far more often.
                    let m = (rng.random_range(0.0f64..1.0).powi(2) * MEMBERS as f64) as u64;
                    let member = format!("post:{m}");
                    if sums {
                        let delta = if rng.random_bool(0.9) {
                            rng.random_range(1..4)
                        } else {
                            -1
                        };
                        Event::new(member, delta)
                    } else {
                        Event::value(member, rng.random_range(-5..40))
                    }
                })
                .collect();
            let a = b.windowed(&one).incr_batch(&events).await.unwrap();
            let s = b.windowed(&three).incr_batch(&events).await.unwrap();
            assert_eq!(a, s);
            assert_eq!(a.accepted, events.len());
        }
        let r1 = b.windowed(&one).retire(None).await.unwrap();
        let r3 = b.windowed(&three).retire(None).await.unwrap();
        assert_eq!(
            (
                r1.slots_retired > 0,
                r1.fields_subtracted,
                r1.members_zeroed
            ),
            (
                r3.slots_retired > 0,
                r3.fields_subtracted,
                r3.members_zeroed
            )
        );
        // Each boundary's snapshots, once (the first boundary is the board's creation).
        let (taken, again) = if hour == 0 {
            (Off, Off)
        } else {
            let windows = config.windows().len() as u64;
            (Done { appended: windows }, Done { appended: 0 })
        };
        for board in [&one, &three] {
            let first = b.windowed(board).take_snapshots().await.unwrap();
            let second = b.windowed(board).take_snapshots().await.unwrap();
            assert_eq!((first, second), (taken, again), "hour {hour}");
        }
    }

    let status = b.describe_board(&three).await.unwrap();
    let twin = b.describe_board(&one).await.unwrap();
    assert_eq!(status.config, sharded);
    for (w, t) in status.windows.iter().zip(&twin.windows) {
        assert_eq!(
            (w.members, w.ranked, w.from, w.to, w.lag_seconds),
            (t.members, t.ranked, t.from, t.to, t.lag_seconds)
        );
    }
    let ranked = twin.windows[0].ranked;
    assert!(ranked > 1_000, "only {ranked} ranked");
    for window in config.windows() {
        let range = SnapshotRange::new(None, None, None).unwrap();
        let a = b
            .windowed(&one)
            .snapshots(Some(*window), range)
            .await
            .unwrap();
        let s = b
            .windowed(&three)
            .snapshots(Some(*window), range)
            .await
            .unwrap();
        assert_eq!(s.snapshots, a.snapshots, "snapshots of {window}");
        let boundaries: Vec<i64> = s.snapshots.iter().map(|s| s.boundary).collect();
        assert_eq!(boundaries, [START + 7200, START + 3600]);
        assert!(s.snapshots.iter().all(|s| s.entries.len() >= 25));
    }

    for window in config.windows() {
        let w = Some(*window);
        for order in [Order::Desc, Order::Asc] {
            for (offset, limit) in [
                (0, 10),
                (0, 1000),
                (3, 7),
                (990, 20),
                (1000, 10),
                (1003, 100),
                (ranked - 5, 10),
                (ranked, 10),
            ] {
                let all = ScoreRange::ALL;
                let a = b
                    .windowed(&one)
                    .ranking(w, all, order, offset, limit)
                    .await
                    .unwrap();
                let s = b
                    .windowed(&three)
                    .ranking(w, all, order, offset, limit)
                    .await
                    .unwrap();
                same_page(&a, &s, &format!("{window} {order:?} {offset}+{limit}"));
            }
            for (min, max, offset) in [(3, 9, 0), (3, 9, 40), (1, 2, 700), (20, 20, 0)] {
                let range = ScoreRange::new(Some(min), Some(max)).unwrap();
                let a = b
                    .windowed(&one)
                    .ranking(w, range, order, offset, 50)
                    .await
                    .unwrap();
                let s = b
                    .windowed(&three)
                    .ranking(w, range, order, offset, 50)
                    .await
                    .unwrap();
                same_page(
                    &a,
                    &s,
                    &format!("{window} {min}..={max} {order:?} {offset}"),
                );
            }
        }
        let members: Vec<String> = (0..MEMBERS + 2)
            .step_by(7)
            .map(|m| format!("post:{m}"))
            .chain(["post:0".to_string(), "never".to_string()])
            .collect();
        let a = b.windowed(&one).ranks(&members, w).await.unwrap();
        let s = b.windowed(&three).ranks(&members, w).await.unwrap();
        assert_eq!(a.entries, s.entries, "ranks in {window}");
        assert!(a.entries.iter().filter(|e| e.rank.is_some()).count() > 100);
        for member in members.iter().step_by(5) {
            let a = b.windowed(&one).score(member, w).await.unwrap();
            let s = b.windowed(&three).score(member, w).await.unwrap();
            assert_eq!(a, s, "{member} in {window}");
            for (n, fill, order) in [
                (0, false, Order::Desc),
                (3, false, Order::Asc),
                (5, true, Order::Desc),
            ] {
                let options = AroundOptions { fill, order };
                let a = b
                    .windowed(&one)
                    .around(member, w, n, options)
                    .await
                    .unwrap();
                let s = b
                    .windowed(&three)
                    .around(member, w, n, options)
                    .await
                    .unwrap();
                match (a, s) {
                    (Some(a), Some(s)) => same_page(&a, &s, &format!("around {member}")),
                    (a, s) => assert_eq!(a.is_none(), s.is_none(), "around {member}"),
                }
            }
        }
    }
    // An export reads the whole ranking in pages of 1,000 (merged, then cut); imported
    // into another sharded board, it exports back the same.
    let exported = export_json(b, &three).await;
    assert_eq!(exported, export_json(b, &one).await);
    assert_eq!(exported.lines().count() as u64, ranked);
    let copy = unique("copy");
    b.create(&copy, sharded.clone()).await.unwrap();
    let input = std::io::Cursor::new(exported.clone().into_bytes());
    let report = import(b, &copy, input, ImportOptions::default(), |_| {})
        .await
        .unwrap();
    assert_eq!((report.imported, report.rejected), (ranked, 0));
    assert_eq!(export_json(b, &copy).await, exported);
    b.drop_board(&copy).await.unwrap();
    for m in [0, 1, 17, 900] {
        let member = format!("post:{m}");
        let a = b.windowed(&one).history(&member).await.unwrap();
        let s = b.windowed(&three).history(&member).await.unwrap();
        assert_eq!(a, s, "history of {member}");
    }
    // Member data, kept by each member's shard, read beside a page: on 12 of the top 20,
    // one deleted again.
    let leaders = b.windowed(&one).top(None, 0, 12).await.unwrap().entries;
    for (m, leader) in leaders.iter().enumerate() {
        let data = rollboard::MemberData::parse(&format!(r#"{{"title":"post {m}"}}"#)).unwrap();
        for board in [&one, &three] {
            b.windowed(board)
                .set_member_data(&leader.member, data.clone())
                .await
                .unwrap();
        }
    }
    for board in [&one, &three] {
        assert!(
            b.windowed(board)
                .delete_member_data(&leaders[3].member)
                .await
                .unwrap()
        );
    }
    let a = b
        .windowed(&one)
        .with_data(b.windowed(&one).top(None, 0, 20).await.unwrap())
        .await
        .unwrap();
    let s = b
        .windowed(&three)
        .with_data(b.windowed(&three).top(None, 0, 20).await.unwrap())
        .await
        .unwrap();
    assert_eq!(a.entries, s.entries);
    let with_data = s
        .entries
        .iter()
        .filter(|e| matches!(e.data, Some(Some(_))))
        .count();
    assert_eq!(with_data, 11);
    // A member removed from its shard is gone from every read.
    for board in [&one, &three] {
        b.windowed(board).remove_member("post:0").await.unwrap();
    }
    let a = b.windowed(&one).top(None, 0, 50).await.unwrap();
    let s = b.windowed(&three).top(None, 0, 50).await.unwrap();
    same_page(&a, &s, "after a removal");
    assert_eq!(
        b.windowed(&three).score("post:0", None).await.unwrap(),
        None
    );
}

/// `board`'s first window's ranking exported as JSON lines.
async fn export_json(boards: &Rollboard, board: &str) -> String {
    let mut out = Vec::new();
    export(boards, board, None, None, Format::Json, &mut out)
        .await
        .unwrap();
    String::from_utf8(out).unwrap()
}

/// The same entries (ranks, members, scores) and coverage.
fn same_page(a: &TopPage, s: &TopPage, what: &str) {
    assert_eq!(triples(&s.entries), triples(&a.entries), "{what}");
    assert_eq!(
        (s.window, s.from, s.to, s.behind),
        (a.window, a.from, a.to, a.behind),
        "{what}"
    );
}

async fn keyed_writes_apply_each_shards_part_once(h: Harness) {
    let board = unique("keyed");
    let config = BoardConfig::parse("1h", &["1h"])
        .unwrap()
        .with_shards(4)
        .unwrap();
    h.boards.create(&board, config).await.unwrap();
    let events: Vec<Event> = (0..40)
        .map(|m| Event::new(format!("m{m}"), m + 1))
        .collect();
    let first = h
        .boards
        .windowed(&board)
        .write_idempotent(&events, "k-1")
        .await
        .unwrap();
    let again = h
        .boards
        .windowed(&board)
        .write_idempotent(&events, "k-1")
        .await
        .unwrap();
    assert_eq!((first.accepted, again.accepted), (40, 40));
    let page = h.boards.windowed(&board).top(None, 0, 100).await.unwrap();
    let expected: Vec<(u64, String, i64)> = (0..40)
        .rev()
        .map(|m| (40 - m as u64, format!("m{m}"), m + 1))
        .collect();
    assert_eq!(triples(&page.entries), expected);
    let other: Vec<Event> = vec![Event::new("m1", 5)];
    let err = h
        .boards
        .windowed(&board)
        .write_idempotent(&other, "k-1")
        .await
        .unwrap_err();
    assert_eq!(err.code(), "idempotency_key_reused");
    // A batch with a token, replayed: applied once.
    let once = h
        .boards
        .windowed(&board)
        .incr_batch_once(&events, "job-7")
        .await
        .unwrap();
    assert_eq!(once.map(|o| o.accepted), Some(40));
    assert_eq!(
        h.boards
            .windowed(&board)
            .incr_batch_once(&events, "job-7")
            .await
            .unwrap(),
        None
    );
    let top = h.boards.windowed(&board).top(None, 0, 1).await.unwrap();
    assert_eq!(triples(&top.entries), [(1, "m39".to_string(), 80)]);
}

async fn shards_are_hidden_and_go_with_their_board(h: Harness) {
    let board = unique("hidden");
    let config = BoardConfig::parse("1h", &["1h", "2h"])
        .unwrap()
        .with_shards(3)
        .unwrap();
    h.boards.create(&board, config.clone()).await.unwrap();
    h.boards.windowed(&board).incr("a", 5, None).await.unwrap();
    let listed: Vec<String> = board_names(&h.boards).await;
    assert!(listed.contains(&board));
    assert!(listed.iter().all(|n| !n.contains('#')), "{listed:?}");
    // The same config again: the board as it was.
    let again = h.boards.create(&board, config.clone()).await.unwrap();
    assert!(matches!(again, rollboard::Created::Existing(_)));
    // Another shard count is a conflict that names it.
    let err = h
        .boards
        .create(&board, config.clone().with_shards(2).unwrap())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("shards: stored 3, asked 2"),
        "{err}"
    );
    // A larger window extends every shard.
    let wider = BoardConfig::parse("1h", &["1h", "2h", "4h"])
        .unwrap()
        .with_shards(3)
        .unwrap();
    h.boards.create(&board, wider.clone()).await.unwrap();
    h.boards.windowed(&board).build_windows().await.unwrap();
    let in_4h = h
        .boards
        .windowed(&board)
        .score("a", Some(Span::parse("4h").unwrap()))
        .await
        .unwrap();
    assert_eq!(in_4h.map(|s| (s.score, s.rank)), Some((5, Some(1))));
    // Dropped with its shards: a new board of the name starts empty, even made at the
    // same millisecond.
    h.boards.drop_board(&board).await.unwrap();
    h.boards.create(&board, config).await.unwrap();
    assert_eq!(
        h.boards
            .windowed(&board)
            .top(None, 0, 10)
            .await
            .unwrap()
            .entries,
        []
    );
    assert_eq!(
        h.boards.windowed(&board).score("a", None).await.unwrap(),
        None
    );
    h.boards.drop_board(&board).await.unwrap();
    assert!(!board_names(&h.boards).await.contains(&board));
}

async fn what_a_sharded_board_cannot_answer_exactly_is_refused(h: Harness) {
    let base = BoardConfig::parse("1h", &["1h"]).unwrap();
    let name = unique("refused");
    let dense = base.clone().with_ties(Ties::Dense).with_shards(2).unwrap();
    let err = h.boards.create(&name, dense).await.unwrap_err();
    assert_eq!(err.code(), "invalid_config");
    assert!(err.to_string().contains("not dense"), "{err}");
    for shards in [0, 33] {
        let err = base.clone().with_shards(shards).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("invalid board config: shards must be between 1 and 32, got {shards}")
        );
    }
    h.boards
        .create(&name, base.with_shards(2).unwrap())
        .await
        .unwrap();
    let events = [Event::new("a", 1)];
    let err = h
        .boards
        .windowed(&name)
        .incr_batch_standing(&events, None)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ShardedUnsupported { .. }), "{err:?}");
    assert_eq!(err.code(), "sharded_unsupported");
    assert_eq!(
        h.boards
            .windowed(&name)
            .top(None, 0, 10)
            .await
            .unwrap()
            .entries,
        []
    );
}

/// On a cluster of three masters, a board of 3 shards has one shard on each master and
/// a board of 6 two on each: its writes spread over the masters.
#[tokio::test]
async fn the_shards_of_a_board_land_on_every_master_of_a_cluster() {
    let cluster = crate::test_cluster::TestCluster::shared();
    let h = Harness::cluster().await;
    let raw = rollboard::RedisStore::connect_cluster(&cluster.urls)
        .await
        .unwrap();
    for shards in [3u32, 6] {
        let board = unique("spread");
        let config = BoardConfig::parse("1h", &["1h"])
            .unwrap()
            .with_shards(shards)
            .unwrap();
        h.boards.create(&board, config).await.unwrap();
        let events: Vec<Event> = (0..300).map(|m| Event::new(format!("m{m}"), 1)).collect();
        h.boards.windowed(&board).incr_batch(&events).await.unwrap();
        // The store underneath lists the shards as boards of their own.
        let mut per_master = std::collections::BTreeMap::<u16, u32>::new();
        let mut members = 0;
        for b in Store::list_boards(&raw).await.unwrap() {
            let Some(b) = b.windowed() else {
                continue; // another test's trending board
            };
            let name = b.name.as_str();
            if name == board || name.starts_with(&format!("{board}#")) {
                let owner = cluster.owner(cluster.keyslot(&format!("board_{{{name}}}")));
                *per_master.entry(owner).or_default() += 1;
                let top = Store::top(&raw, b.at(0, h.now()), rollboard::PageQuery::top(0, 1000))
                    .await
                    .unwrap();
                // Each shard holds about a third (a sixth) of the members.
                let held = top.entries.len() as u32;
                assert!(held > 300 / shards / 2, "{name} holds {held}");
                members += held;
            }
        }
        assert_eq!(members, 300);
        assert_eq!(per_master.len(), 3, "{per_master:?}");
        assert!(
            per_master.values().all(|n| *n == shards / 3),
            "{per_master:?}"
        );
        h.boards.drop_board(&board).await.unwrap();
    }
}

/// Shards whose board is gone (a drop cut short between the board and its shards) are
/// dropped by the next listing of boards, on the memory store and on Redis.
#[tokio::test]
async fn shards_left_by_a_drop_cut_short_are_dropped_by_the_next_listing() {
    let redis = TestRedis::start().await;
    for raw in [
        Arc::new(MemoryStore::new()) as Arc<dyn Store>,
        redis.store().await,
    ] {
        let boards = crate::support::with_clock(raw.clone(), &crate::support::clock());
        let board = unique("orphans");
        let config = BoardConfig::parse("1h", &["1h"])
            .unwrap()
            .with_shards(3)
            .unwrap();
        boards.create(&board, config).await.unwrap();
        boards.windowed(&board).incr("a", 1, None).await.unwrap();
        let prefix = format!("{board}#");
        let shards = |listed: Vec<rollboard::AnyBoard>| {
            listed
                .iter()
                .filter(|b| b.name().as_str().starts_with(&prefix))
                .count()
        };
        assert_eq!(shards(raw.list_boards().await.unwrap()), 2);
        // The board alone dropped, as a drop that stopped before its shards leaves it.
        let name = rollboard::BoardName::parse(&board).unwrap();
        assert!(raw.drop_board(&name).await.unwrap());
        assert_eq!(shards(raw.list_boards().await.unwrap()), 2);
        assert!(!board_names(&boards).await.contains(&board));
        assert_eq!(
            shards(raw.list_boards().await.unwrap()),
            0,
            "{}",
            raw.kind()
        );
    }
}

/// A sharded board's snapshot at a boundary waits until every shard is retired through
/// it, then holds the board's merged top, once; the shards keep no snapshots of their
/// own. On the memory store and on Redis, retiring the shards one by one underneath.
#[tokio::test]
async fn a_sharded_boards_snapshot_waits_for_its_slowest_shard() {
    let redis = TestRedis::start().await;
    for raw in [
        Arc::new(MemoryStore::new()) as Arc<dyn Store>,
        redis.store().await,
    ] {
        let clock = crate::support::clock();
        let boards = crate::support::with_clock(raw.clone(), &clock);
        let board = unique("snapshots");
        let config = BoardConfig::parse("1h", &["1h", "2h"])
            .unwrap()
            .with_snapshots(Some(SnapshotPolicy::new(4, 10).unwrap()))
            .with_shards(3)
            .unwrap();
        boards.create(&board, config.clone()).await.unwrap();
        let events = |n: u64, delta: fn(u64) -> i64| -> Vec<Event> {
            (0..n)
                .map(|m| Event::new(format!("m{m}"), delta(m)))
                .collect()
        };
        boards
            .windowed(&board)
            .incr_batch(&events(40, |m| (m % 7 + 1) as i64))
            .await
            .unwrap();
        // An hour on: more events, and the first slot leaves the 1h window.
        clock.set(crate::support::ts(START + 3600));
        boards
            .windowed(&board)
            .incr_batch(&events(20, |m| (m % 5 + 1) as i64))
            .await
            .unwrap();
        let prefix = format!("{board}#");
        let listed = raw.list_boards().await.unwrap();
        let shards: Vec<&rollboard::Board> = listed
            .iter()
            .filter_map(rollboard::AnyBoard::windowed)
            .filter(|b| b.name.as_str() == board || b.name.as_str().starts_with(&prefix))
            .collect();
        assert_eq!(shards.len(), 3);
        for (i, shard) in shards.iter().enumerate() {
            let pass = boards.windowed(&board).take_snapshots().await.unwrap();
            assert_eq!(pass, Waiting, "{i} of 3 shards retired, {}", raw.kind());
            raw.retire(shard, rollboard::Clock::now(&clock), None)
                .await
                .unwrap();
        }
        assert_eq!(
            boards.windowed(&board).take_snapshots().await.unwrap(),
            Done { appended: 2 }
        );
        assert_eq!(
            boards.windowed(&board).take_snapshots().await.unwrap(),
            Done { appended: 0 }
        );
        // Each window's top 4 (a tie group cut keeps its smallest members), as read.
        let expected = [
            (
                "1h",
                vec![(1, "m14", 5), (1, "m19", 5), (1, "m4", 5), (1, "m9", 5)],
            ),
            (
                "2h",
                vec![(1, "m13", 11), (1, "m19", 11), (3, "m4", 10), (4, "m12", 9)],
            ),
        ];
        for (window, leaders) in expected {
            let w = Some(Span::parse(window).unwrap());
            let range = SnapshotRange::new(None, None, None).unwrap();
            let taken = boards
                .windowed(&board)
                .snapshots(w, range)
                .await
                .unwrap()
                .snapshots;
            assert_eq!(taken.len(), 1, "{window} on {}", raw.kind());
            assert_eq!(taken[0].boundary, START + 3600);
            let leaders: Vec<(u64, String, i64)> = leaders
                .into_iter()
                .map(|(r, m, s)| (r, m.into(), s))
                .collect();
            assert_eq!(triples(&taken[0].entries), leaders, "{window}");
            let top = boards.windowed(&board).top(w, 0, 4).await.unwrap();
            assert_eq!(taken[0].entries, top.entries);
        }
        for shard in &shards {
            let kept = raw
                .snapshots(shard, 0, SnapshotRange::new(None, None, None).unwrap())
                .await
                .unwrap();
            assert_eq!(kept.len(), usize::from(shard.name.as_str() == board));
        }
        // The policy taken off the live board by another process: the next boundary
        // takes nothing, even through this one's copy of the config.
        let other = crate::support::with_clock(raw.clone(), &clock);
        other
            .create(&board, config.clone().with_snapshots(None))
            .await
            .unwrap();
        clock.set(crate::support::ts(START + 7200));
        boards.windowed(&board).retire(None).await.unwrap();
        assert_eq!(boards.windowed(&board).take_snapshots().await.unwrap(), Off);
    }
}
