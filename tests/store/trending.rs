//! Trending boards on every store: scores equal a brute-force oracle
//! (Σ delta · 2^(−(now − at)/half_life)) at several `now`s, ranks and pages, around and
//! ranks for a list, age and skew limits, the shared board namespace, a rescale under
//! concurrent writes (two rescalers at once), and pruning below the floor.

use std::collections::BTreeMap;

use rollboard::{
    BoardConfig, Event, Fingerprint, IdempotencyKey, Rollboard, Span, TrendOptions, TrendPage,
    TrendRange, TrendRank, TrendingConfig,
};

use crate::support::{Harness, START, ts, unique};

on_every_store!(
    scores_ranks_and_pages_equal_the_oracle_at_several_nows,
    too_old_and_future_events_are_refused,
    trending_and_windowed_boards_share_one_namespace,
    a_rescale_under_concurrent_writes_stays_exact,
    pruning_removes_exactly_the_members_below_the_floor,
    a_write_long_after_the_last_maintenance_rescales_first,
    a_keyed_write_is_applied_once_and_answered_as_the_first_time,
);

/// Every event written, to compute what the scores must be.
#[derive(Default)]
pub struct Oracle {
    /// member -> (delta, at in unix ms)
    events: BTreeMap<String, Vec<(i64, i64)>>,
}

impl Oracle {
    pub fn add(&mut self, member: &str, delta: i64, at_ms: i64) {
        self.events
            .entry(member.to_owned())
            .or_default()
            .push((delta, at_ms));
    }

    /// `(score, Σ|terms|)` of `member` at `now_ms`.
    pub fn score(&self, member: &str, now_ms: i64, half_life_s: i64) -> (f64, f64) {
        let h = (half_life_s * 1000) as f64;
        self.events.get(member).map_or((0.0, 0.0), |events| {
            events.iter().fold((0.0, 0.0), |(s, m), (d, at)| {
                let term = *d as f64 * (-((now_ms - at) as f64) / h).exp2();
                (s + term, m + term.abs())
            })
        })
    }

    /// The ranking at `now_ms`: `(member, score)`, highest first, ties by member.
    pub fn ranking(&self, now_ms: i64, half_life_s: i64) -> Vec<(String, f64)> {
        let mut ranked: Vec<(String, f64)> = self
            .events
            .keys()
            .map(|m| (m.clone(), self.score(m, now_ms, half_life_s).0))
            .filter(|(_, s)| *s > 0.0)
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }
}

/// Asserts `got` is `want` within 1e-9 of the magnitude of the terms summed.
pub fn close(got: f64, (want, magnitude): (f64, f64), what: &str) {
    let tolerance = 1e-9 * magnitude.max(f64::MIN_POSITIVE);
    assert!(
        (got - want).abs() <= tolerance,
        "{what}: got {got}, want {want} (±{tolerance})"
    );
}

/// Checks a page against the oracle: each entry's score within tolerance, scores
/// non-increasing (ties by member ascending), competition ranks consistent with the
/// scores returned, and each rank within the oracle's band of near-equal scores (two
/// members whose exact scores are equal may differ in the last bits, as floats summed in
/// another order do). For a page from the top, the members are the oracle's best.
pub fn check_page(page: &TrendPage, oracle: &Oracle, now_ms: i64, h: i64, offset: usize) {
    let ranking = oracle.ranking(now_ms, h);
    for (i, e) in page.entries.iter().enumerate() {
        let want = oracle.score(&e.member, now_ms, h);
        close(e.score, want, &e.member);
        let tolerance = 1e-9 * want.1;
        let above = ranking
            .iter()
            .filter(|(_, s)| *s > want.0 + tolerance)
            .count() as u64;
        let not_below = ranking
            .iter()
            .filter(|(_, s)| *s >= want.0 - tolerance)
            .count() as u64;
        assert!(
            above < e.rank && e.rank <= not_below,
            "rank {} of {} outside the oracle's {}..={}",
            e.rank,
            e.member,
            above + 1,
            not_below
        );
        if i > 0 {
            // Ranks follow the stored values: two entries whose decayed scores print
            // equal may still differ in the stored value's last bit.
            let prev = &page.entries[i - 1];
            assert!(prev.score >= e.score, "{} before {}", prev.member, e.member);
            let next = (offset + i) as u64 + 1;
            let shared = prev.score == e.score && e.rank == prev.rank;
            assert!(e.rank == next || shared, "competition rank of {}", e.member);
        }
    }
    if offset == 0 {
        let mut got: Vec<&str> = page.entries.iter().map(|e| e.member.as_str()).collect();
        let mut want: Vec<&str> = ranking
            .iter()
            .take(got.len())
            .map(|(m, _)| m.as_str())
            .collect();
        if got.len() == ranking.len() {
            got.sort();
            want.sort();
            assert_eq!(got, want);
        }
    }
}

