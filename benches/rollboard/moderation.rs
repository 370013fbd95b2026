//! The moderation phase: a 100,000-member `1h`/`24h` board hiding 1,000 members (every
//! 100th, some of the top among them) beside the same board hiding none, in alternating
//! rounds on the same service and Redis: top-10 reads at 64 connections while 4
//! connections post single likes (Zipf) to the same board, then single likes at 16
//! connections. A hidden member's totals live apart, so the reads' target is ≥ 0.8× the
//! board hiding none (issue 51); the likes' ratio is reported (a board that hides
//! someone writes through `write.lua`, not the lean `write_plain.lua`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rollboard::{BoardConfig, Event, ModerationNote, Rollboard};

use crate::load::{self, Load, MEMBERS, Spread};
use crate::report::{Row, rate, thousands};
use crate::setup::Redis;

const OPEN: &str = "bench-mod-open";
const HIDING: &str = "bench-mod-hiding";
const HIDDEN: usize = 1_000;
const READERS: usize = 64;
const ROUNDS: usize = 2;

/// Runs the phase. Its boards are left out of the final exactness check: an hour
/// boundary passing during the run retires their `1h` window.
pub async fn moderation(redis: &Redis, url: &str, phase: Duration) -> Vec<Row> {
    let boards = Rollboard::new(crate::setup::store(&redis.url).await);
    let events: Vec<Event> = (0..MEMBERS)
        .map(|i| Event::new(format!("post:{i}"), 1 + (i * 7919 % 5000) as i64))
        .collect();
    for board in [OPEN, HIDING] {
        boards
            .create(board, BoardConfig::parse("1h", &["1h", "24h"]).unwrap())
            .await
            .unwrap();
        eprintln!(
            "  writing {} members to {board} …",
            thousands(MEMBERS as f64)
        );
        load::write_all(&boards, board, &events, 8).await;
    }
    let note = ModerationNote::new(Some("benchmark".into()), None).unwrap();
    for i in (0..MEMBERS).step_by(MEMBERS / HIDDEN) {
        let member = format!("post:{i}");
        assert!(boards.windowed(HIDING).hide(&member, &note).await.unwrap());
    }

    let (mut reads, mut likes) = (
        [Load::default(), Load::default()],
        [Load::default(), Load::default()],
    );
    for round in 0..ROUNDS {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for b in order {
            let board = [OPEN, HIDING][b];
            eprintln!(
                "  round {}: top-10 reads of {board} while likes go on …",
                round + 1
            );
            let stop = Arc::new(AtomicBool::new(false));
            let readers = tokio::spawn({
                let (url, stop) = (url.to_owned(), stop.clone());
                async move { load::top_readers(&url, board, READERS, None, stop).await }
            });
            load::http_singles_with(url, board, "", Spread::Zipf, 4, phase).await;
            stop.store(true, Ordering::SeqCst);
            absorb(&mut reads[b], readers.await.unwrap());
        }
        for b in order {
            let board = [OPEN, HIDING][b];
            eprintln!("  round {}: single likes to {board} …", round + 1);
            let posted = load::http_singles_with(url, board, "", Spread::Zipf, 16, phase).await;
            absorb(&mut likes[b], posted);
        }
    }

    let row = |what: &str, unit: &str, loads: &[Load; 2], target: Option<f64>| {
        let (open, hiding) = (loads[0].per_second(), loads[1].per_second());
        let ratio = hiding / open;
        Row {
            figure: format!(
                "{what}, a 100k-member board hiding {} members",
                thousands(HIDDEN as f64)
            ),
            measured: rate(hiding, unit),
            reference: format!("the same board hiding none {}", rate(open, unit)),
            ratio: Some(ratio),
            target: target.map(|t| (format!("≥ {t}x"), ratio >= t)),
        }
    };
    vec![
        row(
            &format!("top-10 reads ({READERS} connections, 4 liking meanwhile)"),
            "reads/s",
            &reads,
            Some(0.8),
        ),
        row("single likes (16 connections, Zipf)", "ev/s", &likes, None),
    ]
}

/// Adds `more`'s requests and time to `total` (rounds of one board).
fn absorb(total: &mut Load, more: Load) {
    total.done += more.done;
    total.elapsed += more.elapsed;
    total.latencies.extend(more.latencies);
}
