//! Reads and changes of slot data on compact slots (Redis only): `history`, member
//! removal and recompute find a member in its bucket of every stage, by each slot's own
//! geometry, on boards holding slots of both layouts.
//!
//! `compact_by_hand` turns a plain slot into a compact one of a chosen geometry with the
//! spec's formulas written out here (not the store's), so the geometries tested (split
//! ones, `p > 0`) do not depend on how far writes split a slot.

use std::collections::BTreeMap;

use rollboard::{Event, Span};

use crate::support::{Harness, START, ts};

/// Moves every field of the given stage keys of slot `ts` of `board` into buckets of
/// geometry (`level`, `split`) and records the geometry: bucket `h mod 2^L`, or
/// `h mod 2^(L+1)` below `p`, with `h` the first 8 hex digits of the member's SHA-1.
const COMPACT_BY_HAND: &str = r"
local L, p = tonumber(ARGV[2]), tonumber(ARGV[3])
local count = 0
for k = 2, #KEYS do
  local all = redis.call('HGETALL', KEYS[k])
  for i = 1, #all, 2 do
    local h = tonumber(string.sub(redis.sha1hex(all[i]), 1, 8), 16)
    local b = h % (2 ^ L)
    if b < p then b = h % (2 ^ (L + 1)) end
    redis.call('HSET', KEYS[k] .. ':' .. string.format('%d', b), all[i], all[i + 1])
    count = count + 1
  end
  redis.call('DEL', KEYS[k])
end
redis.call('HSET', KEYS[1], ARGV[1], L .. ' ' .. p .. ' ' .. count)
return count
";

async fn compact_by_hand(h: &Harness, board: &str, slot: i64, stages: usize, geometry: (u32, u32)) {
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let mut keys = vec![format!("slotgeo_{{{board}}}")];
    keys.push(format!("slot_{{{board}}}_{slot}"));
    for k in 1..stages {
        keys.push(format!("slot_{{{board}}}_{slot}_{k}"));
    }
    let _: i64 = redis::Script::new(COMPACT_BY_HAND)
        .key(keys)
        .arg(slot)
        .arg(geometry.0)
        .arg(geometry.1)
        .invoke_async(&mut raw)
        .await
        .unwrap();
}

/// Every key of the board whose name starts with `slot_`.
async fn slot_keys(h: &Harness, board: &str) -> Vec<String> {
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("slot_{{{board}}}_*"))
        .query_async(&mut raw)
        .await
        .unwrap();
    keys.sort();
    keys
}

/// (member, delta, slot) of the setup's events: 60 members in slot START (stage 1),
/// late events for every third one in slot START after the 1h window froze it (stage
/// 2), and some in slot START + 1h, which stays plain.
fn events() -> Vec<(String, i64, i64)> {
    let mut events = Vec::new();
    for i in 0..60i64 {
        events.push((format!("m{i}"), i + 1, START));
    }
    for i in (0..60i64).step_by(3) {
        events.push((format!("m{i}"), 100 * (i + 1), START));
    }
    for i in 0..20i64 {
        events.push((format!("m{i}"), 7, START + 3600));
    }
    events
}

/// A `1h` / `1h, 24h` board holding the events of [`events`], its slot START made
/// compact by hand with `geometry`; the clock at START + 1h + 30 min.
async fn setup(h: &Harness, geometry: (u32, u32)) -> String {
    h.at(0);
    let b = h.board("1h", &["1h", "24h"]).await;
    let events = events();
    let batch: Vec<Event> = events[..60]
        .iter()
        .map(|(m, d, _)| Event::new(m.clone(), *d))
        .collect();
    h.boards.windowed(&b).incr_batch(&batch).await.unwrap();
    h.at(3600 + 1800);
    let late: Vec<Event> = events[60..]
        .iter()
        .map(|(m, d, s)| Event::new(m.clone(), *d).at(ts(*s)))
        .collect();
    h.boards.windowed(&b).incr_batch(&late).await.unwrap();
    compact_by_hand(h, &b, START, 2, geometry).await;
    b
}

/// The expected (slot, value) points of `member`.
fn points_of(member: &str) -> Vec<(i64, i64)> {
    let mut points = BTreeMap::new();
    for (m, d, s) in events() {
        if m == member {
            *points.entry(s).or_insert(0) += d;
        }
    }
    points.into_iter().collect()
}

