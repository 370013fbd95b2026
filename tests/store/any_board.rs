//! The operations every board answers, whatever its kind (`Rollboard::page`,
//! `standing`, `member_ranks`, `neighbours`, `write_events` …): the same calls on a
//! windowed and a trending board answer each kind's reply, a board re-created as the
//! other kind behind a cached copy is followed, and a trending board is loaded once.

use rollboard::{
    BoardConfig, BoardKind, BoardPage, BoardState, Event, Fingerprint, IdempotencyKey, MemberRanks,
    MemberStanding, Rollboard, ScoreBounds, Span, TrendingConfig,
};

use crate::support::{Harness, START, TestRedis, ts, unique, with_clock};

on_every_store!(
    one_set_of_calls_reads_and_writes_both_kinds,
    a_board_re_created_as_the_other_kind_is_followed_by_a_cached_copy,
);

fn events(list: &[(&str, i64)]) -> Vec<Event> {
    list.iter().map(|(m, d)| Event::new(*m, *d)).collect()
}

/// Members and scores of a page of either kind (trending scores as they are: every event
/// is written at `now`, so none has decayed).
fn scores(page: &BoardPage) -> Vec<(String, f64)> {
    match page {
        BoardPage::Windowed(p) => p
            .entries
            .iter()
            .map(|e| (e.member.clone(), e.score as f64))
            .collect(),
        BoardPage::Trending(p) => p
            .entries
            .iter()
            .map(|e| (e.member.clone(), e.score))
            .collect(),
    }
}

fn pairs(list: &[(&str, f64)]) -> Vec<(String, f64)> {
    list.iter().map(|(m, s)| (m.to_string(), *s)).collect()
}

async fn one_set_of_calls_reads_and_writes_both_kinds(h: Harness) {
    let windowed = h.board("1h", &["1h", "1d"]).await;
    let trending = unique("t");
    h.boards
        .create(&trending, TrendingConfig::parse("6h").unwrap())
        .await
        .unwrap();
    let b = &h.boards;
    for (board, kind) in [
        (&windowed, BoardKind::Windowed),
        (&trending, BoardKind::Trending),
    ] {
        assert_eq!(b.any_board(board).await.unwrap().kind(), kind);
        b.write_event(board, &Event::new("a", 2)).await.unwrap();
        let late = Event::new("x", 1).at(ts(START - 90 * 86400));
        let outcome = b
            .write_events(board, &[Event::new("b", 5), late, Event::new("c", 1)])
            .await
            .unwrap();
        assert_eq!(outcome.accepted, 2, "{board}");
        let code = outcome.rejected[0].error.code();
        assert_eq!(
            (outcome.rejected.len(), outcome.rejected[0].index, code),
            (
                1,
                1,
                if kind == BoardKind::Windowed {
                    "too_late"
                } else {
                    "too_old"
                }
            )
        );
        let key = IdempotencyKey::parse(&unique("k")).unwrap();
        let keyed = events(&[("d", 7)]);
        let fingerprint = Fingerprint::of_events(&keyed);
        for replayed in [false, true] {
            let written = b
                .write_events_keyed(board, &keyed, &key, &fingerprint)
                .await
                .unwrap();
            assert_eq!((written.outcome.accepted, written.replayed), (1, replayed));
        }

        // Bounds are numbers: 1.5 to 6.5 holds the totals 2 to 6 of a windowed board.
        let bounds = ScoreBounds {
            min: Some(1.5),
            max: Some(6.5),
        };
        let page = b.page(board, None, bounds, 0, 10).await.unwrap();
        assert_eq!(scores(&page), pairs(&[("b", 5.0), ("a", 2.0)]), "{board}");
        let all = b.page(board, None, ScoreBounds::ALL, 0, 10).await.unwrap();
        assert_eq!(
            scores(&all),
            pairs(&[("d", 7.0), ("b", 5.0), ("a", 2.0), ("c", 1.0)])
        );
        let around = b
            .neighbours(board, "a", None, 1, Default::default())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            scores(&around),
            pairs(&[("b", 5.0), ("a", 2.0), ("c", 1.0)])
        );
        assert_eq!(
            b.neighbours(board, "zed", None, 1, Default::default())
                .await
                .unwrap(),
            None
        );

        let standing = b.standing(board, "b", None).await.unwrap().unwrap();
        let (score, rank, percentile) = match standing {
            MemberStanding::Windowed(s) => (s.score as f64, s.rank, s.percentile),
            MemberStanding::Trending(s) => (s.score, s.rank, s.percentile),
        };
        assert_eq!((score, rank, percentile), (5.0, Some(2), 0.5));
        assert_eq!(b.standing(board, "zed", None).await.unwrap(), None);

        let ranks = b
            .member_ranks(board, &["c", "zed", "d"], None)
            .await
            .unwrap();
        let ranks: Vec<(String, Option<u64>)> = match ranks {
            MemberRanks::Windowed(r) => r.entries.into_iter().map(|e| (e.member, e.rank)).collect(),
            MemberRanks::Trending(r) => r.entries.into_iter().map(|e| (e.member, e.rank)).collect(),
        };
        assert_eq!(
            ranks,
            [
                ("c".to_owned(), Some(4)),
                ("zed".to_owned(), None),
                ("d".to_owned(), Some(1))
            ]
        );
        let ranked = match b.board_state(board).await.unwrap() {
            BoardState::Windowed(s) => s.windows[0].ranked,
            BoardState::Trending(s) => s.ranked,
        };
        assert_eq!(ranked, 4);
    }

    // A window is a windowed board's: asked of a trending board, it is refused.
    let one_day = Span::parse("1d").unwrap();
    let day = Some(one_day);
    let windowed_day = b
        .page(&windowed, day, ScoreBounds::ALL, 0, 1)
        .await
        .unwrap();
    assert!(matches!(windowed_day, BoardPage::Windowed(ref p) if p.window == one_day));
    let refused = b
        .page(&trending, day, ScoreBounds::ALL, 0, 1)
        .await
        .unwrap_err();
    assert_eq!(
        (refused.code(), refused.to_string()),
        (
            "invalid_query",
            "invalid query: a trending board has no windows: leave out window".to_owned()
        )
    );
    // Bounds between two integers hold no total; reversed bounds are refused.
    let none = ScoreBounds {
        min: Some(2.25),
        max: Some(2.75),
    };
    let page = b.page(&windowed, None, none, 0, 10).await.unwrap();
    assert_eq!(scores(&page), []);
    let reversed = ScoreBounds {
        min: Some(3.0),
        max: Some(2.0),
    };
    for board in [&windowed, &trending] {
        let error = b.page(board, None, reversed, 0, 10).await.unwrap_err();
        assert_eq!(error.code(), "invalid_query");
    }
    // The typed operations underneath still refuse the other kind.
    assert_eq!(
        b.windowed(&trending)
            .top(None, 0, 1)
            .await
            .unwrap_err()
            .code(),
        "board_kind"
    );
    assert_eq!(
        b.trending(&windowed).top(0, 1).await.unwrap_err().code(),
        "board_kind"
    );
    let missing = unique("none");
    assert_eq!(
        b.page(&missing, None, ScoreBounds::ALL, 0, 1)
            .await
            .unwrap_err()
            .code(),
        "board_not_found"
    );
}

