//! The conformance suite: every case runs against the memory store, a real Redis and a
//! real Redis Cluster (three masters), and must give the same exact answers on all.

use rollboard::{AroundOptions, BoardConfig, Created, Error, Event, MAX_ABS, Order, Span};

use crate::support::{Harness, START, pairs, ranking, ts};

on_every_store!(
    creating_again_with_the_same_config_returns_the_existing_board,
    creating_with_another_config_is_a_conflict,
    unknown_boards_windows_and_members_are_reported,
    invalid_input_is_rejected_with_its_code,
    top_orders_by_score_then_member_with_competition_ranks,
    pages_cut_through_tie_groups_keep_the_order,
    deep_pages_cut_inside_big_tie_groups_keep_the_order,
    offsets_past_the_end_give_empty_pages,
    zero_and_negative_totals_are_not_ranked,
    an_event_counts_while_its_slot_is_inside_the_window,
    windows_retire_independently,
    late_event_skips_windows_already_retired,
    events_older_than_the_largest_window_are_too_late,
    events_beyond_the_allowed_skew_are_in_the_future,
    totals_and_slot_values_stay_inside_2_pow_53,
    a_batch_rejects_bad_events_by_index_and_applies_the_rest,
    score_gives_total_and_competition_rank,
    around_lists_neighbours_in_ranking_order,
    history_lists_non_zero_slots_of_the_largest_window,
    remove_member_clears_every_slot_and_window,
    drop_board_deletes_it_and_a_new_one_starts_empty,
    a_board_recreated_elsewhere_is_picked_up,
    reads_and_once_writes_reload_a_board_recreated_elsewhere,
    boards_are_listed_by_name,
    retirement_catches_up_any_number_of_slots_in_one_call,
    reads_say_when_retirement_is_behind,
    describe_reports_members_slots_and_lag,
    members_whose_total_reaches_zero_are_removed,
    an_offset_shifts_slot_boundaries,
    retiring_twice_changes_nothing,
    repeated_members_in_a_batch_count_every_event,
    a_larger_window_can_be_added_and_is_built_from_the_live_slots,
    recompute_leaves_consistent_totals_unchanged,
    a_batch_with_a_token_is_applied_once,
);

async fn creating_again_with_the_same_config_returns_the_existing_board(h: Harness) {
    let config = BoardConfig::parse("1h", &["1h", "24h"]).unwrap();
    let name = crate::support::unique("same");
    let first = h.boards.create(&name, config.clone()).await.unwrap();
    let second = h.boards.create(&name, config.clone()).await.unwrap();
    assert!(matches!(first, Created::New(_)));
    assert!(matches!(second, Created::Existing(_)));
    assert_eq!(first.board(), second.board());
    assert_eq!(h.boards.board(&name).await.unwrap().config, config);
}

async fn creating_with_another_config_is_a_conflict(h: Harness) {
    let name = h.board("1h", &["1h", "24h"]).await;
    let err = h
        .boards
        .create(&name, BoardConfig::parse("5m", &["1h"]).unwrap())
        .await
        .unwrap_err();
    let Error::BoardConflict { existing, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(existing.slot(), Span::parse("1h").unwrap());
    assert_eq!(err.code(), "board_conflict");
    assert_eq!(
        err.to_string(),
        format!(
            "board {name:?} already exists with another config: slot: stored 1h, asked 5m; \
             windows: stored [1h, 1d], asked [1h]"
        )
    );
}

async fn unknown_boards_windows_and_members_are_reported(h: Harness) {
    let err = h
        .boards
        .windowed("nope")
        .incr("m", 1, None)
        .await
        .unwrap_err();
    assert_eq!(err, Error::BoardNotFound("nope".into()));
    assert_eq!(
        h.boards
            .windowed("nope")
            .top(None, 0, 10)
            .await
            .unwrap_err()
            .code(),
        "board_not_found"
    );
    assert_eq!(
        h.boards.drop_board("nope").await.unwrap_err().code(),
        "board_not_found"
    );

    let name = h.board("1h", &["1h", "24h"]).await;
    let err = h
        .boards
        .windowed(&name)
        .top(Some(Span::parse("2h").unwrap()), 0, 10)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "window_not_found");
    assert_eq!(
        h.boards.windowed(&name).score("ghost", None).await.unwrap(),
        None
    );
    assert_eq!(
        h.boards
            .windowed(&name)
            .around("ghost", None, 3, Default::default())
            .await
            .unwrap(),
        None
    );
}

async fn invalid_input_is_rejected_with_its_code(h: Harness) {
    let name = h.board("1h", &["1h"]).await;
    let code = |r: Result<(), Error>| r.unwrap_err().code();
    assert_eq!(
        code(h.boards.windowed("bad name").incr("m", 1, None).await),
        "invalid_board_name"
    );
    assert_eq!(
        code(h.boards.windowed(&name).incr("", 1, None).await),
        "invalid_member"
    );
    assert_eq!(
        code(
            h.boards
                .windowed(&name)
                .incr(&"m".repeat(257), 1, None)
                .await
        ),
        "invalid_member"
    );
    assert_eq!(
        code(h.boards.windowed(&name).incr("m", 0, None).await),
        "invalid_delta"
    );
    assert_eq!(
        code(h.boards.windowed(&name).incr("m", MAX_ABS + 1, None).await),
        "invalid_delta"
    );
    assert_eq!(
        h.boards
            .windowed(&name)
            .top(None, 0, 0)
            .await
            .unwrap_err()
            .code(),
        "invalid_query"
    );
    assert_eq!(
        h.boards
            .windowed(&name)
            .top(None, 0, 1001)
            .await
            .unwrap_err()
            .code(),
        "invalid_query"
    );
    assert_eq!(
        h.boards
            .windowed(&name)
            .around("m", None, 101, Default::default())
            .await
            .unwrap_err()
            .code(),
        "invalid_query"
    );
    // Nothing was written by any of it.
    assert!(
        h.boards
            .windowed(&name)
            .top(None, 0, 10)
            .await
            .unwrap()
            .entries
            .is_empty()
    );
}

