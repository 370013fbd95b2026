//! Bulk maintenance and reads by share of the ranking, on every store and a cluster:
//! removal by list (some absent), by a range of totals in one window while another
//! window keeps other totals, trimming to a window's top N with ties at the cut (the
//! board's tie order: exactly N kept), removal while writes go on (every event written
//! after the removal counted), the top P percent at its edges, and the score at a
//! percentile (Q = 0, Q just below 1, ties), consistent with the member read's
//! percentile. Expected values are literal.

use rollboard::{Error, Event, Order, ScoreBounds, Span, TrendingConfig};

use crate::support::{Harness, pairs, ranking, ts, unique};

on_every_store!(
    removal_by_list_counts_the_members_that_held_something,
    removal_by_range_selects_in_one_window_and_removes_everywhere,
    trim_keeps_exactly_the_top_n_in_the_boards_tie_order,
    trim_and_range_remove_a_thousand_per_call_and_say_more,
    removal_is_exact_while_writes_go_on,
    top_percent_rounds_up_and_pages_inside_the_share,
    score_at_is_the_threshold_of_the_member_percentile,
    bulk_input_is_checked_and_trending_boards_are_refused,
);

const HOUR: i64 = 3600;

/// 8 ranked members with tie groups of 3 and 2, and one negative total (not ranked).
const EVENTS: [(&str, i64); 9] = [
    ("d", 7),
    ("a", 9),
    ("c", 7),
    ("x", -2),
    ("g", 3),
    ("b", 7),
    ("e", 5),
    ("h", 1),
    ("f", 3),
];

fn events(items: &[(&str, i64)], at: i64) -> Vec<Event> {
    items
        .iter()
        .map(|(m, d)| Event {
            member: m.to_string(),
            delta: *d,
            value: None,
            at: Some(ts(at)),
            data: None,
            by: None,
        })
        .collect()
}

async fn write(h: &Harness, board: &str, items: &[(&str, i64)], at: i64) {
    let outcome = h
        .boards
        .windowed(board)
        .incr_batch(&events(items, at))
        .await
        .unwrap();
    assert_eq!(outcome.accepted, items.len(), "{outcome:?}");
}

/// A 1h board holding [`EVENTS`], the clock inside its slot.
async fn ranked_board(h: &Harness) -> String {
    h.at(HOUR + 60);
    let b = h.board("1h", &["1h"]).await;
    write(h, &b, &EVENTS, crate::support::START + HOUR).await;
    b
}

async fn whole(h: &Harness, b: &str, window: Option<Span>) -> Vec<(String, i64)> {
    let page =
        h.boards
            .windowed(b)
            .ranking(window, rollboard::ScoreRange::ALL, Order::Desc, 0, 1000);
    ranking(&page.await.unwrap())
}

fn span(s: &str) -> Option<Span> {
    Some(Span::parse(s).unwrap())
}

async fn removal_by_list_counts_the_members_that_held_something(h: Harness) {
    let start = crate::support::START;
    h.at(2 * HOUR + 60);
    let b = h.board("1h", &["1h", "1d"]).await;
    write(&h, &b, &[("d", 4)], start + HOUR).await;
    write(&h, &b, &[("a", 5), ("b", 3), ("c", 2)], start + 2 * HOUR).await;

    let done = h
        .boards
        .windowed(&b)
        .remove_members(&["a", "ghost", "d", "a"])
        .await
        .unwrap();
    assert_eq!(
        (done.removed, done.members.clone(), done.more),
        (2, vec!["a".to_string(), "d".to_string()], false)
    );
    assert_eq!(
        whole(&h, &b, span("1h")).await,
        pairs(&[("b", 3), ("c", 2)])
    );
    assert_eq!(
        whole(&h, &b, span("1d")).await,
        pairs(&[("b", 3), ("c", 2)])
    );
    assert!(
        h.boards
            .windowed(&b)
            .history("d")
            .await
            .unwrap()
            .points
            .is_empty()
    );
    // Removing again finds nothing.
    let again = h
        .boards
        .windowed(&b)
        .remove_members(&["a", "d"])
        .await
        .unwrap();
    assert_eq!((again.removed, again.members.len()), (0, 0));
}