/// `(member, rank)` of a page's entries.
fn member_ranks(page: &TrendPage) -> Vec<(&str, u64)> {
    page.entries
        .iter()
        .map(|e| (e.member.as_str(), e.rank))
        .collect()
}

async fn write(
    boards: &Rollboard,
    oracle: &mut Oracle,
    board: &str,
    member: &str,
    delta: i64,
    at_s: i64,
) {
    boards
        .trending(board)
        .incr(member, delta, Some(ts(at_s)))
        .await
        .unwrap();
    oracle.add(member, delta, at_s * 1000);
}

async fn scores_ranks_and_pages_equal_the_oracle_at_several_nows(h: Harness) {
    let name = unique("t");
    let hl = 3600;
    h.boards
        .create(&name, TrendingConfig::parse("1h").unwrap())
        .await
        .unwrap();
    let mut oracle = Oracle::default();
    let b = &h.boards;
    h.at(0);
    write(b, &mut oracle, &name, "alice", 10, START).await;
    write(b, &mut oracle, &name, "bob", 4, START).await;
    write(b, &mut oracle, &name, "carol", 4, START).await;
    write(b, &mut oracle, &name, "dave", 1, START).await;
    write(b, &mut oracle, &name, "erin", -3, START).await;
    // A negative score is answered truthfully, not ranked; a member without one is not.
    let erin = b.trending(&name).score("erin").await.unwrap().unwrap();
    assert_eq!((erin.score, erin.rank, erin.percentile), (-3.0, None, 0.0));
    assert_eq!(b.trending(&name).score("zed").await.unwrap(), None);
    let ranks = b
        .trending(&name)
        .ranks(&["erin", "zed", "dave"])
        .await
        .unwrap();
    let got: Vec<(&str, f64, Option<u64>)> = ranks
        .entries
        .iter()
        .map(|r| (r.member.as_str(), r.score, r.rank))
        .collect();
    assert_eq!(
        got,
        [
            ("erin", -3.0, None),
            ("zed", 0.0, None),
            ("dave", 1.0, Some(4))
        ]
    );
    h.at(2 * 3600);
    // bob: a late event (90 min ago) and a negative one now.
    write(b, &mut oracle, &name, "bob", 6, START + 1800).await;
    write(b, &mut oracle, &name, "bob", -1, START + 2 * 3600).await;
    write(b, &mut oracle, &name, "dave", 3, START + 2 * 3600).await;
    write(b, &mut oracle, &name, "erin", 2, START + 2 * 3600).await;
    write(b, &mut oracle, &name, "frank", 2, START + 3600 + 1200).await;

    for now in [2 * 3600, 2 * 3600 + 1234, 5 * 3600, 9 * 3600 + 17] {
        h.at(now);
        let now_ms = (START + now) * 1000;
        let page = b.trending(&name).top(0, 100).await.unwrap();
        assert_eq!(page.entries.len(), oracle.ranking(now_ms, hl).len());
        assert_eq!(page.at, (START + now) as f64);
        check_page(&page, &oracle, now_ms, hl, 0);
        let paged = b.trending(&name).top(2, 2).await.unwrap();
        check_page(&paged, &oracle, now_ms, hl, 2);

        let ranking = oracle.ranking(now_ms, hl);
        for (i, (member, _)) in ranking.iter().enumerate() {
            let s = b.trending(&name).score(member).await.unwrap().unwrap();
            close(s.score, oracle.score(member, now_ms, hl), member);
            assert_eq!(s.rank, Some(i as u64 + 1));
            let below = (ranking.len() - i - 1) as f64;
            assert_eq!(s.percentile, below / ranking.len() as f64);
        }
    }
    // At 5 h: dave 1·2^-5 + 3·2^-3, alice 10·2^-5, bob 4·2^-5 + 6·2^-4.5 - 2^-3,
    // frank 2·2^-(3h40m), erin -3·2^-5 + 2·2^-3, carol 4·2^-5.
    h.at(5 * 3600);
    let now_ms = (START + 5 * 3600) * 1000;
    let ranking = oracle.ranking(now_ms, hl);
    assert_eq!(
        ranking.iter().map(|(m, _)| m.as_str()).collect::<Vec<_>>(),
        ["dave", "alice", "bob", "frank", "erin", "carol"]
    );
    // carol holds 4 at START: 4·2^-5 = 0.125 exactly.
    let carol = b.trending(&name).score("carol").await.unwrap().unwrap();
    assert_eq!(
        (carol.score, carol.rank, carol.percentile),
        (0.125, Some(6), 0.0)
    );

    // Score ranges (inclusive), ranks in the whole ranking.
    let range = TrendRange::new(Some(0.15), Some(0.3)).unwrap();
    let in_range = b.trending(&name).top_in_range(range, 0, 10).await.unwrap();
    assert_eq!(
        member_ranks(&in_range),
        [("bob", 3), ("frank", 4), ("erin", 5)]
    );
    let in_range = b.trending(&name).top_in_range(range, 1, 1).await.unwrap();
    assert_eq!(member_ranks(&in_range), [("frank", 4)]);
    let exact = TrendRange::new(Some(0.125), Some(0.125)).unwrap();
    let carol_only = b.trending(&name).top_in_range(exact, 0, 10).await.unwrap();
    assert_eq!(member_ranks(&carol_only), [("carol", 6)]);
    let below = TrendRange::new(None, Some(0.1)).unwrap();
    assert_eq!(
        b.trending(&name)
            .top_in_range(below, 0, 10)
            .await
            .unwrap()
            .entries,
        []
    );
    assert_eq!(
        TrendRange::new(Some(1.0), Some(0.5)).unwrap_err().code(),
        "invalid_query"
    );

    let around = b
        .trending(&name)
        .around("frank", 1, Default::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        around
            .entries
            .iter()
            .map(|e| (e.member.as_str(), e.rank))
            .collect::<Vec<_>>(),
        [("bob", 3), ("frank", 4), ("erin", 5)]
    );
    let top_end = b
        .trending(&name)
        .around("carol", 2, Default::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        top_end
            .entries
            .iter()
            .map(|e| (e.member.as_str(), e.rank))
            .collect::<Vec<_>>(),
        [("frank", 4), ("erin", 5), ("carol", 6)]
    );
    assert_eq!(
        b.trending(&name)
            .around("nobody", 2, Default::default())
            .await
            .unwrap(),
        None
    );
    assert_eq!(b.trending(&name).score("nobody").await.unwrap(), None);

    let ranks = b
        .trending(&name)
        .ranks(&["carol", "zed", "bob", "carol"])
        .await
        .unwrap();
    let want_carol = TrendRank {
        member: "carol".into(),
        score: 0.125,
        rank: Some(6),
    };
    assert_eq!(ranks.entries[0], want_carol);
    assert_eq!(
        ranks.entries[1],
        TrendRank {
            member: "zed".into(),
            score: 0.0,
            rank: None
        }
    );
    assert_eq!(ranks.entries[2].rank, Some(3));
    close(
        ranks.entries[2].score,
        oracle.score("bob", now_ms, hl),
        "bob",
    );
    assert_eq!(ranks.entries[3], want_carol);

    // Equal scores share a rank (competition): two members with the same events.
    write(b, &mut oracle, &name, "tie1", 1000, START + 5 * 3600).await;
    write(b, &mut oracle, &name, "tie2", 1000, START + 5 * 3600).await;
    write(b, &mut oracle, &name, "next", 999, START + 5 * 3600).await;
    let page = b.trending(&name).top(0, 3).await.unwrap();
    assert_eq!(
        page.entries
            .iter()
            .map(|e| (e.member.as_str(), e.rank, e.score))
            .collect::<Vec<_>>(),
        [("tie1", 1, 1000.0), ("tie2", 1, 1000.0), ("next", 3, 999.0)]
    );
}

