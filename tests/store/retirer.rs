//! The library's retirer task on a real Redis: it retires at slot boundaries with no
//! retire call, picks up boards created after it started, and ends when its handle is
//! dropped or stopped. The clock is manual: moving it wakes the retirer, so nothing
//! sleeps. Each test has a Redis of its own, since a retirer retires every board there.

use std::time::Duration;

use rollboard::{BoardConfig, ManualClock, Retirer, RetirerStatus, Rollboard, Timestamp};
use tokio::sync::watch;

use crate::support::{START, TestRedis, clock, pairs, ranking, ts, unique, with_clock};

/// Waits (at most 10 s, against a hang) until a round that began at `at` or later ended.
async fn round_at(status: &mut watch::Receiver<RetirerStatus>, at: Timestamp) -> RetirerStatus {
    let seen = tokio::time::timeout(
        Duration::from_secs(10),
        status.wait_for(|s| s.as_of.is_some_and(|t| t >= at)),
    )
    .await
    .expect("the retirer ran a round within 10 s")
    .expect("the retirer is running");
    *seen
}

/// A running retirer on a Redis of its own, after its first round, over a board where
/// "a" has 2 in slot START.
struct Started {
    _redis: TestRedis,
    clock: ManualClock,
    boards: Rollboard,
    board: String,
    retirer: Retirer,
    status: watch::Receiver<RetirerStatus>,
}

async fn started() -> Started {
    let redis = TestRedis::spawn().await;
    let clock = clock();
    let boards = with_clock(redis.store().await, &clock);
    let board = board(&boards).await;
    boards.windowed(&board).incr("a", 2, None).await.unwrap();
    let retirer = boards.start_retirer();
    let mut status = retirer.status();
    assert_eq!(round_at(&mut status, ts(START)).await.failed, 0);
    Started {
        _redis: redis,
        clock,
        boards,
        board,
        retirer,
        status,
    }
}

async fn board(boards: &Rollboard) -> String {
    let name = unique("r");
    boards
        .create(&name, BoardConfig::parse("1m", &["1m", "3m"]).unwrap())
        .await
        .unwrap();
    name
}

async fn top(boards: &Rollboard, board: &str, window: &str) -> (i64, Vec<(String, i64)>) {
    let window = rollboard::Span::parse(window).unwrap();
    let page = boards
        .windowed(board)
        .top(Some(window), 0, 10)
        .await
        .unwrap();
    (page.from, ranking(&page))
}

#[tokio::test]
async fn the_retirer_retires_at_every_slot_boundary_with_no_retire_call() {
    let Started {
        clock,
        boards,
        board: b,
        retirer,
        mut status,
        _redis,
    } = started().await;

    clock.set(ts(START + 60));
    boards.windowed(&b).incr("b", 1, None).await.unwrap();
    let round = round_at(&mut status, ts(START + 60)).await;
    assert_eq!(round.failed, 0);
    let described = boards.describe_board(&b).await.unwrap();
    assert_eq!(described.windows[0].retired_through, START);
    assert_eq!(described.windows[0].lag_seconds, 0);
    assert_eq!(
        top(&boards, &b, "1m").await,
        (START + 60, pairs(&[("b", 1)]))
    );
    assert_eq!(
        top(&boards, &b, "3m").await,
        (START - 60, pairs(&[("a", 2), ("b", 1)]))
    );

    // Three minutes on, "a" leaves the 3m window too; "b" a minute later.
    clock.set(ts(START + 180));
    round_at(&mut status, ts(START + 180)).await;
    assert_eq!(
        top(&boards, &b, "3m").await,
        (START + 60, pairs(&[("b", 1)]))
    );
    clock.set(ts(START + 240));
    round_at(&mut status, ts(START + 240)).await;
    assert_eq!(top(&boards, &b, "3m").await, (START + 120, pairs(&[])));
    assert_eq!(boards.describe_board(&b).await.unwrap().live_slots, 0);
    retirer.stop().await;
}