async fn top_orders_by_score_then_member_with_competition_ranks(h: Harness) {
    let name = h.board("1h", &["1h"]).await;
    for (member, delta) in [
        ("carol", 5),
        ("alice", 5),
        ("dave", 2),
        ("bob", 7),
        ("erin", 5),
    ] {
        h.boards
            .windowed(&name)
            .incr(member, delta, None)
            .await
            .unwrap();
    }
    let page = h.boards.windowed(&name).top(None, 0, 10).await.unwrap();
    let ranked: Vec<(u64, &str, i64)> = page
        .entries
        .iter()
        .map(|e| (e.rank, e.member.as_str(), e.score))
        .collect();
    assert_eq!(
        ranked,
        [
            (1, "bob", 7),
            (2, "alice", 5),
            (2, "carol", 5),
            (2, "erin", 5),
            (5, "dave", 2)
        ]
    );
    let second_page = h.boards.windowed(&name).top(None, 2, 2).await.unwrap();
    let ranked: Vec<(u64, &str)> = second_page
        .entries
        .iter()
        .map(|e| (e.rank, e.member.as_str()))
        .collect();
    assert_eq!(ranked, [(2, "carol"), (2, "erin")]);
}

async fn pages_cut_through_tie_groups_keep_the_order(h: Harness) {
    let name = h.board("1h", &["1h"]).await;
    // Scores 3 (m00..m04), 2 (m05..m14), 1 (m15..m19), written in a scrambled order.
    let mut events: Vec<Event> = (0..20)
        .map(|i| {
            let score = if i < 5 {
                3
            } else if i < 15 {
                2
            } else {
                1
            };
            Event::new(format!("m{i:02}"), score)
        })
        .collect();
    events.reverse();
    events.swap(3, 11);
    h.boards.windowed(&name).incr_batch(&events).await.unwrap();
    let expected: Vec<(u64, String, i64)> = (0..20)
        .map(|i| {
            let (rank, score) = if i < 5 {
                (1, 3)
            } else if i < 15 {
                (6, 2)
            } else {
                (16, 1)
            };
            (rank, format!("m{i:02}"), score)
        })
        .collect();
    for limit in [1, 3, 4, 7, 20] {
        for offset in 0..21 {
            let page = h
                .boards
                .windowed(&name)
                .top(None, offset, limit)
                .await
                .unwrap();
            let got: Vec<(u64, String, i64)> = page
                .entries
                .into_iter()
                .map(|e| (e.rank, e.member, e.score))
                .collect();
            let want: Vec<_> = expected
                .iter()
                .skip(offset as usize)
                .take(limit as usize)
                .cloned()
                .collect();
            assert_eq!(got, want, "offset {offset} limit {limit}");
        }
    }
}

/// Members `m000..` shuffled into tie groups: (score, how many). Returns the expected
/// ranking (rank, member, score) of the positive totals, after writing them all.
async fn write_tie_groups(
    h: &Harness,
    name: &str,
    groups: &[(i64, usize)],
) -> Vec<(u64, String, i64)> {
    use rand::SeedableRng;
    use rand::seq::SliceRandom;
    let count: usize = groups.iter().map(|(_, n)| n).sum();
    let mut members: Vec<String> = (0..count).map(|i| format!("m{i:03}")).collect();
    members.shuffle(&mut rand::rngs::StdRng::seed_from_u64(7));
    let mut totals: Vec<(String, i64)> = Vec::new();
    let mut names = members.into_iter();
    for (score, n) in groups {
        totals.extend(names.by_ref().take(*n).map(|m| (m, *score)));
    }
    // Written in another random order than the names'.
    let mut events: Vec<Event> = totals
        .iter()
        .map(|(m, s)| Event::new(m.clone(), *s))
        .collect();
    events.shuffle(&mut rand::rngs::StdRng::seed_from_u64(11));
    h.boards.windowed(name).incr_batch(&events).await.unwrap();
    totals.retain(|(_, s)| *s > 0);
    totals.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    totals
        .iter()
        .map(|(m, s)| {
            let higher = totals.iter().filter(|(_, t)| t > s).count() as u64;
            (higher + 1, m.clone(), *s)
        })
        .collect()
}

fn entries_of(page: rollboard::TopPage) -> Vec<(u64, String, i64)> {
    page.entries
        .into_iter()
        .map(|e| (e.rank, e.member, e.score))
        .collect()
}

async fn deep_pages_cut_inside_big_tie_groups_keep_the_order(h: Harness) {
    let name = h.board("1h", &["1h"]).await;
    // 504 ranked members (past Redis's small-zset encoding), most of them in two big tie
    // groups, and members with negative totals below them.
    let groups = [(50, 1), (7, 300), (5, 2), (3, 200), (1, 1), (-2, 30)];
    let expected = write_tie_groups(&h, &name, &groups).await;
    assert_eq!(expected.len(), 504);
    assert_eq!(
        (expected[1].0, expected[301].0, expected[303].0),
        (2, 302, 304)
    );
    let offsets = (0..=505)
        .step_by(23)
        .chain([1, 2, 150, 299, 300, 301, 302, 303, 450, 502, 503]);
    for offset in offsets {
        for limit in [1, 2, 13, 100, 1000] {
            let page = h
                .boards
                .windowed(&name)
                .top(None, offset, limit)
                .await
                .unwrap();
            let want: Vec<_> = expected
                .iter()
                .skip(offset as usize)
                .take(limit as usize)
                .cloned()
                .collect();
            assert_eq!(entries_of(page), want, "offset {offset} limit {limit}");
        }
    }
    // 'around' and 'score' of members deep inside the tie groups.
    for position in [0, 1, 2, 3, 150, 298, 300, 301, 302, 303, 304, 420, 502, 503] {
        let (rank, member, score) = &expected[position];
        let standing = h
            .boards
            .windowed(&name)
            .score(member, None)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (standing.rank, standing.score),
            (Some(*rank), *score),
            "{member}"
        );
        for n in [0, 1, 4, 100] {
            let page = h
                .boards
                .windowed(&name)
                .around(member, None, n, Default::default())
                .await
                .unwrap()
                .unwrap();
            let from = position.saturating_sub(n as usize);
            let to = (position + n as usize + 1).min(expected.len());
            assert_eq!(
                entries_of(page),
                expected[from..to],
                "around {member} n {n}"
            );
            // A full page, lowest first: shifted to stay inside the ranking, reversed.
            let options = AroundOptions {
                fill: true,
                order: Order::Asc,
            };
            let page = h
                .boards
                .windowed(&name)
                .around(member, None, n, options)
                .await
                .unwrap()
                .unwrap();
            let limit = (2 * n as usize + 1).min(expected.len());
            let from = from.min(expected.len() - limit);
            let mut filled = expected[from..from + limit].to_vec();
            filled.reverse();
            assert_eq!(
                entries_of(page),
                filled,
                "around {member} n {n}, filled, asc"
            );
        }
    }
}

