//! A small forum backend that mounts rollboard's router under `/rank`, next to its own
//! routes, and counts likes through the library directly.
//!
//! ```sh
//! cargo run --example forum                 # memory store; REDIS_URL=… for Redis
//! curl -X POST localhost:3000/posts/42/like
//! curl localhost:3000/hot                   # the forum's own hot list
//! curl localhost:3000/rank/v1/boards/hot-posts/top?window=24h   # rollboard's API
//! open http://localhost:3000/rank           # rollboard's dashboard
//! ```

use std::time::Duration;

use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use rollboard::http::{HttpOptions, router};
use rollboard::service::{Scheduler, shutdown_signal};
use rollboard::{BoardConfig, Rollboard, Span};
use serde_json::{Value, json};

const BOARD: &str = "hot-posts";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let boards = match std::env::var("REDIS_URL") {
        Ok(url) => Rollboard::redis(&url).await?,
        Err(_) => Rollboard::memory(),
    };
    boards
        .create(BOARD, BoardConfig::parse("1h", &["1h", "24h"])?)
        .await?;

    // Retire slots as they leave each window.
    let scheduler = Scheduler::new(boards.clone());
    scheduler.start(Duration::from_secs(60)).await?;

    let rank = router(boards.clone(), HttpOptions::default());
    let app = Router::new()
        .route(
            "/",
            get(|| async { "Welcome to the forum. Hot posts: /hot" }),
        )
        .route("/posts/{id}/like", post(like))
        .route("/hot", get(hot))
        .with_state(boards)
        .nest("/rank", rank);

    let port = std::env::var("PORT").unwrap_or_else(|_| "3000".into());
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}")).await?;
    println!(
        "forum on http://{}  (rollboard under /rank)",
        listener.local_addr()?
    );
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    scheduler.shutdown(Duration::from_secs(5)).await;
    Ok(())
}

/// The forum's own route: a like is one event.
async fn like(State(boards): State<Rollboard>, Path(id): Path<u64>) -> Json<Value> {
    match boards
        .windowed(BOARD)
        .incr(&format!("post:{id}"), 1, None)
        .await
    {
        Ok(()) => Json(json!({"liked": id})),
        Err(e) => Json(json!({"error": e.to_string()})),
    }
}

/// The forum's own hot list, read through the library.
async fn hot(State(boards): State<Rollboard>) -> Json<Value> {
    let day = Span::parse("24h").ok();
    match boards.windowed(BOARD).top(day, 0, 10).await {
        Ok(page) => Json(json!(page.entries)),
        Err(e) => Json(json!({"error": e.to_string()})),
    }
}