async fn removal_by_range_selects_in_one_window_and_removes_everywhere(h: Harness) {
    let start = crate::support::START;
    h.at(3 * HOUR + 60);
    let b = h.board("1h", &["1h", "1d"]).await;
    write(&h, &b, &[("a", 10), ("b", 10), ("c", 1)], start + HOUR).await;
    write(
        &h,
        &b,
        &[("a", 1), ("b", 5), ("c", 3), ("d", 2)],
        start + 3 * HOUR,
    )
    .await;
    assert_eq!(
        whole(&h, &b, span("1d")).await,
        pairs(&[("b", 15), ("a", 11), ("c", 4), ("d", 2)])
    );

    // 2..=3 in the 1h window holds c (3) and d (2); in 1d c holds 4, outside the range.
    let bounds = ScoreBounds {
        min: Some(2.0),
        max: Some(3.0),
    };
    let done = h
        .boards
        .windowed(&b)
        .remove_by_score(span("1h"), bounds)
        .await
        .unwrap();
    assert_eq!(
        (done.removed, done.members.clone(), done.more),
        (2, vec!["c".to_string(), "d".to_string()], false)
    );
    assert_eq!(
        whole(&h, &b, span("1h")).await,
        pairs(&[("b", 5), ("a", 1)])
    );
    assert_eq!(
        whole(&h, &b, span("1d")).await,
        pairs(&[("b", 15), ("a", 11)])
    );

    // The same range on 1d selects nothing now; 11..=11 there selects a, removed from 1h too.
    let none = h
        .boards
        .windowed(&b)
        .remove_by_score(span("1d"), bounds)
        .await
        .unwrap();
    assert_eq!(none.removed, 0);
    let exact = ScoreBounds {
        min: Some(11.0),
        max: Some(11.0),
    };
    let done = h
        .boards
        .windowed(&b)
        .remove_by_score(span("1d"), exact)
        .await
        .unwrap();
    assert_eq!(done.members, vec!["a".to_string()]);
    assert_eq!(whole(&h, &b, span("1h")).await, pairs(&[("b", 5)]));
    assert_eq!(whole(&h, &b, span("1d")).await, pairs(&[("b", 15)]));
    // Only a lower bound: everything at or above it.
    let open = ScoreBounds {
        min: Some(5.0),
        max: None,
    };
    let done = h
        .boards
        .windowed(&b)
        .remove_by_score(None, open)
        .await
        .unwrap();
    assert_eq!(done.members, vec!["b".to_string()]);
    assert_eq!(whole(&h, &b, span("1d")).await, pairs(&[]));
}