async fn offsets_past_the_end_give_empty_pages(h: Harness) {
    let name = h.board("1h", &["1h"]).await;
    let empty = h.boards.windowed(&name).top(None, 0, 10).await.unwrap();
    assert!(empty.entries.is_empty());
    let expected = write_tie_groups(&h, &name, &[(4, 150), (2, 1), (-1, 5)]).await;
    assert_eq!(expected.len(), 151);
    let last = h.boards.windowed(&name).top(None, 150, 10).await.unwrap();
    assert_eq!(entries_of(last), expected[150..]);
    let tail = h.boards.windowed(&name).top(None, 140, 1000).await.unwrap();
    assert_eq!(entries_of(tail), expected[140..]);
    for offset in [151, 152, 156, 157, 10_000, 1_000_000_000] {
        let page = h
            .boards
            .windowed(&name)
            .top(None, offset, 1000)
            .await
            .unwrap();
        assert!(
            page.entries.is_empty(),
            "offset {offset}: {:?}",
            page.entries
        );
        assert_eq!(
            (page.from, page.to),
            (START, START + 3600),
            "offset {offset}"
        );
    }
}

async fn zero_and_negative_totals_are_not_ranked(h: Harness) {
    let name = h.board("1h", &["1h"]).await;
    h.boards.windowed(&name).incr("up", 2, None).await.unwrap();
    h.boards
        .windowed(&name)
        .incr("flat", 1, None)
        .await
        .unwrap();
    h.boards
        .windowed(&name)
        .incr("flat", -1, None)
        .await
        .unwrap();
    h.boards
        .windowed(&name)
        .incr("down", -3, None)
        .await
        .unwrap();
    let page = h.boards.windowed(&name).top(None, 0, 10).await.unwrap();
    assert_eq!(ranking(&page), pairs(&[("up", 2)]));
    let bottom = h.boards.windowed(&name).bottom(None, 0, 10).await.unwrap();
    assert_eq!(ranking(&bottom), pairs(&[("up", 2)]));
    // A negative total is answered truthfully, not ranked (no ranked member is below
    // it); a zero total is no total.
    let down = h
        .boards
        .windowed(&name)
        .score("down", None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((down.score, down.rank, down.percentile), (-3, None, 0.0));
    assert_eq!((down.from, down.to), (START, START + 3600));
    assert_eq!(
        h.boards.windowed(&name).score("flat", None).await.unwrap(),
        None
    );
    assert_eq!(
        h.boards
            .windowed(&name)
            .around("down", None, 1, Default::default())
            .await
            .unwrap(),
        None
    );
    let ranks = h
        .boards
        .windowed(&name)
        .ranks(&["down", "flat", "up"], None)
        .await
        .unwrap();
    let got: Vec<(&str, i64, Option<u64>)> = ranks
        .entries
        .iter()
        .map(|e| (e.member.as_str(), e.score, e.rank))
        .collect();
    assert_eq!(
        got,
        [("down", -3, None), ("flat", 0, None), ("up", 2, Some(1))]
    );
    let status = h.boards.describe_board(&name).await.unwrap();
    assert_eq!(
        status.windows[0].members, 2,
        "up and down keep totals; flat is gone"
    );
}

async fn an_event_counts_while_its_slot_is_inside_the_window(h: Harness) {
    // Slots of 1h, a 3h window: at 10:xx it holds the 08:00, 09:00 and 10:00 slots.
    let name = h.board("1h", &["3h"]).await;
    h.at(7 * 3600 + 1800);
    h.boards.windowed(&name).incr("a", 1, None).await.unwrap(); // slot 07:00
    h.at(8 * 3600);
    h.boards.windowed(&name).incr("a", 10, None).await.unwrap(); // slot 08:00
    h.at(10 * 3600 - 1);
    h.boards.windowed(&name).retire(None).await.unwrap();
    assert_eq!(
        score(&h, &name, "a", None).await,
        Some(11),
        "09:59: 07:00 still inside"
    );
    h.at(10 * 3600);
    h.boards.windowed(&name).retire(None).await.unwrap();
    assert_eq!(
        score(&h, &name, "a", None).await,
        Some(10),
        "10:00: 07:00 has left"
    );
    h.at(11 * 3600 - 1);
    h.boards.windowed(&name).retire(None).await.unwrap();
    assert_eq!(score(&h, &name, "a", None).await, Some(10));
    h.at(11 * 3600);
    h.boards.windowed(&name).retire(None).await.unwrap();
    assert_eq!(
        score(&h, &name, "a", None).await,
        None,
        "11:00: 08:00 has left too"
    );
}

async fn windows_retire_independently(h: Harness) {
    let name = h.board("1h", &["1h", "3h"]).await;
    let three = Some(Span::parse("3h").unwrap());
    h.boards.windowed(&name).incr("a", 4, None).await.unwrap();
    h.at(3600);
    h.boards.windowed(&name).incr("a", 1, None).await.unwrap();
    h.boards.windowed(&name).retire(None).await.unwrap();
    assert_eq!(score(&h, &name, "a", None).await, Some(1));
    assert_eq!(score(&h, &name, "a", three).await, Some(5));
    h.at(3 * 3600);
    h.boards.windowed(&name).retire(None).await.unwrap();
    assert_eq!(score(&h, &name, "a", None).await, None);
    assert_eq!(score(&h, &name, "a", three).await, Some(1));
    h.at(4 * 3600);
    h.boards.windowed(&name).retire(None).await.unwrap();
    assert_eq!(score(&h, &name, "a", three).await, None);
}

async fn late_event_skips_windows_already_retired(h: Harness) {
    let name = h.board("1h", &["1h", "3h"]).await;
    let three = Some(Span::parse("3h").unwrap());
    h.boards.windowed(&name).incr("a", 2, None).await.unwrap();
    h.at(3600 + 60);
    h.boards.windowed(&name).retire(None).await.unwrap();
    // An event stamped in the first slot arrives late: only the 3h window contains it.
    h.boards
        .windowed(&name)
        .incr("a", 5, Some(ts(START + 10)))
        .await
        .unwrap();
    assert_eq!(score(&h, &name, "a", None).await, None);
    assert_eq!(score(&h, &name, "a", three).await, Some(7));
    // Without any retirement run, a late write still skips the window it has left.
    h.at(2 * 3600 + 60);
    h.boards
        .windowed(&name)
        .incr("b", 3, Some(ts(START + 3600 + 5)))
        .await
        .unwrap();
    assert_eq!(score(&h, &name, "b", None).await, None);
    assert_eq!(score(&h, &name, "b", three).await, Some(3));
    h.at(3 * 3600);
    h.boards.windowed(&name).retire(None).await.unwrap();
    assert_eq!(
        score(&h, &name, "a", three).await,
        None,
        "both parts of slot 0 subtracted"
    );
    assert_eq!(score(&h, &name, "b", three).await, Some(3));
    h.at(4 * 3600);
    h.boards.windowed(&name).retire(None).await.unwrap();
    assert_eq!(score(&h, &name, "b", three).await, None);
    assert_eq!(h.boards.describe_board(&name).await.unwrap().live_slots, 0);
}

async fn events_older_than_the_largest_window_are_too_late(h: Harness) {
    let name = h.board("1h", &["1h", "3h"]).await;
    h.at(5 * 3600 + 10);
    let err = h
        .boards
        .windowed(&name)
        .incr("a", 1, Some(ts(START + 2 * 3600 + 3599)))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        Error::TooLate {
            at: (START + 2 * 3600 + 3599) as f64,
            slot: START + 2 * 3600,
            oldest_open: START + 3 * 3600,
        }
    );
    h.boards
        .windowed(&name)
        .incr("a", 1, Some(ts(START + 3 * 3600)))
        .await
        .unwrap();
    let three = Some(Span::parse("3h").unwrap());
    assert_eq!(score(&h, &name, "a", three).await, Some(1));
}

