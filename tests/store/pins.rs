//! Pins, on every store: a pinned member shows at its position of the first page of the
//! top (marked, with the rank its counts give), each member once, the page still as long
//! as asked, the others keeping their ranks; other pages, the bottom and score ranges are
//! the ranking as it is; a hidden member is not shown though pinned; a pin ends at its
//! time or when unpinned; another process sees a pin at once (Redis); bad pins say what
//! to fix; the moderation log keeps each.

use rollboard::{
    BoardConfig, Error, ModerationAction, ModerationNote, Pin, Rollboard, ScoreRange, Span,
};

use crate::support::{Harness, START, ts, unique, with_clock};

// Under a key prefix of each test's own: the moderation log the test reads is global.
on_every_isolated_store!(
    a_pin_shows_a_member_at_its_position_of_the_first_page_until_it_ends,
    bad_pins_say_what_to_fix,
);

fn note() -> ModerationNote {
    ModerationNote::default()
}

/// (rank, member, score, pinned) of each entry of `board`'s top page from `offset`.
async fn page(
    boards: &Rollboard,
    board: &str,
    offset: u64,
    limit: u64,
) -> Vec<(u64, String, i64, bool)> {
    let page = boards
        .windowed(board)
        .top(None, offset, limit)
        .await
        .unwrap();
    let entries = page.entries.into_iter();
    entries
        .map(|e| (e.rank, e.member, e.score, e.pinned))
        .collect()
}

fn rows(entries: &[(u64, &str, i64, bool)]) -> Vec<(u64, String, i64, bool)> {
    entries
        .iter()
        .map(|&(r, m, s, p)| (r, m.to_owned(), s, p))
        .collect()
}

/// A board of a 9, b 7, c 5, d 3 and e 1.
async fn board(h: &Harness) -> String {
    let board = unique("pins");
    let config = BoardConfig::parse("1h", &["1h", "3h"]).unwrap();
    h.boards.create(&board, config).await.unwrap();
    for (member, delta) in [("a", 9), ("b", 7), ("c", 5), ("d", 3), ("e", 1)] {
        h.boards
            .windowed(&board)
            .incr(member, delta, None)
            .await
            .unwrap();
    }
    board
}

