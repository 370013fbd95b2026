//! The counters conformance suite: every case runs against the memory store and against
//! a real Redis, with the same exact answers; then the Redis-only key layout.

use std::collections::BTreeSet;

use rollboard::{CleanPlan, Error, SampleQuery, Span, Timestamp};

use crate::support::{Harness, START, ts, unique};

// Not on the shared test cluster: clean-up passes over every counter, so the cases'
// clean-ups (each at its own injected time) would cut each other's samples. Counters on
// a cluster: tests/store/cluster.rs.
on_memory_and_redis!(
    an_increment_adds_to_every_precision_at_once,
    samples_fill_gaps_and_flag_the_open_slice,
    unknown_counters_precisions_and_bad_input_are_reported,
    counters_are_listed_with_their_precisions_and_dropped,
    clean_up_keeps_exactly_n_samples_while_writes_go_on,
    coarse_precisions_are_cleaned_less_often,
    an_empty_counter_is_forgotten_and_a_new_write_starts_it_afresh,
    forgetting_never_loses_a_concurrent_write,
    a_sample_never_leaves_2_pow_53,
    a_batch_adds_one_sum_per_slice_all_or_nothing,
    a_counter_with_precisions_of_its_own_counts_at_them_until_they_are_taken_away,
);

fn span(s: u64) -> Span {
    Span::from_seconds(s).unwrap()
}

/// `(slice_start - START, count)` of every stored sample, oldest first.
async fn samples(h: &Harness, name: &str, precision: u64) -> Vec<(i64, i64)> {
    h.boards
        .counters()
        .samples(name, span(precision), SampleQuery::default())
        .await
        .unwrap()
        .iter()
        .map(|s| (s.slice_start - START, s.count))
        .collect()
}

async fn an_increment_adds_to_every_precision_at_once(h: Harness) {
    let c = unique("hits");
    h.at(70);
    h.boards
        .counters()
        .incr(&c, 3, Some(ts(START + 7)))
        .await
        .unwrap();
    h.boards
        .counters()
        .incr(&c, 2, Some(ts(START + 8)))
        .await
        .unwrap();
    h.boards.counters().incr(&c, 4, None).await.unwrap();
    h.boards
        .counters()
        .incr(&c, -1, Some(ts(START + 9)))
        .await
        .unwrap();
    assert_eq!(samples(&h, &c, 1).await, [(7, 3), (8, 2), (9, -1), (70, 4)]);
    assert_eq!(samples(&h, &c, 5).await, [(5, 4), (70, 4)]);
    assert_eq!(samples(&h, &c, 60).await, [(0, 4), (60, 4)]);
    assert_eq!(samples(&h, &c, 300).await, [(0, 8)]);
    assert_eq!(samples(&h, &c, 3600).await, [(0, 8)]);
    // START is 22:00 UTC: the 5 h slice began at 20:00, the day's at midnight.
    assert_eq!(samples(&h, &c, 18_000).await, [(-7200, 8)]);
    assert_eq!(samples(&h, &c, 86_400).await, [(-79_200, 8)]);
}

async fn samples_fill_gaps_and_flag_the_open_slice(h: Harness) {
    let c = unique("hits");
    h.at(12);
    h.boards
        .counters()
        .incr(&c, 1, Some(ts(START + 1)))
        .await
        .unwrap();
    h.boards
        .counters()
        .incr(&c, 2, Some(ts(START + 4)))
        .await
        .unwrap();
    let filled = h
        .boards
        .counters()
        .samples(
            &c,
            span(1),
            SampleQuery {
                fill_gaps: true,
                ..SampleQuery::default()
            },
        )
        .await
        .unwrap();
    let got: Vec<(i64, i64, bool)> = filled
        .iter()
        .map(|s| (s.slice_start - START, s.count, s.open))
        .collect();
    let mut want = vec![(1, 1, false), (2, 0, false), (3, 0, false), (4, 2, false)];
    want.extend((5..12).map(|t| (t, 0, false)));
    want.push((12, 0, true));
    assert_eq!(got, want);
    let window = h
        .boards
        .counters()
        .samples(
            &c,
            span(1),
            SampleQuery {
                from: Some(ts(START + 2)),
                to: Some(ts(START + 4)),
                fill_gaps: false,
            },
        )
        .await
        .unwrap();
    assert_eq!(window.len(), 1);
    assert_eq!((window[0].slice_start, window[0].count), (START + 4, 2));
}