async fn events_beyond_the_allowed_skew_are_in_the_future(h: Harness) {
    let name = h.board("1h", &["1h"]).await;
    let now = h.now().unix_seconds();
    h.boards
        .windowed(&name)
        .incr("a", 1, Some(ts(now + 60)))
        .await
        .unwrap();
    let err = h
        .boards
        .windowed(&name)
        .incr("a", 1, Some(ts(now + 61)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "in_future");
    assert_eq!(score(&h, &name, "a", None).await, Some(1));
}

async fn totals_and_slot_values_stay_inside_2_pow_53(h: Harness) {
    let name = h.board("1h", &["1h", "2h"]).await;
    let two = Some(Span::parse("2h").unwrap());
    h.boards
        .windowed(&name)
        .incr("a", MAX_ABS, None)
        .await
        .unwrap();
    let err = h
        .boards
        .windowed(&name)
        .incr("a", 1, None)
        .await
        .unwrap_err();
    assert_eq!(err, Error::OutOfRange { member: "a".into() });
    h.boards
        .windowed(&name)
        .incr("a", -MAX_ABS, None)
        .await
        .unwrap();
    h.boards
        .windowed(&name)
        .incr("a", -MAX_ABS, None)
        .await
        .unwrap();
    assert_eq!(
        h.boards
            .windowed(&name)
            .incr("a", -1, None)
            .await
            .unwrap_err()
            .code(),
        "out_of_range"
    );

    h.at(3600);
    h.boards.windowed(&name).retire(None).await.unwrap();
    h.boards
        .windowed(&name)
        .incr("a", MAX_ABS, None)
        .await
        .unwrap();
    assert_eq!(score(&h, &name, "a", None).await, Some(MAX_ABS));
    assert_eq!(
        score(&h, &name, "a", two).await,
        None,
        "-MAX + MAX = 0 over 2h"
    );
    // A late -1 into slot 0 would leave the 2h total at -1, inside the range, but slot 0
    // itself at -MAX - 1, which retirement could no longer subtract exactly.
    let late = Some(ts(START + 5));
    assert_eq!(
        h.boards
            .windowed(&name)
            .incr("a", -1, late)
            .await
            .unwrap_err()
            .code(),
        "out_of_range"
    );
    assert_eq!(score(&h, &name, "a", two).await, None);
    h.boards.windowed(&name).incr("a", 1, late).await.unwrap();
    assert_eq!(score(&h, &name, "a", two).await, Some(1));
}

async fn a_batch_rejects_bad_events_by_index_and_applies_the_rest(h: Harness) {
    let name = h.board("1h", &["1h"]).await;
    let now = h.now().unix_seconds();
    let events = vec![
        Event::new("a", 1),
        Event::new("", 1),
        Event::new("b", 2),
        Event::new("c", 0),
        Event::new("a", 3).at(ts(now + 3600)),
        Event::new("a", 4).at(ts(now - 3600)),
        Event::new("b", MAX_ABS),
        Event::new("c", 5),
    ];
    let outcome = h.boards.windowed(&name).incr_batch(&events).await.unwrap();
    assert_eq!(outcome.accepted, 3);
    let rejected: Vec<(usize, &str)> = outcome
        .rejected
        .iter()
        .map(|r| (r.index, r.error.code()))
        .collect();
    assert_eq!(
        rejected,
        [
            (1, "invalid_member"),
            (3, "invalid_delta"),
            (4, "in_future"),
            (5, "too_late"),
            (6, "out_of_range")
        ]
    );
    let page = h.boards.windowed(&name).top(None, 0, 10).await.unwrap();
    assert_eq!(ranking(&page), pairs(&[("c", 5), ("b", 2), ("a", 1)]));

    let too_many = vec![Event::new("a", 1); 10_001];
    let err = h
        .boards
        .windowed(&name)
        .incr_batch(&too_many)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        Error::BatchTooLarge {
            len: 10_001,
            max: 10_000
        }
    );
    assert_eq!(
        score(&h, &name, "a", None).await,
        Some(1),
        "nothing of it applied"
    );
}