/// The 24h window's expected ranking, `except` removed, as (member, score), best first.
fn ranking_24h(except: &[&str]) -> Vec<(String, i64)> {
    let mut totals: BTreeMap<String, i64> = BTreeMap::new();
    for (m, d, _) in events() {
        *totals.entry(m).or_insert(0) += d;
    }
    let mut ranking: Vec<(String, i64)> = totals
        .into_iter()
        .filter(|(m, _)| !except.contains(&m.as_str()))
        .collect();
    ranking.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    ranking
}

async fn top_24h(h: &Harness, b: &str) -> Vec<(String, i64)> {
    let page = h
        .boards
        .windowed(b)
        .top(Some(Span::parse("24h").unwrap()), 0, 1000)
        .await
        .unwrap();
    crate::support::ranking(&page)
}

#[tokio::test]
async fn history_sums_a_members_bucket_of_every_stage_of_a_split_slot() {
    let h = Harness::redis_plain().await;
    // L = 0, p = 0: one bucket.
    let one = setup(&h, (0, 0)).await;
    assert!(
        slot_keys(&h, &one)
            .await
            .contains(&format!("slot_{{{one}}}_{START}:0"))
    );
    let points: Vec<(i64, i64)> = h
        .boards
        .windowed(&one)
        .history("m9")
        .await
        .unwrap()
        .points
        .iter()
        .map(|p| (p.slot, p.value))
        .collect();
    assert_eq!(points, points_of("m9"));
    // L = 2, p = 1: five buckets, bucket 0 split into 0 and 4.
    let b = setup(&h, (2, 1)).await;
    let keys = slot_keys(&h, &b).await;
    let stage1 = format!("slot_{{{b}}}_{START}:");
    let stage2 = format!("slot_{{{b}}}_{START}_1:");
    assert_eq!(
        keys.iter().filter(|k| k.starts_with(&stage1)).count(),
        5,
        "60 members fill all five buckets of stage 1: {keys:?}"
    );
    assert!(keys.iter().any(|k| k.starts_with(&stage2)));
    assert!(!keys.contains(&format!("slot_{{{b}}}_{START}")));
    assert!(keys.contains(&format!("slot_{{{b}}}_{}", START + 3600)));
    for i in 0..60 {
        let member = format!("m{i}");
        let history = h.boards.windowed(&b).history(&member).await.unwrap();
        let points: Vec<(i64, i64)> = history.points.iter().map(|p| (p.slot, p.value)).collect();
        assert_eq!(points, points_of(&member), "{member}");
    }
    assert!(
        h.boards
            .windowed(&b)
            .history("nobody")
            .await
            .unwrap()
            .points
            .is_empty()
    );
}

#[tokio::test]
async fn removal_deletes_a_member_from_its_bucket_of_every_stage() {
    let h = Harness::redis_plain().await;
    let b = setup(&h, (3, 2)).await;
    // m0 and m3: in both stages of the compact slot and in the plain one; m59: only in
    // stage 1.
    let removed = h.boards.windowed(&b).remove_member("m0").await.unwrap();
    assert_eq!(removed.slot_values, 3);
    let removed = h.boards.windowed(&b).remove_member("m59").await.unwrap();
    assert_eq!(removed.slot_values, 1);
    assert_eq!(top_24h(&h, &b).await, ranking_24h(&["m0", "m59"]));
    for gone in ["m0", "m59"] {
        assert!(
            h.boards
                .windowed(&b)
                .history(gone)
                .await
                .unwrap()
                .points
                .is_empty()
        );
    }
    let points: Vec<(i64, i64)> = h
        .boards
        .windowed(&b)
        .history("m3")
        .await
        .unwrap()
        .points
        .iter()
        .map(|p| (p.slot, p.value))
        .collect();
    assert_eq!(points, points_of("m3"));
    // Removing again finds nothing.
    assert_eq!(
        h.boards
            .windowed(&b)
            .remove_member("m0")
            .await
            .unwrap()
            .slot_values,
        0
    );
}

