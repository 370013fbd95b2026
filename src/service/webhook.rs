//! The snapshot webhook: every period snapshot, POSTed as JSON to the configured URL
//! (`snapshot_webhook`), delivered at least once.
//!
//! Each replica runs one deliverer. Every `poll_every` it reads, for every board that
//! takes snapshots (the list of boards is re-read every `relist_every`, and at once when
//! a board is created or dropped through this process) and each of its windows, the window's delivery cursor (the newest
//! boundary delivered, kept in the store: `snapsent_{b}` in Redis) and the snapshots
//! after it, oldest first; it POSTs them one by one and moves the cursor past each after
//! a 2xx answer. A failure (no answer within `timeout`, a refused connection, any other
//! status) leaves the cursor, and that window is tried again after a backoff doubling
//! from `retry_min` to `retry_max`. The cursor moves only after a 2xx and lives in the
//! store, so a replica that crashes mid-delivery (or appended and died) leaves the
//! snapshot to the next attempt of any replica: at least once. Replicas may deliver the
//! same snapshot at the same time: the `Idempotency-Key` header,
//! `<board>:<window seconds>:<boundary>` (read from the right: board names may hold
//! `:`), is the same on every attempt, so the receiver drops repeats.
//!
//! The body is the snapshot with its board: `{"board","window","boundary","taken_ms",
//! "entries":[{"rank","member","score"}…]}`. Plain `http://` only (no TLS client is
//! built in): put the receiver on the private network or behind a local proxy. Snapshots
//! trimmed (by `keep`) before they were delivered are lost to the webhook.

use std::collections::HashMap;
use std::time::Duration;

use axum::body::Body;
use hyper::http::{Request, Uri, header};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Serialize;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::{BoardName, Rollboard, Snapshot, SnapshotRange, Span};

/// Where and how snapshots are delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookOptions {
    /// The receiver: an `http://` URL.
    pub url: Uri,
    /// How long one POST may take (default 10 s).
    pub timeout: Duration,
    /// The first wait after a failed POST (default 1 s); it doubles on each failure.
    pub retry_min: Duration,
    /// The longest wait between attempts (default 5 min).
    pub retry_max: Duration,
    /// How often the cursors are read for new snapshots (default 1 s).
    pub poll_every: Duration,
    /// How often the list of boards (and their snapshots option) is read again (default
    /// 30 s; at once after a board is created, changed or dropped through this process).
    pub relist_every: Duration,
}

impl WebhookOptions {
    /// Delivery to `url` with the default timings; an error says why the URL will not do.
    pub fn new(url: &str) -> Result<Self, String> {
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("snapshot_webhook {url:?} is not a URL: {e}"))?;
        if uri.scheme_str() != Some("http") || uri.authority().is_none() {
            return Err(format!(
                "snapshot_webhook {url:?} must be an http:// URL with a host (no TLS client is built in)"
            ));
        }
        Ok(WebhookOptions {
            url: uri,
            timeout: Duration::from_secs(10),
            retry_min: Duration::from_secs(1),
            retry_max: Duration::from_secs(300),
            poll_every: Duration::from_secs(1),
            relist_every: Duration::from_secs(30),
        })
    }
}

/// What is POSTed: the snapshot and its board.
#[derive(Serialize)]
struct Delivery<'a> {
    board: &'a BoardName,
    #[serde(flatten)]
    snapshot: &'a Snapshot,
}

/// The `Idempotency-Key` of a snapshot: the same on every attempt of every replica.
pub fn idempotency_key(board: &BoardName, snapshot: &Snapshot) -> String {
    format!(
        "{board}:{}:{}",
        snapshot.window.seconds(),
        snapshot.boundary
    )
}

/// Snapshots read per window and round.
const BATCH: u64 = 100;

/// Runs the deliverer until the task is aborted.
pub fn spawn(boards: Rollboard, options: WebhookOptions) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut deliverer = Deliverer {
            client: Client::builder(TokioExecutor::new()).build(HttpConnector::new()),
            boards,
            options,
            waiting: HashMap::new(),
            boards_taking: Vec::new(),
            listed_at: None,
        };
        let mut changes = deliverer.boards.board_changes();
        loop {
            if changes.has_changed().unwrap_or(false) {
                changes.mark_unchanged();
                deliverer.listed_at = None;
            }
            deliverer.round().await;
            tokio::time::sleep(deliverer.options.poll_every).await;
        }
    })
}

struct Deliverer {
    client: Client<HttpConnector, Body>,
    boards: Rollboard,
    options: WebhookOptions,
    /// Windows whose last POST failed: failures in a row, and when to try again.
    waiting: HashMap<(BoardName, Span), (u32, Instant)>,
    /// The boards that take snapshots, with their windows, as last listed.
    boards_taking: Vec<(BoardName, Vec<Span>)>,
    /// When they were listed.
    listed_at: Option<Instant>,
}