async fn score_gives_total_and_competition_rank(h: Harness) {
    let name = h.board("1h", &["1h"]).await;
    for (m, d) in [("a", 9), ("b", 4), ("c", 4), ("d", 1)] {
        h.boards.windowed(&name).incr(m, d, None).await.unwrap();
    }
    let c = h
        .boards
        .windowed(&name)
        .score("c", None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((c.score, c.rank), (4, Some(2)));
    let d = h
        .boards
        .windowed(&name)
        .score("d", None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((d.score, d.rank), (1, Some(4)));
    assert_eq!((d.from, d.to), (START, START + 3600));
}

async fn around_lists_neighbours_in_ranking_order(h: Harness) {
    let name = h.board("1h", &["1h"]).await;
    for (m, d) in [
        ("a", 10),
        ("b", 8),
        ("c", 8),
        ("d", 8),
        ("e", 5),
        ("f", 1),
        ("g", -2),
    ] {
        h.boards.windowed(&name).incr(m, d, None).await.unwrap();
    }
    let members = |page: Option<rollboard::TopPage>| -> Vec<String> {
        page.unwrap()
            .entries
            .into_iter()
            .map(|e| e.member)
            .collect()
    };
    assert_eq!(
        members(
            h.boards
                .windowed(&name)
                .around("c", None, 1, Default::default())
                .await
                .unwrap()
        ),
        ["b", "c", "d"]
    );
    assert_eq!(
        members(
            h.boards
                .windowed(&name)
                .around("a", None, 2, Default::default())
                .await
                .unwrap()
        ),
        ["a", "b", "c"]
    );
    assert_eq!(
        members(
            h.boards
                .windowed(&name)
                .around("f", None, 2, Default::default())
                .await
                .unwrap()
        ),
        ["d", "e", "f"]
    );
    assert_eq!(
        members(
            h.boards
                .windowed(&name)
                .around("d", None, 0, Default::default())
                .await
                .unwrap()
        ),
        ["d"]
    );
    let page = h
        .boards
        .windowed(&name)
        .around("e", None, 1, Default::default())
        .await
        .unwrap()
        .unwrap();
    let ranks: Vec<u64> = page.entries.iter().map(|e| e.rank).collect();
    assert_eq!(ranks, [2, 5, 6]);
    assert_eq!(
        h.boards
            .windowed(&name)
            .around("g", None, 1, Default::default())
            .await
            .unwrap(),
        None
    );
}

async fn history_lists_non_zero_slots_of_the_largest_window(h: Harness) {
    let name = h.board("1h", &["1h", "3h"]).await;
    h.boards.windowed(&name).incr("a", 2, None).await.unwrap();
    h.boards.windowed(&name).incr("b", 7, None).await.unwrap();
    h.at(3600);
    h.boards.windowed(&name).incr("a", 1, None).await.unwrap();
    h.boards.windowed(&name).incr("a", -1, None).await.unwrap();
    h.at(2 * 3600 + 5);
    h.boards.windowed(&name).incr("a", 4, None).await.unwrap();
    h.boards.windowed(&name).retire(None).await.unwrap();
    // A late event into slot 0 after the 1h window retired it: still the same slot.
    h.boards
        .windowed(&name)
        .incr("a", 3, Some(ts(START + 1)))
        .await
        .unwrap();
    let history = h.boards.windowed(&name).history("a").await.unwrap();
    let points: Vec<(i64, i64)> = history.points.iter().map(|p| (p.slot, p.value)).collect();
    assert_eq!(points, [(START, 5), (START + 2 * 3600, 4)]);
    assert_eq!((history.from, history.to), (START, START + 3 * 3600));
    assert_eq!(history.slot, Span::parse("1h").unwrap());
    assert!(
        h.boards
            .windowed(&name)
            .history("nobody")
            .await
            .unwrap()
            .points
            .is_empty()
    );
}

async fn remove_member_clears_every_slot_and_window(h: Harness) {
    let name = h.board("1h", &["1h", "3h"]).await;
    let three = Some(Span::parse("3h").unwrap());
    h.boards
        .windowed(&name)
        .incr("spam", 5, None)
        .await
        .unwrap();
    h.boards.windowed(&name).incr("ok", 2, None).await.unwrap();
    h.at(3600 + 1);
    h.boards
        .windowed(&name)
        .incr("spam", 9, None)
        .await
        .unwrap();
    h.boards.windowed(&name).retire(None).await.unwrap();
    h.boards
        .windowed(&name)
        .incr("spam", 1, Some(ts(START + 2)))
        .await
        .unwrap(); // late: stage 1
    // Slot 0 holds 5 + 1 in its second stage (retired by 1h), slot 1 holds 9.
    let removed = h
        .boards
        .windowed(&name)
        .remove_member("spam")
        .await
        .unwrap();
    assert_eq!(removed.slot_values, 2);
    assert_eq!(score(&h, &name, "spam", None).await, None);
    assert_eq!(score(&h, &name, "spam", three).await, None);
    assert!(
        h.boards
            .windowed(&name)
            .history("spam")
            .await
            .unwrap()
            .points
            .is_empty()
    );
    assert_eq!(score(&h, &name, "ok", three).await, Some(2));
    // Later retirement subtracts nothing of it: no negative leftovers.
    h.at(5 * 3600);
    h.boards.windowed(&name).retire(None).await.unwrap();
    let status = h.boards.describe_board(&name).await.unwrap();
    assert_eq!(
        status.windows.iter().map(|w| w.members).collect::<Vec<_>>(),
        [0, 0]
    );
}

async fn drop_board_deletes_it_and_a_new_one_starts_empty(h: Harness) {
    let name = h.board("1h", &["1h", "3h"]).await;
    h.boards.windowed(&name).incr("a", 5, None).await.unwrap();
    h.at(3600 + 1);
    h.boards.windowed(&name).retire(None).await.unwrap();
    h.boards
        .windowed(&name)
        .incr("a", 1, Some(ts(START)))
        .await
        .unwrap();
    h.boards.drop_board(&name).await.unwrap();
    assert_eq!(
        h.boards
            .windowed(&name)
            .top(None, 0, 10)
            .await
            .unwrap_err()
            .code(),
        "board_not_found"
    );
    assert!(
        !h.boards
            .boards()
            .await
            .unwrap()
            .iter()
            .any(|b| b.name.as_str() == name)
    );
    if let Some(redis) = &h.redis {
        let mut raw = redis.raw().await;
        let pattern = format!("*{{{name}}}*");
        let left: Vec<String> = ::redis::cmd("KEYS")
            .arg(&pattern)
            .query_async(&mut raw)
            .await
            .unwrap();
        assert!(left.is_empty(), "keys left after drop: {left:?}");
    }
    h.boards
        .create(&name, BoardConfig::parse("1h", &["1h"]).unwrap())
        .await
        .unwrap();
    assert!(
        h.boards
            .windowed(&name)
            .top(None, 0, 10)
            .await
            .unwrap()
            .entries
            .is_empty()
    );
}

async fn a_board_recreated_elsewhere_is_picked_up(h: Harness) {
    let name = h.board("1h", &["1h"]).await;
    h.boards.windowed(&name).incr("a", 5, None).await.unwrap();
    // Another instance on the same store drops and re-creates the board.
    let other = crate::support::with_clock(h.boards.store().clone(), &h.clock);
    other.drop_board(&name).await.unwrap();
    other
        .create(&name, BoardConfig::parse("1h", &["1h", "2h"]).unwrap())
        .await
        .unwrap();
    other.windowed(&name).incr("b", 2, None).await.unwrap();
    // This instance's cached copy is stale; it reloads instead of writing into the void.
    h.boards.windowed(&name).incr("a", 1, None).await.unwrap();
    let page = h
        .boards
        .windowed(&name)
        .top(Some(Span::parse("2h").unwrap()), 0, 10)
        .await
        .unwrap();
    assert_eq!(ranking(&page), pairs(&[("b", 2), ("a", 1)]));
}

async fn reads_and_once_writes_reload_a_board_recreated_elsewhere(h: Harness) {
    let name = h.board("1h", &["1h"]).await;
    h.boards.windowed(&name).incr("a", 5, None).await.unwrap();
    let other = crate::support::with_clock(h.boards.store().clone(), &h.clock);
    let recreate = |windows: &'static [&'static str]| {
        let (other, name) = (&other, &name);
        async move {
            other.drop_board(name).await.unwrap();
            other
                .create(name, BoardConfig::parse("1h", windows).unwrap())
                .await
                .unwrap();
        }
    };

    // A read on the stale cached copy reloads and reads the new board.
    recreate(&["1h", "2h"]).await;
    other.windowed(&name).incr("b", 2, None).await.unwrap();
    let page = h.boards.windowed(&name).top(None, 0, 10).await.unwrap();
    assert_eq!(ranking(&page), pairs(&[("b", 2)]));

    // A batch with a token reloads too, and lands on the new board once.
    recreate(&["1h", "3h"]).await;
    let batch = [Event::new("c", 3)];
    let outcome = h
        .boards
        .windowed(&name)
        .incr_batch_once(&batch, "t1")
        .await
        .unwrap();
    assert_eq!(
        outcome.map(|o| (o.accepted, o.rejected.len())),
        Some((1, 0))
    );
    let page = other
        .windowed(&name)
        .top(Some(Span::parse("3h").unwrap()), 0, 10)
        .await
        .unwrap();
    assert_eq!(ranking(&page), pairs(&[("c", 3)]));

    // Dropped elsewhere and not re-created: the reload finds no board.
    other.drop_board(&name).await.unwrap();
    assert_eq!(
        h.boards.windowed(&name).score("c", None).await.unwrap_err(),
        Error::BoardNotFound(name.clone())
    );
}

async fn boards_are_listed_by_name(h: Harness) {
    let prefix = crate::support::unique("list");
    let names = ["zeta", "alpha", "mid"].map(|n| format!("{prefix}-{n}"));
    for n in &names {
        h.boards
            .create(n, BoardConfig::parse("5m", &["1h"]).unwrap())
            .await
            .unwrap();
    }
    let listed: Vec<String> = h
        .boards
        .boards()
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.name.to_string())
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert_eq!(
        listed,
        ["alpha", "mid", "zeta"].map(|n| format!("{prefix}-{n}"))
    );
}

