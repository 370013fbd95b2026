//! `spawn_app`: the real service (router, scheduler, metrics) on a free port, against a
//! real Redis, with a manual clock; plus a small JSON client.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use rollboard::service::{self, ServiceConfig, ServiceError};
use rollboard::{ManualClock, MemoryStore, Rollboard, Timestamp};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use crate::test_redis::TestRedis;

/// 2023-11-14T22:00:00Z: a whole hour.
pub const START: i64 = 1_700_000_000 - 1_700_000_000 % 3600;

/// A running service.
pub struct TestApp {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    pub client: reqwest::Client,
    pub clock: ManualClock,
    pub redis: Arc<TestRedis>,
    shutdown: Option<oneshot::Sender<()>>,
    handle: Option<JoinHandle<Result<(), ServiceError>>>,
}

/// A response: status and JSON body (`Value::Null` when the body is not JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

impl Reply {
    /// Reads a response whole.
    pub async fn of(response: reqwest::Response) -> Reply {
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        Reply {
            status,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
            headers,
        }
    }

    /// The error code of an error body.
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
}

/// The `(index, error code)` pairs of a batch reply's `rejected` list.
pub fn rejected_codes(body: &Value) -> Vec<(u64, &str)> {
    body["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["index"].as_u64().unwrap(),
                r["error"]["code"].as_str().unwrap(),
            )
        })
        .collect()
}

pub fn clock() -> ManualClock {
    ManualClock::new(Timestamp::from_unix_seconds(START).unwrap())
}

/// The service as `serve` runs it from `config` (its store opened by `open_store`), on a
/// free port with `clock`.
pub struct Served {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), ServiceError>>,
}

impl Served {
    /// Starts it.
    pub async fn start(config: ServiceConfig, clock: &ManualClock) -> Served {
        let store = service::open_store(&config).await.unwrap();
        let boards = Rollboard::with(store, Arc::new(clock.clone()), config.settings.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            service::run(boards, &config, listener, async {
                let _ = stopped.await;
            })
            .await
        });
        Served { base, stop, task }
    }

    /// Stops it, and checks that it stopped cleanly.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap().unwrap();
    }
}

/// The service with default settings on a fresh Redis.
pub async fn spawn_app() -> TestApp {
    let redis = Arc::new(TestRedis::start().await);
    spawn_app_with(redis, clock(), ServiceConfig::default()).await
}

/// The service on `redis` with `clock` and `config` (its `bind` is ignored: a free port).
/// The clock is not compared with Redis's: test clocks stand in 2023 on purpose.
pub async fn spawn_app_with(
    redis: Arc<TestRedis>,
    clock: ManualClock,
    config: ServiceConfig,
) -> TestApp {
    let config = ServiceConfig {
        max_clock_skew: None,
        ..config
    };
    spawn_app_checking_clock(redis, clock, config).await
}

/// Like [`spawn_app_with`], with the clock check of `config` left as it is.
pub async fn spawn_app_checking_clock(
    redis: Arc<TestRedis>,
    clock: ManualClock,
    config: ServiceConfig,
) -> TestApp {
    let store = redis.store().await;
    spawn_app_on(store, redis, clock, config).await
}

