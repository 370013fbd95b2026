//! The moderation phase: a 100,000-member `1h`/`24h` board hiding 1,000 members (every
//! 100th, some of the top among them) beside the same board hiding none, in alternating
//! rounds on the same service and Redis: top-10 reads at 64 connections while 4
//! connections post single likes (Zipf) to the same board, then single likes at 16
//! connections. A hidden member's totals live apart, so the reads' target is ≥ 0.8× the
//! board hiding none (issue 51); the likes' ratio is reported (a board that hides
//! someone writes through `write.lua`, not the lean `write_plain.lua`). A third board has a
//! review gate (`above_rank` 10, its 100 highest members allowed): its single likes,
//! each of which applies the gate, are ≥ 0.8× the open board's (issue 51). A fourth board
//! watches the top 10 of both windows: its single likes, each of which records the
//! changes it makes to them, are ≥ 0.7× the open board's (issue 50).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rollboard::{BoardConfig, Decision, Event, ModerationNote, ReviewPolicy, Rollboard, Watch};

use crate::load::{self, Load, MEMBERS, Spread};
use crate::report::{Row, rate, thousands};
use crate::setup::Redis;

const OPEN: &str = "bench-mod-open";
const HIDING: &str = "bench-mod-hiding";
const GATED: &str = "bench-mod-gated";
const WATCHED: &str = "bench-mod-watched";
const BOARDS: [&str; 4] = [OPEN, HIDING, GATED, WATCHED];
const ALLOWED: usize = 100;
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
    for board in BOARDS {
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
    let mut highest: Vec<&Event> = events.iter().collect();
    highest.sort_by_key(|e| std::cmp::Reverse(e.delta));
    for event in &highest[..ALLOWED] {
        let allow = boards
            .windowed(GATED)
            .review(&event.member, Decision::Allow, &note);
        allow.await.unwrap();
    }
    let gate = Some(ReviewPolicy::new(10).unwrap());
    let config = BoardConfig::parse("1h", &["1h", "24h"]).unwrap();
    boards
        .create(GATED, config.clone().with_review(gate))
        .await
        .unwrap();
    let watches = config.windows().iter().map(|w| Watch::new(*w, 10).unwrap());
    let watched = config.clone().with_watch(watches.collect()).unwrap();
    boards.create(WATCHED, watched).await.unwrap();

    let (mut reads, mut likes) = (
        [Load::default(), Load::default()],
        [(); 4].map(|_| Load::default()),
    );
    for round in 0..ROUNDS {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for b in order {
            let board = BOARDS[b];
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
        let order = if round % 2 == 0 {
            [0, 1, 2, 3]
        } else {
            [3, 2, 1, 0]
        };
        for b in order {
            let board = BOARDS[b];
            eprintln!("  round {}: single likes to {board} …", round + 1);
            let posted = load::http_singles_with(url, board, "", Spread::Zipf, 16, phase).await;
            absorb(&mut likes[b], posted);
        }
    }

    let hiding = format!(
        "a 100k-member board hiding {} members",
        thousands(HIDDEN as f64)
    );
    let gated = format!("a 100k-member board with a review gate (top {ALLOWED} allowed)");
    let watched = "a 100k-member board watching the top 10 of both windows";
    let row = |what: &str, unit: &str, loads: [&Load; 2], board: &str, target: Option<f64>| {
        let (open, hiding) = (loads[0].per_second(), loads[1].per_second());
        let ratio = hiding / open;
        Row {
            figure: format!("{what}, {board}"),
            measured: rate(hiding, unit),
            reference: format!("the same board without moderation {}", rate(open, unit)),
            ratio: Some(ratio),
            target: target.map(|t| (format!("≥ {t}x"), ratio >= t)),
        }
    };
    vec![
        row(
            &format!("top-10 reads ({READERS} connections, 4 liking meanwhile)"),
            "reads/s",
            [&reads[0], &reads[1]],
            &hiding,
            Some(0.8),
        ),
        row(
            "single likes (16 connections, Zipf)",
            "ev/s",
            [&likes[0], &likes[1]],
            &hiding,
            None,
        ),
        row(
            "single likes (16 connections, Zipf)",
            "ev/s",
            [&likes[0], &likes[2]],
            &gated,
            Some(0.8),
        ),
        row(
            "single likes (16 connections, Zipf)",
            "ev/s",
            [&likes[0], &likes[3]],
            watched,
            Some(0.7),
        ),
    ]
}

/// Adds `more`'s requests and time to `total` (rounds of one board).
fn absorb(total: &mut Load, more: Load) {
    total.done += more.done;
    total.elapsed += more.elapsed;
    total.latencies.extend(more.latencies);
}