async fn too_old_and_future_events_are_refused(h: Harness) {
    let name = unique("t");
    let config = TrendingConfig::parse("1h")
        .unwrap()
        .with_max_age(Span::parse("3h").unwrap())
        .unwrap();
    h.boards.create(&name, config).await.unwrap();
    h.at(10 * 3600);
    let now = START + 10 * 3600;
    let old = h
        .boards
        .trending(&name)
        .incr("a", 1, Some(ts(now - 3 * 3600 - 1)))
        .await
        .unwrap_err();
    assert_eq!(old.code(), "too_old");
    let future = h
        .boards
        .trending(&name)
        .incr("a", 1, Some(ts(now + 61)))
        .await
        .unwrap_err();
    assert_eq!(future.code(), "in_future");
    assert_eq!(
        h.boards
            .trending(&name)
            .incr("a", 0, None)
            .await
            .unwrap_err()
            .code(),
        "invalid_delta"
    );
    // The oldest accepted: exactly max_age ago, worth 2^-3.
    h.boards
        .trending(&name)
        .incr("a", 8, Some(ts(now - 3 * 3600)))
        .await
        .unwrap();
    let outcome = h
        .boards
        .trending(&name)
        .incr_batch(&[
            Event::new("b", 2),
            Event::new("c", 1).at(ts(now - 4 * 3600)),
            Event::new("", 1),
            Event::new("b", 2).at(ts(now + 60)),
        ])
        .await
        .unwrap();
    assert_eq!(outcome.accepted, 2);
    assert_eq!(
        outcome
            .rejected
            .iter()
            .map(|r| (r.index, r.error.code()))
            .collect::<Vec<_>>(),
        [(1, "too_old"), (2, "invalid_member")]
    );
    let page = h.boards.trending(&name).top(0, 10).await.unwrap();
    assert_eq!(page.entries.len(), 2);
    assert_eq!(
        (
            page.entries[0].member.as_str(),
            page.entries[1].member.as_str()
        ),
        ("b", "a")
    );
    assert_eq!(page.entries[1].score, 1.0);
    // b: 2 now and 2 a minute ahead: 2 + 2·2^(1/60).
    close(
        page.entries[0].score,
        (2.0 + 2.0 * (60.0f64 / 3600.0).exp2(), 4.1),
        "b",
    );
}