#[tokio::test]
async fn the_retirer_catches_up_at_start_and_picks_up_boards_created_later() {
    let redis = TestRedis::spawn().await;
    let clock = clock();
    let boards = with_clock(redis.store().await, &clock);
    let overdue = board(&boards).await;
    boards
        .windowed(&overdue)
        .incr("old", 5, None)
        .await
        .unwrap();
    clock.set(ts(START + 3 * 3600));

    let retirer = boards.start_retirer();
    let mut status = retirer.status();
    round_at(&mut status, ts(START + 3 * 3600)).await;
    assert_eq!(boards.describe_board(&overdue).await.unwrap().live_slots, 0);
    assert_eq!(
        top(&boards, &overdue, "3m").await,
        (START + 3 * 3600 - 120, pairs(&[]))
    );

    // Created after the retirer started: retired at its first boundary.
    let later = board(&boards).await;
    boards.windowed(&later).incr("new", 4, None).await.unwrap();
    clock.set(ts(START + 3 * 3600 + 60));
    round_at(&mut status, ts(START + 3 * 3600 + 60)).await;
    let described = boards.describe_board(&later).await.unwrap();
    assert_eq!(described.windows[0].retired_through, START + 3 * 3600);
    assert_eq!(
        top(&boards, &later, "1m").await,
        (START + 3 * 3600 + 60, pairs(&[]))
    );
    assert_eq!(
        top(&boards, &later, "3m").await,
        (START + 3 * 3600 - 60, pairs(&[("new", 4)]))
    );
    retirer.stop().await;
}

/// Asserts the retirer's task has ended and that the board, past its boundary, is not
/// retired any more.
async fn assert_no_longer_retires(
    boards: &Rollboard,
    clock: &ManualClock,
    board: &str,
    mut status: watch::Receiver<RetirerStatus>,
) {
    let ended = tokio::time::timeout(Duration::from_secs(10), status.changed())
        .await
        .expect("the task ended within 10 s");
    assert!(ended.is_err(), "the status sender went with the task");
    clock.set(ts(START + 60));
    assert_eq!(
        top(boards, board, "1m").await,
        (START, pairs(&[("a", 2)])),
        "nothing retired the slot that left the window"
    );
    assert_eq!(
        boards.describe_board(board).await.unwrap().windows[0].lag_seconds,
        60
    );
}

#[tokio::test]
async fn dropping_the_retirer_ends_its_task() {
    let s = started().await;
    drop(s.retirer);
    assert_no_longer_retires(&s.boards, &s.clock, &s.board, s.status).await;
}

#[tokio::test]
async fn a_stopped_retirer_has_ended_when_stop_returns() {
    let s = started().await;
    s.retirer.stop().await;
    assert!(
        s.status.has_changed().is_err(),
        "ended before stop returned"
    );
    assert_no_longer_retires(&s.boards, &s.clock, &s.board, s.status).await;
}

#[tokio::test]
async fn two_retirers_take_one_snapshot_per_boundary_between_them() {
    let redis = TestRedis::spawn().await;
    let clock = clock();
    // Two processes: their own connections, board caches and retirers.
    let first = with_clock(redis.store().await, &clock);
    let second = with_clock(redis.store().await, &clock);
    let b = unique("snap");
    let policy = rollboard::SnapshotPolicy::new(2, 10).unwrap();
    first
        .create(
            &b,
            BoardConfig::parse("1m", &["1m", "3m"])
                .unwrap()
                .with_snapshots(Some(policy)),
        )
        .await
        .unwrap();
    let (one, two) = (first.start_retirer(), second.start_retirer());
    let (mut s1, mut s2) = (one.status(), two.status());
    round_at(&mut s1, ts(START)).await;
    round_at(&mut s2, ts(START)).await;
    for k in 1..=4 {
        first.windowed(&b).incr("a", k, None).await.unwrap();
        second.windowed(&b).incr("b", 2, None).await.unwrap();
        let at = ts(START + k * 60);
        clock.set(at);
        assert_eq!(round_at(&mut s1, at).await.failed, 0);
        assert_eq!(round_at(&mut s2, at).await.failed, 0);
        let range = rollboard::SnapshotRange::new(None, None, Some(100)).unwrap();
        let listed = second
            .windowed(&b)
            .snapshots(Some(rollboard::Span::parse("3m").unwrap()), range)
            .await
            .unwrap();
        let boundaries: Vec<i64> = listed.snapshots.iter().map(|s| s.boundary).collect();
        let expected: Vec<i64> = (1..=k).rev().map(|j| START + j * 60).collect();
        assert_eq!(boundaries, expected, "one snapshot per boundary");
        // The newest is the 3m window's top right after the boundary's retirement.
        assert_eq!(
            ranking_of(&listed.snapshots[0].entries),
            top(&first, &b, "3m").await.1
        );
    }
    one.stop().await;
    two.stop().await;
}

fn ranking_of(entries: &[rollboard::Entry]) -> Vec<(String, i64)> {
    entries
        .iter()
        .map(|e| (e.member.clone(), e.score))
        .collect()
}
