//! Concurrency: writers on two "replicas" (separate connections) write on-time and late
//! events while the clock runs and two retirers with tiny chunks retire the same board at
//! once (at the writers' [`Pace`]: the clock moves with their batches, and they wait for
//! retirer passes at fixed points, so the run does not depend on the machine's speed). Afterwards every window equals the oracle exactly, no member with total 0
//! remains in any totals set, and no slot remains that every window has retired. Also on
//! a sharded board (every shard checked).

use std::sync::{Arc, Mutex};

use rand::{Rng, SeedableRng};
use rollboard::{BoardConfig, Clock, Event, Layout, RetireOptions, Timestamp};

use crate::oracle::{Oracle, check_redis_invariants};
use crate::pace::Pace;
use crate::support::{TestRedis, clock, ranking, unique, with_clock};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_and_two_retirers_end_exact() {
    writers_and_two_retirers(Layout::Plain, 1).await;
}

/// The same on a board of 3 shards: each retirer's pass runs over every shard.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_and_two_retirers_end_exact_on_a_sharded_board() {
    writers_and_two_retirers(Layout::Plain, 3).await;
}

/// The same on compact slots, with listpacks of at most 4 entries (read by the stores
/// at connect): a fill of 2, so the retirers compact every closed slot of 4 fields or
/// more (the open slot is written plain), and late events split its buckets further.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_and_two_retirers_end_exact_on_compact_slots() {
    writers_and_two_retirers(Layout::Compact, 1).await;
}