async fn trending_and_windowed_boards_share_one_namespace(h: Harness) {
    let windowed = h.board("1h", &["1h"]).await;
    let err = h
        .boards
        .create(&windowed, TrendingConfig::parse("1h").unwrap())
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.to_string().contains("windowed")),
        ("board_kind", true)
    );
    assert_eq!(
        h.boards
            .trending(&windowed)
            .top(0, 10)
            .await
            .unwrap_err()
            .code(),
        "board_kind"
    );

    let name = unique("t");
    let config = TrendingConfig::parse("6h").unwrap();
    let created = h.boards.create(&name, config).await.unwrap();
    assert!(matches!(created, rollboard::Created::New(_)));
    let again = h.boards.create(&name, config).await.unwrap();
    assert!(matches!(again, rollboard::Created::Existing(_)));
    assert_eq!(again.board(), created.board());
    let other = config.with_floor(0.25).unwrap();
    assert_eq!(
        h.boards.create(&name, other).await.unwrap_err().code(),
        "board_conflict"
    );
    let err = h
        .boards
        .create(&name, BoardConfig::parse("1h", &["1h"]).unwrap())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "board_kind");
    for err in [
        h.boards
            .windowed(&name)
            .incr("a", 1, None)
            .await
            .unwrap_err(),
        h.boards.windowed(&name).top(None, 0, 10).await.unwrap_err(),
        h.boards.describe_board(&name).await.unwrap_err(),
        h.boards.windowed(&name).history("a").await.unwrap_err(),
        h.boards.windowed(&name).recompute(None).await.unwrap_err(),
    ] {
        assert_eq!(err.code(), "board_kind", "{err}");
    }
    let listed = h.boards.boards().await.unwrap();
    assert!(listed.iter().any(|b| b.name.as_str() == windowed));
    assert!(!listed.iter().any(|b| b.name.as_str() == name));
    let trending = h.boards.trending_boards().await.unwrap();
    assert!(
        trending
            .iter()
            .any(|b| b.name.as_str() == name && b.config == config)
    );
    assert!(!trending.iter().any(|b| b.name.as_str() == windowed));

    h.boards.trending(&name).incr("a", 5, None).await.unwrap();
    h.boards.drop_board(&name).await.unwrap();
    assert_eq!(
        h.boards
            .trending(&name)
            .top(0, 10)
            .await
            .unwrap_err()
            .code(),
        "board_not_found"
    );
    assert!(
        !h.boards
            .trending_boards()
            .await
            .unwrap()
            .iter()
            .any(|b| b.name.as_str() == name)
    );
    // The name is free again, for either kind; the new board starts empty.
    h.boards
        .create(&name, BoardConfig::parse("1h", &["1h"]).unwrap())
        .await
        .unwrap();
    h.boards.drop_board(&name).await.unwrap();
    h.boards.create(&name, config).await.unwrap();
    assert_eq!(
        h.boards.trending(&name).top(0, 10).await.unwrap().entries,
        []
    );
    h.boards.drop_board(&windowed).await.unwrap();
    assert_eq!(
        h.boards.drop_board(&windowed).await.unwrap_err().code(),
        "board_not_found"
    );
}

