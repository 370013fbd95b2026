//! Rate hits whose heads move, on Redis. A store guesses each key's finest head from its
//! last batch, so that a key whose head moves is written with one `BITFIELD`, and a key it
//! has not seen, when fresh, with one `SET`. These cases pin that whatever the gap (one
//! slot, a few, more than the script clears op by op, a tier's whole cycle and more,
//! across the minute, hour and day tiers, a clock going back, late and future hits) and
//! however stale the guess (another client moved the head, a check did, the key was
//! deleted or expired), the key ends with the same bytes and expiry as when written by a
//! store that guesses nothing (the script's general path), each hit answered the same;
//! and what a moved head costs in Redis commands.

use std::sync::Arc;

use rollboard::{ManualClock, RedisStore, Rollboard, Timestamp};

use crate::support::{START, TestRedis, clock, ts, unique, with_clock};

/// A batch as `rate_hits` takes it.
type Batch = Vec<(String, u64, Option<Timestamp>)>;

/// The Redis keys of rate key `key` (one per tiers it was written under).
async fn redis_keys(raw: &mut ::redis::aio::MultiplexedConnection, key: &str) -> Vec<String> {
    ::redis::cmd("KEYS")
        .arg(format!("rate_{{{key}}}_*"))
        .query_async(raw)
        .await
        .unwrap()
}

/// The bytes and the remaining time to live (ms) of rate key `key` (none: empty, -2).
async fn ring(raw: &mut ::redis::aio::MultiplexedConnection, key: &str) -> (Vec<u8>, i64) {
    let Some(name) = redis_keys(raw, key).await.pop() else {
        return (Vec::new(), -2);
    };
    let bytes: Vec<u8> = ::redis::cmd("GET")
        .arg(&name)
        .query_async(raw)
        .await
        .unwrap();
    let pttl: i64 = ::redis::cmd("PTTL")
        .arg(&name)
        .query_async(raw)
        .await
        .unwrap();
    (bytes, pttl)
}

/// The answers of one batch (tiers that counted each hit, or the error's code).
async fn answers(boards: &Rollboard, batch: &Batch) -> Vec<Result<usize, &'static str>> {
    boards
        .rates()
        .hits(batch)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.map_err(|e| e.code()))
        .collect()
}

/// Two keys on one Redis: `guessed`, written by one long-lived store (which guesses its
/// heads), and `plain`, written by a new store for each batch (which guesses nothing).
struct Pair {
    redis: TestRedis,
    clock: ManualClock,
    store: Arc<RedisStore>,
    guessed: String,
    plain: String,
}

impl Pair {
    async fn new() -> Pair {
        let redis = TestRedis::spawn().await;
        Pair {
            store: redis.store().await,
            redis,
            clock: clock(),
            guessed: unique("g"),
            plain: unique("p"),
        }
    }

    /// The same hits (count, time) to both keys at START + `second`, each key alone in
    /// its batch; asserts that both answer the same and leave the same bytes and expiry.
    async fn hit(&self, second: i64, hits: &[(u64, Option<i64>)]) {
        self.clock.set(ts(START + second));
        let batch = |key: &String| -> Batch {
            hits.iter()
                .map(|&(count, at)| (key.clone(), count, at.map(|s| ts(START + s))))
                .collect()
        };
        let guessing = with_clock(self.store.clone(), &self.clock);
        let fresh = with_clock(self.redis.store().await, &self.clock);
        let got = answers(&guessing, &batch(&self.guessed)).await;
        let want = answers(&fresh, &batch(&self.plain)).await;
        assert_eq!(got, want, "answers at {second}");
        self.same(second).await;
    }

    /// Asserts that both keys hold the same bytes and expire within 1 s of each other.
    async fn same(&self, second: i64) {
        let mut raw = self.redis.raw().await;
        let (got, got_ttl) = ring(&mut raw, &self.guessed).await;
        let (want, want_ttl) = ring(&mut raw, &self.plain).await;
        assert_eq!(want.len(), 2072, "the plain key at {second}");
        assert_eq!(got.len(), want.len(), "length at {second}");
        assert!(got == want, "bytes at {second}");
        assert!(
            (got_ttl - want_ttl).abs() < 1_000,
            "{got_ttl} vs {want_ttl} at {second}"
        );
    }
}

