//! Writes that answer their standing (`incr_batch_standing`, `return=standing`), on every
//! store and a cluster: each written member's score and rank in the windows asked, just
//! before and just after the write, with each way of ranking ties and on a net-vote
//! board; the bound on members; a keyed write and its replay; and atomicity: concurrent
//! standing writes each see exactly the total the one before left.

use std::collections::BTreeMap;

use rollboard::{
    BoardConfig, Error, Event, Fingerprint, IdempotencyKey, MAX_ABS, RankedTotals, Span,
    StandingOutcome, Ties, TrendingConfig, WindowStanding, WrittenStanding,
};

use crate::support::{Harness, START, ts, unique};

on_every_store!(
    a_like_moves_a_member_from_fourth_to_second_and_answers_every_window,
    a_batch_sums_a_repeated_member_and_skips_members_with_nothing_applied,
    ties_are_ranked_as_the_board_ranks_them_before_and_after,
    a_member_back_to_zero_scores_zero_unranked,
    a_keyed_standing_write_is_applied_once_and_a_replay_reads_afresh,
    concurrent_standing_writes_each_see_the_total_the_one_before_left,
    near_the_range_limit_events_are_checked_one_by_one_and_standing_still_answered,
    bad_standing_writes_are_refused_with_what_to_fix,
);

fn span(text: &str) -> Span {
    Span::parse(text).unwrap()
}

fn ev(member: &str, delta: i64) -> Event {
    Event {
        member: member.to_owned(),
        delta,
        value: None,
        at: None,
        data: None,
        by: None,
    }
}

/// The `(index, error code)` of each event a standing write rejected.
fn rejected(got: &StandingOutcome) -> Vec<(usize, &'static str)> {
    got.outcome
        .rejected
        .iter()
        .map(|r| (r.index, r.error.code()))
        .collect()
}

/// One window's standing: (window, score_before, rank_before, score, rank).
fn w(window: &str, before: (i64, Option<u64>), after: (i64, Option<u64>)) -> WindowStanding {
    WindowStanding {
        window: span(window),
        score: after.0,
        rank: after.1,
        score_before: Some(before.0),
        rank_before: before.1,
    }
}

fn standing(member: &str, windows: Vec<WindowStanding>) -> WrittenStanding {
    WrittenStanding {
        member: member.to_owned(),
        windows,
    }
}

/// A board of 1-minute slots and windows 1h and 24h (or `config`'s), holding `events`.
async fn board_with(h: &Harness, config: BoardConfig, events: &[(&str, i64)]) -> String {
    let name = unique("ws");
    h.boards.create(&name, config).await.unwrap();
    for (member, delta) in events {
        h.boards
            .windowed(&name)
            .incr(member, *delta, None)
            .await
            .unwrap();
    }
    name
}

fn two_windows() -> BoardConfig {
    BoardConfig::parse("1m", &["1h", "24h"]).unwrap()
}

async fn a_like_moves_a_member_from_fourth_to_second_and_answers_every_window(h: Harness) {
    let name = board_with(&h, two_windows(), &[]).await;
    // p scored 2 hours ago: in the 24h window only.
    h.boards
        .windowed(&name)
        .incr("p", 10, Some(ts(START - 2 * 3600)))
        .await
        .unwrap();
    for (member, delta) in [("a", 6), ("b", 4), ("c", 3), ("m", 2)] {
        h.boards
            .windowed(&name)
            .incr(member, delta, None)
            .await
            .unwrap();
    }
    h.at(30);
    let got = h
        .boards
        .windowed(&name)
        .incr_standing("m", 3, None)
        .await
        .unwrap();
    assert_eq!(
        got,
        standing(
            "m",
            vec![
                w("1h", (2, Some(4)), (5, Some(2))),
                w("24h", (2, Some(5)), (5, Some(3))),
            ]
        )
    );
}

async fn a_batch_sums_a_repeated_member_and_skips_members_with_nothing_applied(h: Harness) {
    let config = two_windows().with_rank(RankedTotals::Nonzero).unwrap();
    let name = board_with(&h, config, &[("w", 1)]).await;
    let events = [
        ev("x", 2),
        ev("y", -3),
        ev("x", 1),
        // Two days ago: too late for every window, so z gets no standing.
        Event {
            at: Some(ts(START - 2 * 86_400)),
            ..ev("z", 5)
        },
    ];
    let got = h
        .boards
        .windowed(&name)
        .incr_batch_standing(&events, Some(&[span("24h")]))
        .await
        .unwrap();
    assert_eq!(got.outcome.accepted, 3);
    assert_eq!(rejected(&got), [(3, "too_late")]);
    assert!(!got.replayed);
    // x: 3 (ranked first); y: -3, ranked below w's 1 on a net-vote board.
    assert_eq!(
        got.standings,
        [
            standing("x", vec![w("24h", (0, None), (3, Some(1)))]),
            standing("y", vec![w("24h", (0, None), (-3, Some(3)))]),
        ]
    );
    // On a board ranking positive totals, y's -3 is not ranked.
    let name = board_with(&h, two_windows(), &[("w", 1)]).await;
    let got = h
        .boards
        .windowed(&name)
        .incr_batch_standing(&[ev("y", -3)], Some(&[span("1h")]))
        .await
        .unwrap();
    assert_eq!(
        got.standings,
        [standing("y", vec![w("1h", (0, None), (-3, None))])]
    );
}