async fn writers_and_two_retirers(layout: Layout, shards: u32) {
    // A server of its own: the listpack limit below is server-wide.
    let redis = TestRedis::spawn().await;
    match layout {
        Layout::Plain => redis.use_hashtables().await,
        Layout::Compact => redis.config_set("hash-max-listpack-entries", "4").await,
    }
    let clock = clock();
    let replicas = [
        with_clock(redis.store().await, &clock),
        with_clock(redis.store().await, &clock),
    ];
    let config = BoardConfig::parse("10s", &["20s", "60s", "90s"])
        .unwrap()
        .with_layout(Some(layout))
        .with_shards(shards)
        .unwrap();
    let board = unique("c");
    replicas[0].create(&board, config.clone()).await.unwrap();
    let oracle = Arc::new(Mutex::new(Oracle::new(config.clone())));
    // 1,800 batches in all, the clock 2 s on every 6: 600 s, 60 slots.
    let pace = Arc::new(Pace::new(&clock, 2, 6, 2_000));

    let mut writers = Vec::new();
    for w in 0..6u64 {
        let rb = replicas[(w % 2) as usize].clone();
        let (board, oracle, config, pace) =
            (board.clone(), oracle.clone(), config.clone(), pace.clone());
        writers.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(w);
            let mut accepted = 0;
            for i in 0..300 {
                let now = pace.now().unix_millis();
                let events: Vec<Event> = (0..rng.random_range(1..20))
                    .map(|_| {
                        let lateness = rng.random_range(0..100_000);
                        let delta = if rng.random_bool(0.8) {
                            rng.random_range(1..4)
                        } else {
                            -1
                        };
                        let at = Timestamp::from_unix_millis(now - lateness).unwrap();
                        Event::new(format!("m{}", rng.random_range(0..200)), delta).at(at)
                    })
                    .collect();
                let outcome = rb.windowed(&board).incr_batch(&events).await.unwrap();
                {
                    let mut oracle = oracle.lock().unwrap();
                    for (i, e) in events.iter().enumerate() {
                        if let Some(r) = outcome.rejected.iter().find(|r| r.index == i) {
                            assert_eq!(r.error.code(), "too_late", "{:?}", r.error);
                        } else {
                            oracle.record(config.slot_start(e.at.unwrap()), &e.member, e.delta);
                            accepted += 1;
                        }
                    }
                }
                pace.wrote(i).await;
            }
            accepted
        }));
    }

    let mut retirers = Vec::new();
    for (r, rb) in replicas.iter().enumerate() {
        let (rb, board, pace) = (rb.clone(), board.clone(), pace.clone());
        retirers.push(tokio::spawn(async move {
            let options = RetireOptions {
                chunk_size: 3 + r * 4,
                max_chunks: None,
                ..Default::default()
            };
            let (mut passes, mut chunks) = (0, 0);
            while !pace.stopped() {
                chunks += rb
                    .windowed(&board)
                    .retire(Some(options))
                    .await
                    .unwrap()
                    .chunks;
                passes += 1;
                pace.passed(r);
            }
            assert!(passes >= 2, "retirer {r} ran only {passes} passes");
            chunks
        }));
    }

    let mut accepted = 0;
    for w in writers {
        accepted += w.await.unwrap();
    }
    pace.stop();
    let chunks: u64 = {
        let mut total = 0;
        for r in retirers {
            total += r.await.unwrap();
        }
        total
    };
    // A slot that closes just before the last pass, with fields enough to be compacted
    // by it (however the retirers' passes fell during the run).
    let last: Vec<Event> = (0..8).map(|i| Event::new(format!("m{i}"), 1)).collect();
    replicas[0]
        .windowed(&board)
        .incr_batch(&last)
        .await
        .unwrap();
    {
        let mut oracle = oracle.lock().unwrap();
        for e in &last {
            oracle.record(config.slot_start(clock.now()), &e.member, e.delta);
        }
    }
    clock.advance_millis(10_000);

    let now = clock.now();
    replicas[1].windowed(&board).retire(None).await.unwrap();
    let oracle = oracle.lock().unwrap().clone();
    assert!(accepted > 3_000, "only {accepted} events accepted");
    eprintln!(
        "accepted {accepted}, retirement chunks {chunks}, simulated {} s",
        now.unix_seconds() - crate::support::START
    );
    assert!(chunks > 300, "only {chunks} retirement chunks ran");
    assert_eq!(now.unix_seconds() - crate::support::START, 610);
    for (j, w) in config.windows().iter().enumerate() {
        let page = replicas[0]
            .windowed(&board)
            .top(Some(*w), 0, 1000)
            .await
            .unwrap();
        assert_eq!(page.from, config.window_start(j, now));
        assert_eq!(ranking(&page), oracle.ranking(j, now), "window {w}");
    }
    let mut raw = redis.raw().await;
    check_redis_invariants(&mut raw, &board, &config, Some(now)).await;
    let shard_records: Vec<String> = redis::cmd("KEYS")
        .arg(format!("board_{{{board}#*}}"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(shard_records.len() as u32, shards - 1);
    for record in shard_records {
        let shard = &record["board_{".len()..record.len() - 1];
        let one = config.clone().with_shards(1).unwrap();
        check_redis_invariants(&mut raw, shard, &one, Some(now)).await;
    }
    let geometries: i64 = redis::cmd("HLEN")
        .arg(format!("slotgeo_{{{board}}}"))
        .query_async(&mut raw)
        .await
        .unwrap();
    let live: i64 = redis::cmd("ZCARD")
        .arg(format!("slots_{{{board}}}"))
        .query_async(&mut raw)
        .await
        .unwrap();
    match layout {
        Layout::Plain => assert_eq!(geometries, 0),
        Layout::Compact => {
            // Slots created by late events are compact, the open slot is plain, and the
            // slot that closed at the last boundary was compacted by the last retirement.
            assert!(live > 0);
            assert!(
                geometries > 0 && geometries <= live,
                "{geometries} of {live}"
            );
            let open = config.slot_start(now);
            let geometry = |slot: i64| {
                redis::cmd("HEXISTS")
                    .arg(format!("slotgeo_{{{board}}}"))
                    .arg(slot)
                    .to_owned()
            };
            let open_compact: bool = geometry(open).query_async(&mut raw).await.unwrap();
            assert!(!open_compact, "the open slot is written plain");
            // The slot written last (8 fields) closed before the last pass, which
            // compacted it.
            let closed = open - 10;
            let closed_compact: bool = geometry(closed).query_async(&mut raw).await.unwrap();
            assert!(closed_compact, "the closed slot {closed} was left plain");
        }
    }
}
