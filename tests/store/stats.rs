//! The stats conformance suite: every case runs against the memory store and against a
//! real Redis, with the same answers; then the Redis-only key layout.

use rand::{Rng, SeedableRng};
use rollboard::{HourStats, RELATIVE_ERROR};

use crate::proxy::{Fault, FaultProxy, Request};
use crate::support::{Harness, START, TestRedis, unique};

on_every_store!(
    a_record_keeps_count_sum_min_max_mean_and_sample_stddev,
    stddev_of_1e7_plus_tiny_noise_is_within_1_percent,
    percentiles_are_within_2_percent,
    the_hour_rolls_over_inside_the_record,
    contexts_with_special_characters_never_share_keys,
    slowest_lists_the_highest_means_and_keeps_100,
    bad_input_and_unknown_stats_are_reported,
    a_batch_records_every_value_all_or_nothing,
    concurrent_single_records_add_up_exactly_and_feed_the_slowest_list,
    every_kind_with_a_slowest_list_is_listed_sorted,
);

async fn current(h: &Harness, context: &str, kind: &str) -> HourStats {
    h.boards
        .stats()
        .read(context, kind)
        .await
        .unwrap()
        .current
        .unwrap()
}

async fn a_record_keeps_count_sum_min_max_mean_and_sample_stddev(h: Harness) {
    let ctx = unique("/page");
    for v in [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0] {
        h.boards
            .stats()
            .record(&ctx, "AccessTime", v)
            .await
            .unwrap();
    }
    let s = current(&h, &ctx, "AccessTime").await;
    assert_eq!(
        (s.hour, s.count, s.sum, s.min, s.max, s.mean),
        (START, 8, 40.0, 2.0, 9.0, 5.0)
    );
    assert!(
        (s.stddev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12,
        "{}",
        s.stddev
    );
    let got = h.boards.stats().read(&ctx, "AccessTime").await.unwrap();
    assert_eq!(got.previous, None);
    assert_eq!((got.context, got.kind), (ctx, "AccessTime".to_owned()));
}

async fn stddev_of_1e7_plus_tiny_noise_is_within_1_percent(h: Harness) {
    let ctx = unique("big");
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let values: Vec<f64> = (0..1000)
        .map(|_| 1e7 + rng.random_range(0.0..0.01))
        .collect();
    for v in &values {
        h.boards.stats().record(&ctx, "Value", *v).await.unwrap();
    }
    // The true sample stddev, computed on the offsets (exact enough).
    let offsets: Vec<f64> = values.iter().map(|v| v - 1e7).collect();
    let mean = offsets.iter().sum::<f64>() / 1000.0;
    let truth = (offsets.iter().map(|o| (o - mean).powi(2)).sum::<f64>() / 999.0).sqrt();
    let s = current(&h, &ctx, "Value").await;
    assert_eq!(s.count, 1000);
    assert!(
        (s.stddev - truth).abs() / truth < 0.01,
        "stddev {} vs true {truth}",
        s.stddev
    );
}

async fn percentiles_are_within_2_percent(h: Harness) {
    let ctx = unique("p");
    for i in 1..=1000 {
        h.boards
            .stats()
            .record(&ctx, "AccessTime", i as f64 * 0.001)
            .await
            .unwrap();
    }
    let s = current(&h, &ctx, "AccessTime").await;
    for (got, truth) in [(s.p50, 0.5), (s.p95, 0.95), (s.p99, 0.99)] {
        assert!(
            (got - truth).abs() / truth <= RELATIVE_ERROR + 0.001,
            "{got} vs {truth}"
        );
    }
}

async fn the_hour_rolls_over_inside_the_record(h: Harness) {
    let ctx = unique("roll");
    h.boards.stats().record(&ctx, "T", 1.0).await.unwrap();
    h.at(3600 + 5);
    h.boards.stats().record(&ctx, "T", 3.0).await.unwrap();
    h.boards.stats().record(&ctx, "T", 5.0).await.unwrap();
    let got = h.boards.stats().read(&ctx, "T").await.unwrap();
    let (cur, prev) = (got.current.unwrap(), got.previous.unwrap());
    assert_eq!((cur.hour, cur.count, cur.mean), (START + 3600, 2, 4.0));
    assert_eq!((prev.hour, prev.count, prev.mean), (START, 1, 1.0));
    // An hour later, with nothing recorded: the last hour is the previous one.
    h.at(7200 + 5);
    let got = h.boards.stats().read(&ctx, "T").await.unwrap();
    assert_eq!(got.current, None);
    assert_eq!(got.previous.unwrap().hour, START + 3600);
    // Two hours of silence: both go at the next record.
    h.at(4 * 3600);
    h.boards.stats().record(&ctx, "T", 7.0).await.unwrap();
    let got = h.boards.stats().read(&ctx, "T").await.unwrap();
    assert_eq!(got.current.unwrap().count, 1);
    assert_eq!(got.previous, None);
}

async fn contexts_with_special_characters_never_share_keys(h: Harness) {
    let id = unique("");
    let contexts: Vec<String> = [
        "{a}",
        "a",
        "a:b",
        "a b",
        "/v1/counters/{name}",
        "é",
        "%7Ba%7D",
        "}{",
    ]
    .iter()
    .map(|c| format!("{c}{id}"))
    .collect();
    for (i, ctx) in contexts.iter().enumerate() {
        for _ in 0..=i {
            h.boards.stats().record(ctx, "K", i as f64).await.unwrap();
        }
    }
    for (i, ctx) in contexts.iter().enumerate() {
        let s = current(&h, ctx, "K").await;
        assert_eq!(
            (s.count, s.min, s.max),
            (i as u64 + 1, i as f64, i as f64),
            "{ctx}"
        );
    }
}

async fn slowest_lists_the_highest_means_and_keeps_100(h: Harness) {
    let kind = format!("Slow{}", unique("").replace(['-', ':', '.'], ""));
    for i in 1..=105 {
        h.boards
            .stats()
            .record(&format!("/r/{i}"), &kind, i as f64)
            .await
            .unwrap();
    }
    h.boards
        .stats()
        .record("/r/3", &kind, 1000.0)
        .await
        .unwrap();
    let all = h.boards.stats().slowest(&kind, 100).await.unwrap();
    assert_eq!(all.len(), 100);
    let top: Vec<(String, f64, u64)> = all
        .iter()
        .take(3)
        .map(|e| (e.context.clone(), e.mean, e.count))
        .collect();
    assert_eq!(
        top,
        [
            ("/r/3".to_owned(), 501.5, 2),
            ("/r/105".to_owned(), 105.0, 1),
            ("/r/104".to_owned(), 104.0, 1),
        ]
    );
    // /r/3 came back after being trimmed (with both its values); /r/1 to /r/6 are out.
    assert_eq!(all.last().unwrap().context, "/r/7");
    assert_eq!(h.boards.stats().slowest(&kind, 2).await.unwrap().len(), 2);
    h.boards.stats().record("/r/105", &kind, 1.0).await.unwrap();
    let second = &h.boards.stats().slowest(&kind, 3).await.unwrap()[2];
    assert_eq!(
        (second.context.as_str(), second.mean, second.count),
        ("/r/103", 103.0, 1)
    );
}

async fn bad_input_and_unknown_stats_are_reported(h: Harness) {
    let ctx = unique("bad");
    let code = |e: rollboard::Error| e.code();
    assert_eq!(
        code(h.boards.stats().read(&ctx, "T").await.unwrap_err()),
        "stats_not_found"
    );
    for (context, kind, value) in [
        ("", "T", 1.0),
        ("a\nb", "T", 1.0),
        ("ok", "a b", 1.0),
        ("ok", "T", f64::INFINITY),
        ("ok", "T", f64::NAN),
    ] {
        let err = h
            .boards
            .stats()
            .record(context, kind, value)
            .await
            .unwrap_err();
        assert_eq!(code(err), "invalid_query", "{context:?} {kind:?} {value}");
    }
    assert_eq!(
        code(h.boards.stats().slowest("T", 0).await.unwrap_err()),
        "invalid_query"
    );
    assert_eq!(
        code(h.boards.stats().slowest("T", 101).await.unwrap_err()),
        "invalid_query"
    );
}

async fn a_batch_records_every_value_all_or_nothing(h: Harness) {
    let ctx = unique("batch");
    let bad = h
        .boards
        .stats()
        .record_many(&ctx, "T", &[1.0, f64::NAN])
        .await;
    assert_eq!(bad.unwrap_err().code(), "invalid_query");
    assert_eq!(
        h.boards.stats().read(&ctx, "T").await.unwrap_err().code(),
        "stats_not_found"
    );
    h.boards
        .stats()
        .record_many(&ctx, "T", &[4.0, 1.0, 3.0, 2.0])
        .await
        .unwrap();
    h.boards.stats().record(&ctx, "T", 5.0).await.unwrap();
    let s = current(&h, &ctx, "T").await;
    assert_eq!(
        (s.count, s.sum, s.min, s.max, s.mean),
        (5, 15.0, 1.0, 5.0, 3.0)
    );
    assert!((s.stddev - 2.5f64.sqrt()).abs() < 1e-12, "{}", s.stddev);
    assert!((s.p50 - 3.0).abs() <= 3.0 * RELATIVE_ERROR);
    let kind = format!("B{}", unique("").replace(['-', ':', '.'], ""));
    h.boards
        .stats()
        .record_many(&ctx, &kind, &[2.0, 4.0])
        .await
        .unwrap();
    let top = h.boards.stats().slowest(&kind, 1).await.unwrap();
    assert_eq!((top[0].mean, top[0].count), (3.0, 2));
}

/// 8 tasks × 200 single records over 5 contexts, all at once (so group commit gathers
/// records of several contexts into one call): each context holds exactly the count,
/// sum, min and max of what was sent to it, and the slowest list holds each context's
/// mean and count.
async fn concurrent_single_records_add_up_exactly_and_feed_the_slowest_list(h: Harness) {
    let id = unique("");
    let kind = format!("Conc{}", id.replace(['-', ':', '.'], ""));
    let contexts: Vec<String> = (0..5).map(|c| format!("/conc/{c}/{id}")).collect();
    // Multiples of 1/4 below 4: every sum is exact whatever the order of the adds.
    let value = |task: usize, i: usize| ((task * 37 + i * 11) % 15 + 1) as f64 * 0.25;
    let tasks: Vec<_> = (0..8)
        .map(|task| {
            let (boards, contexts, kind) = (h.boards.clone(), contexts.clone(), kind.clone());
            tokio::spawn(async move {
                for i in 0..200 {
                    let context = &contexts[(task + i) % 5];
                    boards
                        .stats()
                        .record(context, &kind, value(task, i))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let mut means = Vec::new();
    for (c, context) in contexts.iter().enumerate() {
        let sent: Vec<f64> = (0..8)
            .flat_map(|task| (0..200).map(move |i| (task, i)))
            .filter(|(task, i)| (task + i) % 5 == c)
            .map(|(task, i)| value(task, i))
            .collect();
        let expected = (
            sent.len() as u64,
            sent.iter().sum::<f64>(),
            sent.iter().copied().fold(f64::INFINITY, f64::min),
            sent.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        );
        let s = current(&h, context, &kind).await;
        assert_eq!((s.count, s.sum, s.min, s.max), expected, "{context}");
        assert_eq!(s.count, 320);
        let truth = expected.1 / expected.0 as f64;
        assert!((s.mean - truth).abs() < 1e-12, "{} vs {truth}", s.mean);
        means.push((context.clone(), s.mean, s.count));
    }
    let mut listed: Vec<(String, f64, u64)> = h
        .boards
        .stats()
        .slowest(&kind, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.context, e.mean, e.count))
        .collect();
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(listed, means);
}

async fn every_kind_with_a_slowest_list_is_listed_sorted(h: Harness) {
    let id = unique("").replace(['-', ':', '.'], "");
    let (early, late, never) = (format!("Ak{id}"), format!("Zk{id}"), format!("Nk{id}"));
    h.boards.stats().record("/a", &late, 1.0).await.unwrap();
    h.boards
        .stats()
        .record_many("/b", &early, &[1.0, 2.0])
        .await
        .unwrap();
    h.boards.stats().record("/c", &late, 3.0).await.unwrap();
    // Refused: it records nothing, so its kind gets no list.
    assert!(
        h.boards
            .stats()
            .record("/d", &never, f64::NAN)
            .await
            .is_err()
    );
    h.at(3600);
    h.boards.stats().record("/a", &late, 1.0).await.unwrap();
    let kinds = h.boards.stat_kinds().await.unwrap();
    let mine: Vec<&String> = kinds.iter().filter(|k| k.ends_with(&id)).collect();
    assert_eq!(mine, [&early, &late]);
    let mut sorted = kinds.clone();
    sorted.sort();
    assert_eq!(kinds, sorted);
    // Every kind listed has a slowest list.
    assert_eq!(h.boards.stats().slowest(&early, 10).await.unwrap().len(), 1);
    assert_eq!(h.boards.stats().slowest(&late, 10).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_kind_is_registered_by_one_zadd_of_its_own_once_an_hour_per_process() {
    let h = Harness::redis().await;
    let kind = format!("Reg{}", unique("").replace(['-', ':', '.'], ""));
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let mut zscore = ::redis::cmd("ZSCORE");
    zscore.arg("stat_kinds").arg(&kind);
    let score = |raw: &mut ::redis::aio::MultiplexedConnection| {
        let (zscore, mut raw) = (zscore.clone(), raw.clone());
        async move { zscore.query_async::<Option<i64>>(&mut raw).await.unwrap() }
    };
    h.boards.stats().record("/a", &kind, 1.0).await.unwrap();
    assert_eq!(score(&mut raw).await, Some(START));
    // Removed behind the process's back: the next record of the same hour does not
    // register the kind again (no command beyond the record)...
    let _: i64 = ::redis::cmd("ZREM")
        .arg("stat_kinds")
        .arg(&kind)
        .query_async(&mut raw)
        .await
        .unwrap();
    h.boards.stats().record("/b", &kind, 1.0).await.unwrap();
    assert_eq!(score(&mut raw).await, None);
    assert!(!h.boards.stat_kinds().await.unwrap().contains(&kind));
    // ...the first of the next hour does, with that hour.
    h.at(3600);
    h.boards.stats().record("/a", &kind, 1.0).await.unwrap();
    assert_eq!(score(&mut raw).await, Some(START + 3600));
    assert!(h.boards.stat_kinds().await.unwrap().contains(&kind));
}

#[tokio::test]
async fn stats_keys_carry_the_encoded_context_as_their_own_hash_tag() {
    let h = Harness::redis().await;
    let id = unique("");
    let ctx = format!("/v1/counters/{{name}}{id}");
    h.boards
        .stats()
        .record(&ctx, "AccessTime", 0.5)
        .await
        .unwrap();
    h.at(3600);
    h.boards
        .stats()
        .record(&ctx, "AccessTime", 0.5)
        .await
        .unwrap();
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let tag = format!("%2Fv1%2Fcounters%2F%7Bname%7D{id}");
    let exists: (i64, i64) = ::redis::pipe()
        .cmd("EXISTS")
        .arg(format!("stat_{{{tag}}}_AccessTime"))
        .cmd("EXISTS")
        .arg(format!("statprev_{{{tag}}}_AccessTime"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(exists, (1, 1));
}

/// `cmdstat_evalsha` calls so far.
async fn evalsha_calls(raw: &mut ::redis::aio::MultiplexedConnection) -> u64 {
    let info: String = ::redis::cmd("INFO")
        .arg("commandstats")
        .query_async(raw)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next()?.parse().ok())
        .unwrap()
}

#[tokio::test]
async fn on_a_single_node_a_record_and_its_slowest_list_are_one_script_call() {
    let redis = TestRedis::spawn().await;
    let boards = rollboard::Rollboard::new(redis.store().await);
    let mut raw = redis.raw().await;
    // The first record loads the script.
    boards.stats().record("/warm", "T", 1.0).await.unwrap();
    let before = evalsha_calls(&mut raw).await;
    for i in 0..10 {
        boards
            .stats()
            .record(&format!("/one/{}", i % 3), "T", i as f64)
            .await
            .unwrap();
    }
    assert_eq!(evalsha_calls(&mut raw).await - before, 10);
    let top: Vec<(String, f64, u64)> = boards
        .stats()
        .slowest("T", 3)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.context, e.mean, e.count))
        .collect();
    assert_eq!(
        top,
        [
            ("/one/2".to_owned(), 5.0, 3),
            ("/one/0".to_owned(), 4.5, 4),
            ("/one/1".to_owned(), 4.0, 3),
        ]
    );
}

/// A record whose reply is lost (the connection cut after Redis ran it) fails with
/// `store_unavailable` and is never sent again: its value counts once. Then, with Redis
/// gone, every one of 8 concurrent records is answered with the error: none is dropped
/// silently, none waits forever.
#[tokio::test]
async fn a_lost_record_reply_fails_its_caller_and_counts_once_and_a_dead_store_fails_every_caller()
{
    let redis = TestRedis::spawn().await;
    let proxy = FaultProxy::start(&redis.url).await;
    let store = rollboard::RedisStore::connect_with(
        &proxy.url(),
        rollboard::RedisOptions {
            response_timeout: std::time::Duration::from_millis(600),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let boards = rollboard::Rollboard::new(std::sync::Arc::new(store));
    let ctx = unique("/lost");
    proxy.arm(Fault::Cut, 1, |r: &Request| {
        r.command() == "EVALSHA" && r.has_arg_starting("stat_{")
    });
    let lost = boards.stats().record(&ctx, "T", 2.0).await.unwrap_err();
    assert_eq!(lost.code(), "store_unavailable", "{lost}");
    assert_eq!(proxy.fired(), 1);
    boards.stats().record(&ctx, "T", 4.0).await.unwrap();
    let s = boards
        .stats()
        .read(&ctx, "T")
        .await
        .unwrap()
        .current
        .unwrap();
    assert_eq!((s.count, s.sum, s.min, s.max), (2, 6.0, 2.0, 4.0));

    redis.kill();
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let boards = boards.clone();
            tokio::spawn(
                async move { boards.stats().record(&format!("/dead/{i}"), "T", 1.0).await },
            )
        })
        .collect();
    for task in tasks {
        let error = task.await.unwrap().unwrap_err();
        assert_eq!(error.code(), "store_unavailable", "{error}");
    }
}

/// Per `stats_record.lua` call in `SLOWLOG` (every command logged): the values it
/// carried, read from its arguments (`EVALSHA sha 4 <4 keys> 1 K N hour kind v b
/// context values…`: calls of one context, so one group each).
async fn stats_calls_values(raw: &mut ::redis::aio::MultiplexedConnection) -> Vec<usize> {
    type Entry = (i64, i64, i64, Vec<Vec<u8>>, String, String);
    let log: Vec<Entry> = ::redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query_async(raw)
        .await
        .unwrap();
    let text = |a: &[u8]| String::from_utf8_lossy(a).into_owned();
    log.iter()
        .rev()
        .map(|e| &e.3)
        .filter(|args| {
            text(&args[0]).eq_ignore_ascii_case("EVALSHA") && args[3].starts_with(b"stat_{")
        })
        .map(|args| {
            assert_eq!(
                text(&args[7]),
                "1",
                "one group per call: {:?}",
                text(&args[14])
            );
            text(&args[12]).parse().unwrap()
        })
        .collect()
}

/// 64 concurrent batches of 100 values to one context (6,400 values, more than one call
/// may carry): the store splits them over several calls at batch boundaries, none with
/// more than 3,880 values (~0.4 ms of Redis time), together every value once; the
/// context holds exactly their count, sum, min and max, their mean and stddev, and the
/// slowest list its mean and count.
#[tokio::test]
async fn values_beyond_one_call_s_budget_are_split_over_calls_and_counted_exactly() {
    const CAP: usize = 3880;
    let redis = TestRedis::spawn().await;
    let boards = rollboard::Rollboard::new(redis.store().await);
    let mut raw = redis.raw().await;
    // The first record loads the script; then every command is logged.
    boards.stats().record("/warm", "T", 1.0).await.unwrap();
    let _: () = ::redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(0)
        .arg("slowlog-max-len")
        .arg(10_000)
        .query_async(&mut raw)
        .await
        .unwrap();
    let _: () = ::redis::cmd("SLOWLOG")
        .arg("RESET")
        .query_async(&mut raw)
        .await
        .unwrap();
    let ctx = unique("/split");
    // Multiples of 1/4 up to 4: every sum is exact whatever the order of the adds.
    let value = |batch: usize, i: usize| ((batch * 7 + i * 5) % 16 + 1) as f64 * 0.25;
    let batches: Vec<Vec<f64>> = (0..64)
        .map(|b| (0..100).map(|i| value(b, i)).collect())
        .collect();
    let records = batches
        .iter()
        .map(|b| boards.stats().record_many(&ctx, "T", b));
    for result in futures_util::future::join_all(records).await {
        result.unwrap();
    }
    let calls = stats_calls_values(&mut raw).await;
    assert!(calls.len() >= 2, "{calls:?}");
    assert!(calls.iter().all(|&v| v <= CAP && v % 100 == 0), "{calls:?}");
    assert_eq!(calls.iter().sum::<usize>(), 6_400, "{calls:?}");

    let all: Vec<f64> = batches.concat();
    let sum: f64 = all.iter().sum();
    let mean = sum / 6_400.0;
    let truth = (all.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 6_399.0).sqrt();
    let s = boards
        .stats()
        .read(&ctx, "T")
        .await
        .unwrap()
        .current
        .unwrap();
    assert_eq!(
        (s.count, s.sum, s.min, s.max),
        (6_400, sum, 0.25, 4.0),
        "{s:?}"
    );
    assert!((s.mean - mean).abs() < 1e-12, "{} vs {mean}", s.mean);
    assert!((s.stddev - truth).abs() < 1e-9, "{} vs {truth}", s.stddev);
    let top = boards.stats().slowest("T", 100).await.unwrap();
    let listed = top.iter().find(|e| e.context == ctx).unwrap();
    assert_eq!((listed.mean, listed.count), (s.mean, 6_400));
}
