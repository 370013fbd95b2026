//! Recompute of a long window (30 days of 1-hour slots: 720 live slots) while a writer
//! adds events at `at`s spread over the whole window for as long as the recompute runs:
//! it finishes, and every window's totals equal the oracle afterwards.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rollboard::{BoardConfig, Event, Span};

use crate::oracle::Oracle;
use crate::support::{Harness, START, ts, unique};

on_every_store!(a_long_window_recompute_under_a_steady_writer_ends_exact,);

/// Live slots of the `30d` window.
const SLOTS: i64 = 30 * 24;
const MEMBERS: usize = 2000;
/// Events written before the recompute, spread over every slot.
const EVENTS: usize = 6000;

fn member(i: usize) -> String {
    format!("m{i}")
}

async fn a_long_window_recompute_under_a_steady_writer_ends_exact(h: Harness) {
    let config = BoardConfig::parse("1h", &["1h", "30d"]).unwrap();
    let b = unique("long");
    h.boards.create(&b, config.clone()).await.unwrap();
    // Now is in the last slot; slot k starts at START + k h, all of them live.
    h.at((SLOTS - 1) * 3600 + 1800);
    let oracle = Arc::new(Mutex::new(Oracle::new(config.clone())));
    let mut rng = rand::rngs::StdRng::seed_from_u64(30);
    let initial: Vec<(i64, Event)> = (0..EVENTS)
        .map(|i| {
            let slot = START + (i as i64 % SLOTS) * 3600;
            let delta = 1 + (i % 4) as i64;
            let m = member(rng.random_range(0..MEMBERS));
            (slot, Event::new(m, delta).at(ts(slot + 60)))
        })
        .collect();
    for chunk in initial.chunks(1000) {
        let events: Vec<Event> = chunk.iter().map(|(_, e)| e.clone()).collect();
        let outcome = h.boards.windowed(&b).incr_batch(&events).await.unwrap();
        assert_eq!(
            (outcome.accepted, outcome.rejected.len()),
            (events.len(), 0)
        );
    }
    {
        let mut o = oracle.lock().unwrap();
        for (slot, e) in &initial {
            o.record(*slot, &e.member, e.delta);
        }
    }

    // The writer: 20 events every 10 ms, each at a random slot of the window, until the
    // recompute returns.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (boards, b, oracle, stop) = (h.boards.clone(), b.clone(), oracle.clone(), stop.clone());
        tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(31);
            let mut batches = 0usize;
            while !stop.load(Ordering::SeqCst) {
                let events: Vec<(i64, Event)> = (0..20)
                    .map(|_| {
                        let slot = START + rng.random_range(0..SLOTS) * 3600;
                        let delta = if rng.random_bool(0.8) { 1 } else { -1 };
                        let m = member(rng.random_range(0..MEMBERS));
                        (slot, Event::new(m, delta).at(ts(slot + 120)))
                    })
                    .collect();
                let batch: Vec<Event> = events.iter().map(|(_, e)| e.clone()).collect();
                let outcome = boards.windowed(&b).incr_batch(&batch).await.unwrap();
                assert_eq!(outcome.rejected.len(), 0, "{:?}", outcome.rejected);
                {
                    let mut o = oracle.lock().unwrap();
                    for (slot, e) in &events {
                        o.record(*slot, &e.member, e.delta);
                    }
                }
                batches += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            batches
        })
    };
    // Let the writer start before the recompute does.
    tokio::time::sleep(Duration::from_millis(30)).await;
    let started = Instant::now();
    let report = h
        .boards
        .windowed(&b)
        .recompute(Some(Span::parse("30d").unwrap()))
        .await
        .unwrap();
    let elapsed = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    let batches = writer.await.unwrap();
    eprintln!(
        "long-window recompute: {:.2} s, {} writer batches meanwhile, {report:?}",
        elapsed.as_secs_f64(),
        batches
    );
    assert!(batches >= 2, "the writer ran during the recompute");

    let now = h.now();
    let oracle = oracle.lock().unwrap().clone();
    for (j, w) in ["1h", "30d"].iter().enumerate() {
        let page = h
            .boards
            .windowed(&b)
            .top(Some(Span::parse(w).unwrap()), 0, 1000)
            .await
            .unwrap();
        let mut got: Vec<(String, i64)> = crate::support::ranking(&page);
        let mut offset = 1000;
        while got.len() == offset as usize {
            let page = h
                .boards
                .windowed(&b)
                .top(Some(Span::parse(w).unwrap()), offset, 1000)
                .await
                .unwrap();
            got.extend(crate::support::ranking(&page));
            offset += 1000;
        }
        let want: Vec<(String, i64)> = oracle.ranking(j, now);
        assert_eq!(got.len(), want.len(), "window {w}");
        assert!(got == want, "window {w}: the totals differ from the oracle");
    }
}
