//! The reads users of other leaderboards reach for, on every store and a cluster:
//! `"ties":"position"` (1, 2, 3 in the board's tie order) in every read that answers a
//! rank and in snapshots (tie groups anywhere inside a snapshot's top in `top`'s order);
//! pages read from the bottom (`Order::Asc`), with ranks that stay the board's; and the
//! page around a member filled to `2n + 1` entries, shifted at the ends, on windowed and
//! trending boards. Expected values are literal, ties inside and at the edges of pages.

use rollboard::{
    AroundOptions, BoardConfig, MemberRank, Order, ScoreRange, SnapshotPass, SnapshotPolicy,
    SnapshotRange, Span, Ties, TrendPage, TrendRange, TrendingConfig,
};

use crate::support::{Harness, triples, unique};

on_every_store!(
    position_ties_number_members_one_two_three_in_every_read,
    position_ties_follow_writes_and_are_fixed_when_the_board_is_created,
    bottom_pages_read_the_ranking_from_the_lowest_with_the_boards_ranks,
    a_filled_page_around_a_member_is_full_and_shifted_at_the_ends,
    a_snapshot_orders_tie_groups_inside_its_top_as_top_does,
    trending_boards_read_from_the_bottom_and_fill_the_page_around,
);

const HOUR: i64 = 3600;

/// The ranking every test writes: 8 ranked members with tie groups of 3 and 2, and one
/// negative total (not ranked).
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

/// The ranking's members and totals in ranking order (positions 0..8).
const RANKING: [(&str, i64); 8] = [
    ("a", 9),
    ("b", 7),
    ("c", 7),
    ("d", 7),
    ("e", 5),
    ("f", 3),
    ("g", 3),
    ("h", 1),
];

/// The ranks of `RANKING` by each way of ranking ties.
fn ranks_by(ties: Ties) -> [u64; 8] {
    match ties {
        Ties::Competition => [1, 2, 2, 2, 5, 6, 6, 8],
        Ties::Dense => [1, 2, 2, 2, 3, 4, 4, 5],
        Ties::Position => [1, 2, 3, 4, 5, 6, 7, 8],
    }
}

/// The entries at `positions` of `RANKING` (in the order given), ranked by `ties`.
fn at(ties: Ties, positions: &[usize]) -> Vec<(u64, String, i64)> {
    let ranks = ranks_by(ties);
    positions
        .iter()
        .map(|&p| (ranks[p], RANKING[p].0.to_owned(), RANKING[p].1))
        .collect()
}

/// `(rank, member)` of a trending page.
fn trend_ranks(page: &TrendPage) -> Vec<(u64, String)> {
    page.entries
        .iter()
        .map(|e| (e.rank, e.member.clone()))
        .collect()
}

/// A board of one 1-hour window ranking ties by `ties`, holding `EVENTS`.
async fn board(h: &Harness, ties: Ties) -> String {
    let name = unique("pr");
    let config = BoardConfig::parse("1h", &["1h"]).unwrap().with_ties(ties);
    h.boards.create(&name, config).await.unwrap();
    for (member, delta) in EVENTS {
        h.boards
            .windowed(&name)
            .incr(member, delta, None)
            .await
            .unwrap();
    }
    name
}

fn options(fill: bool, order: Order) -> AroundOptions {
    AroundOptions { fill, order }
}

