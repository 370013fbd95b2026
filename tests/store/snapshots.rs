//! Period snapshots (`"snapshots":{"top":N,"keep":K}`), on both stores and a cluster:
//! exactly one snapshot per window and boundary with two processes racing to take it,
//! each equal to the window's top read at that moment (the oracle), none before
//! retirement through the boundary is complete, trimmed to `keep`, listed newest first
//! by window, range and limit; the option is set, changed and removed on a live board;
//! a drop removes the snapshots.

use rollboard::{
    BoardConfig, Error, Rollboard, SnapshotPass, SnapshotPolicy, SnapshotRange, Span, Ties,
};

use crate::support::{Harness, START, triples, unique, with_clock};

on_every_store!(
    one_snapshot_per_boundary_with_two_processes_racing,
    nothing_is_taken_before_retirement_through_the_boundary,
    snapshots_are_trimmed_to_keep_and_listed_by_range_and_limit,
    the_option_is_set_changed_and_removed_on_a_live_board,
    an_older_boundary_is_never_appended_after_a_newer_one,
    a_drop_removes_the_snapshots,
    the_delivery_cursor_only_moves_forward_and_lists_oldest_first,
);

const HOUR: i64 = 3600;

fn config(windows: &[&str], top: u32, keep: u32) -> BoardConfig {
    BoardConfig::parse("1h", windows)
        .unwrap()
        .with_snapshots(Some(SnapshotPolicy::new(top, keep).unwrap()))
}

fn span(text: &str) -> Span {
    Span::parse(text).unwrap()
}

fn all(limit: u64) -> SnapshotRange {
    SnapshotRange::new(None, None, Some(limit)).unwrap()
}

/// The boundaries listed for `window`, newest first.
async fn boundaries(
    boards: &Rollboard,
    name: &str,
    window: &str,
    range: SnapshotRange,
) -> Vec<i64> {
    boards
        .windowed(name)
        .snapshots(Some(span(window)), range)
        .await
        .unwrap()
        .snapshots
        .iter()
        .map(|s| s.boundary)
        .collect()
}

/// Retires the board, then takes its snapshots, as the retirer's pass does.
async fn pass(boards: &Rollboard, name: &str) -> SnapshotPass {
    assert!(boards.windowed(name).retire(None).await.unwrap().complete);
    boards.windowed(name).take_snapshots().await.unwrap()
}

/// On Redis, how many of the board's `1h` and `2h` snapshot keys exist.
async fn snapshot_keys(h: &Harness, name: &str) -> Option<i64> {
    let redis = h.redis.as_ref()?;
    let mut raw = redis.raw().await;
    let exists: i64 = ::redis::cmd("EXISTS")
        .arg(format!("snap_{{{name}}}_3600"))
        .arg(format!("snap_{{{name}}}_7200"))
        .query_async(&mut raw)
        .await
        .unwrap();
    Some(exists)
}

fn appended(pass: SnapshotPass) -> u64 {
    match pass {
        SnapshotPass::Done { appended } => appended,
        other => panic!("expected a done pass, got {other:?}"),
    }
}