async fn a_board_re_created_as_the_other_kind_is_followed_by_a_cached_copy(h: Harness) {
    // `other` is a second process on the same store: it drops and re-creates the board
    // behind the copy `h.boards` cached.
    let other = with_clock(h.boards.store().clone(), &h.clock);
    let name = h.board("1h", &["1h"]).await;
    h.boards
        .write_event(&name, &Event::new("a", 3))
        .await
        .unwrap();
    let page = h
        .boards
        .page(&name, None, ScoreBounds::ALL, 0, 10)
        .await
        .unwrap();
    assert_eq!(scores(&page), pairs(&[("a", 3.0)]));

    other.drop_board(&name).await.unwrap();
    other
        .create(&name, TrendingConfig::parse("6h").unwrap())
        .await
        .unwrap();
    h.boards
        .write_event(&name, &Event::new("b", 4))
        .await
        .unwrap();
    let page = h
        .boards
        .page(&name, None, ScoreBounds::ALL, 0, 10)
        .await
        .unwrap();
    assert!(matches!(page, BoardPage::Trending(_)), "{page:?}");
    assert_eq!(scores(&page), pairs(&[("b", 4.0)]));

    other.drop_board(&name).await.unwrap();
    other
        .create(&name, BoardConfig::parse("1h", &["1h"]).unwrap())
        .await
        .unwrap();
    let standing = h.boards.standing(&name, "b", None).await.unwrap();
    assert_eq!(standing, None);
    h.boards
        .write_event(&name, &Event::new("c", 1))
        .await
        .unwrap();
    let page = h
        .boards
        .page(&name, None, ScoreBounds::ALL, 0, 10)
        .await
        .unwrap();
    assert!(matches!(page, BoardPage::Windowed(_)), "{page:?}");
    assert_eq!(scores(&page), pairs(&[("c", 1.0)]));
}

/// Calls of each Redis command so far, from `INFO commandstats`.
async fn command_calls(redis: &TestRedis, command: &str) -> u64 {
    let info: String = ::redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

#[tokio::test]
async fn a_trending_board_is_loaded_once_by_a_process() {
    let redis = TestRedis::spawn().await;
    let clock = crate::support::clock();
    let store = redis.store().await;
    let creator = with_clock(store.clone(), &clock);
    let name = unique("t");
    creator
        .create(&name, TrendingConfig::parse("6h").unwrap())
        .await
        .unwrap();
    creator
        .write_event(&name, &Event::new("a", 1))
        .await
        .unwrap();

    // A process that has not seen the board yet.
    let reader: Rollboard = with_clock(store, &clock);
    let loads = || async {
        (
            command_calls(&redis, "hmget").await,
            command_calls(&redis, "sismember").await,
        )
    };
    // Three reads, standings and writes, twice: the first time the board is loaded
    // (one read of its record, one of the registry), the second not.
    async fn rounds(reader: &Rollboard, name: &str, score: f64) {
        for i in 0..3 {
            let page = reader
                .page(name, None, ScoreBounds::ALL, 0, 10)
                .await
                .unwrap();
            assert_eq!(scores(&page), pairs(&[("a", score + i as f64)]));
            let standing = reader.standing(name, "a", None).await.unwrap();
            assert!(matches!(standing, Some(MemberStanding::Trending(_))));
            reader.write_event(name, &Event::new("a", 1)).await.unwrap();
        }
    }
    let before = loads().await;
    rounds(&reader, &name, 1.0).await;
    let first = loads().await;
    rounds(&reader, &name, 4.0).await;
    let second = loads().await;
    let cold = (first.0 - before.0, first.1 - before.1);
    let warm = (second.0 - first.0, second.1 - first.1);
    assert_eq!(
        (cold.0 - warm.0, cold.1, warm.1),
        (1, 1, 0),
        "{cold:?} {warm:?}"
    );
}