async fn position_ties_number_members_one_two_three_in_every_read(h: Harness) {
    let ties = Ties::Position;
    let name = board(&h, ties).await;
    let b = &h.boards;
    let top = b.windowed(&name).top(None, 0, 10).await.unwrap();
    assert_eq!(triples(&top.entries), at(ties, &[0, 1, 2, 3, 4, 5, 6, 7]));
    // Pages cut inside the tie groups, at both edges and in the middle.
    let page = b.windowed(&name).top(None, 2, 3).await.unwrap();
    assert_eq!(triples(&page.entries), at(ties, &[2, 3, 4]));
    let page = b.windowed(&name).top(None, 2, 1).await.unwrap();
    assert_eq!(triples(&page.entries), at(ties, &[2]));
    let page = b.windowed(&name).top(None, 6, 10).await.unwrap();
    assert_eq!(triples(&page.entries), at(ties, &[6, 7]));
    // A score range: ranks stay ranks in the whole ranking.
    let range = ScoreRange::new(Some(3), Some(7)).unwrap();
    let page = b
        .windowed(&name)
        .top_in_range(None, range, 1, 3)
        .await
        .unwrap();
    assert_eq!(triples(&page.entries), at(ties, &[2, 3, 4]));
    // A member's rank is its position; its percentile stays score-based (members tied
    // with it are not below it).
    for (member, rank, percentile) in [("b", 2, 0.5), ("d", 4, 0.5), ("g", 7, 0.125)] {
        let s = b
            .windowed(&name)
            .score(member, None)
            .await
            .unwrap()
            .unwrap();
        assert_eq!((s.rank, s.percentile), (Some(rank), percentile), "{member}");
    }
    // A negative total: answered, not ranked.
    let x = b.windowed(&name).score("x", None).await.unwrap().unwrap();
    assert_eq!((x.score, x.rank, x.percentile), (-2, None, 0.0));
    let ranks = b
        .windowed(&name)
        .ranks(&["g", "x", "d", "b", "zz", "d"], None)
        .await
        .unwrap();
    let rank = |m: &str, score, rank| MemberRank {
        member: m.to_owned(),
        score,
        rank,
    };
    assert_eq!(
        ranks.entries,
        [
            rank("g", 3, Some(7)),
            rank("x", -2, None),
            rank("d", 7, Some(4)),
            rank("b", 7, Some(2)),
            rank("zz", 0, None),
            rank("d", 7, Some(4)),
        ]
    );
    let around = b
        .windowed(&name)
        .around("c", None, 1, Default::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(triples(&around.entries), at(ties, &[1, 2, 3]));
    let around = b
        .windowed(&name)
        .around("f", None, 1, Default::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(triples(&around.entries), at(ties, &[4, 5, 6]));
    let bottom = b.windowed(&name).bottom(None, 0, 3).await.unwrap();
    assert_eq!(triples(&bottom.entries), at(ties, &[7, 6, 5]));
}

async fn position_ties_follow_writes_and_are_fixed_when_the_board_is_created(h: Harness) {
    let ties = Ties::Position;
    let name = board(&h, ties).await;
    let b = &h.boards;
    // a falls into the group of 7 and takes its place by name: a, b, c, d.
    b.windowed(&name).incr("a", -2, None).await.unwrap();
    // h leaves the ranking (total 0), x comes in at 4, tied with nobody.
    b.windowed(&name).incr("h", -1, None).await.unwrap();
    b.windowed(&name).incr("x", 6, None).await.unwrap();
    let top = b.windowed(&name).top(None, 0, 10).await.unwrap();
    let expected: Vec<(u64, String, i64)> = [
        ("a", 7),
        ("b", 7),
        ("c", 7),
        ("d", 7),
        ("e", 5),
        ("x", 4),
        ("f", 3),
        ("g", 3),
    ]
    .iter()
    .enumerate()
    .map(|(i, (m, s))| (i as u64 + 1, m.to_string(), *s))
    .collect();
    assert_eq!(triples(&top.entries), expected);
    let s = b.windowed(&name).score("c", None).await.unwrap().unwrap();
    assert_eq!(s.rank, Some(3));
    // The option is fixed: the same config is the same board, another is a conflict.
    let config = BoardConfig::parse("1h", &["1h"]).unwrap();
    let same = b.create(&name, config.clone().with_ties(ties)).await;
    assert!(same.is_ok(), "{same:?}");
    let err = b
        .create(&name, config.with_ties(Ties::Dense))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "board_conflict");
    assert_eq!(b.board(&name).await.unwrap().config.ties(), Ties::Position);
}

async fn bottom_pages_read_the_ranking_from_the_lowest_with_the_boards_ranks(h: Harness) {
    for ties in [Ties::Competition, Ties::Dense, Ties::Position] {
        let name = board(&h, ties).await;
        let b = &h.boards;
        let asc = |range, offset, limit| {
            let name = name.clone();
            async move {
                let page = b
                    .windowed(&name)
                    .ranking(None, range, Order::Asc, offset, limit)
                    .await
                    .unwrap();
                triples(&page.entries)
            }
        };
        let all = ScoreRange::ALL;
        // Lowest first, ties in the reverse of the board's tie order; pages by offset
        // from the bottom, cut inside the tie groups.
        assert_eq!(asc(all, 0, 3).await, at(ties, &[7, 6, 5]), "{ties:?}");
        assert_eq!(asc(all, 0, 2).await, at(ties, &[7, 6]), "{ties:?}");
        assert_eq!(asc(all, 3, 3).await, at(ties, &[4, 3, 2]), "{ties:?}");
        assert_eq!(asc(all, 5, 1).await, at(ties, &[2]), "{ties:?}");
        assert_eq!(asc(all, 6, 5).await, at(ties, &[1, 0]), "{ties:?}");
        assert_eq!(asc(all, 8, 5).await, at(ties, &[]), "{ties:?}");
        assert_eq!(
            asc(all, 0, 1000).await,
            at(ties, &[7, 6, 5, 4, 3, 2, 1, 0]),
            "{ties:?}"
        );
        // Inside a score range: the offset counts from the range's lowest member.
        let range = ScoreRange::new(Some(3), Some(7)).unwrap();
        assert_eq!(asc(range, 0, 2).await, at(ties, &[6, 5]), "{ties:?}");
        assert_eq!(asc(range, 2, 10).await, at(ties, &[4, 3, 2, 1]), "{ties:?}");
        assert_eq!(asc(range, 6, 10).await, at(ties, &[]), "{ties:?}");
        // bottom() is the same read; descending pages are unchanged.
        let bottom = b.windowed(&name).bottom(None, 1, 2).await.unwrap();
        assert_eq!(triples(&bottom.entries), at(ties, &[6, 5]), "{ties:?}");
        let desc = b
            .windowed(&name)
            .ranking(None, all, Order::Desc, 1, 3)
            .await
            .unwrap();
        assert_eq!(triples(&desc.entries), at(ties, &[1, 2, 3]), "{ties:?}");
        // Around read ascending: the same entries, lowest first.
        let around = b
            .windowed(&name)
            .around("c", None, 1, options(false, Order::Asc))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(triples(&around.entries), at(ties, &[3, 2, 1]), "{ties:?}");
    }
}

async fn a_filled_page_around_a_member_is_full_and_shifted_at_the_ends(h: Harness) {
    for ties in [Ties::Competition, Ties::Position] {
        let name = board(&h, ties).await;
        let b = &h.boards;
        let around = |member: &'static str, n, fill, order| {
            let name = name.clone();
            async move {
                b.windowed(&name)
                    .around(member, None, n, options(fill, order))
                    .await
                    .unwrap()
                    .map(|page| triples(&page.entries))
            }
        };
        let desc = Order::Desc;
        // Near rank 1 the page starts at rank 1; near the bottom it ends at the last.
        for (member, positions) in [
            ("a", [0, 1, 2, 3, 4]),
            ("b", [0, 1, 2, 3, 4]),
            ("c", [0, 1, 2, 3, 4]),
            ("d", [1, 2, 3, 4, 5]),
            ("e", [2, 3, 4, 5, 6]),
            ("f", [3, 4, 5, 6, 7]),
            ("g", [3, 4, 5, 6, 7]),
            ("h", [3, 4, 5, 6, 7]),
        ] {
            let want = Some(at(ties, &positions));
            assert_eq!(
                around(member, 2, true, desc).await,
                want,
                "{member} {ties:?}"
            );
        }
        // Without fill the page shrinks at the ends, as before.
        assert_eq!(
            around("a", 2, false, desc).await,
            Some(at(ties, &[0, 1, 2]))
        );
        assert_eq!(
            around("g", 2, false, desc).await,
            Some(at(ties, &[4, 5, 6, 7]))
        );
        // n = 0 is the member alone; fewer entries only when fewer are ranked.
        assert_eq!(around("c", 0, true, desc).await, Some(at(ties, &[2])));
        assert_eq!(
            around("e", 4, true, desc).await,
            Some(at(ties, &[0, 1, 2, 3, 4, 5, 6, 7]))
        );
        assert_eq!(
            around("e", 100, true, desc).await,
            Some(at(ties, &[0, 1, 2, 3, 4, 5, 6, 7]))
        );
        // Ascending: the same full page, lowest first.
        assert_eq!(
            around("h", 1, true, Order::Asc).await,
            Some(at(ties, &[7, 6, 5]))
        );
        assert_eq!(
            around("a", 1, true, Order::Asc).await,
            Some(at(ties, &[2, 1, 0]))
        );
        // A member without a positive total has no page, filled or not.
        assert_eq!(around("x", 2, true, desc).await, None);
        assert_eq!(around("nobody", 2, true, desc).await, None);
    }
}

