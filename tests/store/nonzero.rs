//! Net-vote boards (`"rank":"nonzero"`), on every store and a cluster: every non-zero
//! total is ranked, negative ones below every positive one, in every read that ranks
//! (top and bottom pages, member reads and percentiles, ranks of a list, the page
//! around a member with and without fill, score ranges, snapshots, the ranked count of
//! a description), while a board of positive totals keeps answering negative totals
//! without ranking them. Retirement that turns a total from positive to negative, and
//! from negative to zero, moves the member down the ranking, then out of it.

use rollboard::{
    AroundOptions, BoardConfig, MemberRank, Order, RankedTotals, ScoreRange, SnapshotPass,
    SnapshotPolicy, SnapshotRange, Span, Ties,
};

use crate::support::{Harness, triples, unique};

on_every_store!(
    a_nonzero_board_ranks_negative_totals_below_positive_ones_in_every_read,
    a_positive_board_answers_negative_totals_without_ranking_them,
    the_rank_option_is_fixed_when_the_board_is_created_and_refuses_dense_ties,
    retirement_moves_a_total_below_zero_and_then_out_of_the_ranking,
    a_snapshot_of_a_nonzero_board_holds_its_negative_leaders,
);

const HOUR: i64 = 3600;

/// Every test's events: a tie group of two negative totals (c, e) and a member whose
/// votes cancel out (z: no total).
const EVENTS: [(&str, i64); 7] = [
    ("a", 3),
    ("b", 1),
    ("c", -2),
    ("d", -5),
    ("e", -2),
    ("z", 2),
    ("z", -2),
];

/// The ranking of `EVENTS` on a nonzero board (positions 0..5).
const RANKING: [(&str, i64); 5] = [("a", 3), ("b", 1), ("c", -2), ("e", -2), ("d", -5)];