async fn one_snapshot_per_boundary_with_two_processes_racing(h: Harness) {
    let name = unique("s");
    let config = config(&["1h", "3h"], 3, 100).with_ties(Ties::Dense);
    h.boards.create(&name, config).await.unwrap();
    // A second process on the same store, with its own board cache.
    let other = with_clock(h.boards.store().clone(), &h.clock);
    // The creation slot is not a boundary the board lived through.
    assert_eq!(
        h.boards.windowed(&name).take_snapshots().await.unwrap(),
        SnapshotPass::Off
    );
    let events: [&[(&str, i64)]; 4] = [
        &[("a", 5), ("b", 3), ("c", 3), ("d", 1)],
        &[("d", 9), ("e", 2)],
        &[("a", 1), ("f", 7), ("g", -4)],
        &[("b", 2), ("c", 2)],
    ];
    for (k, batch) in events.iter().enumerate() {
        h.at(k as i64 * HOUR + 10);
        for (member, delta) in *batch {
            h.boards
                .windowed(&name)
                .incr(member, *delta, None)
                .await
                .unwrap();
        }
        // Just past the next boundary, both processes retire and snapshot at once.
        let boundary = START + (k as i64 + 1) * HOUR;
        h.at((k as i64 + 1) * HOUR + 1);
        let (a, b) = tokio::join!(pass(&h.boards, &name), pass(&other, &name));
        assert_eq!(appended(a) + appended(b), 2, "boundary {k}: one per window");
        // The newest snapshot of each window is the window's top right now.
        for window in ["1h", "3h"] {
            let oracle = h
                .boards
                .windowed(&name)
                .top(Some(span(window)), 0, 3)
                .await
                .unwrap();
            let listed = h
                .boards
                .windowed(&name)
                .snapshots(Some(span(window)), all(1))
                .await
                .unwrap();
            assert_eq!(listed.window, span(window));
            let newest = &listed.snapshots[0];
            assert_eq!(newest.boundary, boundary);
            assert_eq!(newest.taken_ms, (boundary + 1) * 1000);
            assert_eq!(
                triples(&newest.entries),
                triples(&oracle.entries),
                "{window}"
            );
        }
    }
    // Exactly one snapshot per boundary, newest first, in every window.
    let expected: Vec<i64> = (1..=4).rev().map(|k| START + k * HOUR).collect();
    assert_eq!(boundaries(&h.boards, &name, "3h", all(100)).await, expected);
    assert_eq!(boundaries(&other, &name, "1h", all(100)).await, expected);
    // The 3h window at the last boundary: slots 2 and 3 (and the empty slot 4), dense
    // ranks, ties ascending by member. (At boundary 2 the tie b, c = 3 was cut by top
    // 3: the oracle above kept b, as the snapshot did.)
    let last = h
        .boards
        .windowed(&name)
        .snapshots(Some(span("3h")), all(1))
        .await
        .unwrap();
    assert_eq!(
        triples(&last.snapshots[0].entries),
        [
            (1, "f".to_owned(), 7),
            (2, "b".to_owned(), 2),
            (2, "c".to_owned(), 2),
        ]
    );
    // Asked again at the same boundary: nothing more.
    assert_eq!(
        h.boards.windowed(&name).take_snapshots().await.unwrap(),
        SnapshotPass::Done { appended: 0 }
    );
}

async fn nothing_is_taken_before_retirement_through_the_boundary(h: Harness) {
    let name = unique("s");
    h.boards
        .create(&name, config(&["1h", "3h"], 10, 10))
        .await
        .unwrap();
    h.at(10);
    h.boards.windowed(&name).incr("a", 4, None).await.unwrap();
    h.at(HOUR + 1);
    // Slot START has left the 1h window but is not retired yet.
    assert_eq!(
        h.boards.windowed(&name).take_snapshots().await.unwrap(),
        SnapshotPass::Waiting
    );
    assert_eq!(
        boundaries(&h.boards, &name, "1h", all(10)).await,
        [] as [i64; 0]
    );
    assert_eq!(
        pass(&h.boards, &name).await,
        SnapshotPass::Done { appended: 2 }
    );
    let one = h
        .boards
        .windowed(&name)
        .snapshots(None, all(10))
        .await
        .unwrap();
    assert_eq!(one.window, span("1h"));
    assert!(
        one.snapshots[0].entries.is_empty(),
        "a retired the 1h window"
    );
    let three = h
        .boards
        .windowed(&name)
        .snapshots(Some(span("3h")), all(10))
        .await
        .unwrap();
    assert_eq!(
        triples(&three.snapshots[0].entries),
        [(1, "a".to_owned(), 4)]
    );
}

