//! Embedding rollboard in a forum backend: create a board, retire in the background,
//! count likes and unlikes, read the hot list.
//!
//! `cargo run --example embed` uses the in-memory store, or Redis when `REDIS_URL` is set.

use rollboard::{BoardConfig, Event, Rollboard, Span};

#[tokio::main]
async fn main() -> Result<(), rollboard::Error> {
    let boards = match std::env::var("REDIS_URL") {
        Ok(url) => Rollboard::redis(&url).await?,
        Err(_) => Rollboard::memory(),
    };

    // Hot posts: hourly slots, ranked over the last hour and the last day. Creating a
    // board that already exists with the same config is a no-op.
    boards
        .create("hot-posts", BoardConfig::parse("1h", &["1h", "24h"])?)
        .await?;

    // In the background, at every slot boundary, totals drop the slots that left each
    // window (every board, also those created later), until `stop` or drop.
    let retirer = boards.start_retirer();

    // What only a windowed board does is on its handle (a name; it loads nothing).
    let hot = boards.windowed("hot-posts");

    // A like is +1, an unlike -1. `None` means "now"; pass a Timestamp for older events.
    hot.incr("post:42", 1, None).await?;
    hot.incr("post:7", 1, None).await?;
    hot.incr("post:7", 1, None).await?;

    // Batches reject bad events one by one and apply the rest.
    let outcome = hot
        .incr_batch(&[
            Event::new("post:42", 1),
            Event::new("", 1),
            Event::new("post:9", -1),
        ])
        .await?;
    println!(
        "batch: {} accepted, {} rejected",
        outcome.accepted,
        outcome.rejected.len()
    );
    for r in &outcome.rejected {
        println!("  event {}: {} ({})", r.index, r.error, r.error.code());
    }

    let day = Span::parse("24h")?;
    let page = hot.top(Some(day), 0, 10).await?;
    println!(
        "hot posts, last {} (slots {}..{}):",
        page.window, page.from, page.to
    );
    for e in &page.entries {
        println!("{:>3}. {} ({})", e.rank, e.member, e.score);
    }
    if let Some(s) = hot.score("post:42", Some(day)).await? {
        match s.rank {
            Some(rank) => println!("post:42 is #{rank} with {}", s.score),
            None => println!("post:42 is not ranked: {}", s.score),
        }
    }

    // Ends the background task after the pass in progress, if any.
    retirer.stop().await;
    Ok(())
}