async fn trim_keeps_exactly_the_top_n_in_the_boards_tie_order(h: Harness) {
    let b = ranked_board(&h).await;
    // The cut falls inside the tie group b, c, d at 7: b (first by member) stays.
    let done = h.boards.windowed(&b).trim(None, 2).await.unwrap();
    assert_eq!(done.removed, 6);
    assert_eq!(done.members, ["c", "d", "e", "f", "g", "h"]);
    assert!(!done.more);
    assert_eq!(whole(&h, &b, None).await, pairs(&[("a", 9), ("b", 7)]));
    // The negative total is not ranked, so not below the cut: it stays.
    let x = h
        .boards
        .windowed(&b)
        .score("x", None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((x.score, x.rank), (-2, None));
    // A top at or beyond the ranking removes nothing; top 0 removes every ranked member.
    assert_eq!(
        h.boards.windowed(&b).trim(None, 2).await.unwrap().removed,
        0
    );
    assert_eq!(
        h.boards.windowed(&b).trim(None, 5).await.unwrap().removed,
        0
    );
    let all = h.boards.windowed(&b).trim(None, 0).await.unwrap();
    assert_eq!(all.members, ["a", "b"]);
    assert_eq!(whole(&h, &b, None).await, pairs(&[]));
}

async fn trim_and_range_remove_a_thousand_per_call_and_say_more(h: Harness) {
    h.at(HOUR + 60);
    let b = h.board("1h", &["1h"]).await;
    let names: Vec<String> = (0..1_005).map(|i| format!("m{i:04}")).collect();
    let items: Vec<(&str, i64)> = names.iter().map(|m| (m.as_str(), 1)).collect();
    write(&h, &b, &items, crate::support::START + HOUR).await;
    write(&h, &b, &[("top", 9)], crate::support::START + HOUR).await;

    let first = h.boards.windowed(&b).trim(None, 3).await.unwrap();
    assert_eq!((first.removed, first.more), (1_000, true));
    // Kept: top, m0000, m0001; removed first: those right below the cut.
    assert_eq!(first.members[0], "m0002");
    assert_eq!(first.members[999], "m1001");
    let second = h.boards.windowed(&b).trim(None, 3).await.unwrap();
    assert_eq!(second.members, ["m1002", "m1003", "m1004"]);
    assert!(!second.more);
    assert_eq!(
        whole(&h, &b, None).await,
        pairs(&[("top", 9), ("m0000", 1), ("m0001", 1)])
    );
}

async fn removal_is_exact_while_writes_go_on(h: Harness) {
    h.at(HOUR + 60);
    let b = h.board("1h", &["1h", "1d"]).await;
    let at = crate::support::START + HOUR;
    let names: Vec<String> = (0..300).map(|i| format!("s{i:03}")).collect();
    let items: Vec<(&str, i64)> = names.iter().map(|m| (m.as_str(), 1)).collect();
    write(&h, &b, &items, at).await;
    write(&h, &b, &[("keep", 100)], at).await;

    // 200 single writes to `keep` run while the 300 spam members are removed by range.
    let writer = {
        let boards = h.boards.clone();
        let b = b.clone();
        tokio::spawn(async move {
            for _ in 0..200 {
                boards
                    .windowed(&b)
                    .incr("keep", 1, Some(ts(at)))
                    .await
                    .unwrap();
            }
        })
    };
    let bounds = ScoreBounds {
        min: Some(1.0),
        max: Some(1.0),
    };
    let done = h
        .boards
        .windowed(&b)
        .remove_by_score(None, bounds)
        .await
        .unwrap();
    writer.await.unwrap();
    assert_eq!((done.removed, done.more), (300, false));
    assert_eq!(done.members.first().map(String::as_str), Some("s000"));

    // Events written after the removal count again, exactly.
    for _ in 0..3 {
        h.boards
            .windowed(&b)
            .incr("s007", 1, Some(ts(at)))
            .await
            .unwrap();
    }
    for window in ["1h", "1d"] {
        assert_eq!(
            whole(&h, &b, span(window)).await,
            pairs(&[("keep", 300), ("s007", 3)]),
            "{window}"
        );
    }
    let status = h.boards.describe_board(&b).await.unwrap();
    assert_eq!(
        status.windows.iter().map(|w| w.members).collect::<Vec<_>>(),
        [2, 2]
    );
}

async fn top_percent_rounds_up_and_pages_inside_the_share(h: Harness) {
    let b = ranked_board(&h).await;
    let members = |page: rollboard::TopPage| -> Vec<String> {
        page.entries.into_iter().map(|e| e.member).collect()
    };
    let read = |percent: f64, order: Order, offset: u64, limit: u64| {
        let boards = h.boards.clone();
        let b = b.clone();
        async move {
            members(
                boards
                    .windowed(&b)
                    .top_percent(None, percent, order, offset, limit)
                    .await
                    .unwrap(),
            )
        }
    };
    let all = ["a", "b", "c", "d", "e", "f", "g", "h"];
    assert_eq!(read(100.0, Order::Desc, 0, 1000).await, all);
    // A tiny share is still one member; 25 % of 8 is 2; 30 % of 8 (2.4) rounds up to 3.
    assert_eq!(read(0.001, Order::Desc, 0, 1000).await, ["a"]);
    assert_eq!(read(25.0, Order::Desc, 0, 1000).await, ["a", "b"]);
    assert_eq!(read(30.0, Order::Desc, 0, 1000).await, ["a", "b", "c"]);
    // offset and limit page inside the share, never past it.
    assert_eq!(read(50.0, Order::Desc, 2, 10).await, ["c", "d"]);
    assert_eq!(read(50.0, Order::Desc, 1, 2).await, ["b", "c"]);
    assert!(read(50.0, Order::Desc, 4, 10).await.is_empty());
    // Read from the bottom: the bottom P percent, lowest first.
    assert_eq!(read(50.0, Order::Asc, 0, 10).await, ["h", "g", "f", "e"]);
    // Ranks stay the board's.
    let page = h
        .boards
        .windowed(&b)
        .top_percent(None, 50.0, Order::Desc, 0, 10)
        .await
        .unwrap();
    assert_eq!(
        page.entries.iter().map(|e| e.rank).collect::<Vec<_>>(),
        [1, 2, 2, 2]
    );
    // An empty ranking has an empty top share.
    let empty = h.board("1h", &["1h"]).await;
    let page = h
        .boards
        .windowed(&empty)
        .top_percent(None, 50.0, Order::Desc, 0, 10)
        .await
        .unwrap();
    assert!(page.entries.is_empty());
}

async fn score_at_is_the_threshold_of_the_member_percentile(h: Harness) {
    let b = ranked_board(&h).await;
    // Ascending: h 1, f 3, g 3, e 5, b 7, c 7, d 7, a 9 (R = 8; x at −2 is not ranked).
    let cases: [(f64, i64, u64); 11] = [
        (0.0, 1, 0),
        (0.1, 2, 1),
        (0.125, 2, 1),
        (0.2, 4, 2),
        (0.25, 4, 2),
        (0.375, 4, 3),
        (0.5, 6, 4),
        (0.51, 8, 5),
        (0.875, 8, 7),
        (0.999_999, 10, 8),
        (1.0, 10, 8),
    ];
    for (q, score, below) in cases {
        let at = h.boards.windowed(&b).score_at(None, q).await.unwrap();
        assert_eq!(
            (at.score, at.below, at.ranked, at.percentile),
            (score, below, 8, q),
            "Q = {q}"
        );
        // The threshold of the member read: percentile ≥ Q exactly when score ≥ it.
        for (member, _) in EVENTS.iter().filter(|(_, s)| *s > 0) {
            let standing = h
                .boards
                .windowed(&b)
                .score(member, None)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(
                standing.percentile >= q,
                standing.score >= at.score,
                "Q = {q}, {member} at {} with percentile {}",
                standing.score,
                standing.percentile
            );
        }
    }
    // An empty ranking has no score at any percentile.
    let empty = h.board("1h", &["1h"]).await;
    write(&h, &empty, &[("neg", -4)], crate::support::START + HOUR).await;
    match h.boards.windowed(&empty).score_at(None, 0.5).await {
        Err(Error::RankingEmpty { board, window }) => {
            assert_eq!((board, window), (empty.clone(), "1h".to_string()));
        }
        other => panic!("expected an empty ranking, got {other:?}"),
    }
}

async fn bulk_input_is_checked_and_trending_boards_are_refused(h: Harness) {
    let b = ranked_board(&h).await;
    let invalid = |r: rollboard::Result<_>| match r {
        Err(Error::InvalidQuery { reason }) => reason,
        other => panic!("expected an invalid query, got {:?}", other.map(|_: ()| ())),
    };
    let unit = |r: rollboard::Result<rollboard::BulkRemoved>| r.map(|_| ());
    let none: [&str; 0] = [];
    assert_eq!(
        invalid(unit(h.boards.windowed(&b).remove_members(&none).await)),
        "members must list 1 to 1000 members, got 0"
    );
    let many: Vec<String> = (0..1_001).map(|i| format!("m{i}")).collect();
    assert_eq!(
        invalid(unit(h.boards.windowed(&b).remove_members(&many).await)),
        "members must list 1 to 1000 members, got 1001"
    );
    assert!(
        invalid(unit(
            h.boards
                .windowed(&b)
                .remove_by_score(None, ScoreBounds::ALL)
                .await
        ))
        .starts_with("a removal by score needs min_score, max_score or both")
    );
    let upside_down = ScoreBounds {
        min: Some(5.0),
        max: Some(2.0),
    };
    assert_eq!(
        invalid(unit(
            h.boards
                .windowed(&b)
                .remove_by_score(None, upside_down)
                .await
        )),
        "min_score (5) must not be above max_score (2)"
    );
    assert_eq!(
        invalid(unit(h.boards.windowed(&b).trim(None, 1_000_000_001).await)),
        "top must be between 0 and 1000000000, got 1000000001"
    );
    let percent = |p: f64| {
        let boards = h.boards.clone();
        let b = b.clone();
        async move {
            boards
                .windowed(&b)
                .top_percent(None, p, Order::Desc, 0, 10)
                .await
                .map(|_| ())
        }
    };
    assert_eq!(
        invalid(percent(0.0).await),
        "percent must be above 0 and at most 100, got 0"
    );
    assert_eq!(
        invalid(percent(100.5).await),
        "percent must be above 0 and at most 100, got 100.5"
    );
    for q in [-0.1, 1.5, f64::NAN] {
        let reason = invalid(h.boards.windowed(&b).score_at(None, q).await.map(|_| ()));
        assert!(
            reason.starts_with("percentile must be between 0 and 1"),
            "{reason}"
        );
    }
    // Nothing was removed by the refused calls.
    assert_eq!(whole(&h, &b, None).await.len(), 8);

    let trending = unique("t");
    h.boards
        .create(&trending, TrendingConfig::parse("1h").unwrap())
        .await
        .unwrap();
    let reason = invalid(
        h.boards
            .windowed(&trending)
            .score_at(None, 0.5)
            .await
            .map(|_| ()),
    );
    assert!(reason.contains("is a trending board"), "{reason}");
    let reason = invalid(
        h.boards
            .windowed(&trending)
            .top_percent(None, 10.0, Order::Desc, 0, 10)
            .await
            .map(|_| ()),
    );
    assert!(
        reason.starts_with("percent reads a windowed board's ranking"),
        "{reason}"
    );
    match h.boards.windowed(&trending).trim(None, 1).await {
        Err(Error::BoardKind { kind, .. }) => assert_eq!(kind, "trending"),
        other => panic!("expected board_kind, got {other:?}"),
    }
}
