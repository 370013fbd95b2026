//! Dense ties (`"ties":"dense"`), on both stores and a cluster: equal totals rank 1, 1, 2
//! in every read that returns ranks, after writes, retirement, member removal, a
//! recompute and a window added to the board; percentiles stay member-based; the option
//! is fixed when the board is created. On a single Redis the tallies are checked against
//! the totals (the data model's invariants).

use rollboard::{BoardConfig, Created, Event, MemberRank, ScoreRange, Span, Ties};

use crate::oracle::check_redis_invariants;
use crate::support::{Harness, START, ts, unique};

on_every_store!(
    dense_ranks_hold_through_writes_retirement_removal_and_recompute,
    a_window_added_to_a_dense_board_ranks_densely_once_built,
    ties_are_fixed_when_the_board_is_created,
    a_member_in_two_slots_of_one_write_reaching_zero_leaves_the_tallies_exact,
);

fn dense(windows: &[&str]) -> BoardConfig {
    BoardConfig::parse("1h", windows)
        .unwrap()
        .with_ties(Ties::Dense)
}

/// `(rank, member, score)` of a page.
fn ranked(page: &rollboard::TopPage) -> Vec<(u64, String, i64)> {
    page.entries
        .iter()
        .map(|e| (e.rank, e.member.clone(), e.score))
        .collect()
}

fn triples(items: &[(u64, &str, i64)]) -> Vec<(u64, String, i64)> {
    items
        .iter()
        .map(|(r, m, s)| (*r, m.to_string(), *s))
        .collect()
}

/// On a single Redis, the keys (tallies included) keep the data model's invariants.
async fn check_keys(h: &Harness, name: &str, config: &BoardConfig) {
    if let Some(redis) = &h.redis {
        check_redis_invariants(&mut redis.raw().await, name, config, None).await;
    }
}

