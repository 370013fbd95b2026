//! The webhooks: what a feed produces per board, POSTed as JSON to the configured URL,
//! delivered at least once. Three feeds (`feeds.rs`): every period snapshot
//! (`snapshot_webhook`), every member a review gate holds (`review_webhook`) and every
//! change of a watched top (`changes_webhook`). With `webhook_secret` set, each POST
//! carries `Rollboard-Signature: sha256=<hex HMAC-SHA256 of the body under the secret>`.
//!
//! Each replica runs one deliverer per configured webhook. Every `poll_every` it reads,
//! for every board the feed follows (the list of boards is re-read every
//! `relist_every`, and at once when a board is created or dropped through this process)
//! and each of its streams (a snapshot board's windows; a gated board's one stream), the
//! stream's delivery cursor (kept in the store: `snapsent_{b}`, `board_{b}:held_sent` in
//! Redis) and the events after it, oldest first; it POSTs them one by one and moves the
//! cursor past each after a 2xx answer. A failure (no answer within `timeout`, a refused
//! connection, any other status) leaves the cursor, and that stream is tried again after
//! a backoff doubling from `retry_min` to `retry_max`. The cursor moves only after a 2xx
//! and lives in the store, so a replica that crashes mid-delivery leaves the event to
//! the next attempt of any replica: at least once. Replicas may deliver the same event
//! at the same time: the `Idempotency-Key` header is the same on every attempt of every
//! replica, so the receiver drops repeats.
//!
//! The URL is `http://` or `https://` (`client.rs`): TLS trusts the system's roots and,
//! with `webhook_ca` set, a private CA. A binary built without the `tls` feature refuses
//! an `https://` URL at start. Events trimmed from the store before they were delivered
//! are lost to the webhook.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use axum::body::Body;
use hyper::http::{Request, Uri, header};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::{Board, BoardName, Rollboard, Span};

mod client;

use client::HttpClient;

/// What a webhook delivers: per board it follows, one or more streams of events (a
/// window's snapshots; a gated board's held members), each with a cursor in the store.
pub(super) trait Feed: Send + Sync + 'static {
    /// An event, POSTed as JSON.
    type Event: Send + Sync;
    /// The webhook's name in logs (`snapshot webhook`).
    const NAME: &'static str;
    /// The streams of `board` (a window each, or `None` for the board's one), empty when
    /// the feed does not follow it.
    fn streams(board: &Board) -> Vec<Option<Span>>;
    /// Up to [`BATCH`] events of a stream after its cursor, oldest first.
    fn due(
        rb: &Rollboard,
        board: &BoardName,
        stream: Option<Span>,
    ) -> impl Future<Output = crate::Result<Vec<Self::Event>>> + Send;
    /// Moves the stream's cursor past `event`.
    fn delivered(
        rb: &Rollboard,
        board: &BoardName,
        stream: Option<Span>,
        event: &Self::Event,
    ) -> impl Future<Output = crate::Result<()>> + Send;
    /// The `Idempotency-Key` of `event`: the same on every attempt of every replica.
    fn idempotency_key(board: &BoardName, event: &Self::Event) -> String;
    /// The JSON body of `event`.
    fn body(board: &BoardName, event: &Self::Event) -> serde_json::Result<Vec<u8>>;
    /// Counts a POST by outcome (`delivered`, `failed`).
    fn count(outcome: &'static str);
}

/// Where and how a webhook's events are delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookOptions {
    /// The receiver: an `http://` or `https://` URL.
    pub url: Uri,
    /// How long one POST may take (default 10 s).
    pub timeout: Duration,
    /// The first wait after a failed POST (default 1 s); it doubles on each failure.
    pub retry_min: Duration,
    /// The longest wait between attempts (default 5 min).
    pub retry_max: Duration,
    /// How often the cursors are read for new events (default 1 s).
    pub poll_every: Duration,
    /// How often the list of boards (and their options) is read again (default
    /// 30 s; at once after a board is created, changed or dropped through this process).
    pub relist_every: Duration,
    /// The secret each POST's body is signed with (`Rollboard-Signature`); none: unsigned.
    pub secret: Option<String>,
    /// A PEM file of a private CA an `https://` receiver's certificate may be signed by,
    /// besides the system's roots; none: the system's roots only.
    pub ca: Option<PathBuf>,
}