#[tokio::test]
async fn a_head_moving_by_any_gap_leaves_the_bytes_of_a_key_written_without_guesses() {
    let pair = Pair::new().await;
    let now = |n: u64| [(n, None)];
    // Fresh, then heads moving by 0, 1, 2, SHORT (8), SHORT + 1, 59, 60 (the second
    // tier's cycle) and 61 seconds, then across the minute, hour and day tiers.
    let mut second = 0;
    pair.hit(second, &now(1)).await;
    for gap in [
        0,
        1,
        1,
        2,
        8,
        9,
        59,
        60,
        61,
        3_540,
        3_600,
        7_201,
        86_400,
        2 * 86_400 + 1,
    ] {
        second += gap;
        pair.hit(second, &now(1 + gap as u64 % 7)).await;
    }
    // Late hits, a future hit within the skew, hits the batch itself pushes out of the
    // second tier (the general path), and a clock gone back by less and more than a cycle.
    pair.hit(
        second + 3,
        &[(2, Some(second + 1)), (3, Some(second - 40)), (4, None)],
    )
    .await;
    pair.hit(second + 4, &[(5, Some(second + 30)), (1, None)])
        .await;
    pair.hit(
        second + 5,
        &[(1, Some(second - 100)), (2, Some(second + 50)), (3, None)],
    )
    .await;
    pair.hit(second - 20, &now(6)).await;
    pair.hit(second - 200, &now(7)).await;
    pair.hit(second + 400, &now(8)).await;
    // Counts too large for a counter, alone and after others: the hits that fit count.
    pair.hit(second + 401, &[(u64::from(u32::MAX), None), (1, None)])
        .await;
    pair.hit(
        second + 402,
        &[(1, None), (u64::from(u32::MAX), None), (2, None)],
    )
    .await;
}

#[tokio::test]
async fn a_stale_guess_is_undone_and_the_hits_count_as_without_it() {
    let pair = Pair::new().await;
    pair.hit(0, &[(1, None)]).await;
    pair.hit(1, &[(2, None)]).await;
    // Another client moves the guessed key's head (and the plain one's alike).
    pair.clock.set(ts(START + 3));
    let other = with_clock(pair.redis.store().await, &pair.clock);
    for key in [&pair.guessed, &pair.plain] {
        other.rates().hit(key, 4, None).await.unwrap();
    }
    pair.hit(5, &[(1, None)]).await;
    // A check through another client moves it again.
    pair.clock.set(ts(START + 9));
    for key in [&pair.guessed, &pair.plain] {
        other
            .rates()
            .check(key, 100, "1m", 2, Default::default())
            .await
            .unwrap();
    }
    pair.hit(12, &[(3, None)]).await;
    pair.hit(13, &[(1, None)]).await;
    // Both keys gone (as when they expire): the guess finds nothing; the key is made
    // afresh, with its expiry.
    let mut raw = pair.redis.raw().await;
    for key in [&pair.guessed, &pair.plain] {
        let name = redis_keys(&mut raw, key).await.remove(0);
        let _: i64 = ::redis::cmd("DEL")
            .arg(name)
            .query_async(&mut raw)
            .await
            .unwrap();
    }
    pair.hit(20, &[(5, None)]).await;
    let (bytes, pttl) = ring(&mut raw, &pair.guessed).await;
    assert_eq!(bytes.len(), 2072);
    assert!(pttl > 366 * 86_400_000 - 60_000, "{pttl}");
    let counts = with_clock(pair.store.clone(), &pair.clock)
        .rates()
        .counts(&pair.guessed, Some(&["1m", "5d"]), Default::default())
        .await
        .unwrap();
    let got: Vec<u64> = counts.counts.into_iter().map(|(_, c)| c).collect();
    assert_eq!(got, [5, 5]);
    // Deleted through the store that guesses, then hit again at an older second: the
    // store forgot the key and makes it afresh.
    let guessing = with_clock(pair.store.clone(), &pair.clock);
    guessing.rates().delete(&pair.guessed).await.unwrap();
    let fresh = with_clock(pair.redis.store().await, &pair.clock);
    fresh.rates().delete(&pair.plain).await.unwrap();
    pair.hit(15, &[(2, None)]).await;
}

