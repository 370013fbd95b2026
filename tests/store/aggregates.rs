//! Max, min and latest boards under concurrency and interruption, and their export and
//! import: writers on two "replicas" and two retirers with tiny chunks end exact; a retirement
//! stopped after every chunk, resumed by the other replica, ends exact and re-evaluates
//! only the members of the slots that left; a pass run again changes nothing; an export
//! imports back into an equal board, on every store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rand::{Rng, SeedableRng};
use rollboard::jobs::export::export;
use rollboard::jobs::import::{Format, ImportOptions, import};
use rollboard::{
    Aggregate, BoardConfig, Clock, Error, Event, Layout, RetireOptions, Ties, Timestamp,
};

use crate::aggregate_property::{check_peaks, dense_rank};
use crate::oracle::{ValueOracle, check_tallies};
use crate::pace::Pace;
use crate::support::{Harness, START, TestRedis, clock, pairs, ranking, ts, unique, with_clock};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_and_two_retirers_end_exact_on_a_max_board() {
    writers_and_two_retirers(Aggregate::Max, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_and_two_retirers_end_exact_on_a_min_board() {
    writers_and_two_retirers(Aggregate::Min, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_and_two_retirers_end_exact_on_a_latest_board() {
    writers_and_two_retirers(Aggregate::Latest, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_and_two_retirers_end_exact_on_a_cluster() {
    for aggregate in [Aggregate::Max, Aggregate::Min, Aggregate::Latest] {
        writers_and_two_retirers(aggregate, true).await;
    }
}

/// Up to `most` events (at least one) of values in -50..1000, of members `m0`..`m<members>`,
/// at times up to `spread_ms` before `now_ms`.
fn random_values(
    rng: &mut rand::rngs::StdRng,
    now_ms: i64,
    most: usize,
    spread_ms: i64,
    members: u32,
) -> Vec<Event> {
    (0..rng.random_range(1..most))
        .map(|_| {
            let at = Timestamp::from_unix_millis(now_ms - rng.random_range(0..spread_ms));
            let member = format!("m{}", rng.random_range(0..members));
            Event::value(member, rng.random_range(-50..1000)).at(at.unwrap())
        })
        .collect()
}

/// A Redis of this test's own and two "replicas" on it sharing `clock`; with
/// `listpack_entries` (its `hash-max-listpack-entries`, 0: hash tables from the first
/// field), HSCAN steps of a slot are chunks of a few members.
async fn two_replicas(
    clock: &rollboard::ManualClock,
    listpack_entries: Option<&str>,
) -> (TestRedis, [rollboard::Rollboard; 2]) {
    let redis = TestRedis::spawn().await;
    if let Some(entries) = listpack_entries {
        redis.config_set("hash-max-listpack-entries", entries).await;
    }
    let replicas = [
        with_clock(redis.store().await, clock),
        with_clock(redis.store().await, clock),
    ];
    (redis, replicas)
}

/// Six writers (values of either sign, on-time and late) on two replicas while the
/// clock runs and two retirers with tiny chunks retire the same board: every window
/// equals the oracle at the end. On a single Redis (its tallies checked too) or on the
/// cluster.
async fn writers_and_two_retirers(aggregate: Aggregate, on_cluster: bool) {
    let clock = clock();
    let (redis, replicas) = if on_cluster {
        let urls = &crate::test_cluster::TestCluster::shared().urls;
        let connect = || async {
            let store = rollboard::RedisStore::connect_cluster(urls).await.unwrap();
            with_clock(Arc::new(store), &clock)
        };
        (None, [connect().await, connect().await])
    } else {
        // Hashes of more than 4 fields are hash tables (HSCAN steps of a few members);
        // buckets of 2: the retirers convert the closed slots of 4 members or more.
        let (redis, replicas) = two_replicas(&clock, Some("4")).await;
        (Some(redis), replicas)
    };
    // Min and latest boards rank ties dense: their tallies change under every writer
    // and both retirers too.
    let ties = match aggregate {
        Aggregate::Max => Ties::Competition,
        _ => Ties::Dense,
    };
    let config = BoardConfig::parse("10s", &["20s", "60s", "90s"])
        .unwrap()
        .with_aggregate(aggregate)
        .with_ties(ties)
        .with_layout((!on_cluster).then_some(Layout::Compact));
    let board = unique("ac");
    replicas[0].create(&board, config.clone()).await.unwrap();
    let oracle = Arc::new(Mutex::new(ValueOracle::new(config.clone())));
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
                let events = random_values(&mut rng, now, 20, 100_000, 200);
                let outcome = rb.windowed(&board).incr_batch(&events).await.unwrap();
                {
                    let mut oracle = oracle.lock().unwrap();
                    for (i, e) in events.iter().enumerate() {
                        if let Some(r) = outcome.rejected.iter().find(|r| r.index == i) {
                            assert_eq!(r.error.code(), "too_late", "{:?}", r.error);
                        } else {
                            let slot = config.slot_start(e.at.unwrap());
                            oracle.record(
                                slot,
                                &e.member,
                                e.value.unwrap(),
                                e.at.unwrap().unix_millis(),
                            );
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
                ..Default::default()
            };
            let (mut chunks, mut compacted) = (0, 0);
            while !pace.stopped() {
                let report = rb.windowed(&board).retire(Some(options)).await.unwrap();
                chunks += report.chunks;
                compacted += report.slots_compacted;
                pace.passed(r);
            }
            (chunks, compacted)
        }));
    }
    let mut accepted = 0;
    for w in writers {
        accepted += w.await.unwrap();
    }
    pace.stop();
    let (mut chunks, mut compacted) = (0, 0);
    for r in retirers {
        let (c, s) = r.await.unwrap();
        chunks += c;
        compacted += s;
    }
    // Five members in the open slot, which closes next: the last pass converts it.
    let at = clock.now();
    let last: Vec<Event> = (0..5)
        .map(|i| Event::value(format!("m{i}"), 7).at(at))
        .collect();
    replicas[0]
        .windowed(&board)
        .incr_batch(&last)
        .await
        .unwrap();
    for e in &last {
        let slot = config.slot_start(at);
        let mut oracle = oracle.lock().unwrap();
        oracle.record(slot, &e.member, 7, at.unix_millis());
    }
    clock.advance_millis(10_000);
    let now = clock.now();
    compacted += replicas[1]
        .windowed(&board)
        .retire(None)
        .await
        .unwrap()
        .slots_compacted;
    assert!(accepted > 3_000, "only {accepted} events accepted");
    assert!(chunks > 300, "only {chunks} retirement chunks ran");
    // On one Redis the board is compact: the retirers converted its closed slots while
    // late writes and the other retirer went on (how many depends on the races).
    if !on_cluster {
        assert!(compacted > 0, "no slot converted");
    }
    let oracle = oracle.lock().unwrap().clone();
    for (j, w) in config.windows().iter().enumerate() {
        let page = replicas[0]
            .windowed(&board)
            .top(Some(*w), 0, 1000)
            .await
            .unwrap();
        assert_eq!(page.from, config.window_start(j, now));
        let want = oracle.ranking(j, now);
        assert_eq!(ranking(&page), want, "window {w}");
        if ties == Ties::Dense {
            let ranks: Vec<u64> = page.entries.iter().map(|e| e.rank).collect();
            let want: Vec<u64> = want.iter().map(|(_, v)| dense_rank(&want, *v)).collect();
            assert_eq!(ranks, want, "dense ranks of window {w}");
        }
    }
    if let Some(redis) = redis {
        check_tallies(&mut redis.raw().await, &board, ties == Ties::Dense).await;
    }
}

#[tokio::test]
async fn a_recompute_while_writers_go_on_repairs_drift_and_ends_exact() {
    for (aggregate, ties) in [
        (Aggregate::Max, Ties::Competition),
        (Aggregate::Min, Ties::Dense),
        (Aggregate::Latest, Ties::Dense),
    ] {
        recompute_under_writers(aggregate, ties).await;
    }
}

/// A board whose windows, records and tallies were edited by hand is recomputed (every
/// window, twice) while four writers on two replicas go on: every window, record and
/// tally ends equal to what the slots hold, and a retirement afterwards is exact.
async fn recompute_under_writers(aggregate: Aggregate, ties: Ties) {
    let clock = clock();
    let (redis, replicas) = two_replicas(&clock, Some("0")).await;
    let config = BoardConfig::parse("10s", &["30s", "90s"])
        .unwrap()
        .with_aggregate(aggregate)
        .with_ties(ties);
    let board = unique("ar");
    replicas[0].create(&board, config.clone()).await.unwrap();
    let oracle = Arc::new(Mutex::new(ValueOracle::new(config.clone())));
    let write = |rb: rollboard::Rollboard, seed: u64, calls: usize| {
        let (clock, board, oracle, config) =
            (clock.clone(), board.clone(), oracle.clone(), config.clone());
        tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            for _ in 0..calls {
                let now = clock.now().unix_millis();
                let events = random_values(&mut rng, now, 30, 80_000, 400);
                let outcome = rb.windowed(&board).incr_batch(&events).await.unwrap();
                assert_eq!(outcome.rejected, [], "no event is too late here");
                let mut oracle = oracle.lock().unwrap();
                for e in &events {
                    let at = e.at.unwrap();
                    let slot = config.slot_start(at);
                    oracle.record(slot, &e.member, e.value.unwrap(), at.unix_millis());
                }
            }
        })
    };
    write(replicas[0].clone(), 99, 100).await.unwrap();
    // Drift: a member that never wrote, a value changed, a record and a tally edited.
    let mut raw = redis.raw().await;
    let records = match aggregate {
        Aggregate::Latest => format!("newest_{{{board}}}"),
        _ => format!("peaks_{{{board}}}"),
    };
    let tally = match ties {
        Ties::Dense => format!("tally_{{{board}}}"),
        _ => format!("unrelated_{{{board}}}"),
    };
    let _: () = ::redis::pipe()
        .cmd("ZADD")
        .arg(format!("stats_{{{board}}}"))
        .arg(5_000)
        .arg("ghost")
        .cmd("ZADD")
        .arg(format!("stats_{{{board}}}_90"))
        .arg(-7_000)
        .arg("m1")
        .cmd("HSET")
        .arg(&records)
        .arg("m2")
        .arg("1:1:1")
        .cmd("HSET")
        .arg(tally)
        .arg(12_345)
        .arg(3)
        .query_async(&mut raw)
        .await
        .unwrap();
    let writers: Vec<_> = (0..4u64)
        .map(|w| write(replicas[(w % 2) as usize].clone(), w, 150))
        .collect();
    let mut scanned = 0;
    for _ in 0..2 {
        let report = replicas[1].windowed(&board).recompute(None).await.unwrap();
        assert_eq!(report.windows, config.windows());
        scanned += report.fields_scanned;
    }
    for w in writers {
        w.await.unwrap();
    }
    assert!(scanned > 1_000, "only {scanned} values scanned");
    let now = clock.now();
    let oracle_now = oracle.lock().unwrap().clone();
    for (j, w) in config.windows().iter().enumerate() {
        let page = replicas[0]
            .windowed(&board)
            .top(Some(*w), 0, 1000)
            .await
            .unwrap();
        assert_eq!(
            ranking(&page),
            oracle_now.ranking(j, now),
            "{aggregate:?}, window {w}"
        );
    }
    check_peaks(&redis, &board, aggregate).await.unwrap();
    check_tallies(&mut raw, &board, ties == Ties::Dense).await;
    // The rebuilt records retire exactly.
    clock.advance_millis(45_000);
    let now = clock.now();
    replicas[0].windowed(&board).retire(None).await.unwrap();
    for (j, w) in config.windows().iter().enumerate() {
        let page = replicas[1]
            .windowed(&board)
            .top(Some(*w), 0, 1000)
            .await
            .unwrap();
        assert_eq!(page.from, config.window_start(j, now));
        assert_eq!(
            ranking(&page),
            oracle_now.ranking(j, now),
            "{aggregate:?}, retired {w}"
        );
    }
    check_tallies(&mut raw, &board, ties == Ties::Dense).await;
}

#[tokio::test]
async fn a_member_removed_while_writers_write_it_keeps_only_what_came_after() {
    for aggregate in [Aggregate::Max, Aggregate::Latest] {
        removal_under_writers(aggregate).await;
    }
}

/// `m0`'s values from before its removal (all ≥ 10,000) are gone from every slot,
/// record and window once it ends; the values four writers on two replicas gave it
/// meanwhile (< 1,000) stay, and every window and record equals what the slots hold (a
/// recompute changes nothing).
async fn removal_under_writers(aggregate: Aggregate) {
    let clock = clock();
    let (redis, replicas) = two_replicas(&clock, None).await;
    // 600 slots of a second: the removal's clean takes three steps.
    let config = BoardConfig::parse("1s", &["60s", "600s"])
        .unwrap()
        .with_aggregate(aggregate)
        .with_ties(Ties::Dense);
    let board = unique("am");
    replicas[0].create(&board, config.clone()).await.unwrap();
    let events = |seed: u64, base: i64| {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let now = clock.now().unix_millis();
        (0..40)
            .map(|_| {
                let at = Timestamp::from_unix_millis(now - rng.random_range(0..599_000)).unwrap();
                let member = format!("m{}", rng.random_range(0..4));
                Event::value(member, base + rng.random_range(0..1000)).at(at)
            })
            .collect::<Vec<_>>()
    };
    for seed in 0..20 {
        replicas[0]
            .windowed(&board)
            .incr_batch(&events(seed, 10_000))
            .await
            .unwrap();
    }
    let writers: Vec<_> = (0..4u64)
        .map(|w| {
            let (rb, board) = (replicas[(w % 2) as usize].clone(), board.clone());
            let batches: Vec<Vec<Event>> = (0..30).map(|b| events(100 + w * 30 + b, 0)).collect();
            tokio::spawn(async move {
                for batch in batches {
                    rb.windowed(&board).incr_batch(&batch).await.unwrap();
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    let removed = replicas[1]
        .windowed(&board)
        .remove_member("m0")
        .await
        .unwrap();
    for w in writers {
        w.await.unwrap();
    }
    assert!(removed.slot_values > 0, "{removed:?}");
    let mut raw = redis.raw().await;
    let slots: Vec<i64> = ::redis::cmd("ZRANGE")
        .arg(format!("slots_{{{board}}}"))
        .arg(0)
        .arg(-1)
        .query_async(&mut raw)
        .await
        .unwrap();
    let mut kept = 0;
    for slot in slots {
        let held: Option<String> = ::redis::cmd("HGET")
            .arg(format!("slot_{{{board}}}_{slot}"))
            .arg("m0")
            .query_async(&mut raw)
            .await
            .unwrap();
        if let Some(held) = held {
            let value: i64 = held.rsplit(':').next().unwrap().parse().unwrap();
            assert!(value < 1_000, "{aggregate:?}: slot {slot} kept {held}");
            kept += 1;
        }
    }
    assert!(kept > 0, "no write of m0 after its removal was kept");
    let mut before = Vec::new();
    for w in config.windows() {
        before.push(
            replicas[0]
                .windowed(&board)
                .top(Some(*w), 0, 10)
                .await
                .unwrap(),
        );
    }
    check_peaks(&redis, &board, aggregate).await.unwrap();
    check_tallies(&mut raw, &board, true).await;
    replicas[0].windowed(&board).recompute(None).await.unwrap();
    for (w, page) in config.windows().iter().zip(before) {
        let after = replicas[1]
            .windowed(&board)
            .top(Some(*w), 0, 10)
            .await
            .unwrap();
        assert_eq!(ranking(&after), ranking(&page), "{aggregate:?}, window {w}");
        let m0 = page.entries.iter().find(|e| e.member == "m0").unwrap();
        assert!(m0.score < 1_000, "{aggregate:?}: {m0:?}");
    }
}

/// A removal whose caller died after it began (its state left in the record) is
/// finished by the next recompute, which then rebuilds the board without the member;
/// and by the next removal of another member.
#[tokio::test]
async fn a_removal_left_pending_is_finished_by_the_next_recompute_or_removal() {
    let redis = TestRedis::start().await;
    let clock = clock();
    let rb = with_clock(redis.store().await, &clock);
    let config = BoardConfig::parse("1m", &["5m"])
        .unwrap()
        .with_aggregate(Aggregate::Max);
    let board = unique("ap");
    rb.create(&board, config.clone()).await.unwrap();
    let mut raw = redis.raw().await;
    let record = format!("board_{{{board}}}");
    let pending = |member: &str| {
        let mut cmd = ::redis::cmd("HSET");
        cmd.arg(&record)
            .arg("rm_member")
            .arg(member)
            .arg("rm_next")
            .arg(i64::MIN / 2)
            .arg("rm_written")
            .arg("");
        cmd
    };
    for minute in 0..3 {
        let at = clock.now();
        let events = [Event::value("ann", 10 + minute), Event::value("bob", 5)];
        let events: Vec<Event> = events.into_iter().map(|e| e.at(at)).collect();
        rb.windowed(&board).incr_batch(&events).await.unwrap();
        clock.advance_secs(60);
    }
    let _: () = pending("ann").query_async(&mut raw).await.unwrap();
    let report = rb.windowed(&board).recompute(None).await.unwrap();
    assert_eq!(report.fields_scanned, 3, "bob's three values only");
    let page = rb.windowed(&board).top(None, 0, 10).await.unwrap();
    assert_eq!(ranking(&page), [("bob".to_owned(), 5)]);
    let left: Vec<Option<String>> = ::redis::cmd("HMGET")
        .arg(&record)
        .arg("rm_member")
        .arg("rm_next")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(left, [None, None]);
    check_peaks(&redis, &board, Aggregate::Max).await.unwrap();
    // Left pending again (bob's), it is finished by the removal of another member.
    let _: () = pending("bob").query_async(&mut raw).await.unwrap();
    let removed = rb.windowed(&board).remove_member("cy").await.unwrap();
    assert_eq!(removed.slot_values, 0);
    let slots: Vec<i64> = ::redis::cmd("ZRANGE")
        .arg(format!("slots_{{{board}}}"))
        .arg(0)
        .arg(-1)
        .query_async(&mut raw)
        .await
        .unwrap();
    for slot in slots {
        let held: HashMap<String, String> = ::redis::cmd("HGETALL")
            .arg(format!("slot_{{{board}}}_{slot}"))
            .query_async(&mut raw)
            .await
            .unwrap();
        assert!(held.is_empty(), "slot {slot} holds {held:?}");
    }
}

/// A compact max board's closed slot is converted into buckets by the retirer (its plain
/// hash goes, its geometry comes); a late event of that slot then lands in its member's
/// bucket, a lower one changes nothing, and history, a recompute and the retirement of
/// the slot read the buckets.
#[tokio::test]
async fn a_closed_slot_converted_into_buckets_takes_late_writes_in_them() {
    let clock = clock();
    // Buckets of one field: a slot of two members or more is converted.
    let (redis, replicas) = two_replicas(&clock, Some("2")).await;
    let rb = &replicas[0];
    let config = BoardConfig::parse("1m", &["3m"])
        .unwrap()
        .with_aggregate(Aggregate::Max)
        .with_layout(Some(Layout::Compact));
    let board = unique("ab");
    rb.create(&board, config.clone()).await.unwrap();
    let at = ts(START + 10);
    let events: Vec<Event> = [("ann", 5), ("bob", 3), ("cy", 1)]
        .iter()
        .map(|(m, v)| Event::value(*m, *v).at(at))
        .collect();
    rb.windowed(&board).incr_batch(&events).await.unwrap();
    clock.set(ts(START + 60));
    let report = rb.windowed(&board).retire(None).await.unwrap();
    assert_eq!((report.slots_compacted, report.fields_compacted), (1, 3));
    let mut raw = redis.raw().await;
    let plain = format!("slot_{{{board}}}_{START}");
    let exists: bool = ::redis::cmd("EXISTS")
        .arg(&plain)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(!exists, "the plain hash is gone");
    let geometry: Option<String> = ::redis::cmd("HGET")
        .arg(format!("slotgeo_{{{board}}}"))
        .arg(START)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(
        geometry.as_deref(),
        Some("1 1 3"),
        "three buckets of one field"
    );
    // Late events of the converted slot.
    for (member, value) in [("ann", 9), ("bob", 2)] {
        rb.windowed(&board)
            .incr_batch(&[Event::value(member, value).at(at)])
            .await
            .unwrap();
    }
    let exists: bool = ::redis::cmd("EXISTS")
        .arg(&plain)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(!exists, "late writes went to the buckets");
    let want = pairs(&[("ann", 9), ("bob", 3), ("cy", 1)]);
    assert_eq!(
        ranking(&rb.windowed(&board).top(None, 0, 10).await.unwrap()),
        want
    );
    let history = rb.windowed(&board).history("ann").await.unwrap();
    let points: Vec<(i64, i64)> = history.points.iter().map(|p| (p.slot, p.value)).collect();
    assert_eq!(points, [(START, 9)]);
    check_peaks(&redis, &board, Aggregate::Max).await.unwrap();
    let report = rb.windowed(&board).recompute(None).await.unwrap();
    assert_eq!(report.fields_scanned, 3);
    assert_eq!(
        ranking(&rb.windowed(&board).top(None, 0, 10).await.unwrap()),
        want
    );
    // The slot leaves the window: every member leaves, the buckets and geometry go.
    clock.set(ts(START + 4 * 60));
    rb.windowed(&board).retire(None).await.unwrap();
    assert_eq!(
        ranking(&rb.windowed(&board).top(None, 0, 10).await.unwrap()),
        []
    );
    let left: Vec<String> = ::redis::cmd("KEYS")
        .arg(format!("slot*_{{{board}}}*"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(left, Vec::<String>::new());
}

/// A recompute whose process died (its state left in the record, its lease running):
/// writes go on, retirement and another recompute wait (`BoardBusy`); once the lease has
/// run out, retirement and a new recompute run, exact.
#[tokio::test]
async fn a_recompute_that_died_holds_retirement_until_its_lease_runs_out() {
    let redis = TestRedis::start().await;
    let clock = clock();
    let rb = with_clock(redis.store().await, &clock);
    let config = BoardConfig::parse("1m", &["2m", "5m"])
        .unwrap()
        .with_aggregate(Aggregate::Latest)
        .with_ties(Ties::Dense);
    let board = unique("ad");
    rb.create(&board, config.clone()).await.unwrap();
    let mut oracle = ValueOracle::new(config.clone());
    let mut write = async |rb: &rollboard::Rollboard, member: &str, value: i64| {
        let at = clock.now();
        rb.windowed(&board)
            .incr_batch(&[Event::value(member, value).at(at)])
            .await
            .unwrap();
        oracle.record(config.slot_start(at), member, value, at.unix_millis());
    };
    write(&rb, "ann", 5).await;
    write(&rb, "bob", 7).await;
    let mut raw = redis.raw().await;
    let record = format!("board_{{{board}}}");
    let died = |until: i64| {
        let mut cmd = ::redis::cmd("HSET");
        cmd.arg(&record)
            .arg("rb_window")
            .arg(120)
            .arg("rb_phase")
            .arg("scan")
            .arg("rb_token")
            .arg("gone")
            .arg("rb_until")
            .arg(until);
        cmd
    };
    let _: () = died(i64::MAX / 2).query_async(&mut raw).await.unwrap();
    clock.advance_secs(60);
    write(&rb, "ann", 9).await;
    clock.advance_secs(120);
    let busy = rb.windowed(&board).retire(None).await.unwrap_err();
    assert!(matches!(busy, Error::BoardBusy(_)), "{busy:?}");
    let busy = rb.windowed(&board).recompute(None).await.unwrap_err();
    assert!(matches!(busy, Error::BoardBusy(_)), "{busy:?}");
    // The lease runs out (its expiry is by Redis's clock: set it past).
    let _: () = died(1).query_async(&mut raw).await.unwrap();
    rb.windowed(&board).retire(None).await.unwrap();
    let report = rb.windowed(&board).recompute(None).await.unwrap();
    assert_eq!(report.windows, config.windows());
    let now = clock.now();
    for (j, w) in config.windows().iter().enumerate() {
        let page = rb.windowed(&board).top(Some(*w), 0, 10).await.unwrap();
        assert_eq!(page.from, config.window_start(j, now));
        assert_eq!(ranking(&page), oracle.ranking(j, now), "window {w}");
    }
    // ann's 9 of minute 1 is in both windows, bob's 7 of minute 0 only in 5m.
    let five = rb
        .windowed(&board)
        .top(Some(config.windows()[1]), 0, 10)
        .await
        .unwrap();
    assert_eq!(
        ranking(&five),
        [("ann".to_owned(), 9), ("bob".to_owned(), 7)]
    );
    check_peaks(&redis, &board, Aggregate::Latest)
        .await
        .unwrap();
    check_tallies(&mut raw, &board, true).await;
}

/// A retirement that stops after each chunk (`max_chunks: 1`, a crash after every call)
/// and is resumed by the other replica ends exact; it re-evaluates each member of each
/// slot that left a window once per window, however often it stopped, and a pass run
/// again changes nothing. On a max, a min and a latest board.
#[tokio::test]
async fn a_retirement_stopped_after_every_chunk_ends_exact_and_touches_only_the_slots_members() {
    for aggregate in [Aggregate::Max, Aggregate::Min, Aggregate::Latest] {
        retirement_stopped_after_every_chunk(aggregate).await;
    }
}

async fn retirement_stopped_after_every_chunk(aggregate: Aggregate) {
    let clock = clock();
    let (redis, replicas) = two_replicas(&clock, Some("0")).await;
    let config = BoardConfig::parse("1m", &["2m", "5m"])
        .unwrap()
        .with_aggregate(aggregate);
    let board = unique("ai");
    replicas[0].create(&board, config.clone()).await.unwrap();
    let mut oracle = ValueOracle::new(config.clone());
    // Minute 0: 300 members at their best; minute 1: 100 of them lower, 50 new ones.
    let start = clock.now();
    let at =
        |minutes: i64| Timestamp::from_unix_millis(start.unix_millis() + minutes * 60_000).unwrap();
    let mut write = |events: Vec<Event>| {
        for e in &events {
            let at = e.at.unwrap();
            oracle.record(
                config.slot_start(at),
                &e.member,
                e.value.unwrap(),
                at.unix_millis(),
            );
        }
        events
    };
    let first = write(
        (0..300)
            .map(|i| Event::value(format!("m{i}"), 1000 + i).at(at(0)))
            .collect(),
    );
    replicas[0]
        .windowed(&board)
        .incr_batch(&first)
        .await
        .unwrap();
    clock.set(at(1));
    let second = write(
        (0..100)
            .map(|i| Event::value(format!("m{i}"), i))
            .chain((300..350).map(|i| Event::value(format!("m{i}"), i)))
            .map(|e| e.at(at(1)))
            .collect(),
    );
    replicas[0]
        .windowed(&board)
        .incr_batch(&second)
        .await
        .unwrap();
    // At minute 5 minute 0 has left both windows, minute 1 the 2-minute one.
    clock.set(at(5));
    let now = clock.now();
    let step = RetireOptions {
        chunk_size: 16,
        max_chunks: Some(1),
        ..Default::default()
    };
    let (mut calls, mut evaluated, mut left) = (0, 0, 0);
    loop {
        let report = replicas[calls % 2]
            .windowed(&board)
            .retire(Some(step))
            .await
            .unwrap();
        calls += 1;
        evaluated += report.fields_subtracted;
        left += report.members_zeroed;
        if report.complete {
            break;
        }
        assert!(calls < 1_000, "retirement does not end");
    }
    assert!(calls > 20, "only {calls} calls: the chunks were not small");
    // Minute 0 (300 members) left both windows, minute 1 (150) the smaller one. Left:
    // from the 2-minute window all 350, from the 5-minute one the 200 of minute 0 only.
    assert_eq!((evaluated, left), (300 + 300 + 150, 350 + 200));
    for (j, w) in config.windows().iter().enumerate() {
        let page = replicas[1]
            .windowed(&board)
            .top(Some(*w), 0, 1000)
            .await
            .unwrap();
        assert_eq!(page.from, config.window_start(j, now));
        assert_eq!(ranking(&page), oracle.ranking(j, now), "window {w}");
    }
    let five = replicas[0]
        .windowed(&board)
        .top(Some(config.windows()[1]), 0, 3)
        .await
        .unwrap();
    // A max or latest board: the newcomers of minute 1 (300..349) above the 100 lowered
    // to 0..99; a min board: those 100 lowest first.
    let best: [(&str, i64); 3] = match aggregate {
        Aggregate::Min => [("m0", 0), ("m1", 1), ("m2", 2)],
        _ => [("m349", 349), ("m348", 348), ("m347", 347)],
    };
    let best: Vec<(String, i64)> = best.iter().map(|(m, v)| (m.to_string(), *v)).collect();
    assert_eq!(ranking(&five), best, "{aggregate:?}");
    // Run again, a pass finds nothing due and changes nothing.
    let mut raw = redis.raw().await;
    let five = format!("stats_{{{board}}}_300");
    let before = scores(&mut raw, &five).await;
    let again = replicas[1].windowed(&board).retire(None).await.unwrap();
    assert_eq!((again.slots_retired, again.fields_subtracted), (0, 0));
    let after = scores(&mut raw, &five).await;
    assert_eq!(before, after);
    assert_eq!(after.len(), 150);
}

/// The members and scores of the zset `key`, lowest first.
async fn scores(raw: &mut ::redis::aio::MultiplexedConnection, key: &str) -> Vec<(String, i64)> {
    ::redis::cmd("ZRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(raw)
        .await
        .unwrap()
}

/// An export of a max and of a min board imports back (its scores taken as values) into
/// a board of the same aggregate with the same ranking.
async fn an_export_imports_back_into_an_equal_board(h: Harness) {
    for aggregate in [Aggregate::Max, Aggregate::Min] {
        let config = BoardConfig::parse("1h", &["24h"])
            .unwrap()
            .with_aggregate(aggregate);
        let (from, to) = (unique("ax"), unique("ay"));
        for b in [&from, &to] {
            h.boards.create(b, config.clone()).await.unwrap();
        }
        let events: Vec<Event> = [
            ("ann", 70),
            ("bob", 80),
            ("ann", 95),
            ("cy", 0),
            ("dee", -4),
        ]
        .iter()
        .map(|(m, v)| Event::value(*m, *v))
        .collect();
        h.boards.windowed(&from).incr_batch(&events).await.unwrap();
        let mut out = Vec::new();
        let exported = export(&h.boards, &from, None, None, Format::Json, &mut out)
            .await
            .unwrap();
        assert_eq!(exported.entries, 4);
        let report = import(
            &h.boards,
            &to,
            std::io::Cursor::new(out),
            ImportOptions::default(),
            |_| {},
        )
        .await
        .unwrap();
        assert_eq!((report.imported, report.rejected), (4, 0));
        let want: Vec<(String, i64)> = match aggregate {
            Aggregate::Max => vec![("ann", 95), ("bob", 80), ("cy", 0), ("dee", -4)],
            _ => vec![("dee", -4), ("cy", 0), ("ann", 70), ("bob", 80)],
        }
        .into_iter()
        .map(|(m, v)| (m.to_owned(), v))
        .collect();
        for b in [&from, &to] {
            let page = h.boards.windowed(b).top(None, 0, 10).await.unwrap();
            assert_eq!(ranking(&page), want, "{aggregate:?} {b}");
        }
    }
}

on_every_store!(an_export_imports_back_into_an_equal_board);