/// The ranks of `RANKING` by each way of ranking ties a nonzero board takes.
fn ranks_by(ties: Ties) -> [u64; 5] {
    match ties {
        Ties::Position => [1, 2, 3, 4, 5],
        _ => [1, 2, 3, 3, 5],
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

fn config(rank: RankedTotals, ties: Ties) -> BoardConfig {
    BoardConfig::parse("1h", &["1h"])
        .unwrap()
        .with_ties(ties)
        .with_rank(rank)
        .unwrap()
}

/// A board of one 1-hour window, holding `EVENTS`.
async fn board(h: &Harness, rank: RankedTotals, ties: Ties) -> String {
    let name = unique("nz");
    h.boards.create(&name, config(rank, ties)).await.unwrap();
    for (member, delta) in EVENTS {
        h.boards
            .windowed(&name)
            .incr(member, delta, None)
            .await
            .unwrap();
    }
    name
}

async fn a_nonzero_board_ranks_negative_totals_below_positive_ones_in_every_read(h: Harness) {
    for ties in [Ties::Competition, Ties::Position] {
        let name = board(&h, RankedTotals::Nonzero, ties).await;
        let b = &h.boards;
        let top = b.windowed(&name).top(None, 0, 10).await.unwrap();
        assert_eq!(
            triples(&top.entries),
            at(ties, &[0, 1, 2, 3, 4]),
            "{ties:?}"
        );
        // A page cut inside the negative tie group, and one of negative totals only.
        let page = b.windowed(&name).top(None, 1, 2).await.unwrap();
        assert_eq!(triples(&page.entries), at(ties, &[1, 2]));
        let page = b.windowed(&name).top(None, 3, 10).await.unwrap();
        assert_eq!(triples(&page.entries), at(ties, &[3, 4]));
        // Bottom pages start at the lowest total, ranks stay the board's.
        let bottom = b.windowed(&name).bottom(None, 0, 3).await.unwrap();
        assert_eq!(triples(&bottom.entries), at(ties, &[4, 3, 2]));
        let bottom = b.windowed(&name).bottom(None, 3, 10).await.unwrap();
        assert_eq!(triples(&bottom.entries), at(ties, &[1, 0]));
        // A score range holds negative totals: min_score −3 to max_score 2.
        let range = ScoreRange::new(Some(-3), Some(2)).unwrap();
        let page = b
            .windowed(&name)
            .top_in_range(None, range, 0, 10)
            .await
            .unwrap();
        assert_eq!(triples(&page.entries), at(ties, &[1, 2, 3]));
        let page = b
            .windowed(&name)
            .ranking(None, range, Order::Asc, 0, 2)
            .await
            .unwrap();
        assert_eq!(triples(&page.entries), at(ties, &[3, 2]));
        let below = ScoreRange::new(None, Some(-3)).unwrap();
        let page = b
            .windowed(&name)
            .top_in_range(None, below, 0, 10)
            .await
            .unwrap();
        assert_eq!(triples(&page.entries), at(ties, &[4]));
        // Member reads: a rank for every sign, percentiles over the 5 ranked members.
        let ranks = ranks_by(ties);
        for (member, position, percentile) in
            [("a", 0, 0.8), ("b", 1, 0.6), ("e", 3, 0.2), ("d", 4, 0.0)]
        {
            let s = b
                .windowed(&name)
                .score(member, None)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(
                (s.score, s.rank, s.percentile),
                (RANKING[position].1, Some(ranks[position]), percentile),
                "{member} {ties:?}"
            );
        }
        assert!(b.windowed(&name).score("z", None).await.unwrap().is_none());
        let listed = b
            .windowed(&name)
            .ranks(&["d", "z", "a", "c"], None)
            .await
            .unwrap();
        let expected = [
            ("d", -5, Some(ranks[4])),
            ("z", 0, None),
            ("a", 3, Some(1)),
            ("c", -2, Some(3)),
        ]
        .map(|(member, score, rank)| MemberRank {
            member: member.into(),
            score,
            rank,
        });
        assert_eq!(listed.entries, expected);
        // Around a negative member: n on each side, or a full page shifted at the end.
        let around = |member: &'static str, fill, order| {
            let (b, name) = (b.clone(), name.clone());
            async move {
                let options = AroundOptions { fill, order };
                let page = b
                    .windowed(&name)
                    .around(member, None, 1, options)
                    .await
                    .unwrap();
                page.map(|p| triples(&p.entries))
            }
        };
        assert_eq!(
            around("d", false, Order::Desc).await,
            Some(at(ties, &[3, 4]))
        );
        assert_eq!(
            around("d", true, Order::Desc).await,
            Some(at(ties, &[2, 3, 4]))
        );
        assert_eq!(
            around("d", true, Order::Asc).await,
            Some(at(ties, &[4, 3, 2]))
        );
        assert_eq!(
            around("b", false, Order::Desc).await,
            Some(at(ties, &[0, 1, 2]))
        );
        assert_eq!(around("z", true, Order::Desc).await, None);
        // Described: 5 members, all 5 ranked.
        let status = b.describe_board(&name).await.unwrap();
        assert_eq!(
            (status.windows[0].members, status.windows[0].ranked),
            (5, 5)
        );
        assert_eq!(status.config.rank(), RankedTotals::Nonzero);
    }
}

async fn a_positive_board_answers_negative_totals_without_ranking_them(h: Harness) {
    let name = board(&h, RankedTotals::Positive, Ties::Competition).await;
    let b = &h.boards;
    let top = b.windowed(&name).top(None, 0, 10).await.unwrap();
    assert_eq!(triples(&top.entries), at(Ties::Competition, &[0, 1]));
    let bottom = b.windowed(&name).bottom(None, 0, 10).await.unwrap();
    assert_eq!(triples(&bottom.entries), at(Ties::Competition, &[1, 0]));
    let range = ScoreRange::new(Some(-3), Some(2)).unwrap();
    let page = b
        .windowed(&name)
        .top_in_range(None, range, 0, 10)
        .await
        .unwrap();
    assert_eq!(triples(&page.entries), at(Ties::Competition, &[1]));
    let d = b.windowed(&name).score("d", None).await.unwrap().unwrap();
    assert_eq!((d.score, d.rank, d.percentile), (-5, None, 0.0));
    let a = b.windowed(&name).score("a", None).await.unwrap().unwrap();
    assert_eq!((a.rank, a.percentile), (Some(1), 0.5));
    assert!(
        b.windowed(&name)
            .around("d", None, 1, Default::default())
            .await
            .unwrap()
            .is_none()
    );
    let status = b.describe_board(&name).await.unwrap();
    assert_eq!(
        (status.windows[0].members, status.windows[0].ranked),
        (5, 2)
    );
    assert_eq!(status.config.rank(), RankedTotals::Positive);
}

async fn the_rank_option_is_fixed_when_the_board_is_created_and_refuses_dense_ties(h: Harness) {
    let name = board(&h, RankedTotals::Nonzero, Ties::Competition).await;
    let b = &h.boards;
    let same = b
        .create(&name, config(RankedTotals::Nonzero, Ties::Competition))
        .await;
    assert!(same.is_ok(), "{same:?}");
    let err = b
        .create(&name, config(RankedTotals::Positive, Ties::Competition))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "board_conflict");
    assert!(
        err.to_string()
            .contains("rank: stored nonzero, asked positive"),
        "{err}"
    );
    // A wider board is taken only with the same option.
    let wider = |rank| {
        BoardConfig::parse("1h", &["1h", "2h"])
            .unwrap()
            .with_rank(rank)
            .unwrap()
    };
    let err = b
        .create(&name, wider(RankedTotals::Positive))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "board_conflict");
    b.create(&name, wider(RankedTotals::Nonzero)).await.unwrap();
    let board = b.board(&name).await.unwrap();
    assert_eq!(board.config.rank(), RankedTotals::Nonzero);
    assert_eq!(board.config.windows().len(), 2);
    // The extended board still ranks negative totals (a new window is built apart).
    let s = b.windowed(&name).score("d", None).await.unwrap().unwrap();
    assert_eq!((s.score, s.rank), (-5, Some(5)));
    let err = BoardConfig::parse("1h", &["1h"])
        .unwrap()
        .with_ties(Ties::Dense)
        .with_rank(RankedTotals::Nonzero)
        .unwrap_err();
    assert_eq!(err.code(), "invalid_config");
    // Dense ties set after the option are refused when the board is created.
    let late = config(RankedTotals::Nonzero, Ties::Competition).with_ties(Ties::Dense);
    let err = b.create(&unique("nzd"), late).await.unwrap_err();
    assert_eq!(err.code(), "invalid_config");
}

