//! A Redis with a memory limit and an eviction policy, as operators run it: at
//! `maxmemory` under `noeviction` writes are refused as `store_full` and nothing is
//! applied in part; an evicting policy fails the memory check unless accepted; an ACL
//! that hides `INFO` is no problem. Each test has a server of its own to configure.

use std::collections::BTreeMap;
use std::sync::Arc;

use rollboard::{
    BoardConfig, Error, Event, MemoryLimit, MemoryProblem, MemoryReading, RedisOptions, RedisStore,
    Rollboard, Settings,
};

use crate::oracle::{Oracle, check_redis_invariants};
use crate::support::{START, TestRedis, clock, unique};

/// A totals set (or a slot hash, `hash`) as member -> value.
async fn read_key(redis: &TestRedis, key: &str, hash: bool) -> BTreeMap<String, i64> {
    let mut raw = redis.raw().await;
    if hash {
        let values: BTreeMap<String, i64> = redis::cmd("HGETALL")
            .arg(key)
            .query_async(&mut raw)
            .await
            .unwrap();
        return values;
    }
    let scores: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut raw)
        .await
        .unwrap();
    scores.into_iter().map(|(m, s)| (m, s as i64)).collect()
}

fn boards_on(store: RedisStore, settings: Settings) -> Rollboard {
    Rollboard::with(Arc::new(store), Arc::new(clock()), settings)
}

#[tokio::test]
async fn a_full_redis_refuses_writes_as_store_full_and_applies_none_in_part() {
    let redis = TestRedis::spawn().await;
    // Plain slots: the test reads the slot's one hash.
    let options = rollboard::RedisOptions {
        default_layout: rollboard::Layout::Plain,
        ..rollboard::RedisOptions::default()
    };
    let store = RedisStore::connect_with(&redis.url, options).await.unwrap();
    let boards = boards_on(store, Settings::default());
    let config = BoardConfig::parse("1h", &["1h", "24h"]).unwrap();
    let board = unique("full");
    boards.create(&board, config.clone()).await.unwrap();
    let mut oracle = Oracle::new(config.clone());
    // One event so every script is loaded before the limit is set.
    boards.windowed(&board).incr("seed", 1, None).await.unwrap();
    oracle.record(START, "seed", 1);

    let limit = redis.used_memory().await + 2 * 1024 * 1024;
    redis.config_set("maxmemory", &limit.to_string()).await;
    let padding = "p".repeat(200);
    let mut refused = None;
    let mut partly = 0;
    for batch in 0..200 {
        let events: Vec<Event> = (0..500)
            .map(|i| Event::new(format!("{padding}-{batch}-{i}"), 1 + i % 7))
            .collect();
        match boards.windowed(&board).incr_batch(&events).await {
            Ok(outcome) if outcome.rejected.is_empty() => {
                assert_eq!(outcome.accepted, 500);
                for e in &events {
                    oracle.record(START, &e.member, e.delta);
                }
            }
            // A batch applied in several calls (bounded write calls) is refused from
            // the call that hit the limit: its accepted events are the first ones, the
            // others are rejected as store_full.
            Ok(outcome) => {
                let first = outcome.rejected[0].index;
                assert_eq!(outcome.accepted, first);
                let rejected: Vec<_> = outcome.rejected.iter().map(|r| r.index).collect();
                assert_eq!(rejected, (first..500).collect::<Vec<_>>());
                assert!(
                    outcome
                        .rejected
                        .iter()
                        .all(|r| r.error.code() == "store_full")
                );
                for e in &events[..first] {
                    oracle.record(START, &e.member, e.delta);
                }
                partly += first;
                let error = outcome.rejected[0].error.clone();
                refused = Some((batch, error));
                break;
            }
            Err(error) => {
                refused = Some((batch, error));
                break;
            }
        }
    }
    let (batch, error) = refused.expect("2 MiB fill up before 100 000 events");
    assert!(batch > 0, "the first batch already fit no more");
    assert_eq!(error.code(), "store_full");
    let Error::StoreFull(message) = &error else {
        unreachable!()
    };
    assert!(
        message.starts_with(
            "Redis is full: it refused the write at its memory limit (maxmemory, with the \
             noeviction policy), so nothing of it was applied"
        ),
        "{message}"
    );
    // Redis sits at its limit only while the refused batch's buffers live: once they
    // are freed it may be a few KB under. Put the limit surely under what is in use so
    // what follows does not depend on when Redis frees them.
    let limit = redis.used_memory().await - 1024 * 1024;
    redis.config_set("maxmemory", &limit.to_string()).await;
    // A single event is refused the same way, and reads still answer.
    assert_eq!(
        boards
            .windowed(&board)
            .incr("late", 1, None)
            .await
            .unwrap_err()
            .code(),
        "store_full"
    );

    // The slot hash and both totals sets equal the acknowledged events: nothing of a
    // refused batch is in them.
    let now = boards.now();
    let expected = oracle.totals(0, now);
    assert_eq!(expected.len(), 1 + 500 * batch + partly);
    assert_eq!(
        read_key(&redis, &format!("slot_{{{board}}}_{START}"), true).await,
        expected
    );
    assert_eq!(
        read_key(&redis, &format!("stats_{{{board}}}"), false).await,
        expected
    );
    assert_eq!(
        read_key(&redis, &format!("stats_{{{board}}}_86400"), false).await,
        oracle.totals(1, now)
    );
    check_redis_invariants(&mut redis.raw().await, &board, &config, None).await;

    let check = boards.memory_check().await.unwrap();
    assert!(
        matches!(check.problem, Some(MemoryProblem::Full { max_bytes, .. }) if max_bytes == limit),
        "{check:?}"
    );

    // With room again, writes go on.
    redis.config_set("maxmemory", "0").await;
    boards.windowed(&board).incr("late", 1, None).await.unwrap();
    assert_eq!(boards.memory_check().await.unwrap().problem, None);
}

#[tokio::test]
async fn an_evicting_policy_fails_the_memory_check_unless_accepted() {
    let redis = TestRedis::spawn().await;
    let store = || redis.store_owned();
    let strict = boards_on(store().await, Settings::default());
    let check = strict.memory_check().await.unwrap();
    assert_eq!(check.problem, None);
    assert!(
        matches!(&check.reading, MemoryReading::Read(MemoryLimit { max_bytes: 0, policy, .. }) if policy == "noeviction"),
        "{check:?}"
    );

    redis.config_set("maxmemory-policy", "allkeys-lru").await;
    assert_eq!(
        strict.memory_check().await.unwrap().problem,
        Some(MemoryProblem::Evicting {
            policy: "allkeys-lru".into()
        })
    );
    let accepting = boards_on(
        store().await,
        Settings {
            accept_eviction: true,
            ..Settings::default()
        },
    );
    assert_eq!(accepting.memory_check().await.unwrap().problem, None);
}

#[tokio::test]
async fn a_redis_that_hides_info_is_not_judged() {
    let redis = TestRedis::spawn().await;
    redis.config_set("maxmemory-policy", "allkeys-lru").await;
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-info"])
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
    let url = redis.url.replace("redis://", "redis://app:pw@");
    let store = RedisStore::connect_with(&url, RedisOptions::default())
        .await
        .unwrap();
    let check = boards_on(store, Settings::default())
        .memory_check()
        .await
        .unwrap();
    assert_eq!(check.problem, None);
    let MemoryReading::Hidden(why) = &check.reading else {
        panic!("INFO is refused to this user: {check:?}");
    };
    assert_eq!(
        why,
        "NoPerm: this user has no permissions to run the 'info' command"
    );
}