impl Deliverer {
    /// Delivers what is due on every board that takes snapshots.
    async fn round(&mut self) {
        if self
            .listed_at
            .is_none_or(|at| at.elapsed() >= self.options.relist_every)
        {
            match self.boards.boards().await {
                Ok(boards) => {
                    self.boards_taking = boards
                        .into_iter()
                        .filter(|b| b.config.snapshots().is_some())
                        .map(|b| (b.name, b.config.windows().to_vec()))
                        .collect();
                    self.listed_at = Some(Instant::now());
                }
                Err(e) => {
                    tracing::warn!(error = %e, "snapshot webhook: cannot list boards");
                    return;
                }
            }
        }
        let listed = std::mem::take(&mut self.boards_taking);
        for (board, windows) in &listed {
            for window in windows {
                let key = (board.clone(), *window);
                if self
                    .waiting
                    .get(&key)
                    .is_some_and(|(_, at)| Instant::now() < *at)
                {
                    continue;
                }
                match self.window(board, *window).await {
                    Ok(()) => {
                        self.waiting.remove(&key);
                    }
                    Err(e) => {
                        let failures = self.waiting.get(&key).map_or(0, |(n, _)| *n) + 1;
                        let wait = backoff(&self.options, failures);
                        tracing::warn!(board = %board, window = %window, error = %e,
                            retry_in = ?wait, "snapshot webhook: delivery failed");
                        self.waiting.insert(key, (failures, Instant::now() + wait));
                    }
                }
            }
        }
        self.boards_taking = listed;
    }

    /// Delivers window `window`'s snapshots after its cursor, oldest first, moving the
    /// cursor past each one received.
    async fn window(&self, board: &BoardName, window: Span) -> Result<(), String> {
        let name = board.as_str();
        loop {
            let cursor = self
                .boards
                .windowed(name)
                .snapshot_cursor(Some(window), None)
                .await
                .map_err(|e| e.to_string())?;
            let range = SnapshotRange::new(cursor.map(|c| c + 1), None, Some(BATCH))
                .map_err(|e| e.to_string())?
                .oldest_first();
            let due = self
                .boards
                .windowed(name)
                .snapshots(Some(window), range)
                .await
                .map_err(|e| e.to_string())?
                .snapshots;
            for snapshot in &due {
                self.post(board, snapshot).await?;
                self.boards
                    .windowed(name)
                    .snapshot_cursor(Some(window), Some(snapshot.boundary))
                    .await
                    .map_err(|e| e.to_string())?;
            }
            if (due.len() as u64) < BATCH {
                return Ok(());
            }
        }
    }

    /// POSTs one snapshot; `Ok` on a 2xx answer.
    async fn post(&self, board: &BoardName, snapshot: &Snapshot) -> Result<(), String> {
        let body = serde_json::to_vec(&Delivery { board, snapshot }).map_err(|e| e.to_string())?;
        let request = Request::post(self.options.url.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header("Idempotency-Key", idempotency_key(board, snapshot))
            .body(Body::from(body))
            .map_err(|e| e.to_string())?;
        let answer = tokio::time::timeout(self.options.timeout, self.client.request(request))
            .await
            .map_err(|_| format!("no answer within {:?}", self.options.timeout))
            .and_then(|r| r.map_err(|e| format!("POST failed: {e}")))
            .and_then(|answer| {
                if answer.status().is_success() {
                    Ok(())
                } else {
                    Err(format!("the receiver answered {}", answer.status()))
                }
            });
        crate::metrics::snapshot_webhook(if answer.is_ok() {
            "delivered"
        } else {
            "failed"
        });
        answer
    }
}

/// The wait after `failures` failures in a row: `retry_min · 2^(failures − 1)`, at most
/// `retry_max`.
fn backoff(options: &WebhookOptions, failures: u32) -> Duration {
    let factor = 1u32 << failures.saturating_sub(1).min(20);
    options
        .retry_min
        .saturating_mul(factor)
        .min(options.retry_max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Entry;

    #[test]
    fn only_http_urls_with_a_host_are_taken() {
        assert!(WebhookOptions::new("http://127.0.0.1:9000/hook").is_ok());
        for bad in ["https://example.com/", "ftp://x/", "/hook", "not a url"] {
            assert!(WebhookOptions::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_max() {
        let mut o = WebhookOptions::new("http://h/").unwrap();
        o.retry_min = Duration::from_secs(1);
        o.retry_max = Duration::from_secs(5);
        let waits: Vec<u64> = (1..=5).map(|n| backoff(&o, n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 5, 5]);
    }

    #[test]
    fn the_body_and_key_name_the_board_window_and_boundary() {
        let board = BoardName::parse("a:b").unwrap();
        let snapshot = Snapshot {
            window: Span::parse("1h").unwrap(),
            boundary: 7200,
            taken_ms: 7_200_005,
            entries: vec![Entry {
                rank: 1,
                member: "m".into(),
                score: 3,
                data: None,
                pinned: false,
            }],
        };
        assert_eq!(idempotency_key(&board, &snapshot), "a:b:3600:7200");
        let body = serde_json::to_value(Delivery {
            board: &board,
            snapshot: &snapshot,
        })
        .unwrap();
        assert_eq!(
            body,
            serde_json::json!({"board": "a:b", "window": "1h", "boundary": 7200,
                "taken_ms": 7_200_005, "entries": [{"rank": 1, "member": "m", "score": 3}]})
        );
    }
}