async fn a_rescale_under_concurrent_writes_stays_exact(h: Harness) {
    let name = unique("t");
    let hl = 60;
    let config = TrendingConfig::parse("60s")
        .unwrap()
        .with_floor(0.0)
        .unwrap();
    h.boards.create(&name, config).await.unwrap();
    let mut oracle = Oracle::default();
    let members: Vec<String> = (0..300).map(|i| format!("m{i:03}")).collect();
    let first: Vec<Event> = members
        .iter()
        .enumerate()
        .map(|(i, m)| Event::new(m, i as i64 % 7 + 1))
        .collect();
    h.boards.trending(&name).incr_batch(&first).await.unwrap();
    for (i, m) in members.iter().enumerate() {
        oracle.add(m, i as i64 % 7 + 1, START * 1000);
    }
    // Five half-lives later a rescale by 2^-5 is due (threshold 1 half-life).
    h.at(5 * 60 + 7);
    let now_ms = (START + 5 * 60 + 7) * 1000;
    let options = TrendOptions {
        rescale_after: 1,
        chunk: 8,
        max_steps: 1,
    };
    // One step first, then writes to members copied and not yet copied: while the
    // rescale runs, writes land in both scales.
    let first = h.boards.trending(&name).maintain(options).await.unwrap();
    assert!(first.rescaling || first.rescaled, "{first:?}");
    let (_, counts) = h.boards.trending(&name).describe().await.unwrap();
    assert_eq!(counts.rescaling, first.rescaling);
    let mut rescaled = first.rescaled as u32;
    let mut copied = first.copied;
    let early: Vec<Event> = members
        .iter()
        .step_by(3)
        .map(|m| Event::new(m, 3))
        .collect();
    h.boards.trending(&name).incr_batch(&early).await.unwrap();
    for e in &early {
        oracle.add(&e.member, e.delta, now_ms);
    }
    let maintain = move |boards: Rollboard, name: String| async move {
        let mut passes = Vec::new();
        for _ in 0..200 {
            let done = boards.trending(&name).maintain(options).await.unwrap();
            passes.push(done);
            if !done.rescaling && done.copied == 0 && !done.rescaled {
                break;
            }
            tokio::task::yield_now().await;
        }
        passes
    };
    let writes = {
        let boards = h.boards.clone();
        let name = name.clone();
        let members = members.clone();
        async move {
            let mut written = Vec::new();
            for round in 0..20i64 {
                let delta = round - 5;
                if delta == 0 {
                    continue;
                }
                let events: Vec<Event> = members
                    .iter()
                    .skip((round as usize * 7) % 50)
                    .step_by(13)
                    .map(|m| Event::new(m, delta))
                    .collect();
                boards.trending(&name).incr_batch(&events).await.unwrap();
                written.extend(events);
                tokio::task::yield_now().await;
            }
            written
        }
    };
    let (a, b, written) = tokio::join!(
        tokio::spawn(maintain(h.boards.clone(), name.clone())),
        tokio::spawn(maintain(h.boards.clone(), name.clone())),
        tokio::spawn(writes),
    );
    for pass in a.unwrap().into_iter().chain(b.unwrap()) {
        rescaled += pass.rescaled as u32;
        copied += pass.copied;
    }
    for e in written.unwrap() {
        oracle.add(&e.member, e.delta, now_ms);
    }
    assert_eq!(rescaled, 1, "exactly one rescale finished");
    assert!(copied >= 300, "every member was copied ({copied})");
    let (_, counts) = h.boards.trending(&name).describe().await.unwrap();
    assert_eq!(
        (counts.rescaling, counts.landmark_ms),
        (false, (START + 300) * 1000)
    );
    // A later pass finds nothing due.
    let later = h.boards.trending(&name).maintain(options).await.unwrap();
    assert_eq!(
        (later.rescaled, later.rescaling, later.copied),
        (false, false, 0)
    );

    let page = h.boards.trending(&name).top(0, 1000).await.unwrap();
    check_page(&page, &oracle, now_ms, hl, 0);
    assert_eq!(page.entries.len(), oracle.ranking(now_ms, hl).len());
    let ranks = h.boards.trending(&name).ranks(&members).await.unwrap();
    for (m, r) in members.iter().zip(&ranks.entries) {
        // Every score is answered truthfully (a negative one too), ranked when positive.
        let want = oracle.score(m, now_ms, hl);
        close(r.score, want, m);
        assert_eq!(r.rank.is_some(), want.0 > 0.0, "{m}");
    }
    // Writes after the rescale land in the new scale.
    h.boards
        .trending(&name)
        .incr("m000", 64, None)
        .await
        .unwrap();
    oracle.add("m000", 64, now_ms);
    let s = h
        .boards
        .trending(&name)
        .score("m000")
        .await
        .unwrap()
        .unwrap();
    close(s.score, oracle.score("m000", now_ms, hl), "m000");
}