async fn ties_are_ranked_as_the_board_ranks_them_before_and_after(h: Harness) {
    // b goes from 1 to 3, tied with c and d.
    for (ties, before, after) in [
        (Ties::Competition, 4, 2),
        (Ties::Dense, 3, 2),
        (Ties::Position, 4, 2),
    ] {
        let config = BoardConfig::parse("1m", &["1h"]).unwrap().with_ties(ties);
        let name = board_with(&h, config, &[("a", 5), ("c", 3), ("d", 3), ("b", 1)]).await;
        let got = h
            .boards
            .windowed(&name)
            .incr_standing("b", 2, None)
            .await
            .unwrap();
        assert_eq!(
            got,
            standing("b", vec![w("1h", (1, Some(before)), (3, Some(after)))]),
            "{ties:?}"
        );
        // d, last of the tie group by position.
        let got = h
            .boards
            .windowed(&name)
            .incr_standing("d", 1, None)
            .await
            .unwrap();
        let (before, after) = match ties {
            Ties::Competition => (2, 2),
            Ties::Dense => (2, 2),
            Ties::Position => (4, 2),
        };
        assert_eq!(
            got,
            standing("d", vec![w("1h", (3, Some(before)), (4, Some(after)))]),
            "{ties:?}"
        );
    }
}

async fn a_member_back_to_zero_scores_zero_unranked(h: Harness) {
    let name = board_with(&h, two_windows(), &[("a", 5), ("b", 2)]).await;
    let got = h
        .boards
        .windowed(&name)
        .incr_standing("a", -5, None)
        .await
        .unwrap();
    assert_eq!(
        got,
        standing(
            "a",
            vec![
                w("1h", (5, Some(1)), (0, None)),
                w("24h", (5, Some(1)), (0, None)),
            ]
        )
    );
}

async fn a_keyed_standing_write_is_applied_once_and_a_replay_reads_afresh(h: Harness) {
    let name = board_with(&h, two_windows(), &[("a", 5)]).await;
    let key = IdempotencyKey::parse("k-1").unwrap();
    let events = [ev("m", 2), ev("n", 1)];
    let fingerprint = Fingerprint::of_events(&events);
    let asked = [span("1h")];
    let first = h
        .boards
        .windowed(&name)
        .write_keyed_standing(&events, Some(&asked), &key, &fingerprint)
        .await
        .unwrap();
    assert_eq!((first.outcome.accepted, first.replayed), (2, false));
    assert_eq!(
        first.standings,
        [
            standing("m", vec![w("1h", (0, None), (2, Some(2)))]),
            standing("n", vec![w("1h", (0, None), (1, Some(3)))]),
        ]
    );
    // Another write moves m down; the replay applies nothing and reads now.
    h.boards.windowed(&name).incr("q", 4, None).await.unwrap();
    let replay = h
        .boards
        .windowed(&name)
        .write_keyed_standing(&events, Some(&asked), &key, &fingerprint)
        .await
        .unwrap();
    assert_eq!((replay.outcome.accepted, replay.replayed), (2, true));
    let fresh = |member: &str, score, rank| {
        standing(
            member,
            vec![WindowStanding {
                window: span("1h"),
                score,
                rank: Some(rank),
                score_before: None,
                rank_before: None,
            }],
        )
    };
    assert_eq!(replay.standings, [fresh("m", 2, 3), fresh("n", 1, 4)]);
    let top = h.boards.windowed(&name).top(None, 0, 10).await.unwrap();
    assert_eq!(
        crate::support::ranking(&top),
        crate::support::pairs(&[("a", 5), ("q", 4), ("m", 2), ("n", 1)])
    );
    // The same key with other events.
    let other = [ev("m", 3)];
    let reused = h
        .boards
        .windowed(&name)
        .write_keyed_standing(&other, None, &key, &Fingerprint::of_events(&other))
        .await;
    assert_eq!(
        reused.map(|o| o.outcome.accepted).map_err(|e| e.code()),
        Err("idempotency_key_reused")
    );
}