async fn retirement_catches_up_any_number_of_slots_in_one_call(h: Harness) {
    let name = h.board("5m", &["15m", "1h"]).await;
    let hour = Some(Span::parse("1h").unwrap());
    for i in 0..48 {
        h.at(i * 300);
        h.boards
            .windowed(&name)
            .incr(&format!("m{}", i % 5), 1, None)
            .await
            .unwrap();
    }
    // 48 slots written without any retirement; then three days pass.
    h.at(3 * 86_400);
    let report = h.boards.windowed(&name).retire(None).await.unwrap();
    assert!(report.complete);
    assert_eq!(
        report.slots_retired, 96,
        "48 slots, each retired by both windows"
    );
    assert!(
        h.boards
            .windowed(&name)
            .top(None, 0, 10)
            .await
            .unwrap()
            .entries
            .is_empty()
    );
    assert!(
        h.boards
            .windowed(&name)
            .top(hour, 0, 10)
            .await
            .unwrap()
            .entries
            .is_empty()
    );
    assert_eq!(h.boards.describe_board(&name).await.unwrap().live_slots, 0);
}

async fn reads_say_when_retirement_is_behind(h: Harness) {
    let name = h.board("1h", &["2h"]).await;
    h.boards.windowed(&name).incr("a", 3, None).await.unwrap();
    let page = h.boards.windowed(&name).top(None, 0, 10).await.unwrap();
    assert_eq!((page.from, page.to), (START - 3600, START + 3600));
    assert_eq!((page.behind, page.lag_ms), (false, 0));
    // Exactly at the boundary the slot START leaves the 2h window: behind by 0 ms.
    h.at(2 * 3600);
    let page = h.boards.windowed(&name).top(None, 0, 10).await.unwrap();
    assert_eq!((page.from, page.behind, page.lag_ms), (START, true, 0));
    h.at(2 * 3600 + 10);
    let page = h.boards.windowed(&name).top(None, 0, 10).await.unwrap();
    assert_eq!(
        page.from, START,
        "slot START is still counted: retirement is behind"
    );
    assert_eq!(page.to, START + 3 * 3600);
    assert_eq!((page.behind, page.lag_ms), (true, 10_000));
    assert_eq!(ranking(&page), pairs(&[("a", 3)]));
    let standing = h
        .boards
        .windowed(&name)
        .score("a", None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            standing.score,
            standing.from,
            standing.behind,
            standing.lag_ms
        ),
        (3, START, true, 10_000)
    );
    let around = h
        .boards
        .windowed(&name)
        .around("a", None, 1, Default::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((around.behind, around.lag_ms), (true, 10_000));
    h.boards.windowed(&name).retire(None).await.unwrap();
    let page = h.boards.windowed(&name).top(None, 0, 10).await.unwrap();
    assert_eq!((page.from, page.to), (START + 3600, START + 3 * 3600));
    assert_eq!((page.behind, page.lag_ms), (false, 0));
    assert!(page.entries.is_empty());
}

