//! Relayout: a board switches the layout of the slots it creates from then on while
//! writes go on; live slots keep theirs, so the board holds slots of both layouts, and
//! rankings, history, member removal, recompute and export stay exact on it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rand::{Rng, SeedableRng};
use rollboard::jobs::export::export;
use rollboard::jobs::import::Format;
use rollboard::{BoardConfig, Clock, Created, Event, Layout, Span};

use crate::oracle::Oracle;
use crate::support::{Harness, START, ranking, ts};

/// The slots of `board` that have a geometry (compact slots); empty on the memory store.
async fn compact_slots(h: &Harness, board: &str) -> Vec<i64> {
    let Some(redis) = &h.redis else {
        return Vec::new();
    };
    let mut raw = redis.raw().await;
    let mut slots: Vec<i64> = ::redis::cmd("HKEYS")
        .arg(format!("slotgeo_{{{board}}}"))
        .query_async(&mut raw)
        .await
        .unwrap();
    slots.sort();
    slots
}

async fn relayout_sets_the_config_and_counts_the_old_layouts_slots(h: Harness) {
    let config = BoardConfig::parse("1h", &["1h", "3h"]).unwrap();
    let b = h.board("1h", &["1h", "3h"]).await;
    h.boards.windowed(&b).incr("a", 2, None).await.unwrap();
    h.at(3600);
    h.boards.windowed(&b).incr("b", 5, None).await.unwrap();
    let top_before = h
        .boards
        .windowed(&b)
        .top(Some(Span::parse("3h").unwrap()), 0, 10)
        .await
        .unwrap();
    // Two live slots; on Redis, those with a geometry are compact (the harness's default
    // layout decided).
    let compact = compact_slots(&h, &b).await.len() as u64;
    let on_redis = h.redis.is_some();

    let report = h
        .boards
        .windowed(&b)
        .relayout(Layout::Compact, Default::default())
        .await
        .unwrap();
    assert_eq!(report.layout, Layout::Compact);
    assert_eq!(report.live_slots, 2);
    assert_eq!(
        report.old_layout_slots,
        if on_redis { 2 - compact } else { 0 }
    );
    assert_eq!(
        h.boards.board(&b).await.unwrap().config.layout(),
        Some(Layout::Compact)
    );
    // A slot created now is the open slot: written plain until the retirer compacts it
    // once closed (`open_slot.rs`); the live ones kept their layout.
    h.at(2 * 3600);
    h.boards.windowed(&b).incr("c", 1, None).await.unwrap();
    if on_redis {
        assert!(!compact_slots(&h, &b).await.contains(&(START + 2 * 3600)));
        assert_eq!(compact_slots(&h, &b).await.len() as u64, compact);
    }
    // The config without a layout still matches (a service PUTting its boards at start
    // keeps working); one naming the other layout is a conflict.
    match h.boards.create(&b, config.clone()).await.unwrap() {
        Created::Existing(board) => assert_eq!(
            board.windowed().unwrap().config.layout(),
            Some(Layout::Compact)
        ),
        other => panic!("expected the existing board, got {other:?}"),
    }
    let err = h
        .boards
        .create(&b, config.clone().with_layout(Some(Layout::Plain)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "board_conflict");

    let report = h
        .boards
        .windowed(&b)
        .relayout(Layout::Plain, Default::default())
        .await
        .unwrap();
    assert_eq!(report.live_slots, 3);
    assert_eq!(report.old_layout_slots, if on_redis { compact } else { 0 });
    assert_eq!(
        h.boards.board(&b).await.unwrap().config.layout(),
        Some(Layout::Plain)
    );
    // Nothing read changed but the new event.
    assert_eq!(
        ranking(&top_before),
        [("b".to_owned(), 5), ("a".to_owned(), 2)]
    );
    let top = h
        .boards
        .windowed(&b)
        .top(Some(Span::parse("3h").unwrap()), 0, 10)
        .await
        .unwrap();
    assert_eq!(
        ranking(&top),
        [
            ("b".to_owned(), 5),
            ("a".to_owned(), 2),
            ("c".to_owned(), 1)
        ]
    );
    // Relayout of a board that does not exist.
    assert_eq!(
        h.boards
            .windowed("nope")
            .relayout(Layout::Compact, Default::default())
            .await
            .unwrap_err()
            .code(),
        "board_not_found"
    );
}

on_memory_and_redis!(relayout_sets_the_config_and_counts_the_old_layouts_slots);

/// Members the writers use.
const MEMBERS: usize = 300;

/// Every event written, as (slot, member, delta).
type Events = Arc<Mutex<Vec<(i64, String, i64)>>>;

/// Waits (up to 10 s) until the writers created slot `slot`.
async fn wait_for_slot(h: &Harness, board: &str, slot: i64) {
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    for _ in 0..1000 {
        let score: Option<i64> = ::redis::cmd("ZSCORE")
            .arg(format!("slots_{{{board}}}"))
            .arg(slot)
            .query_async(&mut raw)
            .await
            .unwrap();
        if score.is_some() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the writers never wrote into slot {slot}");
}

/// Writers write random events into every live slot (up to the clock's now) while the
/// board is relayouted to compact, the clock moves on (new slots), and it is relayouted
/// back to plain: the board then holds plain, compact and plain slots, and its largest
/// window, members' histories, a removal, a recompute and an export all equal the
/// oracle.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn relayout_under_concurrent_writes_stays_exact() {
    let h = Harness::redis_plain().await;
    let config = BoardConfig::parse("1h", &["1h", "6h"]).unwrap();
    let b = h.board("1h", &["1h", "6h"]).await;
    let events: Events = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..3u64 {
        let (boards, clock, b, events, stop, config) = (
            h.boards.clone(),
            h.clock.clone(),
            b.clone(),
            events.clone(),
            stop.clone(),
            config.clone(),
        );
        writers.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(w);
            while !stop.load(Ordering::SeqCst) {
                let now = clock.now().unix_seconds();
                let batch: Vec<Event> = (0..rng.random_range(1..60))
                    .map(|_| {
                        let at = ts(rng.random_range(START..=now));
                        let delta = if rng.random_bool(0.8) { 3 } else { -1 };
                        Event::new(format!("m{}", rng.random_range(0..MEMBERS)), delta).at(at)
                    })
                    .collect();
                let outcome = boards.windowed(&b).incr_batch(&batch).await.unwrap();
                assert!(outcome.rejected.is_empty(), "{:?}", outcome.rejected);
                {
                    let mut all = events.lock().unwrap();
                    for e in &batch {
                        all.push((config.slot_start(e.at.unwrap()), e.member.clone(), e.delta));
                    }
                }
                tokio::task::yield_now().await;
            }
        }));
    }
    wait_for_slot(&h, &b, START).await;
    let first = h
        .boards
        .windowed(&b)
        .relayout(Layout::Compact, Default::default())
        .await
        .unwrap();
    assert_eq!((first.live_slots, first.old_layout_slots), (1, 1));
    h.at(3600 + 1800);
    wait_for_slot(&h, &b, START + 3600).await;
    // Slots are created plain while open, and compacted once closed (if they hold at
    // least two buckets' fill, 128 fields here): 150 members make sure of it.
    let filler: Vec<Event> = (0..150)
        .map(|i| Event::new(format!("m{i}"), 1).at(ts(START + 3600 + 5)))
        .collect();
    h.boards.windowed(&b).incr_batch(&filler).await.unwrap();
    events.lock().unwrap().extend(
        filler
            .iter()
            .map(|e| (START + 3600, e.member.clone(), e.delta)),
    );
    h.at(2 * 3600 + 1800);
    wait_for_slot(&h, &b, START + 2 * 3600).await;
    let retired = h.boards.windowed(&b).retire(None).await.unwrap();
    assert_eq!(retired.slots_compacted, 1, "{retired:?}");
    let second = h
        .boards
        .windowed(&b)
        .relayout(Layout::Plain, Default::default())
        .await
        .unwrap();
    assert_eq!((second.live_slots, second.old_layout_slots), (3, 1));
    h.at(3 * 3600 + 1800);
    wait_for_slot(&h, &b, START + 3 * 3600).await;
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.await.unwrap();
    }
    assert_eq!(
        compact_slots(&h, &b).await,
        [START + 3600],
        "the slot closed between the relayouts was compacted, the others are plain"
    );

    let events = events.lock().unwrap().clone();
    let mut oracle = Oracle::new(config.clone());
    // member -> slot -> value
    let mut points: BTreeMap<String, BTreeMap<i64, i64>> = BTreeMap::new();
    for (slot, member, delta) in &events {
        oracle.record(*slot, member, *delta);
        *points
            .entry(member.clone())
            .or_default()
            .entry(*slot)
            .or_insert(0) += delta;
    }
    for slots in points.values_mut() {
        slots.retain(|_, v| *v != 0);
    }
    let now = h.now();
    let six = Some(Span::parse("6h").unwrap());
    let top_six = || async { ranking(&h.boards.windowed(&b).top(six, 0, 1000).await.unwrap()) };
    assert_eq!(top_six().await, oracle.ranking(1, now));
    for i in 0..MEMBERS {
        let member = format!("m{i}");
        let history = h.boards.windowed(&b).history(&member).await.unwrap();
        let got: BTreeMap<i64, i64> = history.points.iter().map(|p| (p.slot, p.value)).collect();
        assert_eq!(
            got,
            points.get(&member).cloned().unwrap_or_default(),
            "history of {member}"
        );
    }
    // Removal of a member with values in slots of both layouts.
    let (member, slots) = points
        .iter()
        .find(|(_, slots)| slots.contains_key(&START) && slots.contains_key(&(START + 3600)))
        .expect("a member with values in a plain and a compact slot");
    let removed = h.boards.windowed(&b).remove_member(member).await.unwrap();
    assert!(
        removed.slot_values >= slots.len() as u64,
        "{removed:?} for {slots:?}"
    );
    assert!(
        h.boards
            .windowed(&b)
            .history(member)
            .await
            .unwrap()
            .points
            .is_empty()
    );
    oracle.remove(member);
    assert_eq!(top_six().await, oracle.ranking(1, now));
    // Drift, then a recompute of the window.
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let _: () = ::redis::cmd("ZADD")
        .arg(format!("stats_{{{b}}}_21600"))
        .arg(1_000_000)
        .arg("m1")
        .query_async(&mut raw)
        .await
        .unwrap();
    let report = h.boards.windowed(&b).recompute(six).await.unwrap();
    assert!(report.fields_scanned > 0);
    assert_eq!(top_six().await, oracle.ranking(1, now));
    // Export.
    let mut out = Vec::new();
    let exported = export(&h.boards, &b, six, None, Format::Json, &mut out)
        .await
        .unwrap();
    let lines: Vec<(String, i64)> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            (
                v["member"].as_str().unwrap().to_owned(),
                v["score"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(lines, oracle.ranking(1, now));
    assert_eq!(exported.entries as usize, lines.len());
}