async fn pruning_removes_exactly_the_members_below_the_floor(h: Harness) {
    let name = unique("t");
    let config = TrendingConfig::parse("1h")
        .unwrap()
        .with_floor(0.5)
        .unwrap();
    h.boards.create(&name, config).await.unwrap();
    for (m, d) in [("a", 1), ("b", 3), ("c", -1), ("d", -3), ("e", 1)] {
        h.boards.trending(&name).incr(m, d, None).await.unwrap();
    }
    h.at(3600);
    h.boards.trending(&name).incr("e", 2, None).await.unwrap();
    // At 1.5 h: a 0.354, b 1.06, c -0.354, d -1.06, e 0.354 + 1.414.
    h.at(5400);
    let options = TrendOptions {
        chunk: 1,
        ..TrendOptions::default()
    };
    let done = h.boards.trending(&name).maintain(options).await.unwrap();
    assert_eq!((done.pruned, done.rescaled), (2, false));
    let ranks = h
        .boards
        .trending(&name)
        .ranks(&["a", "b", "c", "e"])
        .await
        .unwrap();
    let ranked: Vec<(&str, Option<u64>)> = ranks
        .entries
        .iter()
        .map(|r| (r.member.as_str(), r.rank))
        .collect();
    assert_eq!(
        ranked,
        [("a", None), ("b", Some(2)), ("c", None), ("e", Some(1))]
    );
    // d (-1.06) stays: its magnitude is above the floor. A pruned member starts afresh.
    h.boards.trending(&name).incr("a", 1, None).await.unwrap();
    let a = h.boards.trending(&name).score("a").await.unwrap().unwrap();
    close(a.score, (1.0, 1.0), "a");
    h.boards.trending(&name).incr("d", 2, None).await.unwrap();
    let d = h.boards.trending(&name).score("d").await.unwrap().unwrap();
    close(d.score, (2.0 - 3.0 * (-1.5f64).exp2(), 3.0), "d");
    // Nothing more is below the floor now.
    let again = h.boards.trending(&name).maintain(options).await.unwrap();
    assert_eq!(again.pruned, 0);
}