async fn describe_reports_members_slots_and_lag(h: Harness) {
    let name = h.board("1h", &["1h", "3h"]).await;
    h.boards.windowed(&name).incr("a", 1, None).await.unwrap();
    h.boards.windowed(&name).incr("b", 1, None).await.unwrap();
    h.at(3600);
    h.boards.windowed(&name).incr("c", 1, None).await.unwrap();
    h.at(2 * 3600);
    let status = h.boards.describe_board(&name).await.unwrap();
    assert_eq!(status.live_slots, 2);
    let w: Vec<(u64, i64, u64)> = status
        .windows
        .iter()
        .map(|w| (w.members, w.from, w.lag_seconds))
        .collect();
    assert_eq!(w, [(3, START, 7200), (3, START, 0)]);
    h.boards.windowed(&name).retire(None).await.unwrap();
    let status = h.boards.describe_board(&name).await.unwrap();
    let w: Vec<(u64, i64, i64, u64)> = status
        .windows
        .iter()
        .map(|w| (w.members, w.from, w.retired_through, w.lag_seconds))
        .collect();
    assert_eq!(
        w,
        [
            (0, START + 7200, START + 3600, 0),
            (3, START, START - 3600, 0)
        ]
    );
    assert_eq!(status.created_at.unix_timestamp(), START);
}

async fn members_whose_total_reaches_zero_are_removed(h: Harness) {
    let name = h.board("1h", &["1h", "2h"]).await;
    h.boards.windowed(&name).incr("a", 2, None).await.unwrap();
    h.at(3600);
    h.boards.windowed(&name).incr("a", -2, None).await.unwrap();
    h.boards.windowed(&name).retire(None).await.unwrap();
    // 1h window: only -2 left. 2h window: 2 - 2 = 0, so "a" is gone from it.
    let status = h.boards.describe_board(&name).await.unwrap();
    assert_eq!(
        status.windows.iter().map(|w| w.members).collect::<Vec<_>>(),
        [1, 0]
    );
    h.at(2 * 3600);
    h.boards.windowed(&name).retire(None).await.unwrap();
    // 1h window: -2 retired, so 0. 2h window: +2 retired, so -2.
    let status = h.boards.describe_board(&name).await.unwrap();
    assert_eq!(
        status.windows.iter().map(|w| w.members).collect::<Vec<_>>(),
        [0, 1]
    );
    h.at(3 * 3600);
    h.boards.windowed(&name).retire(None).await.unwrap();
    let status = h.boards.describe_board(&name).await.unwrap();
    assert_eq!(
        status.windows.iter().map(|w| w.members).collect::<Vec<_>>(),
        [0, 0]
    );
}

async fn an_offset_shifts_slot_boundaries(h: Harness) {
    let name = crate::support::unique("off");
    let config = BoardConfig::parse("1d", &["1d"])
        .unwrap()
        .with_offset(-2 * 3600)
        .unwrap();
    h.boards.create(&name, config).await.unwrap();
    let midnight = START - START % 86_400 + 2 * 86_400;
    h.clock.set(ts(midnight - 3 * 3600)); // 21:00 UTC: the slot began at 22:00 the day before
    h.boards.windowed(&name).incr("a", 1, None).await.unwrap();
    h.clock.set(ts(midnight - 2 * 3600)); // 22:00 UTC: a new slot
    h.boards.windowed(&name).retire(None).await.unwrap();
    let page = h.boards.windowed(&name).top(None, 0, 10).await.unwrap();
    assert!(page.entries.is_empty());
    assert_eq!(page.from, midnight - 2 * 3600);
}

async fn retiring_twice_changes_nothing(h: Harness) {
    let name = h.board("1h", &["1h", "3h"]).await;
    h.boards.windowed(&name).incr("a", 4, None).await.unwrap();
    h.at(3600);
    h.boards.windowed(&name).incr("a", 1, None).await.unwrap();
    let first = h.boards.windowed(&name).retire(None).await.unwrap();
    let second = h.boards.windowed(&name).retire(None).await.unwrap();
    assert_eq!((first.slots_retired, first.fields_subtracted), (1, 1));
    assert_eq!((second.slots_retired, second.fields_subtracted), (0, 0));
    assert_eq!(score(&h, &name, "a", None).await, Some(1));
    assert_eq!(
        score(&h, &name, "a", Some(Span::parse("3h").unwrap())).await,
        Some(5)
    );
}

async fn repeated_members_in_a_batch_count_every_event(h: Harness) {
    let name = h.board("1h", &["1h", "2h"]).await;
    let two = Some(Span::parse("2h").unwrap());
    h.at(3600);
    let last_hour = ts(START + 10);
    let events = vec![
        Event::new("a", 1),
        Event::new("b", 2),
        Event::new("a", -1),
        Event::new("a", 5),
        Event::new("c", 1).at(last_hour),
        Event::new("c", 1),
        Event::new("b", -2),
        Event::new("a", 1).at(ts(START - 3600)),
        Event::new("c", 2).at(last_hour),
    ];
    let outcome = h.boards.windowed(&name).incr_batch(&events).await.unwrap();
    assert_eq!(outcome.accepted, 8);
    assert_eq!(
        outcome
            .rejected
            .iter()
            .map(|r| (r.index, r.error.code()))
            .collect::<Vec<_>>(),
        [(7, "too_late")]
    );
    let page = h.boards.windowed(&name).top(None, 0, 10).await.unwrap();
    assert_eq!(ranking(&page), pairs(&[("a", 5), ("c", 1)]));
    let page = h.boards.windowed(&name).top(two, 0, 10).await.unwrap();
    assert_eq!(ranking(&page), pairs(&[("a", 5), ("c", 4)]));
    let history = h.boards.windowed(&name).history("c").await.unwrap();
    let points: Vec<(i64, i64)> = history.points.iter().map(|p| (p.slot, p.value)).collect();
    assert_eq!(points, [(START, 3), (START + 3600, 1)]);
    assert_eq!(
        h.boards.windowed(&name).score("b", two).await.unwrap(),
        None,
        "b nets to zero"
    );
}