async fn a_snapshot_orders_tie_groups_inside_its_top_as_top_does(h: Harness) {
    // A tie group wholly inside the top (b, c, d) and one cut by it (f of f, g): every
    // group must come in `top`'s order, which position ranks make visible.
    let ties = Ties::Position;
    let name = unique("ps");
    let config = BoardConfig::parse("1h", &["3h"])
        .unwrap()
        .with_ties(ties)
        .with_snapshots(Some(SnapshotPolicy::new(6, 10).unwrap()));
    h.boards.create(&name, config).await.unwrap();
    let hot = h.boards.windowed(&name);
    h.at(10);
    for (member, delta) in EVENTS {
        hot.incr(member, delta, None).await.unwrap();
    }
    h.at(HOUR + 1);
    assert!(hot.retire(None).await.unwrap().complete);
    assert_eq!(
        hot.take_snapshots().await.unwrap(),
        SnapshotPass::Done { appended: 1 }
    );
    let top = hot.top(None, 0, 6).await.unwrap();
    assert_eq!(triples(&top.entries), at(ties, &[0, 1, 2, 3, 4, 5]));
    let listed = hot
        .snapshots(None, SnapshotRange::new(None, None, Some(1)).unwrap())
        .await
        .unwrap();
    let [snapshot] = listed.snapshots.as_slice() else {
        panic!("one snapshot expected, got {:?}", listed.snapshots);
    };
    assert_eq!(snapshot.boundary, crate::support::START + HOUR);
    assert_eq!(triples(&snapshot.entries), triples(&top.entries));

    // The next boundary: a drops into the group of 7 (now four members, inside the
    // top) and "bb" ties with e in a group that ends exactly at the cut.
    h.at(HOUR + 10);
    for (member, delta) in [("a", -2), ("bb", 5)] {
        hot.incr(member, delta, None).await.unwrap();
    }
    h.at(2 * HOUR + 1);
    assert!(hot.retire(None).await.unwrap().complete);
    assert_eq!(
        hot.take_snapshots().await.unwrap(),
        SnapshotPass::Done { appended: 1 }
    );
    let top = hot.top(None, 0, 6).await.unwrap();
    let expected: Vec<(u64, String, i64)> =
        [("a", 7), ("b", 7), ("c", 7), ("d", 7), ("bb", 5), ("e", 5)]
            .iter()
            .enumerate()
            .map(|(i, (m, s))| (i as u64 + 1, m.to_string(), *s))
            .collect();
    assert_eq!(triples(&top.entries), expected);
    let listed = hot
        .snapshots(None, SnapshotRange::new(None, None, Some(1)).unwrap())
        .await
        .unwrap();
    assert_eq!(
        listed.snapshots[0].boundary,
        crate::support::START + 2 * HOUR
    );
    assert_eq!(triples(&listed.snapshots[0].entries), expected);
    assert_eq!(listed.window, Span::parse("3h").unwrap());
}