/// 1,100 half-lives without a maintenance pass: a write scaled to the old landmark would
/// be 2^1100, beyond doubles; the store rescales first (in bounded steps) and stays exact.
async fn a_write_long_after_the_last_maintenance_rescales_first(h: Harness) {
    let name = unique("t");
    h.boards
        .create(&name, TrendingConfig::parse("1s").unwrap())
        .await
        .unwrap();
    h.boards.trending(&name).incr("a", 3, None).await.unwrap();
    h.boards.trending(&name).incr("b", 1, None).await.unwrap();
    h.at(1100);
    h.boards.trending(&name).incr("b", 2, None).await.unwrap();
    h.boards.trending(&name).incr("c", 1, None).await.unwrap();
    let page = h.boards.trending(&name).top(0, 10).await.unwrap();
    let got: Vec<(&str, u64, f64)> = page
        .entries
        .iter()
        .map(|e| (e.member.as_str(), e.rank, e.score))
        .collect();
    // a's 3·2^-1100 is below the smallest double: after the rescale it is 0, unranked.
    assert_eq!(got, [("b", 1, 2.0), ("c", 2, 1.0)]);
    let ranks = h.boards.trending(&name).ranks(&["a"]).await.unwrap();
    assert_eq!((ranks.entries[0].score, ranks.entries[0].rank), (0.0, None));
    h.at(1101);
    let b = h.boards.trending(&name).score("b").await.unwrap().unwrap();
    assert_eq!(b.score, 1.0);
}

async fn a_keyed_write_is_applied_once_and_answered_as_the_first_time(h: Harness) {
    let name = unique("t");
    let config = TrendingConfig::parse("1h")
        .unwrap()
        .with_max_age(Span::parse("2h").unwrap())
        .unwrap();
    h.boards.create(&name, config).await.unwrap();
    h.at(7200);
    let key = IdempotencyKey::parse("order-1").unwrap();
    let fingerprint = Fingerprint::of_bytes(b"body one");
    // b's event is exactly max_age old now: accepted now, too old a second later.
    let events = [
        Event::new("a", 4),
        Event::new("b", 8).at(ts(START)),
        Event::new("c", 1).at(ts(START - 1)),
    ];
    let first = h
        .boards
        .trending(&name)
        .write_keyed(&events, &key, &fingerprint)
        .await
        .unwrap();
    assert!(!first.replayed);
    assert_eq!(first.outcome.accepted, 2);
    assert_eq!(first.outcome.rejected.len(), 1);
    assert_eq!(
        (
            first.outcome.rejected[0].index,
            first.outcome.rejected[0].error.code()
        ),
        (2, "too_old")
    );
    h.at(7201);
    let again = h
        .boards
        .trending(&name)
        .write_keyed(&events, &key, &fingerprint)
        .await
        .unwrap();
    assert!(again.replayed);
    assert_eq!(again.outcome, first.outcome);
    let other = h
        .boards
        .trending(&name)
        .write_keyed(&events, &key, &Fingerprint::of_bytes(b"body two"))
        .await
        .unwrap_err();
    assert_eq!(other.code(), "idempotency_key_reused");
    // Applied once: a 4·2^(-1/3600), b 8·2^-2·2^(-1/3600).
    let page = h.boards.trending(&name).top(0, 10).await.unwrap();
    let f = (-1.0f64 / 3600.0).exp2();
    assert_eq!(page.entries.len(), 2);
    close(page.entries[0].score, (4.0 * f, 4.0), "a");
    close(page.entries[1].score, (2.0 * f, 2.0), "b");
    // Past the key's time to live (24 h) the key is free: applied again.
    h.at(7200 + 86_400 + 1);
    let late = h
        .boards
        .trending(&name)
        .write_keyed(&[Event::new("a", 1)], &key, &fingerprint)
        .await
        .unwrap();
    assert!(!late.replayed);
    assert_eq!(late.outcome.accepted, 1);
}