async fn a_batch_with_a_token_is_applied_once(h: Harness) {
    let name = h.board("1h", &["1h", "2h"]).await;
    h.at(3600);
    let events = [
        Event::new("a", 3),
        Event::new("b", 1).at(ts(START + 5)),
        Event::new("c", 1).at(ts(START - 7200)),
    ];
    let first = h
        .boards
        .windowed(&name)
        .incr_batch_once(&events, "job:1")
        .await
        .unwrap();
    let first = first.expect("a new token is applied");
    assert_eq!(first.accepted, 2);
    assert_eq!(
        first
            .rejected
            .iter()
            .map(|r| (r.index, r.error.code()))
            .collect::<Vec<_>>(),
        [(2, "too_late")]
    );
    assert!(
        h.boards
            .windowed(&name)
            .incr_batch_once(&events, "job:1")
            .await
            .unwrap()
            .is_none(),
        "a replay is refused"
    );
    let two = Some(Span::parse("2h").unwrap());
    assert_eq!(
        ranking(&h.boards.windowed(&name).top(two, 0, 10).await.unwrap()),
        pairs(&[("a", 3), ("b", 1)])
    );
    let again = h
        .boards
        .windowed(&name)
        .incr_batch_once(&events[..1], "job:2")
        .await
        .unwrap();
    assert_eq!(
        again.map(|o| o.accepted),
        Some(1),
        "another token is another batch"
    );
    assert_eq!(
        ranking(&h.boards.windowed(&name).top(two, 0, 10).await.unwrap()),
        pairs(&[("a", 6), ("b", 1)])
    );
    // Dropping the board forgets its tokens with it.
    h.boards.drop_board(&name).await.unwrap();
    h.boards
        .create(&name, BoardConfig::parse("1h", &["1h", "2h"]).unwrap())
        .await
        .unwrap();
    let fresh = h
        .boards
        .windowed(&name)
        .incr_batch_once(&events[..1], "job:1")
        .await
        .unwrap();
    assert_eq!(fresh.map(|o| o.accepted), Some(1));
    assert_eq!(
        ranking(&h.boards.windowed(&name).top(two, 0, 10).await.unwrap()),
        pairs(&[("a", 3)])
    );
}

async fn score(h: &Harness, board: &str, member: &str, window: Option<Span>) -> Option<i64> {
    h.boards
        .windowed(board)
        .score(member, window)
        .await
        .unwrap()
        .map(|s| s.score)
}

async fn a_larger_window_can_be_added_and_is_built_from_the_live_slots(h: Harness) {
    let name = h.board("1h", &["1h", "3h"]).await;
    for hour in 0..5 {
        h.at(hour * 3600);
        h.boards
            .windowed(&name)
            .incr(&format!("m{hour}"), 10 + hour, None)
            .await
            .unwrap();
        h.boards.windowed(&name).incr("all", 1, None).await.unwrap();
    }
    h.boards.windowed(&name).retire(None).await.unwrap();
    // At 04:xx the board holds slots 02:00..04:00 (3h); adding 6h cannot bring back 00:00
    // and 01:00, so the new window holds 02:00 on and is complete from 02:00 + 6h - 1h.
    let wider = BoardConfig::parse("1h", &["1h", "3h", "6h"]).unwrap();
    let created = h.boards.create(&name, wider.clone()).await.unwrap();
    assert!(matches!(created, Created::Extended(_)), "{created:?}");
    h.boards.windowed(&name).build_windows().await.unwrap();
    let six = Some(Span::parse("6h").unwrap());
    let page = h.boards.windowed(&name).top(six, 0, 10).await.unwrap();
    assert_eq!(
        ranking(&page),
        pairs(&[("m4", 14), ("m3", 13), ("m2", 12), ("all", 3)])
    );
    assert_eq!(
        page.from,
        START + 2 * 3600,
        "the totals start at the oldest slot kept"
    );
    let status = h.boards.describe_board(&name).await.unwrap();
    let w = &status.windows[2];
    assert_eq!(
        (w.building, w.complete_from),
        (false, Some(START + 7 * 3600))
    );
    assert_eq!(h.boards.board(&name).await.unwrap().config, wider);
    // The new window keeps what the 3h window retires from now on.
    h.at(6 * 3600);
    h.boards
        .windowed(&name)
        .incr("late", 1, None)
        .await
        .unwrap();
    h.boards.windowed(&name).retire(None).await.unwrap();
    let page = h.boards.windowed(&name).top(six, 0, 10).await.unwrap();
    assert_eq!(
        ranking(&page),
        pairs(&[("m4", 14), ("m3", 13), ("m2", 12), ("all", 3), ("late", 1)])
    );
    h.at(8 * 3600);
    h.boards.windowed(&name).retire(None).await.unwrap();
    let page = h.boards.windowed(&name).top(six, 0, 10).await.unwrap();
    assert_eq!(
        ranking(&page),
        pairs(&[("m4", 14), ("m3", 13), ("all", 2), ("late", 1)])
    );
    assert_eq!(
        page.from,
        START + 3 * 3600,
        "complete: the window's own start"
    );
    // A smaller, or middle, window is a conflict.
    let err = h
        .boards
        .create(
            &name,
            BoardConfig::parse("1h", &["1h", "2h", "3h", "6h"]).unwrap(),
        )
        .await;
    assert_eq!(err.unwrap_err().code(), "board_conflict");
}

async fn recompute_leaves_consistent_totals_unchanged(h: Harness) {
    let name = h.board("1h", &["1h", "3h"]).await;
    for hour in 0..4 {
        h.at(hour * 3600);
        h.boards
            .windowed(&name)
            .incr(&format!("m{}", hour % 2), 1 + hour, None)
            .await
            .unwrap();
    }
    h.boards.windowed(&name).retire(None).await.unwrap();
    let before: Vec<_> = [None, Some(Span::parse("3h").unwrap())]
        .into_iter()
        .collect();
    let mut pages = Vec::new();
    for w in &before {
        pages.push(h.boards.windowed(&name).top(*w, 0, 10).await.unwrap());
    }
    let report = h.boards.windowed(&name).recompute(None).await.unwrap();
    assert_eq!(report.windows.len(), 2);
    for (w, page) in before.iter().zip(pages) {
        assert_eq!(h.boards.windowed(&name).top(*w, 0, 10).await.unwrap(), page);
    }
}
