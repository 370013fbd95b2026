//! Moderation across boards, on every store (each Redis one under a key prefix of the
//! test's own, since what spans boards is global): a member hidden on every board leaves
//! every sum board's rankings, boards created later included, and comes back exact when
//! shown on every board, sharded boards too; a list of boards hides on those alone; boards
//! that cannot hide (trending boards) are reported, not failed; every call is in the moderation log, newest first, with
//! its reason and actor, paged by id.

use rollboard::{
    Aggregate, BoardConfig, Error, Event, LogEntry, ModerationAction, ModerationNote, SkippedBoard,
    TrendingConfig,
};

use crate::support::{Harness, START, triples, unique};

on_every_isolated_store!(
    a_member_hidden_on_every_board_stays_hidden_on_boards_created_later,
    a_list_of_boards_hides_on_those_alone,
    the_moderation_log_keeps_every_call_newest_first,
);

fn config() -> BoardConfig {
    BoardConfig::parse("1h", &["1h", "3h"]).unwrap()
}

fn note(reason: &str, actor: &str) -> ModerationNote {
    ModerationNote::new(Some(reason.to_owned()), Some(actor.to_owned())).unwrap()
}

/// A board `name` holding a 5, b 3 and the spammer `s` 9.
async fn board_with_spammer(h: &Harness, name: &str) {
    spammed(h, name, Aggregate::Sum).await;
}

/// As [`board_with_spammer`], of `aggregate` (its values those totals).
async fn spammed(h: &Harness, name: &str, aggregate: Aggregate) {
    spammed_on(h, name, config().with_aggregate(aggregate)).await;
}

/// As [`board_with_spammer`], with `config`.
async fn spammed_on(h: &Harness, name: &str, config: BoardConfig) {
    let aggregate = config.aggregate();
    h.boards.create(name, config).await.unwrap();
    let events: Vec<_> = [("a", 5), ("b", 3), ("s", 9)]
        .into_iter()
        .map(|(member, n)| match aggregate {
            Aggregate::Sum => Event::new(member, n),
            _ => Event::value(member, n),
        })
        .collect();
    h.boards.windowed(name).incr_batch(&events).await.unwrap();
}

/// The board's top page in both windows, as (rank, member, score).
async fn tops(h: &Harness, board: &str) -> Vec<Vec<(u64, String, i64)>> {
    let mut pages = Vec::new();
    for window in ["1h", "3h"] {
        let window = Some(rollboard::Span::parse(window).unwrap());
        let page = h.boards.windowed(board).top(window, 0, 10).await.unwrap();
        pages.push(triples(&page.entries));
    }
    pages
}

fn ranked(entries: &[(u64, &str, i64)]) -> Vec<Vec<(u64, String, i64)>> {
    let page: Vec<_> = entries
        .iter()
        .map(|&(r, m, s)| (r, m.to_owned(), s))
        .collect();
    vec![page.clone(), page]
}