async fn dense_ranks_hold_through_writes_retirement_removal_and_recompute(h: Harness) {
    let config = dense(&["1h", "3h"]);
    let name = unique("d");
    h.boards.create(&name, config.clone()).await.unwrap();
    let (hour, three) = (Span::parse("1h").unwrap(), Span::parse("3h").unwrap());
    for (member, delta) in [("a", 5), ("b", 5), ("c", 3), ("d", 3), ("e", 1), ("f", -2)] {
        h.boards
            .windowed(&name)
            .incr(member, delta, None)
            .await
            .unwrap();
    }
    let top = h
        .boards
        .windowed(&name)
        .top(Some(hour), 0, 10)
        .await
        .unwrap();
    let expected = triples(&[
        (1, "a", 5),
        (1, "b", 5),
        (2, "c", 3),
        (2, "d", 3),
        (3, "e", 1),
    ]);
    assert_eq!(ranked(&top), expected);
    // A page starting inside a tie group, and one after it.
    let page = h
        .boards
        .windowed(&name)
        .top(Some(hour), 3, 2)
        .await
        .unwrap();
    assert_eq!(ranked(&page), expected[3..]);
    let standing = h
        .boards
        .windowed(&name)
        .score("c", Some(hour))
        .await
        .unwrap()
        .unwrap();
    // Rank dense; percentile member-based: e (1 of 5 ranked) is below c.
    assert_eq!((standing.rank, standing.percentile), (Some(2), 0.2));
    let ranks = h
        .boards
        .windowed(&name)
        .ranks(&["e", "f", "a", "d"], Some(hour))
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
            rank("e", 1, Some(3)),
            rank("f", -2, None),
            rank("a", 5, Some(1)),
            rank("d", 3, Some(2)),
        ]
    );
    let around = h
        .boards
        .windowed(&name)
        .around("c", Some(hour), 1, Default::default())
        .await
        .unwrap();
    assert_eq!(ranked(&around.unwrap()), expected[1..4]);
    let range = ScoreRange::new(Some(1), Some(3)).unwrap();
    let page = h
        .boards
        .windowed(&name)
        .top_in_range(Some(hour), range, 1, 10)
        .await
        .unwrap();
    assert_eq!(ranked(&page), expected[3..]);
    check_keys(&h, &name, &config).await;

    // The first slot leaves the hour window: retirement subtracts it, c writes again.
    h.at(3600);
    h.boards.windowed(&name).incr("c", 4, None).await.unwrap();
    h.boards.windowed(&name).incr("e", 4, None).await.unwrap();
    h.boards.windowed(&name).retire(None).await.unwrap();
    let top = h
        .boards
        .windowed(&name)
        .top(Some(hour), 0, 10)
        .await
        .unwrap();
    assert_eq!(ranked(&top), triples(&[(1, "c", 4), (1, "e", 4)]));
    let top = h
        .boards
        .windowed(&name)
        .top(Some(three), 0, 10)
        .await
        .unwrap();
    assert_eq!(
        ranked(&top),
        triples(&[
            (1, "c", 7),
            (2, "a", 5),
            (2, "b", 5),
            (2, "e", 5),
            (3, "d", 3)
        ])
    );
    check_keys(&h, &name, &config).await;

    // Removing a member of a tie group keeps the group's rank; removing a sole total
    // closes the gap.
    h.boards.windowed(&name).remove_member("a").await.unwrap();
    h.boards.windowed(&name).remove_member("c").await.unwrap();
    let top = h
        .boards
        .windowed(&name)
        .top(Some(three), 0, 10)
        .await
        .unwrap();
    let expected = triples(&[(1, "b", 5), (1, "e", 5), (2, "d", 3)]);
    assert_eq!(ranked(&top), expected);
    check_keys(&h, &name, &config).await;

    // A recompute rebuilds the totals, and the tallies with them.
    if let Some(redis) = &h.redis {
        let mut raw = redis.raw().await;
        let _: () = ::redis::cmd("DEL")
            .arg(format!("tally_{{{name}}}_10800"))
            .arg(format!("dense_{{{name}}}_10800"))
            .query_async(&mut raw)
            .await
            .unwrap();
    }
    h.boards
        .windowed(&name)
        .recompute(Some(three))
        .await
        .unwrap();
    let top = h
        .boards
        .windowed(&name)
        .top(Some(three), 0, 10)
        .await
        .unwrap();
    assert_eq!(ranked(&top), expected);
    let standing = h
        .boards
        .windowed(&name)
        .score("d", Some(three))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(standing.rank, Some(2));
    check_keys(&h, &name, &config).await;

    // Every total leaving: nothing is tallied.
    h.at(3 * 3600);
    h.boards.windowed(&name).retire(None).await.unwrap();
    let top = h
        .boards
        .windowed(&name)
        .top(Some(three), 0, 10)
        .await
        .unwrap();
    assert_eq!(ranked(&top), triples(&[(1, "e", 4)]));
    h.at(7 * 3600);
    h.boards.windowed(&name).retire(None).await.unwrap();
    check_keys(&h, &name, &config).await;
    if let Some(redis) = &h.redis {
        let mut raw = redis.raw().await;
        let left: Vec<String> = ::redis::cmd("KEYS")
            .arg(format!("*{{{name}}}*"))
            .query_async(&mut raw)
            .await
            .unwrap();
        assert!(
            !left
                .iter()
                .any(|k| k.starts_with("tally_") || k.starts_with("dense_")),
            "{left:?}"
        );
    }
    h.boards.drop_board(&name).await.unwrap();
    if let Some(redis) = &h.redis {
        let left: Vec<String> = ::redis::cmd("KEYS")
            .arg(format!("*{{{name}}}*"))
            .query_async(&mut redis.raw().await)
            .await
            .unwrap();
        assert!(left.is_empty(), "a drop leaves {left:?}");
    }
}

