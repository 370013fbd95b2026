//! Recompute: it repairs drift, and it ends exact while writes go on, whatever the
//! interleaving; retirement waits for it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rand::{Rng, SeedableRng};
use rollboard::{BoardConfig, Clock, Error, Event, Span, Ties};

use crate::oracle::{Oracle, check_redis_invariants};
use crate::support::{START, TestRedis, boards, ts, unique};

#[tokio::test]
async fn recompute_repairs_corrupted_totals() {
    let redis = TestRedis::start().await;
    let (boards, clock) = boards(&redis).await;
    let config = BoardConfig::parse("1h", &["1h", "3h"]).unwrap();
    let b = unique("fix");
    boards.create(&b, config.clone()).await.unwrap();
    let mut oracle = Oracle::new(config.clone());
    for hour in 0..3 {
        clock.set(ts(START + hour * 3600));
        let events: Vec<Event> = (0..300)
            .map(|i| Event::new(format!("m{}", (i * 7 + hour) % 120), 1 + i % 3))
            .collect();
        boards.windowed(&b).incr_batch(&events).await.unwrap();
        for e in &events {
            oracle.record(START + hour * 3600, &e.member, e.delta);
        }
    }
    boards.windowed(&b).retire(None).await.unwrap();
    let now = clock.now();
    // Drift, as a hand edit or an old bug would leave it.
    let mut raw = redis.raw().await;
    let _: () = redis::pipe()
        .cmd("ZADD")
        .arg(format!("stats_{{{b}}}"))
        .arg(999)
        .arg("m1")
        .ignore()
        .cmd("ZREM")
        .arg(format!("stats_{{{b}}}"))
        .arg("m2")
        .ignore()
        .cmd("ZADD")
        .arg(format!("stats_{{{b}}}"))
        .arg(5)
        .arg("ghost")
        .ignore()
        .cmd("ZINCRBY")
        .arg(format!("stats_{{{b}}}_10800"))
        .arg(-4)
        .arg("m3")
        .ignore()
        .cmd("DEL")
        .arg(format!("stats_{{{b}}}_10800"))
        .ignore()
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_ne!(ranking_of(&boards, &b, "1h").await, oracle.ranking(0, now));

    let report = boards.windowed(&b).recompute(None).await.unwrap();
    assert_eq!(
        report.windows,
        [Span::parse("1h").unwrap(), Span::parse("3h").unwrap()]
    );
    assert_eq!(ranking_of(&boards, &b, "1h").await, oracle.ranking(0, now));
    assert_eq!(ranking_of(&boards, &b, "3h").await, oracle.ranking(1, now));
    check_redis_invariants(&mut raw, &b, &config, Some(now)).await;
    let record: Vec<Option<String>> = redis::cmd("HMGET")
        .arg(format!("board_{{{b}}}"))
        .arg("rb_window")
        .arg("rb_token")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(record, [None, None], "the recompute's state is cleared");
}

/// A window's ranking in ranking order (score descending, member ascending).
async fn ranking_of(
    boards: &rollboard::Rollboard,
    board: &str,
    window: &str,
) -> Vec<(String, i64)> {
    let mut ranking: Vec<(String, i64)> = crate::support::ranking(boards, board, window)
        .await
        .into_iter()
        .collect();
    ranking.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    ranking
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn recompute_under_concurrent_writes_ends_exact() {
    let redis = TestRedis::start().await;
    let mut folded_somewhere = false;
    for round in 0..6u64 {
        let (boards, clock) = boards(&redis).await;
        // The last three rounds on a dense board: its tallies, kept beside the build,
        // must come out exact too (checked with the other invariants below).
        let ties = if round >= 3 {
            Ties::Dense
        } else {
            Ties::Competition
        };
        let config = BoardConfig::parse("1h", &["1h", "3h"])
            .unwrap()
            .with_ties(ties);
        let b = unique("live");
        boards.create(&b, config.clone()).await.unwrap();
        let oracle = Arc::new(Mutex::new(Oracle::new(config.clone())));
        // Three slots of data, so the scan takes many calls.
        for hour in 0..3 {
            clock.set(ts(START + hour * 3600));
            let events: Vec<Event> = (0..6_000)
                .map(|i| Event::new(format!("m{}", (i + hour * 13) % 4_000), 1))
                .collect();
            for chunk in events.chunks(1000) {
                boards.windowed(&b).incr_batch(chunk).await.unwrap();
            }
            let mut o = oracle.lock().unwrap();
            for e in &events {
                o.record(START + hour * 3600, &e.member, e.delta);
            }
        }
        clock.set(ts(START + 2 * 3600 + 1800));
        let stop = Arc::new(AtomicBool::new(false));
        let mut writers = Vec::new();
        for w in 0..3 {
            let (boards, b, oracle, stop, config) = (
                boards.clone(),
                b.clone(),
                oracle.clone(),
                stop.clone(),
                config.clone(),
            );
            writers.push(tokio::spawn(async move {
                let mut rng = rand::rngs::StdRng::seed_from_u64(round * 10 + w);
                while !stop.load(Ordering::SeqCst) {
                    let events: Vec<Event> = (0..rng.random_range(1..40))
                        .map(|_| {
                            let at = ts(START + rng.random_range(0..3 * 3600));
                            let delta = if rng.random_bool(0.7) { 1 } else { -1 };
                            Event::new(format!("m{}", rng.random_range(0..4_500)), delta).at(at)
                        })
                        .collect();
                    let outcome = boards.windowed(&b).incr_batch(&events).await.unwrap();
                    {
                        let mut o = oracle.lock().unwrap();
                        for (i, e) in events.iter().enumerate() {
                            if !outcome.rejected.iter().any(|r| r.index == i) {
                                o.record(config.slot_start(e.at.unwrap()), &e.member, e.delta);
                            }
                        }
                    }
                    tokio::task::yield_now().await;
                }
            }));
        }
        let retirer = {
            let (boards, b, stop) = (boards.clone(), b.clone(), stop.clone());
            tokio::spawn(async move {
                let mut busy = 0;
                while !stop.load(Ordering::SeqCst) {
                    match boards.windowed(&b).retire(None).await {
                        Err(Error::BoardBusy(_)) => busy += 1,
                        other => {
                            other.unwrap();
                        }
                    }
                    tokio::task::yield_now().await;
                }
                busy
            })
        };
        tokio::time::sleep(std::time::Duration::from_millis(round * 7)).await;
        let window = Some(Span::parse(if round % 2 == 0 { "3h" } else { "1h" }).unwrap());
        let report = boards.windowed(&b).recompute(window).await.unwrap();
        folded_somewhere |= report.members_folded > 0;
        stop.store(true, Ordering::SeqCst);
        for w in writers {
            w.await.unwrap();
        }
        let busy = retirer.await.unwrap();
        assert!(
            busy > 0,
            "retirement waited for the recompute at least once"
        );

        boards.windowed(&b).retire(None).await.unwrap();
        let now = clock.now();
        let oracle = oracle.lock().unwrap().clone();
        for (j, w) in ["1h", "3h"].iter().enumerate() {
            assert_eq!(
                ranking_of(&boards, &b, w).await,
                oracle.ranking(j, now),
                "round {round}, window {w}"
            );
        }
        let mut raw = redis.raw().await;
        check_redis_invariants(&mut raw, &b, &config, Some(now)).await;
    }
    assert!(
        folded_somewhere,
        "writes landed during a scan and were folded in"
    );
}