impl WebhookOptions {
    /// Delivery to `url` with the default timings; an error says why the URL will not do.
    pub fn new(url: &str) -> Result<Self, String> {
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("{url:?} is not a URL: {e}"))?;
        match uri.scheme_str() {
            Some("https") if !cfg!(feature = "tls") => {
                return Err(format!(
                    "{url:?} is an https:// URL, but this rollboard was built without TLS \
                     (the `tls` feature): give an http:// URL, or build with TLS"
                ));
            }
            Some("http" | "https") if uri.authority().is_some() => {}
            _ => {
                return Err(format!(
                    "{url:?} must be an http:// or https:// URL with a host"
                ));
            }
        }
        Ok(WebhookOptions {
            url: uri,
            timeout: Duration::from_secs(10),
            retry_min: Duration::from_secs(1),
            retry_max: Duration::from_secs(300),
            poll_every: Duration::from_secs(1),
            relist_every: Duration::from_secs(30),
            secret: None,
            ca: None,
        })
    }
}

/// Events read per stream and round.
pub(super) const BATCH: usize = 100;

/// A webhook ready to run: its options and the client to POST with.
pub(super) struct Webhook {
    options: WebhookOptions,
    client: HttpClient,
}

impl Webhook {
    /// The client for `options`; an error says why its CA file will not do.
    pub(super) fn new(options: WebhookOptions) -> Result<Self, String> {
        let client = client::client(options.ca.as_deref())?;
        Ok(Webhook { options, client })
    }
}

