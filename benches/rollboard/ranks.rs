//! The `ranks` phase: reads of a large board (1,000,000 members by default,
//! `BENCH_RANKS_MEMBERS` to change it; scores spread over 1..=100,000, so tie groups of
//! about 10): the ranks of 100 members (a user's friends: 90 ranked, 10 unknown) in one
//! call, and one member's read with its percentile, beside a plain `ZREVRANK` on the
//! same totals key measured in the same run, one reader, alternating the three; p50 /
//! p99 over the phase. The same reads of a second board holding the same totals with
//! `"ties":"dense"` (dense ranks: `ZCOUNT` on its distinct totals) run alternately with
//! them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rollboard::{BoardConfig, Event, RedisStore, Rollboard, Ties};

use crate::load::Load;
use crate::report::{Row, thousands};

const BOARD: &str = "bench-ranks";
/// The same totals, ranked densely.
const DENSE: &str = "bench-ranks-dense";
const FRIENDS: usize = 100;

fn member(i: usize) -> String {
    format!("user:{i}")
}

fn score(i: usize) -> i64 {
    1 + (i.wrapping_mul(2_654_435_761) % 100_000) as i64
}

pub async fn ranks(redis_url: &str, phase: Duration) -> Vec<Row> {
    let members: usize = std::env::var("BENCH_RANKS_MEMBERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let boards = Rollboard::new(Arc::new(RedisStore::connect(redis_url).await.unwrap()));
    let config = BoardConfig::parse("1h", &["1h"]).unwrap();
    boards.create(BOARD, config.clone()).await.unwrap();
    boards
        .create(DENSE, config.with_ties(Ties::Dense))
        .await
        .unwrap();
    eprintln!("  writing {} members …", thousands(members as f64));
    let built = Instant::now();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let boards = boards.clone();
            tokio::spawn(async move {
                let mine: Vec<usize> = (w..members).step_by(4).collect();
                for chunk in mine.chunks(10_000) {
                    let events: Vec<Event> = chunk
                        .iter()
                        .map(|&i| Event::new(member(i), score(i)))
                        .collect();
                    boards.windowed(BOARD).incr_batch(&events).await.unwrap();
                    boards.windowed(DENSE).incr_batch(&events).await.unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    let build = built.elapsed();
    let mut raw = redis::Client::open(redis_url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let totals = format!("stats_{{{BOARD}}}");
    let size: u64 = redis::cmd("ZCARD")
        .arg(&totals)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(size, members as u64, "the totals key is {totals}");

    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    // [0] friends' ranks, [1] member with percentile, [2] ZREVRANK, [3] and [4] as [0]
    // and [1] on the dense board.
    let mut loads: [Load; 5] = Default::default();
    let started = Instant::now();
    while started.elapsed() < phase {
        let friends: Vec<String> = (0..FRIENDS)
            .map(|k| {
                let i = rng.random_range(0..members);
                if k % 10 == 9 {
                    format!("nobody:{i}")
                } else {
                    member(i)
                }
            })
            .collect();
        for (board, at) in [(BOARD, 0), (DENSE, 3)] {
            let t = Instant::now();
            let ranks = boards.windowed(board).ranks(&friends, None).await.unwrap();
            loads[at].latencies.push(t.elapsed());
            assert_eq!(ranks.entries.len(), FRIENDS);

            let i = rng.random_range(0..members);
            let t = Instant::now();
            let standing = boards
                .windowed(board)
                .score(&member(i), None)
                .await
                .unwrap()
                .unwrap();
            loads[at + 1].latencies.push(t.elapsed());
            assert_eq!(standing.score, score(i));
        }

        let i = rng.random_range(0..members);
        let t = Instant::now();
        let rank: Option<u64> = redis::cmd("ZREVRANK")
            .arg(&totals)
            .arg(member(i))
            .query_async(&mut raw)
            .await
            .unwrap();
        loads[2].latencies.push(t.elapsed());
        assert!(rank.is_some());
    }
    boards.drop_board(BOARD).await.unwrap();
    boards.drop_board(DENSE).await.unwrap();

    let (c50, c99) = (loads[2].percentile(50.0), loads[2].percentile(99.0));
    let reads = loads[2].latencies.len();
    let mut rows = Vec::new();
    let [a, b, _, c, d] = &mut loads;
    for (load, what) in [a, b, c, d].into_iter().zip([
        format!("ranks of {FRIENDS} members (10 unknown)"),
        "member read with percentile".to_owned(),
        format!("dense board: ranks of {FRIENDS} members (10 unknown)"),
        "dense board: member read with percentile".to_owned(),
    ]) {
        let (p50, p99) = (load.percentile(50.0), load.percentile(99.0));
        rows.push(Row {
            figure: format!("{what}, {} members: p50 / p99", thousands(members as f64)),
            measured: format!("{} / {}", ms(p50), ms(p99)),
            reference: format!(
                "ZREVRANK {} / {}; {} reads each; board built in {:.1} s",
                ms(c50),
                ms(c99),
                thousands(reads as f64),
                build.as_secs_f64()
            ),
            ratio: Some(p50.as_secs_f64() / c50.as_secs_f64()),
            target: None,
        });
    }
    rows
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}
