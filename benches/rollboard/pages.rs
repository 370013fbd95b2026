//! The pages phase: how a deep page costs against the first one. Two boards of 300,000
//! members (windows 1h and 24h): one with scores spread over 1..=1000 (tie groups of
//! about 300), one where the lowest 100,000 members are all tied at one score and the
//! members were written in random order, so the deep page lies 90,000 members inside
//! that tie group. On each, one reader alternates the top-10 page at offset 0 and at
//! offset 290,000 of both windows through the library while a writer adds a batch of
//! 100 events every 20 ms; the figures are p50 / p99 over the phase, and the ratio of
//! the deep page's p50 to the first page's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rollboard::{BoardConfig, Event, Rollboard, Span};

use crate::load::Load;
use crate::report::{Row, thousands};

const MEMBERS: usize = 300_000;
const DEEP: u64 = 290_000;
const LIMIT: u64 = 10;
const WINDOWS: [&str; 2] = ["1h", "24h"];

fn member(i: usize) -> String {
    format!("post:{i}")
}

/// A board measured: its name, what its scores look like, member `i`'s total.
type Measured = (&'static str, &'static str, fn(usize) -> i64);

fn boards() -> [Measured; 2] {
    [
        ("bench-pages", "scores 1..=1000", |i| {
            1 + (i.wrapping_mul(2_654_435_761) % 1000) as i64
        }),
        ("bench-pages-tied", "lowest 100,000 tied", |i| {
            if i < 100_000 {
                1
            } else {
                2 + (i % 1000) as i64
            }
        }),
    ]
}

pub async fn pages(redis_url: &str, phase: Duration) -> Vec<Row> {
    let reader = Rollboard::new(crate::setup::store(redis_url).await);
    let writer = Rollboard::new(crate::setup::store(redis_url).await);
    let mut rows = Vec::new();
    for (board, scores, total) in boards() {
        eprintln!("  {board}: writing {} members …", thousands(MEMBERS as f64));
        reader
            .create(board, BoardConfig::parse("1h", &WINDOWS).unwrap())
            .await
            .unwrap();
        let mut events: Vec<Event> = (0..MEMBERS)
            .map(|i| Event::new(member(i), total(i)))
            .collect();
        events.shuffle(&mut rand::rngs::StdRng::seed_from_u64(3));
        for batch in events.chunks(10_000) {
            writer.windowed(board).incr_batch(batch).await.unwrap();
        }

        let stop = Arc::new(AtomicBool::new(false));
        let writes = tokio::spawn({
            let (writer, stop) = (writer.clone(), stop.clone());
            async move {
                let mut rng = rand::rngs::StdRng::seed_from_u64(5);
                let mut tick = tokio::time::interval(Duration::from_millis(20));
                let mut written = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    tick.tick().await;
                    let batch: Vec<Event> = (0..100)
                        .map(|_| Event::new(member(rng.random_range(0..MEMBERS)), 1))
                        .collect();
                    writer.windowed(board).incr_batch(&batch).await.unwrap();
                    written += batch.len() as u64;
                }
                written
            }
        });

        // [window][0 = first page, 1 = deep page]
        let mut loads: Vec<[Load; 2]> = WINDOWS.iter().map(|_| Default::default()).collect();
        let started = Instant::now();
        while started.elapsed() < phase {
            for (w, window) in WINDOWS.iter().enumerate() {
                let window = Some(Span::parse(window).unwrap());
                for (p, offset) in [0, DEEP].into_iter().enumerate() {
                    let t = Instant::now();
                    let page = reader
                        .windowed(board)
                        .top(window, offset, LIMIT)
                        .await
                        .unwrap();
                    loads[w][p].latencies.push(t.elapsed());
                    loads[w][p].done += 1;
                    assert_eq!(page.entries.len() as u64, LIMIT);
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        let written = writes.await.unwrap();
        reader.drop_board(board).await.unwrap();

        for (w, [first, deep]) in loads.iter_mut().enumerate() {
            let (f50, f99) = (first.percentile(50.0), first.percentile(99.0));
            let (d50, d99) = (deep.percentile(50.0), deep.percentile(99.0));
            let ratio = d50.as_secs_f64() / f50.as_secs_f64();
            let ratio99 = d99.as_secs_f64() / f99.as_secs_f64();
            rows.push(Row {
                figure: format!(
                    "top-10 at offset {} vs 0, {} members ({scores}), {} window: p50 / p99",
                    thousands(DEEP as f64),
                    thousands(MEMBERS as f64),
                    WINDOWS[w]
                ),
                measured: format!("{} / {}", ms(d50), ms(d99)),
                reference: format!(
                    "offset 0 {} / {}; {} reads each, {} events written meanwhile",
                    ms(f50),
                    ms(f99),
                    thousands(deep.done as f64),
                    thousands(written as f64)
                ),
                ratio: Some(ratio),
                target: Some((format!("<= 3 (p99 {ratio99:.2})"), ratio <= 3.0)),
            });
        }
    }
    rows
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}