async fn retirement_moves_a_total_below_zero_and_then_out_of_the_ranking(h: Harness) {
    let name = unique("nzr");
    let config = BoardConfig::parse("1h", &["1h", "2h"])
        .unwrap()
        .with_rank(RankedTotals::Nonzero)
        .unwrap();
    h.boards.create(&name, config).await.unwrap();
    let b = &h.boards;
    let (one, two) = (
        Some(Span::parse("1h").unwrap()),
        Some(Span::parse("2h").unwrap()),
    );
    h.at(10);
    for (member, delta) in [("p", 6), ("n", -3), ("q", 1)] {
        b.windowed(&name).incr(member, delta, None).await.unwrap();
    }
    h.at(HOUR + 10);
    for (member, delta) in [("p", -5), ("q", 2)] {
        b.windowed(&name).incr(member, delta, None).await.unwrap();
    }
    let listed = |window| {
        let (b, name) = (b.clone(), name.clone());
        async move { triples(&b.windowed(&name).top(window, 0, 10).await.unwrap().entries) }
    };
    let expected = |items: &[(u64, &str, i64)]| -> Vec<(u64, String, i64)> {
        items
            .iter()
            .map(|(r, m, s)| (*r, m.to_string(), *s))
            .collect()
    };
    // Before slot 0 leaves the 1-hour window: p positive, n negative.
    assert_eq!(
        listed(one).await,
        expected(&[(1, "q", 3), (2, "p", 1), (3, "n", -3)])
    );
    assert!(b.windowed(&name).retire(None).await.unwrap().complete);
    // Retired: p turned negative (ranked below q), n reached zero (no total, unranked).
    assert_eq!(listed(one).await, expected(&[(1, "q", 2), (2, "p", -5)]));
    let p = b.windowed(&name).score("p", one).await.unwrap().unwrap();
    assert_eq!((p.score, p.rank, p.percentile), (-5, Some(2), 0.0));
    assert!(b.windowed(&name).score("n", one).await.unwrap().is_none());
    let bottom = b.windowed(&name).bottom(one, 0, 10).await.unwrap();
    assert_eq!(
        triples(&bottom.entries),
        expected(&[(2, "p", -5), (1, "q", 2)])
    );
    let status = b.describe_board(&name).await.unwrap();
    let counts: Vec<(u64, u64)> = status
        .windows
        .iter()
        .map(|w| (w.members, w.ranked))
        .collect();
    assert_eq!(counts, [(2, 2), (3, 3)]);
    // The 2-hour window still holds slot 0.
    assert_eq!(
        listed(two).await,
        expected(&[(1, "q", 3), (2, "p", 1), (3, "n", -3)])
    );
    // Slot 0 leaves the 2-hour window too; slot 1 leaves the 1-hour one.
    h.at(2 * HOUR + 10);
    assert!(b.windowed(&name).retire(None).await.unwrap().complete);
    assert_eq!(listed(one).await, expected(&[]));
    assert_eq!(listed(two).await, expected(&[(1, "q", 2), (2, "p", -5)]));
    let n = b.windowed(&name).ranks(&["n", "p"], two).await.unwrap();
    let ranks: Vec<(i64, Option<u64>)> = n.entries.iter().map(|e| (e.score, e.rank)).collect();
    assert_eq!(ranks, [(0, None), (-5, Some(2))]);
}

