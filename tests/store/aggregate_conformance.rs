//! The conformance suite of max, min and latest boards: each case runs on the memory
//! store, a real Redis (both slot layouts' defaults) and a real Redis Cluster, with the
//! same exact answers on all.

use rollboard::{
    Aggregate, BoardConfig, Error, Event, Fingerprint, IdempotencyKey, ScoreRange, Span, Ties,
};

use crate::support::{Harness, START, pairs, ranking, triples, ts, unique};

on_every_store!(
    a_max_board_keeps_each_best_and_falls_back_when_its_slot_leaves,
    a_min_board_ranks_lowest_first_and_reads_from_either_end,
    a_latest_board_keeps_the_newest_event_and_breaks_a_millisecond_tie_by_value,
    dense_ties_count_distinct_values_on_every_aggregate,
    removal_recompute_and_an_added_window_keep_a_max_board_exact,
    values_and_deltas_are_refused_where_they_do_not_belong,
    a_keyed_value_write_is_applied_once_and_another_body_is_refused,
    a_compact_board_converts_its_closed_slot_and_stays_exact,
);

/// A board of `aggregate` with 1-minute slots and `windows`.
async fn board(h: &Harness, aggregate: Aggregate, windows: &[&str]) -> (String, BoardConfig) {
    let config = BoardConfig::parse("1m", windows)
        .unwrap()
        .with_aggregate(aggregate);
    let name = unique("ag");
    h.boards.create(&name, config.clone()).await.unwrap();
    (name, config)
}

/// Writes `(member, value)` events at `START + seconds`.
async fn write(h: &Harness, name: &str, seconds: i64, events: &[(&str, i64)]) {
    let events: Vec<Event> = events
        .iter()
        .map(|(m, v)| Event::value(*m, *v).at(ts(START + seconds)))
        .collect();
    let outcome = h.boards.windowed(name).incr_batch(&events).await.unwrap();
    assert_eq!(outcome.rejected, [], "{events:?}");
}

async fn top(h: &Harness, name: &str, window: &str) -> Vec<(String, i64)> {
    let window = Some(Span::parse(window).unwrap());
    ranking(&h.boards.windowed(name).top(window, 0, 100).await.unwrap())
}

async fn a_max_board_keeps_each_best_and_falls_back_when_its_slot_leaves(h: Harness) {
    let (name, _) = board(&h, Aggregate::Max, &["2m", "5m"]).await;
    write(&h, &name, 0, &[("ann", 50), ("bob", 30)]).await;
    h.at(60);
    write(&h, &name, 60, &[("ann", 40), ("bob", 60), ("cy", 0)]).await;
    let all = pairs(&[("bob", 60), ("ann", 50), ("cy", 0)]);
    assert_eq!(top(&h, &name, "2m").await, all);
    assert_eq!(top(&h, &name, "5m").await, all);
    // Minute 0 leaves the 2-minute window: ann falls back to her 40 of minute 1.
    h.at(120);
    h.boards.windowed(&name).retire(None).await.unwrap();
    let two = pairs(&[("bob", 60), ("ann", 40), ("cy", 0)]);
    assert_eq!(top(&h, &name, "2m").await, two);
    assert_eq!(top(&h, &name, "5m").await, all);
    let history = h.boards.windowed(&name).history("ann").await.unwrap();
    let points: Vec<(i64, i64)> = history.points.iter().map(|p| (p.slot, p.value)).collect();
    assert_eq!(points, [(START, 50), (START + 60, 40)]);
    // Both minutes leave both windows: nobody is left.
    h.at(6 * 60);
    h.boards.windowed(&name).retire(None).await.unwrap();
    assert_eq!(top(&h, &name, "2m").await, []);
    assert_eq!(top(&h, &name, "5m").await, []);
}