async fn unknown_counters_precisions_and_bad_input_are_reported(h: Harness) {
    let c = unique("hits");
    let code = |r: Result<Vec<rollboard::Sample>, Error>| r.unwrap_err().code();
    assert_eq!(
        code(
            h.boards
                .counters()
                .samples(&c, span(1), SampleQuery::default())
                .await
        ),
        "counter_not_found"
    );
    h.boards.counters().incr(&c, 1, None).await.unwrap();
    assert_eq!(
        code(
            h.boards
                .counters()
                .samples(&c, span(2), SampleQuery::default())
                .await
        ),
        "precision_not_found"
    );
    let incr = |name: &str, count, at: Option<Timestamp>| {
        let boards = h.boards.clone();
        let name = name.to_owned();
        async move {
            boards
                .counters()
                .incr(&name, count, at)
                .await
                .unwrap_err()
                .code()
        }
    };
    assert_eq!(incr("a/b", 1, None).await, "invalid_counter_name");
    assert_eq!(incr("a{b}", 1, None).await, "invalid_counter_name");
    assert_eq!(incr(&c, 0, None).await, "invalid_delta");
    assert_eq!(incr(&c, 1 << 53, None).await, "invalid_delta");
    assert_eq!(incr(&c, 1, Some(ts(START + 61))).await, "in_future");
    // The day precision keeps 120 days.
    assert_eq!(
        incr(&c, 1, Some(ts(START - 121 * 86_400))).await,
        "too_late"
    );
    // Nothing of the refused increments was counted.
    assert_eq!(samples(&h, &c, 1).await, [(0, 1)]);
    assert_eq!(
        h.boards
            .counters()
            .delete(&unique("none"))
            .await
            .unwrap_err()
            .code(),
        "counter_not_found"
    );
}

async fn counters_are_listed_with_their_precisions_and_dropped(h: Harness) {
    let a = unique("a");
    let b = unique("b");
    h.boards.counters().incr(&b, 1, None).await.unwrap();
    h.boards.counters().incr(&a, 1, None).await.unwrap();
    h.boards.counters().incr(&a, 1, None).await.unwrap();
    let listed = h.boards.counters().list().await.unwrap();
    let ours: Vec<_> = listed
        .iter()
        .filter(|i| i.name.as_str() == a || i.name.as_str() == b)
        .collect();
    assert_eq!(ours.len(), 2);
    assert_eq!(ours[0].name.as_str(), a);
    assert_eq!(ours[1].name.as_str(), b);
    let seconds: Vec<u64> = ours[0].precisions.iter().map(|p| p.seconds()).collect();
    assert_eq!(seconds, rollboard::DEFAULT_PRECISIONS);
    h.boards.counters().delete(&a).await.unwrap();
    assert!(
        !h.boards
            .counters()
            .list()
            .await
            .unwrap()
            .iter()
            .any(|i| i.name.as_str() == a)
    );
    assert_eq!(
        h.boards
            .counters()
            .samples(&a, span(1), SampleQuery::default())
            .await
            .unwrap_err()
            .code(),
        "counter_not_found"
    );
    assert_eq!(samples(&h, &b, 1).await, [(0, 1)]);
    assert_eq!(
        h.boards.counters().delete(&a).await.unwrap_err().code(),
        "counter_not_found"
    );
}

async fn clean_up_keeps_exactly_n_samples_while_writes_go_on(h: Harness) {
    let c = unique("hits");
    let plan = |pass| CleanPlan { keep: 5, pass };
    for t in 0..20u64 {
        h.at(t as i64);
        let writes = async {
            for _ in 0..10 {
                h.boards.counters().incr(&c, 1, None).await.unwrap();
            }
        };
        let (_, cleaned) = tokio::join!(writes, h.boards.counters().clean(plan(t)));
        cleaned.unwrap();
        // Writes racing the pass land in the current slice, which clean-up keeps.
        h.boards.counters().clean(plan(t)).await.unwrap();
        let kept = samples(&h, &c, 1).await;
        let first = (t as i64 - 4).max(0);
        let want: Vec<(i64, i64)> = (first..=t as i64).map(|s| (s, 10)).collect();
        assert_eq!(kept, want, "at {t}s");
    }
    // The 5 s precision keeps five slices of 5 s: all 20 seconds so far.
    assert_eq!(
        samples(&h, &c, 5).await,
        [(0, 50), (5, 50), (10, 50), (15, 50)]
    );
}