async fn a_snapshot_of_a_nonzero_board_holds_its_negative_leaders(h: Harness) {
    for ties in [Ties::Competition, Ties::Position] {
        let name = unique("nzs");
        let config = BoardConfig::parse("1h", &["3h"])
            .unwrap()
            .with_ties(ties)
            .with_rank(RankedTotals::Nonzero)
            .unwrap()
            .with_snapshots(Some(SnapshotPolicy::new(4, 10).unwrap()));
        h.boards.create(&name, config).await.unwrap();
        let board = h.boards.windowed(&name);
        h.at(10);
        for (member, delta) in EVENTS {
            board.incr(member, delta, None).await.unwrap();
        }
        h.at(HOUR + 1);
        assert!(board.retire(None).await.unwrap().complete);
        assert_eq!(
            board.take_snapshots().await.unwrap(),
            SnapshotPass::Done { appended: 1 }
        );
        // The top 4 cut the negative tie group after c: the snapshot is top's page.
        let expected = at(ties, &[0, 1, 2, 3]);
        let top = board.top(None, 0, 4).await.unwrap();
        assert_eq!(triples(&top.entries), expected);
        let listed = board
            .snapshots(None, SnapshotRange::new(None, None, Some(1)).unwrap())
            .await
            .unwrap();
        let [snapshot] = listed.snapshots.as_slice() else {
            panic!("one snapshot expected, got {:?}", listed.snapshots);
        };
        assert_eq!(snapshot.boundary, crate::support::START + HOUR);
        assert_eq!(triples(&snapshot.entries), expected, "{ties:?}");
        h.at(0);
    }
}