async fn trending_boards_read_from_the_bottom_and_fill_the_page_around(h: Harness) {
    let name = unique("pt");
    h.boards
        .create(&name, TrendingConfig::parse("1h").unwrap())
        .await
        .unwrap();
    // Every event at the same instant: equal deltas are exactly equal scores.
    for (member, delta) in EVENTS {
        h.boards
            .trending(&name)
            .incr(member, delta, None)
            .await
            .unwrap();
    }
    let (b, name) = (&h.boards, name.as_str());
    let ranked = |positions: &[usize]| -> Vec<(u64, String)> {
        let ranks = ranks_by(Ties::Competition);
        positions
            .iter()
            .map(|&p| (ranks[p], RANKING[p].0.to_owned()))
            .collect()
    };
    let asc = |range, offset, limit| async move {
        let page = b
            .trending(name)
            .ranking(range, Order::Asc, offset, limit)
            .await
            .unwrap();
        trend_ranks(&page)
    };
    assert_eq!(asc(TrendRange::ALL, 0, 3).await, ranked(&[7, 6, 5]));
    assert_eq!(asc(TrendRange::ALL, 3, 3).await, ranked(&[4, 3, 2]));
    assert_eq!(asc(TrendRange::ALL, 6, 10).await, ranked(&[1, 0]));
    assert_eq!(asc(TrendRange::ALL, 8, 10).await, ranked(&[]));
    let range = TrendRange::new(Some(2.5), Some(7.5)).unwrap();
    assert_eq!(asc(range, 0, 2).await, ranked(&[6, 5]));
    assert_eq!(asc(range, 2, 10).await, ranked(&[4, 3, 2, 1]));
    let around = |member: &'static str, n, fill, order| async move {
        b.trending(name)
            .around(member, n, options(fill, order))
            .await
            .unwrap()
            .map(|page| trend_ranks(&page))
    };
    assert_eq!(
        around("a", 2, true, Order::Desc).await,
        Some(ranked(&[0, 1, 2, 3, 4]))
    );
    assert_eq!(
        around("e", 2, true, Order::Desc).await,
        Some(ranked(&[2, 3, 4, 5, 6]))
    );
    assert_eq!(
        around("h", 2, true, Order::Desc).await,
        Some(ranked(&[3, 4, 5, 6, 7]))
    );
    assert_eq!(
        around("h", 2, false, Order::Desc).await,
        Some(ranked(&[5, 6, 7]))
    );
    assert_eq!(
        around("h", 1, true, Order::Asc).await,
        Some(ranked(&[7, 6, 5]))
    );
    assert_eq!(
        around("c", 20, true, Order::Desc).await,
        Some(ranked(&[0, 1, 2, 3, 4, 5, 6, 7]))
    );
    assert_eq!(around("x", 2, true, Order::Desc).await, None);
}