/// The service on `store` (Redis through a fault proxy, say), `redis` being the server
/// underneath; the clock check of `config` left as it is.
pub async fn spawn_app_on(
    store: Arc<dyn rollboard::Store>,
    redis: Arc<TestRedis>,
    clock: ManualClock,
    config: ServiceConfig,
) -> TestApp {
    let boards = Rollboard::with(store, Arc::new(clock.clone()), config.settings.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = oneshot::channel::<()>();
    let runner = boards.clone();
    let handle = tokio::spawn(async move {
        service::run(runner, &config, listener, async {
            let _ = rx.await;
        })
        .await
    });
    let app = TestApp {
        url,
        client: reqwest::Client::new(),
        clock,
        redis,
        shutdown: Some(tx),
        handle: Some(handle),
    };
    for _ in 0..200 {
        if app
            .client
            .get(format!("{}/healthz", app.url))
            .send()
            .await
            .is_ok()
        {
            return app;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the service did not start");
}

impl TestApp {
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        token: Option<&str>,
    ) -> Reply {
        let mut request = self.client.request(method, format!("{}{path}", self.url));
        if let Some(body) = body {
            request = request.json(&body);
        }
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        Reply::of(request.send().await.expect("request sent")).await
    }

    /// Posts `body` (JSON text, sent as it is) to `path`, with `key` as its
    /// `Idempotency-Key` when given.
    pub async fn post_keyed(&self, path: &str, body: &str, key: Option<&str>) -> Reply {
        let mut request = self
            .client
            .post(format!("{}{path}", self.url))
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        Reply::of(request.send().await.expect("request sent")).await
    }

    /// The body of a GET as text (for `/metrics`).
    pub async fn get_text(&self, path: &str) -> String {
        let response = self.client.get(format!("{}{path}", self.url)).send();
        response.await.unwrap().text().await.unwrap()
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.request(Method::GET, path, None, None).await
    }

    pub async fn put(&self, path: &str, body: Value) -> Reply {
        self.request(Method::PUT, path, Some(body), None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.request(Method::POST, path, Some(body), None).await
    }

    pub async fn delete(&self, path: &str) -> Reply {
        self.request(Method::DELETE, path, None, None).await
    }

    /// Creates a board with a unique name; returns the name.
    pub async fn board(&self, slot: &str, windows: &[&str]) -> String {
        let name = unique("h");
        let reply = self
            .put(
                &format!("/v1/boards/{name}"),
                serde_json::json!({"slot": slot, "windows": windows}),
            )
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
        name
    }

    /// Moves the clock to `START + seconds`.
    pub fn at(&self, seconds: i64) {
        self.clock
            .set(Timestamp::from_unix_seconds(START + seconds).unwrap());
    }

    /// Sends the shutdown signal and waits for the service to stop.
    pub async fn stop(mut self) -> Result<(), ServiceError> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.handle.take().unwrap().await.unwrap()
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

pub use crate::test_redis::unique;

/// Which store a service under test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Memory,
    Redis,
}

/// The service on a store of its own: a fresh Redis (started for this test), or the
/// memory store (the Redis is started too: the harness holds one, unused).
pub async fn fresh_app(backend: Backend) -> TestApp {
    let redis = Arc::new(TestRedis::spawn().await);
    match backend {
        Backend::Redis => spawn_app_with(redis, clock(), ServiceConfig::default()).await,
        Backend::Memory => {
            let config = ServiceConfig {
                max_clock_skew: None,
                ..ServiceConfig::default()
            };
            spawn_app_on(Arc::new(MemoryStore::new()), redis, clock(), config).await
        }
    }
}

/// Runs each case (an async fn taking a [`TestApp`]) on the memory store and on Redis,
/// each on a [`fresh_app`].
macro_rules! on_memory_and_redis {
    ($($case:ident),* $(,)?) => {
        mod memory {
            $(#[tokio::test] async fn $case() {
                super::$case(crate::support::fresh_app(crate::support::Backend::Memory).await)
                    .await
            })*
        }
        mod redis {
            $(#[tokio::test] async fn $case() {
                super::$case(crate::support::fresh_app(crate::support::Backend::Redis).await)
                    .await
            })*
        }
    };
}

/// The top of `board`'s `window` (up to 100 entries) as (member, score) pairs.
pub async fn top_pairs(app: &TestApp, board: &str, window: &str) -> Vec<(String, i64)> {
    let reply = app
        .get(&format!("/v1/boards/{board}/top?window={window}&limit=100"))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    reply.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["member"].as_str().unwrap().to_owned(),
                e["score"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// Literal (member, score) pairs, to compare with [`top_pairs`].
pub fn pairs(items: &[(&str, i64)]) -> Vec<(String, i64)> {
    items.iter().map(|(m, s)| (m.to_string(), *s)).collect()
}

/// `(rank, member, score)` of each entry of a page.
pub fn entries(body: &Value) -> Vec<(u64, String, i64)> {
    body["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries in {body}"))
        .iter()
        .map(|e| {
            (
                e["rank"].as_u64().unwrap(),
                e["member"].as_str().unwrap().to_owned(),
                e["score"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// Literal `(rank, member, score)` entries, to compare with [`entries`].
pub fn ranked(items: &[(u64, &str, i64)]) -> Vec<(u64, String, i64)> {
    items
        .iter()
        .map(|(r, m, s)| (*r, m.to_string(), *s))
        .collect()
}

/// The entries of `GET path`, which must answer 200.
pub async fn page(app: &TestApp, path: &str) -> Vec<(u64, String, i64)> {
    let reply = app.get(path).await;
    assert_eq!(reply.status, StatusCode::OK, "{path}: {:?}", reply.body);
    entries(&reply.body)
}

/// Polls `GET path` until its entries are `want` (the retirer runs in the background
/// once the clock moves).
pub async fn wait_entries(app: &TestApp, path: &str, want: &[(u64, String, i64)]) {
    let mut last = Vec::new();
    for _ in 0..100 {
        last = page(app, path).await;
        if last == want {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{path} answered {last:?}, not {want:?}, within 5 s");
}