async fn snapshots_are_trimmed_to_keep_and_listed_by_range_and_limit(h: Harness) {
    let name = unique("s");
    h.boards
        .create(&name, config(&["1h", "2h"], 2, 3))
        .await
        .unwrap();
    for k in 1..=5 {
        h.at(k * HOUR - 100);
        h.boards.windowed(&name).incr("a", k, None).await.unwrap();
        h.boards.windowed(&name).incr("b", 1, None).await.unwrap();
        h.boards
            .windowed(&name)
            .incr("c", 10 - k, None)
            .await
            .unwrap();
        h.at(k * HOUR);
        assert_eq!(appended(pass(&h.boards, &name).await), 2);
    }
    let at = |k: i64| START + k * HOUR;
    // keep = 3: boundaries 3, 4, 5 are left.
    assert_eq!(
        boundaries(&h.boards, &name, "2h", all(100)).await,
        [at(5), at(4), at(3)]
    );
    let range = |from, to, limit| SnapshotRange::new(from, to, limit).unwrap();
    assert_eq!(
        boundaries(&h.boards, &name, "2h", range(Some(at(4)), None, None)).await,
        [at(5), at(4)]
    );
    assert_eq!(
        boundaries(&h.boards, &name, "2h", range(None, Some(at(4)), None)).await,
        [at(4), at(3)]
    );
    assert_eq!(
        boundaries(
            &h.boards,
            &name,
            "2h",
            range(Some(at(4)), Some(at(4)), None)
        )
        .await,
        [at(4)]
    );
    assert_eq!(
        boundaries(&h.boards, &name, "2h", range(None, None, Some(2))).await,
        [at(5), at(4)]
    );
    assert_eq!(
        boundaries(&h.boards, &name, "2h", range(Some(at(6)), None, None)).await,
        [] as [i64; 0]
    );
    // The events of round k land in slot k - 1, so the 2h window at boundary 4 holds
    // slot 3 (a 4, b 1, c 6) and the empty slot 4.
    let four = h
        .boards
        .windowed(&name)
        .snapshots(Some(span("2h")), range(Some(at(4)), Some(at(4)), None))
        .await
        .unwrap();
    assert_eq!(
        triples(&four.snapshots[0].entries),
        [(1, "c".to_owned(), 6), (2, "a".to_owned(), 4)]
    );
    let err = h
        .boards
        .windowed(&name)
        .snapshots(Some(span("3h")), all(1))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "window_not_found");
    let err = h
        .boards
        .windowed("missing")
        .snapshots(None, all(1))
        .await
        .unwrap_err();
    assert_eq!(err, Error::BoardNotFound("missing".into()));
}

async fn the_option_is_set_changed_and_removed_on_a_live_board(h: Harness) {
    let name = unique("s");
    let plain = BoardConfig::parse("1h", &["1h", "2h"]).unwrap();
    h.boards.create(&name, plain.clone()).await.unwrap();
    h.at(HOUR);
    assert_eq!(pass(&h.boards, &name).await, SnapshotPass::Off);
    // Added to the live board: same incarnation, shown in its config.
    let with = plain
        .clone()
        .with_snapshots(Some(SnapshotPolicy::new(5, 2).unwrap()));
    let before = h.boards.board(&name).await.unwrap();
    let created = h.boards.create(&name, with.clone()).await.unwrap();
    assert!(
        matches!(created, rollboard::Created::Existing(_)),
        "{created:?}"
    );
    let created = created.board().windowed().unwrap();
    assert_eq!(created.version, before.version);
    assert_eq!(created.config, with);
    // Another process sees it through the store.
    let other = with_clock(h.boards.store().clone(), &h.clock);
    assert_eq!(other.board(&name).await.unwrap().config, with);
    assert_eq!(
        h.boards
            .describe_board(&name)
            .await
            .unwrap()
            .config
            .snapshots(),
        with.snapshots()
    );
    assert_eq!(
        appended(other.windowed(&name).take_snapshots().await.unwrap()),
        2
    );
    // A conflicting PUT changes nothing, the policy included.
    let conflicting = BoardConfig::parse("1h", &["1h", "3h"])
        .unwrap()
        .with_snapshots(Some(SnapshotPolicy::new(9, 9).unwrap()));
    let err = h.boards.create(&name, conflicting).await.unwrap_err();
    assert_eq!(err.code(), "board_conflict");
    let third = with_clock(h.boards.store().clone(), &h.clock);
    assert_eq!(third.board(&name).await.unwrap().config, with);
    // Removed: no more snapshots; the ones taken stay listed.
    h.boards.create(&name, plain.clone()).await.unwrap();
    let fourth = with_clock(h.boards.store().clone(), &h.clock);
    assert_eq!(fourth.board(&name).await.unwrap().config, plain);
    h.at(2 * HOUR);
    assert_eq!(pass(&fourth, &name).await, SnapshotPass::Off);
    assert_eq!(
        boundaries(&h.boards, &name, "2h", all(10)).await,
        [START + HOUR]
    );
}