#[tokio::test]
async fn recompute_scans_and_folds_every_bucket_of_a_compact_slot() {
    let h = Harness::redis_plain().await;
    let b = setup(&h, (2, 3)).await;
    // Drift: the 24h totals lose a member and gain a wrong score.
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let totals = format!("stats_{{{b}}}_86400");
    let _: () = redis::pipe()
        .cmd("ZREM")
        .arg(&totals)
        .arg("m5")
        .cmd("ZADD")
        .arg(&totals)
        .arg(999_999)
        .arg("m7")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_ne!(top_24h(&h, &b).await, ranking_24h(&[]));
    let report = h
        .boards
        .windowed(&b)
        .recompute(Some(Span::parse("24h").unwrap()))
        .await
        .unwrap();
    // 60 + 20 values in slot START's two stages, 20 in the plain slot.
    assert_eq!(report.fields_scanned, 100);
    assert_eq!(top_24h(&h, &b).await, ranking_24h(&[]));
}

/// The number of buckets of slot `slot`'s geometry (`None`: plain).
async fn buckets_of(h: &Harness, board: &str, slot: i64) -> Option<u64> {
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let text: Option<String> = redis::cmd("HGET")
        .arg(format!("slotgeo_{{{board}}}"))
        .arg(slot)
        .query_async(&mut raw)
        .await
        .unwrap();
    text.map(|t| {
        let parts: Vec<u64> = t.split(' ').map(|p| p.parse().unwrap()).collect();
        (1 << parts[0]) + parts[1]
    })
}

/// A recompute of a compact board while writers go on: the newest closed slot
/// (compacted at its boundary, not frozen by window 2h) keeps growing (new members
/// split its buckets) while the recompute scans it bucket by bucket, and
/// older slots get late writes in their second stage; the window ends exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn recompute_of_a_compact_board_under_concurrent_writes_ends_exact() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    use rand::{Rng, SeedableRng};
    use rollboard::BoardConfig;

    use crate::oracle::Oracle;

    let h = Harness::redis_compact().await;
    // Each slot is written while open (plain) and compacted by the retirement at the
    // boundary that closes it; window 2h leaves the newest closed slot unfrozen.
    let config = BoardConfig::parse("1h", &["2h", "4h"]).unwrap();
    let b = h.board("1h", &["2h", "4h"]).await;
    let oracle = Arc::new(Mutex::new(Oracle::new(config.clone())));
    for hour in 0..3 {
        h.at(hour * 3600);
        if hour > 0 {
            assert_eq!(
                h.boards
                    .windowed(&b)
                    .retire(None)
                    .await
                    .unwrap()
                    .slots_compacted,
                1
            );
        }
        let events: Vec<Event> = (0..6_000)
            .map(|i| Event::new(format!("m{}", (i + hour * 13) % 4_000), 1))
            .collect();
        for chunk in events.chunks(1000) {
            h.boards.windowed(&b).incr_batch(chunk).await.unwrap();
        }
        let mut o = oracle.lock().unwrap();
        for e in &events {
            o.record(START + hour * 3600, &e.member, e.delta);
        }
    }
    h.at(3 * 3600 + 1800);
    assert_eq!(
        h.boards
            .windowed(&b)
            .retire(None)
            .await
            .unwrap()
            .slots_compacted,
        1
    );
    let newest = START + 2 * 3600;
    let before = buckets_of(&h, &b, newest).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..3u64 {
        let (boards, b, oracle, stop, config) = (
            h.boards.clone(),
            b.clone(),
            oracle.clone(),
            stop.clone(),
            config.clone(),
        );
        writers.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(w);
            let mut fresh = 0;
            while !stop.load(Ordering::SeqCst) {
                // New members into the newest slot (it splits), and old and new members
                // anywhere in the window (late ones land in a second stage).
                let mut events: Vec<Event> = (0..20)
                    .map(|_| {
                        fresh += 1;
                        Event::new(format!("n{w}-{fresh}"), 2).at(ts(newest + 5))
                    })
                    .collect();
                events.extend((0..rng.random_range(1..20)).map(|_| {
                    let at = ts(START + rng.random_range(0..3 * 3600 + 1800));
                    let delta = if rng.random_bool(0.7) { 1 } else { -1 };
                    Event::new(format!("m{}", rng.random_range(0..4_500)), delta).at(at)
                }));
                let outcome = boards.windowed(&b).incr_batch(&events).await.unwrap();
                assert!(outcome.rejected.is_empty());
                {
                    let mut o = oracle.lock().unwrap();
                    for e in &events {
                        o.record(config.slot_start(e.at.unwrap()), &e.member, e.delta);
                    }
                }
                tokio::task::yield_now().await;
            }
        }));
    }
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let report = h
        .boards
        .windowed(&b)
        .recompute(Some(Span::parse("4h").unwrap()))
        .await
        .unwrap();
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.await.unwrap();
    }
    assert!(report.calls > 3, "the scan took several calls: {report:?}");
    let after = buckets_of(&h, &b, newest).await.unwrap();
    assert!(
        after > before,
        "the newest slot split meanwhile ({before} -> {after} buckets)"
    );
    let now = h.now();
    let oracle = oracle.lock().unwrap().clone();
    let mut ranking = Vec::new();
    loop {
        let page = h
            .boards
            .windowed(&b)
            .top(Some(Span::parse("4h").unwrap()), ranking.len() as u64, 1000)
            .await
            .unwrap();
        let got = crate::support::ranking(&page);
        let last = got.len() < 1000;
        ranking.extend(got);
        if last {
            break;
        }
    }
    assert_eq!(ranking, oracle.ranking(1, now));
}