async fn a_window_added_to_a_dense_board_ranks_densely_once_built(h: Harness) {
    let name = unique("d");
    h.boards.create(&name, dense(&["1h"])).await.unwrap();
    for (member, delta) in [("a", 2), ("b", 9), ("c", 2), ("d", 1), ("e", 9)] {
        h.boards
            .windowed(&name)
            .incr(member, delta, None)
            .await
            .unwrap();
    }
    let wider = dense(&["1h", "2h"]);
    let created = h.boards.create(&name, wider.clone()).await.unwrap();
    assert!(matches!(created, Created::Extended(_)), "{created:?}");
    h.boards.windowed(&name).build_windows().await.unwrap();
    h.boards.windowed(&name).incr("d", 1, None).await.unwrap();
    let top = h
        .boards
        .windowed(&name)
        .top(Some(Span::parse("2h").unwrap()), 0, 10)
        .await
        .unwrap();
    assert_eq!(
        ranked(&top),
        triples(&[
            (1, "b", 9),
            (1, "e", 9),
            (2, "a", 2),
            (2, "c", 2),
            (2, "d", 2)
        ])
    );
    check_keys(&h, &name, &wider).await;
    h.boards.drop_board(&name).await.unwrap();
}

async fn ties_are_fixed_when_the_board_is_created(h: Harness) {
    let name = unique("d");
    let competition = BoardConfig::parse("1h", &["1h"]).unwrap();
    h.boards.create(&name, competition.clone()).await.unwrap();
    let err = h.boards.create(&name, dense(&["1h"])).await.unwrap_err();
    assert_eq!(err.code(), "board_conflict");
    let err = h
        .boards
        .create(&name, dense(&["1h", "2h"]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "board_conflict");
    h.boards.drop_board(&name).await.unwrap();

    h.boards.create(&name, dense(&["1h"])).await.unwrap();
    let again = h.boards.create(&name, dense(&["1h"])).await.unwrap();
    assert!(matches!(again, Created::Existing(_)), "{again:?}");
    assert_eq!(again.board().windowed().unwrap().config.ties(), Ties::Dense);
    let err = h.boards.create(&name, competition).await.unwrap_err();
    assert_eq!(err.code(), "board_conflict");
    let status = h.boards.describe_board(&name).await.unwrap();
    assert_eq!(status.config.ties(), Ties::Dense);
    h.boards.drop_board(&name).await.unwrap();
}

/// One write carries member `a` in two slots (the open one and one two hours back, which
/// only the 3h window still counts): its deltas are summed per window, so its 3h total
/// goes from 4 to exactly 0 (removed, and untallied) while its 1h total becomes 3.
async fn a_member_in_two_slots_of_one_write_reaching_zero_leaves_the_tallies_exact(h: Harness) {
    let config = dense(&["1h", "3h"]);
    let name = unique("d");
    h.boards.create(&name, config.clone()).await.unwrap();
    let (hour, three) = (Span::parse("1h").unwrap(), Span::parse("3h").unwrap());
    h.at(60);
    let first = [("a", 4), ("b", 4), ("c", 1)].map(|(m, d)| Event::new(m, d));
    assert!(
        h.boards
            .windowed(&name)
            .incr_batch(&first)
            .await
            .unwrap()
            .rejected
            .is_empty()
    );
    h.at(2 * 3600 + 60);
    let earlier = ts(START + 60);
    let second = [
        Event::new("a", 3),
        Event::new("a", -7).at(earlier),
        Event::new("b", 1),
        Event::new("c", 1),
    ];
    assert!(
        h.boards
            .windowed(&name)
            .incr_batch(&second)
            .await
            .unwrap()
            .rejected
            .is_empty()
    );
    // The 1h window is not retired yet (no retirer runs here): it still holds the first
    // write, and the -7 of a slot it froze skips it.
    let top = h
        .boards
        .windowed(&name)
        .top(Some(hour), 0, 10)
        .await
        .unwrap();
    assert_eq!(
        ranked(&top),
        triples(&[(1, "a", 7), (2, "b", 5), (3, "c", 2)])
    );
    let top = h
        .boards
        .windowed(&name)
        .top(Some(three), 0, 10)
        .await
        .unwrap();
    assert_eq!(ranked(&top), triples(&[(1, "b", 5), (2, "c", 2)]));
    assert_eq!(
        h.boards
            .windowed(&name)
            .score("a", Some(three))
            .await
            .unwrap(),
        None
    );
    check_keys(&h, &name, &config).await;
}