async fn a_min_board_ranks_lowest_first_and_reads_from_either_end(h: Harness) {
    let (name, _) = board(&h, Aggregate::Min, &["5m"]).await;
    write(
        &h,
        &name,
        0,
        &[
            ("ann", 95),
            ("bob", 80),
            ("cy", 120),
            ("ann", 70),
            ("dee", -4),
        ],
    )
    .await;
    let page = h.boards.windowed(&name).top(None, 0, 10).await.unwrap();
    assert_eq!(
        triples(&page.entries),
        [
            (1, "dee".to_owned(), -4),
            (2, "ann".to_owned(), 70),
            (3, "bob".to_owned(), 80),
            (4, "cy".to_owned(), 120)
        ]
    );
    let slowest = h.boards.windowed(&name).bottom(None, 0, 2).await.unwrap();
    assert_eq!(
        triples(&slowest.entries),
        [(4, "cy".to_owned(), 120), (3, "bob".to_owned(), 80)]
    );
    let range = ScoreRange::new(Some(70), Some(100)).unwrap();
    let inside = h
        .boards
        .windowed(&name)
        .top_in_range(None, range, 0, 10)
        .await
        .unwrap();
    assert_eq!(ranking(&inside), pairs(&[("ann", 70), ("bob", 80)]));
    let bob = h
        .boards
        .windowed(&name)
        .score("bob", None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((bob.score, bob.rank), (80, Some(3)));
}

async fn a_latest_board_keeps_the_newest_event_and_breaks_a_millisecond_tie_by_value(h: Harness) {
    let (name, _) = board(&h, Aggregate::Latest, &["5m"]).await;
    let at = |ms: i64| rollboard::Timestamp::from_unix_millis(START * 1000 + ms).unwrap();
    h.at(10);
    for (value, ms) in [(5, 1_000), (3, 2_000), (4, 2_000), (9, 500)] {
        h.boards
            .windowed(&name)
            .incr_batch(&[Event::value("ann", value).at(at(ms))])
            .await
            .unwrap();
    }
    // 3 is newer than 5; 4 came at the same millisecond as 3 and is greater; 9 is older.
    assert_eq!(top(&h, &name, "5m").await, pairs(&[("ann", 4)]));
}

async fn dense_ties_count_distinct_values_on_every_aggregate(h: Harness) {
    for aggregate in [Aggregate::Max, Aggregate::Min, Aggregate::Latest] {
        let config = BoardConfig::parse("1m", &["5m"])
            .unwrap()
            .with_aggregate(aggregate)
            .with_ties(Ties::Dense);
        let name = unique("ad");
        h.boards.create(&name, config).await.unwrap();
        write(
            &h,
            &name,
            0,
            &[("a", 9), ("b", 9), ("c", 7), ("d", 5), ("e", 0)],
        )
        .await;
        let page = h.boards.windowed(&name).top(None, 0, 10).await.unwrap();
        let ranks: Vec<(u64, i64)> = page.entries.iter().map(|e| (e.rank, e.score)).collect();
        let want = match aggregate {
            Aggregate::Min => vec![(1, 0), (2, 5), (3, 7), (4, 9), (4, 9)],
            _ => vec![(1, 9), (1, 9), (2, 7), (3, 5), (4, 0)],
        };
        assert_eq!(ranks, want, "{aggregate:?}");
    }
}

async fn removal_recompute_and_an_added_window_keep_a_max_board_exact(h: Harness) {
    let (name, config) = board(&h, Aggregate::Max, &["2m"]).await;
    write(&h, &name, 0, &[("spam", 900), ("ann", 50)]).await;
    h.at(60);
    write(&h, &name, 60, &[("spam", 990), ("bob", 70)]).await;
    let removed = h
        .boards
        .windowed(&name)
        .remove_member("spam")
        .await
        .unwrap();
    assert_eq!(removed.slot_values, 2);
    assert_eq!(
        top(&h, &name, "2m").await,
        pairs(&[("bob", 70), ("ann", 50)])
    );
    let history = h.boards.windowed(&name).history("spam").await.unwrap();
    assert_eq!(history.points, []);
    let report = h.boards.windowed(&name).recompute(None).await.unwrap();
    assert_eq!(report.fields_scanned, 2);
    assert_eq!(
        top(&h, &name, "2m").await,
        pairs(&[("bob", 70), ("ann", 50)])
    );
    // A 10-minute window, built from the live slots.
    let wider = BoardConfig::new(
        config.slot(),
        vec![Span::parse("2m").unwrap(), Span::parse("10m").unwrap()],
    )
    .unwrap()
    .with_aggregate(Aggregate::Max);
    h.boards.create(&name, wider).await.unwrap();
    h.boards.windowed(&name).build_windows().await.unwrap();
    h.at(4 * 60);
    h.boards.windowed(&name).retire(None).await.unwrap();
    assert_eq!(top(&h, &name, "2m").await, []);
    assert_eq!(
        top(&h, &name, "10m").await,
        pairs(&[("bob", 70), ("ann", 50)])
    );
}

async fn values_and_deltas_are_refused_where_they_do_not_belong(h: Harness) {
    let (max, _) = board(&h, Aggregate::Max, &["5m"]).await;
    let sum = h.board("1m", &["5m"]).await;
    let delta = h
        .boards
        .windowed(&max)
        .incr("a", 3, None)
        .await
        .unwrap_err();
    assert_eq!(delta.code(), "invalid_value");
    assert!(delta.to_string().contains("send \"value\""), "{delta}");
    let value = h
        .boards
        .windowed(&sum)
        .incr_batch(&[Event::value("a", 3)])
        .await
        .unwrap();
    assert_eq!(value.accepted, 0);
    assert_eq!(value.rejected[0].error.code(), "invalid_value");
    let huge = h
        .boards
        .windowed(&max)
        .incr_batch(&[Event::value("a", 1 << 53)])
        .await
        .unwrap();
    assert!(matches!(huge.rejected[0].error, Error::InvalidValue { .. }));
    assert_eq!(top(&h, &max, "5m").await, []);
}

async fn a_keyed_value_write_is_applied_once_and_another_body_is_refused(h: Harness) {
    let (name, _) = board(&h, Aggregate::Max, &["5m"]).await;
    let key = IdempotencyKey::parse("run-1").unwrap();
    let events = [Event::value("ann", 7), Event::value("bob", 3)];
    let fingerprint = Fingerprint::of_events(&events);
    h.at(30);
    let first = h
        .boards
        .windowed(&name)
        .write_keyed(&events, &key, &fingerprint)
        .await
        .unwrap();
    assert_eq!((first.outcome.accepted, first.replayed), (2, false));
    // The retry comes a minute later: a replay, its events where the first call put them.
    h.at(90);
    let again = h
        .boards
        .windowed(&name)
        .write_keyed(&events, &key, &fingerprint)
        .await
        .unwrap();
    assert_eq!((again.outcome.accepted, again.replayed), (2, true));
    let history = h.boards.windowed(&name).history("ann").await.unwrap();
    assert_eq!(history.points.len(), 1);
    assert_eq!(history.points[0].slot, START);
    let other = [Event::value("ann", 9)];
    let reused = h
        .boards
        .windowed(&name)
        .write_keyed(&other, &key, &Fingerprint::of_events(&other))
        .await
        .unwrap_err();
    assert_eq!(reused.code(), "idempotency_key_reused");
    assert_eq!(top(&h, &name, "5m").await, pairs(&[("ann", 7), ("bob", 3)]));
}

async fn a_compact_board_converts_its_closed_slot_and_stays_exact(h: Harness) {
    let config = BoardConfig::parse("1m", &["3m"])
        .unwrap()
        .with_aggregate(Aggregate::Latest)
        .with_layout(Some(rollboard::Layout::Compact));
    let name = unique("ak");
    h.boards.create(&name, config).await.unwrap();
    // 200 members in minute 0: more than a listpack's worth (2 x fill on any server).
    let events: Vec<(String, i64)> = (0..200).map(|i| (format!("m{i:03}"), i)).collect();
    let events: Vec<(&str, i64)> = events.iter().map(|(m, v)| (m.as_str(), *v)).collect();
    write(&h, &name, 0, &events).await;
    h.at(60);
    let report = h.boards.windowed(&name).retire(None).await.unwrap();
    // The Redis stores convert minute 0 into buckets; the memory store has no layouts.
    let converted = if h.in_memory { (0, 0) } else { (1, 200) };
    assert_eq!((report.slots_compacted, report.fields_compacted), converted);
    // A late event of minute 0, newer: it is m007's latest.
    write(&h, &name, 30, &[("m007", 1_000)]).await;
    let page = h.boards.windowed(&name).top(None, 0, 3).await.unwrap();
    assert_eq!(
        ranking(&page),
        pairs(&[("m007", 1_000), ("m199", 199), ("m198", 198)])
    );
    let history = h.boards.windowed(&name).history("m007").await.unwrap();
    let points: Vec<(i64, i64)> = history.points.iter().map(|p| (p.slot, p.value)).collect();
    assert_eq!(points, [(START, 1_000)]);
    h.boards
        .windowed(&name)
        .remove_member("m199")
        .await
        .unwrap();
    let report = h.boards.windowed(&name).recompute(None).await.unwrap();
    assert_eq!(report.fields_scanned, 199);
    let page = h.boards.windowed(&name).top(None, 0, 2).await.unwrap();
    assert_eq!(ranking(&page), pairs(&[("m007", 1_000), ("m198", 198)]));
    // Minute 0 leaves the window: every member leaves.
    h.at(4 * 60);
    h.boards.windowed(&name).retire(None).await.unwrap();
    assert_eq!(top(&h, &name, "3m").await, []);
}