async fn a_pin_shows_a_member_at_its_position_of_the_first_page_until_it_ends(h: Harness) {
    let board = board(&h).await;
    let w = || h.boards.windowed(&board);
    // The announcement holds no likes: shown first, unranked; d, ranked 4th, second.
    let pins = w().pin("news", 1, ts(START + 3600), &note()).await.unwrap();
    assert_eq!(
        pins,
        [Pin {
            member: "news".into(),
            position: 1,
            until: START + 3600
        }]
    );
    let pins = w().pin("d", 2, ts(START + 7200), &note()).await.unwrap();
    assert_eq!(pins.iter().map(|p| p.position).collect::<Vec<_>>(), [1, 2]);
    let first = rows(&[
        (0, "news", 0, true),
        (4, "d", 3, true),
        (1, "a", 9, false),
        (2, "b", 7, false),
    ]);
    assert_eq!(page(&h.boards, &board, 0, 4).await, first);
    // c, pushed off, opens the next page.
    let top = w().top(None, 0, 4).await.unwrap();
    assert_eq!(top.next_offset, Some(2));
    // Other pages, the bottom and a score range: the ranking as it is.
    assert_eq!(
        page(&h.boards, &board, 4, 4).await,
        rows(&[(5, "e", 1, false)])
    );
    let bottom = w().bottom(None, 0, 2).await.unwrap();
    let bottom: Vec<_> = bottom
        .entries
        .iter()
        .map(|e| (e.member.as_str(), e.pinned))
        .collect();
    assert_eq!(bottom, [("e", false), ("d", false)]);
    let range = ScoreRange::new(Some(3), None).unwrap();
    let ranged = w().top_in_range(None, range, 0, 10).await.unwrap();
    assert!(ranged.entries.iter().all(|e| !e.pinned));

    // Another process (its own cached board) sees the pins at once: it reloads the board.
    let other = with_clock(h.boards.store().clone(), &h.clock);
    assert_eq!(page(&other, &board, 0, 4).await, first);
    other.windowed(&board).unpin("news", &note()).await.unwrap();
    let without = rows(&[
        (1, "a", 9, false),
        (4, "d", 3, true),
        (2, "b", 7, false),
        (3, "c", 5, false),
    ]);
    assert_eq!(page(&h.boards, &board, 0, 4).await, without);
    w().pin("news", 1, ts(START + 3600), &note()).await.unwrap();

    // A hidden member is not shown, pinned or not; shown again, it is.
    assert!(w().hide("d", &note()).await.unwrap());
    let hidden = rows(&[
        (0, "news", 0, true),
        (1, "a", 9, false),
        (2, "b", 7, false),
        (3, "c", 5, false),
    ]);
    assert_eq!(page(&h.boards, &board, 0, 4).await, hidden);
    assert!(w().show("d", &note()).await.unwrap());
    // Pinned again, at another position: its pin replaced.
    w().pin("d", 3, ts(START + 7200), &note()).await.unwrap();
    let moved = rows(&[
        (0, "news", 0, true),
        (1, "a", 9, false),
        (4, "d", 3, true),
        (2, "b", 7, false),
    ]);
    assert_eq!(page(&h.boards, &board, 0, 4).await, moved);

    // The first pin ends at its time; the second when unpinned.
    h.at(3600);
    let ended = rows(&[
        (1, "a", 9, false),
        (2, "b", 7, false),
        (4, "d", 3, true),
        (3, "c", 5, false),
    ]);
    assert_eq!(page(&h.boards, &board, 0, 4).await, ended);
    assert_eq!(w().pins().await.unwrap().len(), 1);
    assert!(w().unpin("d", &note()).await.unwrap());
    assert!(!w().unpin("d", &note()).await.unwrap());
    let plain = rows(&[
        (1, "a", 9, false),
        (2, "b", 7, false),
        (3, "c", 5, false),
        (4, "d", 3, false),
    ]);
    assert_eq!(page(&h.boards, &board, 0, 4).await, plain);
    assert!(w().pins().await.unwrap().is_empty());

    let log = h.boards.moderation_log(None, 2).await.unwrap();
    let seen: Vec<_> = log
        .iter()
        .map(|e| (e.action, e.member.as_str(), e.changed))
        .collect();
    assert_eq!(
        seen,
        [
            (ModerationAction::Unpin, "d", 0),
            (ModerationAction::Unpin, "d", 1)
        ]
    );
    let pinned = h.boards.moderation_log(None, 3).await.unwrap();
    let pin = pinned[2].pin.clone().unwrap();
    assert_eq!(
        (pinned[2].action, pin.position, pin.until),
        (ModerationAction::Pin, 3, START + 7200)
    );
}

async fn bad_pins_say_what_to_fix(h: Harness) {
    let board = board(&h).await;
    let w = || h.boards.windowed(&board);
    let until = ts(START + 60);
    for (position, until) in [
        (0, until),
        (101, until),
        (1, ts(START)),
        (1, ts(START - 60)),
    ] {
        let refused = w().pin("a", position, until, &note()).await;
        assert!(
            matches!(refused, Err(Error::InvalidModeration { .. })),
            "{refused:?}"
        );
    }
    for i in 0..10 {
        w().pin(&format!("m{i}"), i + 1, until, &note())
            .await
            .unwrap();
    }
    let refused = w().pin("one-more", 1, until, &note()).await;
    assert!(
        matches!(refused, Err(Error::InvalidModeration { .. })),
        "{refused:?}"
    );
    // Pinned again, a member takes no second place; once expired, pins free their room.
    w().pin("m3", 20, until, &note()).await.unwrap();
    assert_eq!(w().pins().await.unwrap().len(), 10);
    h.at(60);
    w().pin("one-more", 1, ts(START + 120), &note())
        .await
        .unwrap();
    assert_eq!(w().pins().await.unwrap().len(), 1);
    let top = w()
        .top(Some(Span::parse("3h").unwrap()), 0, 2)
        .await
        .unwrap();
    let members: Vec<_> = top.entries.iter().map(|e| e.member.as_str()).collect();
    assert_eq!(members, ["one-more", "a"]);
}