async fn an_older_boundary_is_never_appended_after_a_newer_one(h: Harness) {
    let name = unique("s");
    h.boards
        .create(&name, config(&["1h"], 1, 10))
        .await
        .unwrap();
    h.at(2 * HOUR);
    assert_eq!(appended(pass(&h.boards, &name).await), 1);
    // A process whose clock is an hour behind tries boundary 1: refused by the ID.
    let behind = rollboard::ManualClock::new(crate::support::ts(START + HOUR + 5));
    let late = with_clock(h.boards.store().clone(), &behind);
    assert_eq!(
        late.windowed(&name).take_snapshots().await.unwrap(),
        SnapshotPass::Done { appended: 0 }
    );
    assert_eq!(
        boundaries(&h.boards, &name, "1h", all(10)).await,
        [START + 2 * HOUR]
    );
}

async fn a_drop_removes_the_snapshots(h: Harness) {
    let name = unique("s");
    h.boards
        .create(&name, config(&["1h", "2h"], 1, 10))
        .await
        .unwrap();
    h.at(10);
    h.boards.windowed(&name).incr("a", 1, None).await.unwrap();
    h.at(HOUR);
    assert_eq!(appended(pass(&h.boards, &name).await), 2);
    if let Some(count) = snapshot_keys(&h, &name).await {
        assert_eq!(count, 2);
    }
    h.boards.drop_board(&name).await.unwrap();
    if let Some(count) = snapshot_keys(&h, &name).await {
        assert_eq!(count, 0);
    }
    // Re-created, the board starts with no snapshots.
    h.boards
        .create(&name, config(&["1h", "2h"], 1, 10))
        .await
        .unwrap();
    assert_eq!(
        boundaries(&h.boards, &name, "2h", all(10)).await,
        [] as [i64; 0]
    );
}

async fn the_delivery_cursor_only_moves_forward_and_lists_oldest_first(h: Harness) {
    let name = unique("s");
    h.boards
        .create(&name, config(&["1h", "2h"], 1, 10))
        .await
        .unwrap();
    for k in 1..=3 {
        h.at(k * HOUR);
        assert_eq!(appended(pass(&h.boards, &name).await), 2);
    }
    let two = Some(span("2h"));
    assert_eq!(
        h.boards
            .windowed(&name)
            .snapshot_cursor(two, None)
            .await
            .unwrap(),
        None
    );
    // Oldest first, from a cursor on: what a deliverer reads next.
    let after = |cursor: i64| {
        SnapshotRange::new(Some(cursor + 1), None, Some(2))
            .unwrap()
            .oldest_first()
    };
    assert_eq!(
        boundaries(&h.boards, &name, "2h", after(START)).await,
        [START + HOUR, START + 2 * HOUR]
    );
    h.boards
        .windowed(&name)
        .snapshot_cursor(two, Some(START + 2 * HOUR))
        .await
        .unwrap();
    // A slower process that delivered an older one leaves the newer cursor, and is
    // told so.
    let kept = h
        .boards
        .windowed(&name)
        .snapshot_cursor(two, Some(START + HOUR));
    assert_eq!(kept.await.unwrap(), Some(START + 2 * HOUR));
    assert_eq!(
        h.boards
            .windowed(&name)
            .snapshot_cursor(two, None)
            .await
            .unwrap(),
        Some(START + 2 * HOUR)
    );
    assert_eq!(
        h.boards
            .windowed(&name)
            .snapshot_cursor(None, None)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        boundaries(&h.boards, &name, "2h", after(START + 2 * HOUR)).await,
        [START + 3 * HOUR]
    );
    // Dropped and re-created, the board starts with no cursor.
    h.boards.drop_board(&name).await.unwrap();
    h.boards
        .create(&name, config(&["1h", "2h"], 1, 10))
        .await
        .unwrap();
    assert_eq!(
        h.boards
            .windowed(&name)
            .snapshot_cursor(two, None)
            .await
            .unwrap(),
        None
    );
}