async fn a_member_hidden_on_every_board_stays_hidden_on_boards_created_later(h: Harness) {
    let (one, max, sharded) = (unique("ev1"), unique("evmax"), unique("evshard"));
    let (trend, later) = (unique("evtrend"), unique("evl"));
    board_with_spammer(&h, &one).await;
    spammed(&h, &max, Aggregate::Max).await;
    spammed_on(&h, &sharded, config().with_shards(2).unwrap()).await;
    let trending = TrendingConfig::parse("6h").unwrap();
    h.boards.create(&trend, trending).await.unwrap();

    let hidden = h
        .boards
        .hide_member("s", None, &note("spam bot", "mod:alice"))
        .await
        .unwrap();
    assert_eq!(
        (
            hidden.hidden,
            hidden.every_board,
            hidden.boards,
            hidden.changed
        ),
        (true, true, 3, 3)
    );
    let skipped: Vec<_> = hidden
        .skipped
        .iter()
        .map(|s| (s.board.as_str(), s.code.as_str()))
        .collect();
    assert_eq!(skipped, [(trend.as_str(), "board_kind")]);
    let without = ranked(&[(1, "a", 5), (2, "b", 3)]);
    for board in [&one, &max, &sharded] {
        assert_eq!(tops(&h, board).await, without, "{board}");
    }
    assert_eq!(h.boards.hidden_everywhere().await.unwrap(), ["s"]);
    // Again: nothing changes.
    let again = h
        .boards
        .hide_member("s", None, &ModerationNote::default())
        .await
        .unwrap();
    assert_eq!((again.boards, again.changed), (3, 0));

    // A board created later hides it from its first write on.
    board_with_spammer(&h, &later).await;
    assert_eq!(tops(&h, &later).await, without);
    let own = h
        .boards
        .windowed(&later)
        .score("s", None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((own.score, own.rank, own.hidden), (9, None, true));

    // Shown on one board only: refused, the member is hidden everywhere.
    let refused = h
        .boards
        .windowed(&one)
        .show("s", &ModerationNote::default())
        .await;
    assert!(
        matches!(refused, Err(Error::HiddenEverywhere { .. })),
        "{refused:?}"
    );
    let boards = [one.clone()];
    let refused = h
        .boards
        .show_member("s", Some(&boards), &ModerationNote::default())
        .await;
    assert!(
        matches!(refused, Err(Error::HiddenEverywhere { .. })),
        "{refused:?}"
    );
    assert_eq!(tops(&h, &one).await, without);

    // Shown on every board: back at its exact totals everywhere, and a board created
    // after that does not hide it.
    let shown = h
        .boards
        .show_member("s", None, &ModerationNote::default())
        .await
        .unwrap();
    assert_eq!((shown.hidden, shown.boards, shown.changed), (false, 4, 4));
    let with = ranked(&[(1, "s", 9), (2, "a", 5), (3, "b", 3)]);
    for board in [&one, &max, &sharded, &later] {
        assert_eq!(tops(&h, board).await, with, "{board}");
    }
    assert!(h.boards.hidden_everywhere().await.unwrap().is_empty());
    let after = unique("eva");
    board_with_spammer(&h, &after).await;
    assert_eq!(tops(&h, &after).await, with);
}

async fn a_list_of_boards_hides_on_those_alone(h: Harness) {
    let (one, two) = (unique("ls1"), unique("ls2"));
    board_with_spammer(&h, &one).await;
    board_with_spammer(&h, &two).await;
    let with = ranked(&[(1, "s", 9), (2, "a", 5), (3, "b", 3)]);
    let without = ranked(&[(1, "a", 5), (2, "b", 3)]);

    // A board of the list that does not exist: refused before anything changes.
    let missing = unique("nosuch");
    let boards = [one.clone(), missing.clone()];
    let refused = h
        .boards
        .hide_member("s", Some(&boards), &ModerationNote::default())
        .await;
    assert!(
        matches!(refused, Err(Error::BoardNotFound(ref b)) if *b == missing),
        "{refused:?}"
    );
    assert_eq!(tops(&h, &one).await, with);
    let refused = h
        .boards
        .hide_member("s", Some(&[]), &ModerationNote::default())
        .await;
    assert!(
        matches!(refused, Err(Error::InvalidModeration { .. })),
        "{refused:?}"
    );

    let boards = [one.clone()];
    let hidden = h
        .boards
        .hide_member("s", Some(&boards), &ModerationNote::default())
        .await
        .unwrap();
    let want = (true, false, 1, 1, Vec::<SkippedBoard>::new());
    let got = (
        hidden.hidden,
        hidden.every_board,
        hidden.boards,
        hidden.changed,
        hidden.skipped,
    );
    assert_eq!(got, want);
    assert_eq!(tops(&h, &one).await, without);
    assert_eq!(tops(&h, &two).await, with);
    assert!(h.boards.hidden_everywhere().await.unwrap().is_empty());
    // Boards created later are not concerned.
    let later = unique("lsl");
    board_with_spammer(&h, &later).await;
    assert_eq!(tops(&h, &later).await, with);

    // Shown by the list, or on the board itself: the same.
    let shown = h
        .boards
        .show_member("s", Some(&boards), &ModerationNote::default())
        .await
        .unwrap();
    assert_eq!((shown.boards, shown.changed), (1, 1));
    assert_eq!(tops(&h, &one).await, with);
    assert!(
        h.boards
            .windowed(&one)
            .hide("s", &ModerationNote::default())
            .await
            .unwrap()
    );
    assert!(
        h.boards
            .windowed(&one)
            .show("s", &ModerationNote::default())
            .await
            .unwrap()
    );
    assert_eq!(tops(&h, &one).await, with);
}

async fn the_moderation_log_keeps_every_call_newest_first(h: Harness) {
    let board = unique("log");
    board_with_spammer(&h, &board).await;
    let at = |seconds: i64| (START + seconds) as f64;
    let w = h.boards.windowed(&board);
    assert!(w.hide("s", &note("spam", "mod:alice")).await.unwrap());
    h.clock.advance_secs(60);
    assert!(!w.hide("s", &ModerationNote::default()).await.unwrap());
    h.clock.advance_secs(60);
    h.boards
        .show_member("s", None, &note("appeal granted", "mod:bob"))
        .await
        .unwrap();

    let entry =
        |seconds, action, boards: Option<&[&str]>, changed, note: Option<(&str, &str)>| LogEntry {
            id: String::new(),
            at: at(seconds),
            action,
            member: "s".to_owned(),
            boards: boards.map(|b| b.iter().map(|b| b.to_string()).collect()),
            changed,
            reason: note.map(|n| n.0.to_owned()),
            actor: note.map(|n| n.1.to_owned()),
            pin: None,
        };
    let on_board: &[&str] = &[&board];
    let want = [
        entry(
            120,
            ModerationAction::Show,
            None,
            1,
            Some(("appeal granted", "mod:bob")),
        ),
        entry(60, ModerationAction::Hide, Some(on_board), 0, None),
        entry(
            0,
            ModerationAction::Hide,
            Some(on_board),
            1,
            Some(("spam", "mod:alice")),
        ),
    ];
    let log = h.boards.moderation_log(None, 10).await.unwrap();
    let ids: Vec<String> = log.iter().map(|e| e.id.clone()).collect();
    let without_ids: Vec<_> = log
        .into_iter()
        .map(|e| LogEntry {
            id: String::new(),
            ..e
        })
        .collect();
    assert_eq!(without_ids, want);
    // Ids fall strictly, newest first.
    let parts: Vec<(u64, u64)> = ids
        .iter()
        .map(|id| {
            let (ms, n) = id.split_once('-').unwrap();
            (ms.parse().unwrap(), n.parse().unwrap())
        })
        .collect();
    assert!(parts.windows(2).all(|p| p[0] > p[1]), "{ids:?}");

    // Paged: two, then the rest from the last id on.
    let first = h.boards.moderation_log(None, 2).await.unwrap();
    assert_eq!(
        first.iter().map(|e| &e.id).collect::<Vec<_>>(),
        [&ids[0], &ids[1]]
    );
    let rest = h.boards.moderation_log(Some(&ids[1]), 2).await.unwrap();
    assert_eq!(rest.iter().map(|e| &e.id).collect::<Vec<_>>(), [&ids[2]]);
    assert!(
        h.boards
            .moderation_log(Some(&ids[2]), 2)
            .await
            .unwrap()
            .is_empty()
    );

    // Bad reads and notes say what to fix.
    for (before, limit) in [(None, 0), (None, 1001), (Some("soon"), 10)] {
        let refused = h.boards.moderation_log(before, limit).await;
        assert!(
            matches!(refused, Err(Error::InvalidQuery { .. })),
            "{refused:?}"
        );
    }
    let long = "x".repeat(129);
    for (reason, actor) in [
        (Some(""), None),
        (None, Some(long.as_str())),
        (Some(&*"r".repeat(1025)), None),
    ] {
        let refused = ModerationNote::new(reason.map(str::to_owned), actor.map(str::to_owned));
        assert!(
            matches!(refused, Err(Error::InvalidModeration { .. })),
            "{refused:?}"
        );
    }
    assert!(ModerationNote::new(Some("r".repeat(1024)), Some("x".repeat(128))).is_ok());
    // A refused call logs nothing.
    assert_eq!(h.boards.moderation_log(None, 10).await.unwrap().len(), 3);
}
