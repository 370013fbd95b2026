//! The `memberdata` phase: member data on a 100,000-member board (`BENCH_DATA_MEMBERS` to
//! change it), each member with a JSON value of about 100 bytes. Redis memory per member
//! for the data (`used_memory` before and after setting it on every member, the totals
//! unchanged in size), and batch writes of 1,000 events carrying data beside the same
//! writes without data, alternating batch by batch over the phase (events/s and their
//! ratio: the write without data is the reference).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rollboard::{BoardConfig, Event, MemberData, RedisStore, Rollboard};

use crate::load::Load;
use crate::report::{Row, rate, thousands};

const BOARD: &str = "bench-member-data";
const BATCH: usize = 1_000;

fn member(i: usize) -> String {
    format!("post:{i}")
}

/// About 100 bytes of compact JSON: a post's title, author and tags.
fn data(i: usize) -> MemberData {
    MemberData::from_value(&serde_json::json!({
        "title": format!("Why rolling windows beat decay, part {i:06}"),
        "author": format!("user:{:05}", i % 50_000),
        "tags": ["rust", "redis"],
    }))
    .unwrap()
}

pub async fn member_data(redis_url: &str, phase: Duration) -> Vec<Row> {
    let members: usize = std::env::var("BENCH_DATA_MEMBERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let boards = Rollboard::new(Arc::new(RedisStore::connect(redis_url).await.unwrap()));
    let config = BoardConfig::parse("1h", &["1h", "24h"]).unwrap();
    boards.create(BOARD, config).await.unwrap();
    let mut raw = redis::Client::open(redis_url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let ids: Vec<usize> = (0..members).collect();
    for chunk in ids.chunks(10_000) {
        let events: Vec<Event> = chunk.iter().map(|&i| Event::new(member(i), 1)).collect();
        boards.windowed(BOARD).incr_batch(&events).await.unwrap();
    }
    let bytes: usize = ids.iter().take(1000).map(|&i| data(i).as_str().len()).sum();
    let before = crate::used_memory(&mut raw).await;
    for chunk in ids.chunks(10_000) {
        let events: Vec<Event> = chunk
            .iter()
            .map(|&i| Event::new(member(i), 1).with_data(data(i)))
            .collect();
        boards.windowed(BOARD).incr_batch(&events).await.unwrap();
    }
    let after = crate::used_memory(&mut raw).await;
    let kept: u64 = redis::cmd("HLEN")
        .arg(format!("data_{{{BOARD}}}"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(kept, members as u64);
    let per_member = (after - before) as f64 / members as f64;

    // [0] with data, [1] the same batches without.
    let mut loads: [Load; 2] = Default::default();
    let started = Instant::now();
    let mut next = 0usize;
    while started.elapsed() < phase {
        let batch: Vec<usize> = (0..BATCH).map(|k| (next + k) % members).collect();
        next = (next + BATCH) % members;
        for (at, with) in [(0, true), (1, false)] {
            let events: Vec<Event> = batch
                .iter()
                .map(|&i| {
                    let e = Event::new(member(i), 1);
                    if with { e.with_data(data(i)) } else { e }
                })
                .collect();
            let t = Instant::now();
            let outcome = boards.windowed(BOARD).incr_batch(&events).await.unwrap();
            let took = t.elapsed();
            assert_eq!(outcome.accepted, BATCH);
            loads[at].done += BATCH as u64;
            loads[at].elapsed += took;
        }
    }
    boards.drop_board(BOARD).await.unwrap();
    let (with, without) = (loads[0].per_second(), loads[1].per_second());
    vec![
        Row {
            figure: format!(
                "member data, {} members x ~{} B JSON: Redis memory per member",
                thousands(members as f64),
                bytes / 1000
            ),
            measured: format!("{per_member:.1} B"),
            reference: format!("{} B of JSON text", bytes / 1000),
            ratio: Some(per_member / (bytes as f64 / 1000.0)),
            target: None,
        },
        Row {
            figure: format!("batch write of {BATCH} events carrying data (library)"),
            measured: rate(with, "events/s"),
            reference: format!("{} without data", rate(without, "events/s")),
            ratio: Some(with / without),
            target: None,
        },
    ]
}