/// Calls of BITFIELD, SETRANGE, PEXPIRE and SET Redis has run (`INFO commandstats`).
async fn commands(raw: &mut ::redis::aio::MultiplexedConnection) -> [u64; 4] {
    let info: String = ::redis::cmd("INFO")
        .arg("commandstats")
        .query_async(raw)
        .await
        .unwrap();
    ["bitfield", "setrange", "pexpire", "set"].map(|command| {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:calls=")))
            .map_or(0, |v| v.split(',').next().unwrap().parse().unwrap())
    })
}

#[tokio::test]
async fn a_moved_head_costs_one_bitfield_and_a_fresh_key_one_set() {
    let redis = TestRedis::spawn().await;
    let clock = clock();
    let boards = with_clock(redis.store().await, &clock);
    // The script loaded and the committer started.
    boards.rates().hit(&unique("warm"), 1, None).await.unwrap();
    let mut raw = redis.raw().await;
    let key = unique("k");
    // (second, BITFIELD, SETRANGE, PEXPIRE, SET) per hit at that second.
    let steps = [
        (0, [0, 0, 0, 1]),      // fresh: the whole ring, with its expiry
        (0, [1, 0, 0, 0]),      // the same second: adds only
        (1, [1, 0, 0, 0]),      // the next second: head moved, one clear
        (9, [1, 0, 0, 0]),      // 8 seconds later: 8 clears in the same BITFIELD
        (19, [1, 1, 0, 0]),     // 10 seconds: the passed slots by SETRANGE
        (100, [1, 2, 0, 0]),    // past the second tier's cycle (wraps)
        (86_400, [1, 6, 1, 0]), // the next day: every tier moves, the expiry too
    ];
    for (second, cost) in steps {
        clock.set(ts(START + second));
        let before = commands(&mut raw).await;
        boards.rates().hit(&key, 1, None).await.unwrap();
        let after = commands(&mut raw).await;
        let spent: Vec<u64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
        assert_eq!(spent, cost, "at {second}");
    }
}

#[tokio::test]
async fn fresh_keys_of_one_batch_with_the_same_hits_each_get_their_own_ring() {
    let redis = TestRedis::spawn().await;
    let clock = clock();
    clock.set(ts(START + 30));
    let boards = with_clock(redis.store().await, &clock);
    let keys: Vec<String> = (0..4).map(|_| unique("f")).collect();
    // Keys 0 to 2 with the same hits (one ring made for them), key 3 with others.
    let mut batch: Batch = Vec::new();
    for key in &keys[..3] {
        batch.push((key.clone(), 2, None));
        batch.push((key.clone(), 1, Some(ts(START + 29))));
    }
    batch.push((keys[3].clone(), 5, None));
    assert_eq!(answers(&boards, &batch).await, vec![Ok(4); 7]);
    clock.set(ts(START + 31));
    boards.rates().hit(&keys[1], 4, None).await.unwrap();
    let mut raw = redis.raw().await;
    // At 31: the second 31, 30 to 31, 29 to 31, the hour.
    for (k, want) in [[0, 2, 3, 3], [4, 6, 7, 7], [0, 2, 3, 3], [0, 5, 5, 5]]
        .into_iter()
        .enumerate()
    {
        let read = boards
            .rates()
            .counts(
                &keys[k],
                Some(&["1s", "2s", "3s", "1h"]),
                Default::default(),
            )
            .await
            .unwrap();
        let got: Vec<u64> = read.counts.into_iter().map(|(_, c)| c).collect();
        assert_eq!(got, want, "key {k}");
        let (bytes, pttl) = ring(&mut raw, &keys[k]).await;
        assert_eq!(bytes.len(), 2072);
        assert!(pttl > 366 * 86_400_000 - 60_000, "{pttl}");
    }
}