/// Runs the deliverer of `F` until the task is aborted.
pub(super) fn spawn<F: Feed>(boards: Rollboard, webhook: Webhook) -> JoinHandle<()> {
    let Webhook { options, client } = webhook;
    tokio::spawn(async move {
        let mut deliverer = Deliverer::<F> {
            client,
            boards,
            options,
            waiting: HashMap::new(),
            followed: Vec::new(),
            listed_at: None,
            feed: std::marker::PhantomData,
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

struct Deliverer<F> {
    client: HttpClient,
    boards: Rollboard,
    options: WebhookOptions,
    /// Streams whose last POST failed: failures in a row, and when to try again.
    waiting: HashMap<(BoardName, Option<Span>), (u32, Instant)>,
    /// The boards the feed follows, with their streams, as last listed.
    followed: Vec<(BoardName, Vec<Option<Span>>)>,
    /// When they were listed.
    listed_at: Option<Instant>,
    feed: std::marker::PhantomData<F>,
}

impl<F: Feed> Deliverer<F> {
    /// Delivers what is due on every board the feed follows.
    async fn round(&mut self) {
        if self
            .listed_at
            .is_none_or(|at| at.elapsed() >= self.options.relist_every)
        {
            match self.boards.boards().await {
                Ok(boards) => {
                    let streams = boards.into_iter().map(|b| (F::streams(&b), b.name));
                    let followed = streams.filter(|(streams, _)| !streams.is_empty());
                    self.followed = followed.map(|(streams, name)| (name, streams)).collect();
                    self.listed_at = Some(Instant::now());
                }
                Err(e) => {
                    tracing::warn!(error = %e, "{}: cannot list boards", F::NAME);
                    return;
                }
            }
        }
        let listed = std::mem::take(&mut self.followed);
        for (board, streams) in &listed {
            for stream in streams {
                let key = (board.clone(), *stream);
                if self
                    .waiting
                    .get(&key)
                    .is_some_and(|(_, at)| Instant::now() < *at)
                {
                    continue;
                }
                match self.stream(board, *stream).await {
                    Ok(()) => {
                        self.waiting.remove(&key);
                    }
                    Err(e) => {
                        let failures = self.waiting.get(&key).map_or(0, |(n, _)| *n) + 1;
                        let wait = backoff(&self.options, failures);
                        let window = stream.map(|w| w.to_string()).unwrap_or_default();
                        tracing::warn!(board = %board, window, error = %e,
                            retry_in = ?wait, "{}: delivery failed", F::NAME);
                        self.waiting.insert(key, (failures, Instant::now() + wait));
                    }
                }
            }
        }
        self.followed = listed;
    }

    /// Delivers a stream's events after its cursor, oldest first, moving the cursor past
    /// each one received.
    async fn stream(&self, board: &BoardName, stream: Option<Span>) -> Result<(), String> {
        loop {
            let due = F::due(&self.boards, board, stream)
                .await
                .map_err(|e| e.to_string())?;
            for event in &due {
                self.post(board, event).await?;
                F::delivered(&self.boards, board, stream, event)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            if due.len() < BATCH {
                return Ok(());
            }
        }
    }

    /// POSTs one event; `Ok` on a 2xx answer.
    async fn post(&self, board: &BoardName, event: &F::Event) -> Result<(), String> {
        let body = F::body(board, event).map_err(|e| e.to_string())?;
        let mut request = Request::post(self.options.url.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header("Idempotency-Key", F::idempotency_key(board, event));
        if let Some(secret) = &self.options.secret {
            request = request.header("Rollboard-Signature", signature(secret, &body));
        }
        let request = request.body(Body::from(body)).map_err(|e| e.to_string())?;
        let answer = tokio::time::timeout(self.options.timeout, self.client.request(request))
            .await
            .map_err(|_| format!("no answer within {:?}", self.options.timeout))
            .and_then(|r| r.map_err(|e| format!("POST failed: {}", causes(&e))))
            .and_then(|answer| {
                if answer.status().is_success() {
                    Ok(())
                } else {
                    Err(format!("the receiver answered {}", answer.status()))
                }
            });
        F::count(if answer.is_ok() {
            "delivered"
        } else {
            "failed"
        });
        answer
    }
}

/// `error` and its causes, `: `-separated: the legacy client's own message
/// (`client error (Connect)`) does not say why (a certificate that does not verify, say).
fn causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text = format!("{text}: {e}");
        cause = e.source();
    }
    text
}

/// The `Rollboard-Signature` of `body` under `secret`: `sha256=` and the HMAC-SHA256,
/// in lowercase hex.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let tag = ring::hmac::sign(&key, body);
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
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

    #[test]
    fn only_http_and_https_urls_with_a_host_are_taken() {
        assert!(WebhookOptions::new("http://127.0.0.1:9000/hook").is_ok());
        for bad in ["ftp://x/", "/hook", "https:/hook", "not a url"] {
            assert!(WebhookOptions::new(bad).is_err(), "{bad}");
        }
    }

    #[cfg(feature = "tls")]
    #[test]
    fn an_https_url_is_taken_with_tls() {
        let options = WebhookOptions::new("https://hooks.example.com/moves").unwrap();
        assert_eq!(options.url.to_string(), "https://hooks.example.com/moves");
    }

    #[cfg(not(feature = "tls"))]
    #[test]
    fn an_https_url_is_refused_without_tls() {
        assert_eq!(
            WebhookOptions::new("https://hooks.example.com/moves"),
            Err(
                "\"https://hooks.example.com/moves\" is an https:// URL, but this rollboard \
                 was built without TLS (the `tls` feature): give an http:// URL, or build with \
                 TLS"
                .into()
            )
        );
    }

    #[test]
    fn a_signature_is_the_hmac_sha256_of_the_body_in_hex() {
        // RFC 4231, test case 2.
        let body = b"what do ya want for nothing?";
        assert_eq!(
            signature("Jefe", body),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn backoff_doubles_up_to_the_max() {
        let mut o = WebhookOptions::new("http://h/").unwrap();
        o.retry_min = Duration::from_secs(1);
        o.retry_max = Duration::from_secs(5);
        let waits: Vec<u64> = (1..=5).map(|n| backoff(&o, n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 5, 5]);
    }
}