/// The same through the store's own write path: a compact board's slot split by its
/// writes (400 members), then late writes into its second stage after the 2h window
/// froze it; history and removal read and delete the member's bucket of both stages.
#[tokio::test]
async fn history_and_removal_on_a_slot_split_by_writes_with_late_values() {
    let h = Harness::redis_compact().await;
    // Slot START is created by late events an hour on (so compact), which window 2h
    // freezes an hour later.
    let b = h.board("1h", &["2h", "24h"]).await;
    h.at(3600);
    let mut events: Vec<(String, i64, i64)> = Vec::new();
    let first: Vec<Event> = (0..400i64)
        .map(|i| {
            events.push((format!("m{i}"), i + 1, START));
            Event::new(format!("m{i}"), i + 1).at(ts(START + 1))
        })
        .collect();
    for chunk in first.chunks(100) {
        h.boards.windowed(&b).incr_batch(chunk).await.unwrap();
    }
    let buckets = buckets_of(&h, &b, START).await.unwrap();
    assert!(buckets > 4, "400 members split the slot: {buckets} buckets");
    h.at(2 * 3600 + 60);
    let late: Vec<Event> = (0..400i64)
        .step_by(2)
        .map(|i| {
            events.push((format!("m{i}"), 1000, START));
            Event::new(format!("m{i}"), 1000).at(ts(START + 1))
        })
        .collect();
    h.boards.windowed(&b).incr_batch(&late).await.unwrap();
    assert_eq!(
        buckets_of(&h, &b, START).await,
        Some(buckets),
        "a frozen slot's geometry no longer changes"
    );
    let second = format!("slot_{{{b}}}_{START}_1:");
    assert!(
        slot_keys(&h, &b)
            .await
            .iter()
            .filter(|k| k.starts_with(&second))
            .count()
            > 1,
        "late values in several buckets of stage 2"
    );
    for i in (0..400).step_by(9) {
        let member = format!("m{i}");
        let expected: i64 = events
            .iter()
            .filter(|(m, _, _)| *m == member)
            .map(|(_, d, _)| d)
            .sum();
        let history = h.boards.windowed(&b).history(&member).await.unwrap();
        let points: Vec<(i64, i64)> = history.points.iter().map(|p| (p.slot, p.value)).collect();
        assert_eq!(points, [(START, expected)], "{member}");
    }
    // m10: in both stages; m11: in stage 1 only.
    assert_eq!(
        h.boards
            .windowed(&b)
            .remove_member("m10")
            .await
            .unwrap()
            .slot_values,
        2
    );
    assert_eq!(
        h.boards
            .windowed(&b)
            .remove_member("m11")
            .await
            .unwrap()
            .slot_values,
        1
    );
    for gone in ["m10", "m11"] {
        assert!(
            h.boards
                .windowed(&b)
                .history(gone)
                .await
                .unwrap()
                .points
                .is_empty()
        );
    }
    let mut totals: BTreeMap<String, i64> = BTreeMap::new();
    for (m, d, _) in &events {
        if m != "m10" && m != "m11" {
            *totals.entry(m.clone()).or_insert(0) += d;
        }
    }
    let mut expected: Vec<(String, i64)> = totals.into_iter().collect();
    expected.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut got = Vec::new();
    for offset in [0u64, 1000] {
        let page = h
            .boards
            .windowed(&b)
            .top(Some(Span::parse("24h").unwrap()), offset, 1000)
            .await
            .unwrap();
        got.extend(crate::support::ranking(&page));
    }
    assert_eq!(got, expected);
}
