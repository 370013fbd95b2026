//! The trending-write phase: one batch of 10,000 events of fresh members written to a
//! trending board, and the same batch to a windowed `1h`/`24h` board, each with
//! `SLOWLOG` logging every call (reset before each): how many script calls each batch
//! took and the longest (target: none over 2 ms). Before bounded trending writes the
//! trending batch was one call of ~39 ms.

use std::sync::Arc;

use rollboard::{BoardConfig, Event, ManualClock, Rollboard, Settings, Timestamp, TrendingConfig};

use crate::report::Row;
use crate::slowlog;

/// Events in the batch.
const EVENTS: usize = 10_000;

/// The script calls Redis logged since the reset: how many, and the longest in µs.
async fn script_calls(conn: &mut redis::aio::MultiplexedConnection) -> (usize, i64) {
    let calls = slowlog::slow_calls(conn).await;
    let micros: Vec<i64> = calls
        .iter()
        .filter(|c| c.args.first().is_some_and(|a| a.starts_with("EVAL")))
        .map(|c| c.micros)
        .collect();
    (micros.len(), micros.iter().copied().max().unwrap_or(0))
}

/// The batch: `EVENTS` members never written before on the board, deltas 1 to 5.
fn batch(now: Timestamp) -> Vec<Event> {
    (0..EVENTS)
        .map(|i| Event::new(format!("fresh:{i}"), 1 + (i % 5) as i64).at(now))
        .collect()
}

pub async fn trendwrite(redis: &crate::setup::Redis) -> Vec<Row> {
    let now = Timestamp::now_utc();
    let boards = Rollboard::with(
        crate::setup::store(&redis.url).await,
        Arc::new(ManualClock::new(now)),
        Settings::default(),
    );
    let mut conn = redis::Client::open(redis.url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let (trending, windowed) = ("bench-trendwrite", "bench-trendwrite-windowed");
    boards
        .create(trending, TrendingConfig::parse("6h").unwrap())
        .await
        .unwrap();
    boards
        .create(windowed, BoardConfig::parse("1h", &["1h", "24h"]).unwrap())
        .await
        .unwrap();
    // A first small write to each loads their scripts, so that no call of the batch is
    // a NOSCRIPT refusal.
    boards
        .trending(trending)
        .incr_batch(&[Event::new("warm", 1)])
        .await
        .unwrap();
    boards
        .windowed(windowed)
        .incr_batch(&[Event::new("warm", 1)])
        .await
        .unwrap();

    let off_cpu = redis.keep_off_its_cpu();
    slowlog::reset_over(&mut conn, 0).await;
    let outcome = boards
        .trending(trending)
        .incr_batch(&batch(now))
        .await
        .unwrap();
    assert_eq!(outcome.accepted, EVENTS);
    let (trend_calls, trend_longest) = script_calls(&mut conn).await;

    slowlog::reset_over(&mut conn, 0).await;
    let outcome = boards
        .windowed(windowed)
        .incr_batch(&batch(now))
        .await
        .unwrap();
    assert_eq!(outcome.accepted, EVENTS);
    let (window_calls, window_longest) = script_calls(&mut conn).await;
    drop(off_cpu);
    slowlog::reset(&mut conn).await;
    boards.drop_board(trending).await.unwrap();
    boards.drop_board(windowed).await.unwrap();

    let ms = |us: i64| format!("{:.2} ms", us as f64 / 1000.0);
    vec![Row {
        figure: format!(
            "trending batch of {} fresh members: longest call (SLOWLOG)",
            crate::report::thousands(EVENTS as f64)
        ),
        measured: format!("{} in {trend_calls} calls", ms(trend_longest)),
        reference: format!(
            "windowed 1h/24h {} in {window_calls} calls",
            ms(window_longest)
        ),
        ratio: Some(trend_longest as f64 / window_longest.max(1) as f64),
        target: Some(("<= 2 ms".into(), trend_longest <= 2000)),
    }]
}