async fn concurrent_standing_writes_each_see_the_total_the_one_before_left(h: Harness) {
    const TASKS: usize = 8;
    const WRITES: usize = 50;
    let members = ["m0", "m1", "m2"];
    let name = board_with(&h, two_windows(), &[]).await;
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let boards = h.boards.clone();
        let name = name.clone();
        tasks.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            for i in 0..WRITES {
                let member = members[(t * WRITES + i) % 3];
                let got = boards
                    .windowed(&name)
                    .incr_batch_standing(&[ev(member, 1)], Some(&[span("1h")]))
                    .await
                    .unwrap();
                let s = &got.standings[0];
                seen.push((
                    s.member.clone(),
                    s.windows[0].score_before,
                    s.windows[0].score,
                ));
            }
            seen
        }));
    }
    let mut by_member: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for task in tasks {
        for (member, before, after) in task.await.unwrap() {
            // Each write saw exactly the total before it.
            assert_eq!(before, Some(after - 1), "{member}");
            by_member.entry(member).or_default().push(after);
        }
    }
    // 400 writes over 3 members: 134, 133, 133; the totals seen are 1..=N, each once.
    for (member, count) in [("m0", 134), ("m1", 133), ("m2", 133)] {
        let mut scores = by_member.remove(member).unwrap();
        scores.sort_unstable();
        assert_eq!(scores, (1..=count).collect::<Vec<i64>>(), "{member}");
    }
    let top = h.boards.windowed(&name).top(None, 0, 10).await.unwrap();
    assert_eq!(
        crate::support::ranking(&top),
        crate::support::pairs(&[("m0", 134), ("m1", 133), ("m2", 133)])
    );
}

async fn near_the_range_limit_events_are_checked_one_by_one_and_standing_still_answered(
    h: Harness,
) {
    // A total one below the limit: the batch's sums lack room, so the store applies its
    // events one by one (mode events), the second +1 out of range.
    let name = board_with(&h, two_windows(), &[("big", MAX_ABS - 1), ("o", 2)]).await;
    let got = h
        .boards
        .windowed(&name)
        .incr_batch_standing(
            &[ev("big", 1), ev("big", 1), ev("o", -1)],
            Some(&[span("1h")]),
        )
        .await
        .unwrap();
    assert_eq!(got.outcome.accepted, 2);
    assert_eq!(rejected(&got), [(1, "out_of_range")]);
    assert_eq!(
        got.standings,
        [
            standing(
                "big",
                vec![w("1h", (MAX_ABS - 1, Some(1)), (MAX_ABS, Some(1)))]
            ),
            standing("o", vec![w("1h", (2, Some(2)), (1, Some(2)))]),
        ]
    );
}

async fn bad_standing_writes_are_refused_with_what_to_fix(h: Harness) {
    let name = board_with(&h, two_windows(), &[]).await;
    let message = |e: Error| match e {
        Error::InvalidQuery { reason } => reason,
        other => panic!("{other:?}"),
    };
    let got = h
        .boards
        .windowed(&name)
        .incr_batch_standing(&[ev("a", 1)], Some(&[span("7d")]))
        .await
        .unwrap_err();
    assert_eq!(
        message(got),
        format!("board {name:?} has no window 7d: its windows are 1h, 1d")
    );
    let many: Vec<Event> = (0..21).map(|i| ev(&format!("m{i}"), 1)).collect();
    let got = h
        .boards
        .windowed(&name)
        .incr_batch_standing(&many, None)
        .await
        .unwrap_err();
    assert_eq!(
        message(got),
        "a write that returns its standing carries at most 20 distinct members, this one \
         has 21: split the batch, or drop return=standing"
    );
    // 14 members in 3 windows: 42 standings.
    let three = board_with(
        &h,
        BoardConfig::parse("1m", &["1h", "24h", "7d"]).unwrap(),
        &[],
    )
    .await;
    let got = h
        .boards
        .windowed(&three)
        .incr_batch_standing(&many[..14], None)
        .await
        .unwrap_err();
    assert_eq!(
        message(got),
        "a write that returns its standing reads at most 40 standings (members x windows), \
         this one asks 14 members x 3 windows (name fewer with windows=): split the batch, \
         or drop return=standing"
    );
    let two = [span("1h"), span("7d")];
    let got = h
        .boards
        .windowed(&three)
        .incr_batch_standing(&many[..14], Some(&two))
        .await
        .unwrap();
    assert_eq!((got.outcome.accepted, got.standings.len()), (14, 14));
    // Nothing was applied.
    let top = h.boards.windowed(&name).top(None, 0, 10).await.unwrap();
    assert_eq!(top.entries.len(), 0);
    let trending = unique("wt");
    h.boards
        .create(&trending, TrendingConfig::parse("6h").unwrap())
        .await
        .unwrap();
    let got = h
        .boards
        .windowed(&trending)
        .incr_batch_standing(&[ev("a", 1)], None)
        .await
        .unwrap_err();
    assert!(
        message(got).starts_with(&format!("board {trending:?} is a trending board")),
        "trending"
    );
}
