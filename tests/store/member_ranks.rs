//! Ranks for a list of members (a user's friends), on both stores: in the order asked,
//! duplicates answered twice, members without a positive total as score 0 and no rank.

use rollboard::{MemberRank, Span};

use crate::support::{Harness, START};

on_every_store!(
    ranks_answer_in_the_order_asked_with_competition_ranks,
    ranks_read_the_window_asked_and_say_when_retirement_is_behind,
    ranks_refuse_bad_lists_and_unknown_boards_and_windows,
    ranks_take_a_thousand_members,
);

fn rank(member: &str, score: i64, rank: Option<u64>) -> MemberRank {
    MemberRank {
        member: member.to_owned(),
        score,
        rank,
    }
}

async fn ranks_answer_in_the_order_asked_with_competition_ranks(h: Harness) {
    let name = h.board("1h", &["1h"]).await;
    for (member, delta) in [
        ("bob", 7),
        ("alice", 5),
        ("carol", 5),
        ("dave", 2),
        ("erin", -3),
    ] {
        h.boards
            .windowed(&name)
            .incr(member, delta, None)
            .await
            .unwrap();
    }
    let asked = ["carol", "zed", "bob", "erin", "carol", "dave", "alice"];
    let ranks = h.boards.windowed(&name).ranks(&asked, None).await.unwrap();
    assert_eq!(
        ranks.entries,
        [
            rank("carol", 5, Some(2)),
            rank("zed", 0, None),
            rank("bob", 7, Some(1)),
            rank("erin", -3, None),
            rank("carol", 5, Some(2)),
            rank("dave", 2, Some(4)),
            rank("alice", 5, Some(2)),
        ]
    );
    assert_eq!(ranks.board.as_str(), name);
    assert_eq!(ranks.window, Span::parse("1h").unwrap());
    assert_eq!((ranks.from, ranks.to), (START, START + 3600));
    assert_eq!((ranks.behind, ranks.lag_ms), (false, 0));
}

async fn ranks_read_the_window_asked_and_say_when_retirement_is_behind(h: Harness) {
    let name = h.board("1h", &["1h", "3h"]).await;
    h.boards.windowed(&name).incr("a", 4, None).await.unwrap();
    h.boards.windowed(&name).incr("b", 1, None).await.unwrap();
    h.at(3600);
    h.boards.windowed(&name).incr("b", 5, None).await.unwrap();
    h.at(3600 + 20);
    let short = h
        .boards
        .windowed(&name)
        .ranks(&["a", "b"], None)
        .await
        .unwrap();
    // Slot START left the 1h window 20 s ago and is still counted.
    assert_eq!(
        short.entries,
        [rank("a", 4, Some(2)), rank("b", 6, Some(1))]
    );
    assert_eq!(
        (short.from, short.to, short.behind, short.lag_ms),
        (START, START + 7200, true, 20_000)
    );
    h.boards.windowed(&name).retire(None).await.unwrap();
    let short = h
        .boards
        .windowed(&name)
        .ranks(&["a", "b"], None)
        .await
        .unwrap();
    assert_eq!(short.entries, [rank("a", 0, None), rank("b", 5, Some(1))]);
    assert_eq!(
        (short.from, short.behind, short.lag_ms),
        (START + 3600, false, 0)
    );
    let long = h
        .boards
        .windowed(&name)
        .ranks(&["a", "b"], Some(Span::parse("3h").unwrap()))
        .await
        .unwrap();
    assert_eq!(long.entries, [rank("a", 4, Some(2)), rank("b", 6, Some(1))]);
    assert_eq!((long.from, long.to), (START - 3600, START + 7200));
}

async fn ranks_refuse_bad_lists_and_unknown_boards_and_windows(h: Harness) {
    let name = h.board("1h", &["1h"]).await;
    h.boards.windowed(&name).incr("a", 1, None).await.unwrap();
    let none: [&str; 0] = [];
    let code = |r: rollboard::Result<rollboard::Ranks>| r.unwrap_err().code();
    assert_eq!(
        code(h.boards.windowed(&name).ranks(&none, None).await),
        "invalid_query"
    );
    let too_many = vec!["a"; 1001];
    assert_eq!(
        code(h.boards.windowed(&name).ranks(&too_many, None).await),
        "invalid_query"
    );
    assert_eq!(
        code(h.boards.windowed(&name).ranks(&["a", ""], None).await),
        "invalid_member"
    );
    let long = "x".repeat(257);
    assert_eq!(
        code(
            h.boards
                .windowed(&name)
                .ranks(&["a", long.as_str()], None)
                .await
        ),
        "invalid_member"
    );
    assert_eq!(
        code(h.boards.windowed("nope").ranks(&["a"], None).await),
        "board_not_found"
    );
    assert_eq!(
        code(
            h.boards
                .windowed(&name)
                .ranks(&["a"], Some(Span::parse("2h").unwrap()))
                .await
        ),
        "window_not_found"
    );
}

async fn ranks_take_a_thousand_members(h: Harness) {
    let name = h.board("1h", &["1h"]).await;
    let events: Vec<rollboard::Event> = (0..500)
        .map(|i| rollboard::Event::new(format!("m{i:04}"), 1 + i / 2))
        .collect();
    h.boards.windowed(&name).incr_batch(&events).await.unwrap();
    // m0000..m0999: the first 500 hold 1 + i/2 (250 distinct scores, pairs tied).
    let asked: Vec<String> = (0..1000).rev().map(|i| format!("m{i:04}")).collect();
    let ranks = h.boards.windowed(&name).ranks(&asked, None).await.unwrap();
    assert_eq!(ranks.entries.len(), 1000);
    let expected: Vec<MemberRank> = (0..1000i64)
        .rev()
        .map(|i| {
            let member = format!("m{i:04}");
            if i < 500 {
                // 2 members per score above: scores 250 .. 1 + i/2 + 1.
                let higher = 2 * (249 - i / 2) as u64;
                rank(&member, 1 + i / 2, Some(higher + 1))
            } else {
                rank(&member, 0, None)
            }
        })
        .collect();
    assert_eq!(ranks.entries, expected);
}