async fn coarse_precisions_are_cleaned_less_often(h: Harness) {
    let c = unique("hits");
    h.boards.counters().incr(&c, 1, None).await.unwrap();
    h.at(3 * 300);
    let plan = |pass| CleanPlan { keep: 2, pass };
    // Pass 1 visits precisions up to a minute only.
    let report = h.boards.counters().clean(plan(1)).await.unwrap();
    assert!(report.removed >= 3);
    assert!(samples(&h, &c, 60).await.is_empty());
    assert_eq!(samples(&h, &c, 300).await, [(0, 1)]);
    // Pass 5 visits the 5 min precision too.
    h.boards.counters().clean(plan(5)).await.unwrap();
    assert!(samples(&h, &c, 300).await.is_empty());
    assert_eq!(samples(&h, &c, 3600).await, [(0, 1)]);
}

async fn an_empty_counter_is_forgotten_and_a_new_write_starts_it_afresh(h: Harness) {
    let c = unique("hits");
    h.boards.counters().incr(&c, 2, None).await.unwrap();
    h.at(3 * 86_400);
    let report = h
        .boards
        .counters()
        .clean(CleanPlan { keep: 2, pass: 0 })
        .await
        .unwrap();
    assert!(report.forgotten >= 1);
    let listed = |h: &Harness| {
        let boards = h.boards.clone();
        let c = c.clone();
        async move {
            boards
                .counters()
                .list()
                .await
                .unwrap()
                .iter()
                .any(|i| i.name.as_str() == c)
        }
    };
    assert!(!listed(&h).await);
    assert_eq!(
        h.boards
            .counters()
            .samples(&c, span(1), SampleQuery::default())
            .await
            .unwrap_err()
            .code(),
        "counter_not_found"
    );
    h.boards.counters().incr(&c, 5, None).await.unwrap();
    assert!(listed(&h).await);
    assert_eq!(samples(&h, &c, 1).await, [(3 * 86_400, 5)]);
}

async fn forgetting_never_loses_a_concurrent_write(h: Harness) {
    let c = unique("hits");
    let plan = CleanPlan { keep: 1, pass: 0 };
    for round in 0..40i64 {
        // Each round the counter holds only slices the clean-up drops: it is forgotten,
        // unless the write racing it lands first.
        h.at(round * 2 * 86_400);
        let (written, cleaned) = tokio::join!(
            h.boards.counters().incr(&c, 1, None),
            h.boards.counters().clean(plan)
        );
        written.unwrap();
        cleaned.unwrap();
        let listed = h.boards.counters().list().await.unwrap();
        assert!(
            listed.iter().any(|i| i.name.as_str() == c),
            "round {round}: a counter with a sample is listed"
        );
        assert_eq!(
            samples(&h, &c, 86_400).await.last().unwrap().1,
            1,
            "round {round}"
        );
    }
}

async fn a_sample_never_leaves_2_pow_53(h: Harness) {
    let c = unique("hits");
    let max = rollboard::MAX_ABS;
    h.boards.counters().incr(&c, max, None).await.unwrap();
    let err = h.boards.counters().incr(&c, 1, None).await.unwrap_err();
    assert_eq!(err.code(), "out_of_range");
    assert_eq!(samples(&h, &c, 1).await, [(0, max)]);
    assert_eq!(samples(&h, &c, 86_400).await, [(-79_200, max)]);
}

async fn a_counter_with_precisions_of_its_own_counts_at_them_until_they_are_taken_away(h: Harness) {
    let (c, other) = (unique("own"), unique("global"));
    h.at(70);
    let set = h
        .boards
        .counters()
        .set_precisions(&c, Some(&[span(60), span(10)]))
        .await
        .unwrap();
    assert_eq!(set, [span(10), span(60)]);
    for bad in [&[][..], &[span(5), span(5)][..]] {
        let err = h.boards.counters().set_precisions(&c, Some(bad)).await;
        assert_eq!(err.unwrap_err().code(), "invalid_config");
    }
    h.boards
        .counters()
        .incr(&c, 3, Some(ts(START + 7)))
        .await
        .unwrap();
    h.boards
        .counters()
        .incr_batch(&c, &[(2, Some(ts(START + 65))), (1, None)])
        .await
        .unwrap();
    h.boards.counters().incr(&other, 1, None).await.unwrap();
    assert_eq!(samples(&h, &c, 10).await, [(0, 3), (60, 2), (70, 1)]);
    assert_eq!(samples(&h, &c, 60).await, [(0, 3), (60, 3)]);
    let err = h
        .boards
        .counters()
        .samples(&c, span(1), SampleQuery::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "precision_not_found");
    assert_eq!(samples(&h, &other, 1).await, [(70, 1)]);
    let listed: Vec<(String, Vec<Span>)> = h
        .boards
        .counters()
        .list()
        .await
        .unwrap()
        .into_iter()
        .filter(|i| i.name.as_str() == c)
        .map(|i| (i.name.to_string(), i.precisions))
        .collect();
    assert_eq!(listed, [(c.clone(), vec![span(10), span(60)])]);

    // Taken away: the global precisions (1 s first) apply again.
    let global = h.boards.counters().set_precisions(&c, None).await.unwrap();
    assert_eq!(global[0], span(1));
    assert_eq!(global.len(), 7);
    h.boards.counters().incr(&c, 5, None).await.unwrap();
    assert_eq!(samples(&h, &c, 1).await, [(70, 5)]);
    // 10 s is not a global precision: its samples stay as they were, readable.
    assert_eq!(samples(&h, &c, 10).await, [(0, 3), (60, 2), (70, 1)]);
    assert_eq!(samples(&h, &c, 60).await, [(0, 3), (60, 8)]);

    // Dropping a counter drops its own precisions too.
    h.boards
        .counters()
        .set_precisions(&c, Some(&[span(3600)]))
        .await
        .unwrap();
    h.boards.counters().delete(&c).await.unwrap();
    let in_effect = h.boards.counters().precisions_in_effect(&c).await.unwrap();
    assert_eq!(in_effect, global);
}

