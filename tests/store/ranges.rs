//! Percentile of a member, pages of a score range, and the count of ranked members per
//! window, on both stores with exact values.

use rollboard::{Event, ScoreRange};

use crate::support::Harness;

on_every_store!(
    percentile_is_the_share_of_ranked_members_strictly_below,
    a_score_range_pages_its_members_with_their_board_ranks,
    score_range_pages_cut_through_tie_groups_like_the_whole_ranking,
    a_reversed_or_oversized_range_is_an_invalid_query,
    describe_counts_ranked_members_per_window,
);

/// bob 7; alice, carol, erin 5; dave 2; frank 1; gina −3 (not ranked).
async fn seeded(h: &Harness) -> String {
    let name = h.board("1h", &["1h"]).await;
    let events: Vec<Event> = [
        ("bob", 7),
        ("alice", 5),
        ("carol", 5),
        ("erin", 5),
        ("dave", 2),
        ("frank", 1),
        ("gina", -3),
    ]
    .into_iter()
    .map(|(m, d)| Event::new(m, d))
    .collect();
    h.boards.windowed(&name).incr_batch(&events).await.unwrap();
    name
}

async fn percentile_is_the_share_of_ranked_members_strictly_below(h: Harness) {
    let name = seeded(&h).await;
    let mut got = Vec::new();
    for member in ["bob", "alice", "carol", "dave", "frank"] {
        let s = h
            .boards
            .windowed(&name)
            .score(member, None)
            .await
            .unwrap()
            .unwrap();
        got.push((member, s.rank, s.percentile));
    }
    assert_eq!(
        got,
        [
            ("bob", Some(1), 5.0 / 6.0),
            ("alice", Some(2), 2.0 / 6.0),
            ("carol", Some(2), 2.0 / 6.0),
            ("dave", Some(5), 1.0 / 6.0),
            ("frank", Some(6), 0.0),
        ]
    );
    let alone = h.board("1h", &["1h"]).await;
    h.boards
        .windowed(&alone)
        .incr("only", 3, None)
        .await
        .unwrap();
    let s = h
        .boards
        .windowed(&alone)
        .score("only", None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((s.rank, s.percentile), (Some(1), 0.0));
}

async fn top_in(
    h: &Harness,
    name: &str,
    min: Option<i64>,
    max: Option<i64>,
    offset: u64,
    limit: u64,
) -> Vec<(u64, String, i64)> {
    let range = ScoreRange::new(min, max).unwrap();
    let page = h
        .boards
        .windowed(name)
        .top_in_range(None, range, offset, limit)
        .await
        .unwrap();
    page.entries
        .into_iter()
        .map(|e| (e.rank, e.member, e.score))
        .collect()
}

fn entries(items: &[(u64, &str, i64)]) -> Vec<(u64, String, i64)> {
    items
        .iter()
        .map(|(r, m, s)| (*r, m.to_string(), *s))
        .collect()
}

async fn a_score_range_pages_its_members_with_their_board_ranks(h: Harness) {
    let name = seeded(&h).await;
    let (two, five) = (Some(2), Some(5));
    assert_eq!(
        top_in(&h, &name, two, five, 0, 10).await,
        entries(&[
            (2, "alice", 5),
            (2, "carol", 5),
            (2, "erin", 5),
            (5, "dave", 2)
        ])
    );
    assert_eq!(
        top_in(&h, &name, two, five, 1, 2).await,
        entries(&[(2, "carol", 5), (2, "erin", 5)])
    );
    assert_eq!(
        top_in(&h, &name, two, five, 3, 10).await,
        entries(&[(5, "dave", 2)])
    );
    assert_eq!(top_in(&h, &name, two, five, 4, 10).await, entries(&[]));
    assert_eq!(
        top_in(&h, &name, Some(6), None, 0, 10).await,
        entries(&[(1, "bob", 7)])
    );
    assert_eq!(
        top_in(&h, &name, Some(-10), Some(1), 0, 10).await,
        entries(&[(6, "frank", 1)])
    );
    assert_eq!(
        top_in(&h, &name, Some(5), Some(5), 2, 1).await,
        entries(&[(2, "erin", 5)])
    );
    assert_eq!(top_in(&h, &name, None, Some(0), 0, 10).await, entries(&[]));
    assert_eq!(top_in(&h, &name, Some(8), None, 0, 10).await, entries(&[]));
    assert_eq!(
        top_in(&h, &name, Some(3), Some(4), 0, 10).await,
        entries(&[])
    );
    // No bounds: the whole ranking, as `top` pages it.
    assert_eq!(
        top_in(&h, &name, None, None, 0, 3).await,
        entries(&[(1, "bob", 7), (2, "alice", 5), (2, "carol", 5)])
    );
}

async fn score_range_pages_cut_through_tie_groups_like_the_whole_ranking(h: Harness) {
    let name = h.board("1h", &["1h"]).await;
    // 300 members, scores 1..=10, 30 members each, written in a scrambled order.
    let events: Vec<Event> = (0..300)
        .map(|i| (i * 7919) % 300)
        .map(|i| Event::new(format!("m{i:03}"), 1 + i % 10))
        .collect();
    h.boards.windowed(&name).incr_batch(&events).await.unwrap();
    let whole = top_in(&h, &name, None, None, 0, 1000).await;
    assert_eq!(whole.len(), 300);
    let inside: Vec<_> = whole
        .iter()
        .filter(|e| (3..=7).contains(&e.2))
        .cloned()
        .collect();
    assert_eq!(inside.len(), 150);
    for (offset, limit) in [
        (0, 150),
        (0, 7),
        (13, 29),
        (29, 31),
        (59, 1),
        (120, 50),
        (149, 5),
        (150, 5),
    ] {
        let page = top_in(&h, &name, Some(3), Some(7), offset, limit).await;
        let from = (offset as usize).min(150);
        let to = (offset + limit).min(150) as usize;
        assert_eq!(page, inside[from..to], "offset {offset} limit {limit}");
    }
}

async fn a_reversed_or_oversized_range_is_an_invalid_query(h: Harness) {
    let name = seeded(&h).await;
    let reversed = ScoreRange::new(Some(5), Some(4)).unwrap_err();
    assert_eq!(reversed.code(), "invalid_query");
    let oversized = ScoreRange::new(Some(rollboard::MAX_ABS + 1), None).unwrap_err();
    assert_eq!(oversized.code(), "invalid_query");
    let range = ScoreRange::new(Some(1), None).unwrap();
    let zero = h
        .boards
        .windowed(&name)
        .top_in_range(None, range, 0, 0)
        .await;
    assert_eq!(zero.unwrap_err().code(), "invalid_query");
}

async fn describe_counts_ranked_members_per_window(h: Harness) {
    let name = h.board("1h", &["1h", "2h"]).await;
    for (m, d) in [("a", 3), ("b", -2), ("c", 1)] {
        h.boards.windowed(&name).incr(m, d, None).await.unwrap();
    }
    h.at(3600);
    h.boards.windowed(&name).incr("d", 4, None).await.unwrap();
    h.boards.windowed(&name).retire(None).await.unwrap();
    let status = h.boards.describe_board(&name).await.unwrap();
    let counts: Vec<(u64, u64)> = status
        .windows
        .iter()
        .map(|w| (w.members, w.ranked))
        .collect();
    assert_eq!(counts, [(1, 1), (4, 3)]);
}