async fn a_batch_adds_one_sum_per_slice_all_or_nothing(h: Harness) {
    let c = unique("hits");
    h.at(10);
    let at = |s: i64| Some(ts(START + s));
    h.boards
        .counters()
        .incr_batch(&c, &[(2, at(1)), (3, at(1)), (4, at(6)), (-1, None)])
        .await
        .unwrap();
    assert_eq!(samples(&h, &c, 1).await, [(1, 5), (6, 4), (10, -1)]);
    assert_eq!(samples(&h, &c, 5).await, [(0, 5), (5, 4), (10, -1)]);
    let bad = h
        .boards
        .counters()
        .incr_batch(&c, &[(1, at(2)), (0, at(2))])
        .await;
    assert_eq!(bad.unwrap_err().code(), "invalid_delta");
    let max = rollboard::MAX_ABS;
    let over = h
        .boards
        .counters()
        .incr_batch(&c, &[(1, at(3)), (max, at(1))])
        .await;
    assert_eq!(over.unwrap_err().code(), "out_of_range");
    assert_eq!(samples(&h, &c, 1).await, [(1, 5), (6, 4), (10, -1)]);
    assert_eq!(samples(&h, &c, 60).await, [(0, 8)]);
}

#[tokio::test]
async fn counter_keys_carry_the_counter_hash_tag() {
    let h = Harness::redis().await;
    let c = unique("hits");
    h.boards.counters().incr(&c, 1, None).await.unwrap();
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let keys: Vec<String> = ::redis::cmd("KEYS")
        .arg(format!("*{{{c}}}*"))
        .query_async(&mut raw)
        .await
        .unwrap();
    let mut want: BTreeSet<String> = rollboard::DEFAULT_PRECISIONS
        .iter()
        .map(|p| format!("count_{{{c}}}_{p}"))
        .collect();
    want.insert(format!("counter_{{{c}}}"));
    assert_eq!(keys.into_iter().collect::<BTreeSet<_>>(), want);
    let listed: Option<String> = ::redis::cmd("HGET")
        .arg("rollboard:counters")
        .arg(&c)
        .query_async(&mut raw)
        .await
        .unwrap();
    let generation: Option<String> = ::redis::cmd("HGET")
        .arg(format!("counter_{{{c}}}"))
        .arg("gen")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(listed.is_some());
    assert_eq!(listed, generation);
}

#[tokio::test]
async fn a_counter_whose_listing_was_lost_is_listed_by_its_next_increment() {
    let h = Harness::redis().await;
    let c = unique("hits");
    h.boards.counters().incr(&c, 1, None).await.unwrap();
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    // As if the process died between the increment and listing the counter.
    let _: () = ::redis::pipe()
        .cmd("HDEL")
        .arg("rollboard:counters")
        .arg(&c)
        .ignore()
        .cmd("HDEL")
        .arg(format!("counter_{{{c}}}"))
        .arg("indexed")
        .ignore()
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(
        !h.boards
            .counters()
            .list()
            .await
            .unwrap()
            .iter()
            .any(|i| i.name.as_str() == c)
    );
    h.boards.counters().incr(&c, 1, None).await.unwrap();
    assert!(
        h.boards
            .counters()
            .list()
            .await
            .unwrap()
            .iter()
            .any(|i| i.name.as_str() == c)
    );
    assert_eq!(samples(&h, &c, 1).await, [(0, 2)]);
}
