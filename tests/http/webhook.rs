//! The snapshot webhook against a local receiver (an axum server on a free port): each
//! snapshot arrives with its body and `Idempotency-Key`; a receiver failing the first
//! attempts still gets it; two replicas deliver each at least once with the same key;
//! snapshots appended by a process that then died are delivered by another. The review
//! webhook likewise delivers each member a review gate holds, once per hold, and the
//! changes webhook each change of a watched top, in order, signed with the webhook secret,
//! to an `http://` receiver or an `https://` one whose certificate a private CA
//! (`webhook_ca`) signed.

#[cfg(feature = "tls")]
use std::path::{Path, PathBuf};
#[cfg(feature = "tls")]
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use rollboard::service::{ServiceConfig, WebhookOptions};
use rollboard::{BoardConfig, Rollboard, Settings, SnapshotPolicy};
use serde_json::{Value, json};

use crate::support::{START, TestApp, TestRedis, clock, spawn_app_with, unique};

/// One POST the receiver got: its key, its body, and whether it answered 2xx.
#[derive(Debug, Clone)]
struct Attempt {
    key: String,
    body: Value,
    /// The body as sent, and its `Rollboard-Signature` header.
    raw: Vec<u8>,
    signature: Option<String>,
    accepted: bool,
}

#[derive(Clone, Default)]
struct Receiver {
    attempts: Arc<Mutex<Vec<Attempt>>>,
    /// Attempts still to answer 503.
    failing: Arc<Mutex<usize>>,
}

impl Receiver {
    /// The accepted deliveries.
    fn accepted(&self) -> Vec<Attempt> {
        let attempts = self.attempts.lock().unwrap();
        attempts.iter().filter(|a| a.accepted).cloned().collect()
    }

    /// Distinct keys accepted, sorted.
    fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.accepted().into_iter().map(|a| a.key).collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// Waits (at most 10 s) until `count` distinct keys were accepted.
    async fn wait_keys(&self, count: usize) -> Vec<String> {
        for _ in 0..500 {
            if self.keys().len() >= count {
                return self.keys();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!(
            "the receiver got {:?}, not {count} snapshots",
            self.attempts.lock().unwrap()
        );
    }
}

async fn hook(
    State(receiver): State<Receiver>,
    headers: HeaderMap,
    raw: axum::body::Bytes,
) -> StatusCode {
    let body: Value = serde_json::from_slice(&raw).unwrap();
    let signature = headers
        .get("rollboard-signature")
        .map(|v| v.to_str().unwrap().to_owned());
    let key = headers
        .get("idempotency-key")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let accepted = {
        let mut failing = receiver.failing.lock().unwrap();
        if *failing > 0 {
            *failing -= 1;
            false
        } else {
            true
        }
    };
    receiver.attempts.lock().unwrap().push(Attempt {
        key,
        body,
        raw: raw.to_vec(),
        signature,
        accepted,
    });
    if accepted {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

/// A receiver that fails its first `failing` attempts, and its routes (`POST /hook`).
fn receiver_app(failing: usize) -> (axum::Router, Receiver) {
    let receiver = Receiver {
        failing: Arc::new(Mutex::new(failing)),
        ..Receiver::default()
    };
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(hook))
        .with_state(receiver.clone());
    (app, receiver)
}

/// A receiver at `http://127.0.0.1:<port>/hook` that fails its first `failing` attempts.
async fn receiver(failing: usize) -> (String, Receiver) {
    let (app, receiver) = receiver_app(failing);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, receiver)
}

/// Delivery to `url`, with short retry and poll intervals; the list of boards is re-read
/// every `relist` (and at once after a board created through the same process).
fn options(url: &str, relist: Duration) -> WebhookOptions {
    WebhookOptions {
        retry_min: Duration::from_millis(10),
        retry_max: Duration::from_millis(50),
        poll_every: Duration::from_millis(10),
        relist_every: relist,
        ..WebhookOptions::new(url).unwrap()
    }
}

/// A service config delivering snapshots as [`options`] says.
fn config(url: &str, relist: Duration) -> ServiceConfig {
    ServiceConfig {
        snapshot_webhook: Some(options(url, relist)),
        ..ServiceConfig::default()
    }
}

fn key(board: &str, window: i64, boundary: i64) -> String {
    format!("{board}:{window}:{boundary}")
}

/// Creates a board with snapshots (top 2) over HTTP and writes bob 7, alice 5, carol 5
/// in slot START.
async fn board_with_events(app: &TestApp) -> String {
    let b = unique("hook");
    let config =
        json!({"slot": "1h", "windows": ["1h", "2h"], "snapshots": {"top": 2, "keep": 10}});
    let created = app.put(&format!("/v1/boards/{b}"), config).await;
    assert_eq!(created.status.as_u16(), 201, "{:?}", created.body);
    app.at(60);
    let events = json!({"events": [
        {"member": "bob", "delta": 7},
        {"member": "alice", "delta": 5},
        {"member": "carol", "delta": 5},
    ]});
    let written = app.post(&format!("/v1/boards/{b}/events"), events).await;
    assert_eq!(written.status.as_u16(), 200);
    b
}

/// The 2h window's snapshot at START + 1h of [`board_with_events`], taken at +5 s.
fn two_hour_body(b: &str) -> Value {
    json!({"board": b, "window": "2h", "boundary": START + 3600,
    "taken_ms": (START + 3605) * 1000, "entries": [
        {"rank": 1, "member": "bob", "score": 7},
        {"rank": 2, "member": "alice", "score": 5},
    ]})
}

/// Board `b` watching its `1h` top 2, and the likes that make four changes: a and b
/// enter, then b passes a.
async fn watched_moves(app: &TestApp, b: &str) {
    let watched = json!({"slot": "1h", "windows": ["1h"], "watch": [{"window": "1h", "top": 2}]});
    let created = app.put(&format!("/v1/boards/{b}"), watched).await;
    assert_eq!(created.status.as_u16(), 201, "{:?}", created.body);
    for (member, delta) in [("a", 2), ("b", 1), ("b", 2)] {
        let event = json!({"member": member, "delta": delta});
        let written = app.post(&format!("/v1/boards/{b}/events"), event).await;
        assert_eq!(written.status.as_u16(), 200, "{:?}", written.body);
    }
}

/// The changes webhook's cursor of board `b` is the id of the last change `accepted`.
async fn assert_cursor_at(redis: &TestRedis, b: &str, accepted: &[Attempt]) {
    let mut raw = redis.raw().await;
    let cursor: Option<String> = redis::cmd("GET")
        .arg(format!("board_{{{b}}}:changes_sent"))
        .query_async(&mut raw)
        .await
        .unwrap();
    let last = accepted.last().unwrap().body["id"].as_str();
    assert_eq!(cursor.as_deref(), last);
}

#[tokio::test]
async fn each_snapshot_arrives_with_its_body_and_key_even_after_failed_attempts() {
    let (url, receiver) = receiver(3).await;
    let redis = Arc::new(TestRedis::start().await);
    // The board is created through this service: it is listed at once, long before the
    // default re-listing.
    let app = spawn_app_with(
        redis.clone(),
        clock(),
        config(&url, Duration::from_secs(30)),
    )
    .await;
    let b = board_with_events(&app).await;
    app.at(3605);
    let keys = receiver.wait_keys(2).await;
    assert_eq!(
        keys,
        [key(&b, 3600, START + 3600), key(&b, 7200, START + 3600)]
    );
    let accepted = receiver.accepted();
    let two = accepted.iter().find(|a| a.key.contains(":7200:")).unwrap();
    assert_eq!(two.body, two_hour_body(&b));
    let one = accepted.iter().find(|a| a.key.contains(":3600:")).unwrap();
    assert_eq!(
        one.body,
        json!({"board": b, "window": "1h", "boundary": START + 3600,
            "taken_ms": (START + 3605) * 1000, "entries": []})
    );
    // The three refused attempts carried keys of these same snapshots.
    let attempts = receiver.attempts.lock().unwrap().clone();
    let refused: Vec<&Attempt> = attempts.iter().filter(|a| !a.accepted).collect();
    assert_eq!(refused.len(), 3);
    assert!(refused.iter().all(|a| keys.contains(&a.key)), "{refused:?}");
    // Each window's cursor stands at the boundary delivered.
    let mut raw = redis.raw().await;
    let cursors: Vec<Option<i64>> = redis::cmd("HMGET")
        .arg(format!("snapsent_{{{b}}}"))
        .arg(3600)
        .arg(7200)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(cursors, [Some(START + 3600), Some(START + 3600)]);
}

#[tokio::test]
async fn two_replicas_deliver_each_snapshot_at_least_once_under_one_key() {
    let (url, receiver) = receiver(0).await;
    let redis = Arc::new(TestRedis::start().await);
    let clock = clock();
    // The second replica learns of the board by re-listing.
    let relist = Duration::from_millis(10);
    let first = spawn_app_with(redis.clone(), clock.clone(), config(&url, relist)).await;
    let second = spawn_app_with(redis.clone(), clock.clone(), config(&url, relist)).await;
    let b = board_with_events(&first).await;
    first.at(3605);
    receiver.wait_keys(2).await;
    second.at(2 * 3600 + 5);
    let keys = receiver.wait_keys(4).await;
    let mut expected = vec![
        key(&b, 3600, START + 3600),
        key(&b, 3600, START + 7200),
        key(&b, 7200, START + 3600),
        key(&b, 7200, START + 7200),
    ];
    expected.sort();
    assert_eq!(keys, expected);
    // Every delivery under one key carries the same body: the receiver may keep the first.
    let accepted = receiver.accepted();
    for k in &keys {
        let bodies: Vec<&Value> = accepted
            .iter()
            .filter(|a| &a.key == k)
            .map(|a| &a.body)
            .collect();
        assert!(bodies.windows(2).all(|w| w[0] == w[1]), "{k}: {bodies:?}");
    }
    let two = accepted
        .iter()
        .find(|a| a.key == key(&b, 7200, START + 3600))
        .unwrap();
    assert_eq!(two.body, two_hour_body(&b));
}

#[tokio::test]
async fn snapshots_appended_by_a_process_that_died_are_delivered_by_another() {
    let (url, receiver) = receiver(0).await;
    let redis = Arc::new(TestRedis::start().await);
    let clock = clock();
    let died = unique("died");
    // The appender: no webhook; it takes the snapshot at START + 1h, then is gone.
    {
        let appender = Rollboard::with(
            redis.store().await,
            Arc::new(clock.clone()),
            Settings::default(),
        );
        let policy = SnapshotPolicy::new(2, 10).unwrap();
        let config = BoardConfig::parse("1h", &["1h", "2h"])
            .unwrap()
            .with_snapshots(Some(policy));
        appender.create(&died, config).await.unwrap();
        clock.advance_secs(60);
        appender.windowed(&died).incr("bob", 7, None).await.unwrap();
        clock.advance_secs(3545);
        assert!(
            appender
                .windowed(&died)
                .retire(None)
                .await
                .unwrap()
                .complete
        );
        assert_eq!(
            appender.windowed(&died).take_snapshots().await.unwrap(),
            rollboard::SnapshotPass::Done { appended: 2 }
        );
    }
    let _app = spawn_app_with(redis, clock, config(&url, Duration::from_secs(30))).await;
    let keys = receiver.wait_keys(2).await;
    assert_eq!(
        keys,
        [
            key(&died, 3600, START + 3600),
            key(&died, 7200, START + 3600)
        ]
    );
    let two = receiver
        .accepted()
        .into_iter()
        .find(|a| a.key.contains(":7200:"))
        .unwrap();
    assert_eq!(
        two.body["entries"],
        json!([{"rank": 1, "member": "bob", "score": 7}])
    );
}

/// A service whose review webhook posts to a receiver failing its first `failing`
/// attempts, on a Redis of its own.
async fn review_hooked(failing: usize) -> (TestApp, Receiver, Arc<TestRedis>) {
    let (url, receiver) = receiver(failing).await;
    let redis = Arc::new(TestRedis::start().await);
    let config = ServiceConfig {
        review_webhook: Some(options(&url, Duration::from_secs(30))),
        ..ServiceConfig::default()
    };
    (
        spawn_app_with(redis.clone(), clock(), config).await,
        receiver,
        redis,
    )
}

/// The bodies of the review webhook's deliveries under `keys`, each checked to name board
/// `b` and be keyed `<b>:<id>`.
fn held_bodies(receiver: &Receiver, b: &str, keys: &[String]) -> Vec<Value> {
    let accepted = receiver.accepted();
    let bodies = keys.iter().map(|key| {
        let body = accepted
            .iter()
            .find(|a| &a.key == key)
            .unwrap()
            .body
            .clone();
        let id = body["id"].as_str().unwrap();
        assert_eq!(key, &format!("{b}:{id}"));
        assert_eq!(body["board"], json!(b));
        body
    });
    bodies.collect()
}

#[tokio::test]
async fn each_member_a_review_gate_holds_arrives_once_per_hold_even_after_failed_attempts() {
    let (app, receiver, redis) = review_hooked(2).await;
    let b = unique("held");
    let gated = json!({"slot": "1h", "windows": ["1h"], "review": {"above_rank": 1}});
    let created = app.put(&format!("/v1/boards/{b}"), gated).await;
    assert_eq!(created.status.as_u16(), 201, "{:?}", created.body);
    let allow = json!({"member": "old", "decision": "allow"});
    assert_eq!(
        app.post(&format!("/v1/boards/{b}/review"), allow)
            .await
            .status
            .as_u16(),
        200
    );
    // old leads; new:1 passes it (held), then new:2 too (held); new:3 stays below.
    for (member, delta) in [("old", 5), ("new:1", 6), ("new:2", 9), ("new:3", 2)] {
        let event = json!({"member": member, "delta": delta});
        let written = app.post(&format!("/v1/boards/{b}/events"), event).await;
        assert_eq!(written.status.as_u16(), 200, "{:?}", written.body);
    }
    let keys = receiver.wait_keys(2).await;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut members = Vec::new();
    for body in held_bodies(&receiver, &b, &keys) {
        // Held by Redis's clock, moments ago.
        let held = body["held_ms"].as_i64().unwrap();
        assert!((now_ms - 60_000..=now_ms + 1_000).contains(&held), "{body}");
        members.push(body["member"].as_str().unwrap().to_owned());
    }
    members.sort();
    assert_eq!(members, ["new:1", "new:2"]);
    let refused = receiver
        .attempts
        .lock()
        .unwrap()
        .iter()
        .filter(|a| !a.accepted)
        .count();
    assert_eq!(refused, 2);
    // The cursor stands at the newest delivered; nothing more arrives.
    let mut raw = redis.raw().await;
    let cursor: Option<String> = redis::cmd("GET")
        .arg(format!("board_{{{b}}}:held_sent"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(
        cursor.as_deref(),
        keys.iter().map(|k| &k[b.len() + 1..]).max()
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(receiver.keys().len(), 2);
}

/// A sharded board's holds arrive as its shards' streams, merged: each once, under the
/// id `<shard>/<ms>-<n>`.
#[tokio::test]
async fn each_member_a_sharded_boards_gate_holds_arrives_once() {
    let (app, receiver, _redis) = review_hooked(0).await;
    let b = unique("held-sharded");
    let gated = json!({"slot": "1h", "windows": ["1h"], "shards": 3, "review": {"above_rank": 1}});
    let created = app.put(&format!("/v1/boards/{b}"), gated).await;
    assert_eq!(created.status.as_u16(), 201, "{:?}", created.body);
    let allow = json!({"member": "old", "decision": "allow"});
    let decided = app.post(&format!("/v1/boards/{b}/review"), allow).await;
    assert_eq!(decided.status.as_u16(), 200, "{:?}", decided.body);
    // old leads; each new:i passes it (held), wherever its shard.
    let mut events = vec![json!({"member": "old", "delta": 5})];
    events.extend((1..=6).map(|i| json!({"member": format!("new:{i}"), "delta": 5 + i})));
    for event in events {
        let written = app.post(&format!("/v1/boards/{b}/events"), event).await;
        assert_eq!(written.status.as_u16(), 200, "{:?}", written.body);
    }
    let keys = receiver.wait_keys(6).await;
    let mut members = Vec::new();
    for body in held_bodies(&receiver, &b, &keys) {
        let id = body["id"].as_str().unwrap();
        let (shard, _) = id.split_once('/').unwrap();
        assert!(["0", "1", "2"].contains(&shard), "{id}");
        members.push(body["member"].as_str().unwrap().to_owned());
    }
    members.sort();
    assert_eq!(
        members,
        (1..=6).map(|i| format!("new:{i}")).collect::<Vec<_>>()
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(receiver.keys().len(), 6);
}

#[tokio::test]
async fn each_change_of_a_watched_top_arrives_in_order_signed_with_the_secret() {
    let (url, receiver) = receiver(1).await;
    let redis = Arc::new(TestRedis::start().await);
    let secret = "s3cret";
    let config = ServiceConfig {
        changes_webhook: Some(WebhookOptions {
            secret: Some(secret.into()),
            ..options(&url, Duration::from_secs(30))
        }),
        ..ServiceConfig::default()
    };
    let app = spawn_app_with(redis.clone(), clock(), config).await;
    let b = unique("moves");
    watched_moves(&app, &b).await;
    let keys = receiver.wait_keys(4).await;
    let accepted = receiver.accepted();
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let mut seen = Vec::new();
    for attempt in &accepted {
        let body = &attempt.body;
        assert_eq!(attempt.key, format!("{b}:{}", body["id"].as_str().unwrap()));
        let hex = attempt
            .signature
            .as_deref()
            .unwrap()
            .strip_prefix("sha256=")
            .unwrap();
        let tag: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        ring::hmac::verify(&key, &attempt.raw, &tag).expect("the signature of the body");
        assert_eq!(body["board"], json!(b));
        seen.push((
            body["type"].clone(),
            body["member"].clone(),
            body["rank"].clone(),
        ));
    }
    // In order (the first attempt failed and was retried), each once.
    assert_eq!(
        seen,
        [
            (json!("entered"), json!("a"), json!(1)),
            (json!("entered"), json!("b"), json!(2)),
            (json!("moved"), json!("b"), json!(1)),
            (json!("moved"), json!("a"), json!(2)),
        ]
    );
    assert_eq!(keys.len(), 4);
    assert_cursor_at(&redis, &b, &accepted).await;
}

/// A private CA and a certificate it signed for the receiver (127.0.0.1 and localhost),
/// made by `openssl` in a directory of their own: the directory, the CA's PEM file, the
/// receiver's certificate and its key.
#[cfg(feature = "tls")]
fn private_ca_and_receiver_certificate() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let openssl = |args: &[&str]| {
        let made = Command::new("openssl")
            .current_dir(dir.path())
            .args(args)
            .stderr(Stdio::null())
            .status()
            .expect("run openssl");
        assert!(made.success(), "openssl {args:?}");
    };
    // The CA (`req -x509` marks it CA:TRUE), with a P-256 key.
    openssl(&[
        "req",
        "-x509",
        "-days",
        "2",
        "-subj",
        "/CN=rollboard test CA",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    ]);
    // The receiver's own: a leaf the CA signs (rustls refuses a CA certificate as a
    // server's).
    openssl(&[
        "req",
        "-new",
        "-subj",
        "/CN=localhost",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        "receiver.key",
        "-out",
        "receiver.csr",
    ]);
    std::fs::write(
        dir.path().join("receiver.ext"),
        "basicConstraints = CA:FALSE\nsubjectAltName = IP:127.0.0.1, DNS:localhost\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-days",
        "2",
        "-in",
        "receiver.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-extfile",
        "receiver.ext",
        "-out",
        "receiver.pem",
    ]);
    let path = |name: &str| dir.path().join(name);
    let (ca, certificate, key) = (path("ca.pem"), path("receiver.pem"), path("receiver.key"));
    (dir, ca, certificate, key)
}

/// A receiver at `https://127.0.0.1:<port>/hook` presenting `certificate` (and `key`)
/// that fails its first `failing` attempts.
#[cfg(feature = "tls")]
async fn tls_receiver(failing: usize, certificate: &Path, key: &Path) -> (String, Receiver) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let (app, receiver) = receiver_app(failing);
    let chain = CertificateDer::pem_file_iter(certificate)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(key).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let (acceptor, app) = (acceptor.clone(), app.clone());
            tokio::spawn(async move {
                // A failed handshake ends that connection only.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper_util::service::TowerToHyperService::new(app);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (url, receiver)
}

#[cfg(feature = "tls")]
#[tokio::test]
async fn each_change_arrives_over_https_at_a_receiver_whose_certificate_the_webhook_ca_signed() {
    let (_dir, ca, certificate, key) = private_ca_and_receiver_certificate();
    let (url, receiver) = tls_receiver(1, &certificate, &key).await;
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let redis = Arc::new(TestRedis::start().await);
    let config = ServiceConfig {
        changes_webhook: Some(WebhookOptions {
            ca: Some(ca),
            ..options(&url, Duration::from_secs(30))
        }),
        ..ServiceConfig::default()
    };
    let app = spawn_app_with(redis.clone(), clock(), config).await;
    let b = unique("tls");
    watched_moves(&app, &b).await;
    let keys = receiver.wait_keys(4).await;
    let accepted = receiver.accepted();
    let mut bodies = Vec::new();
    for attempt in &accepted {
        let mut body = attempt.body.clone();
        let fields = body.as_object_mut().unwrap();
        let id = fields.remove("id").unwrap();
        assert_eq!(attempt.key, format!("{b}:{}", id.as_str().unwrap()));
        assert!(fields.remove("at").unwrap().is_i64());
        bodies.push(body);
    }
    let change = |kind: &str, member: &str, rank: u64, score: i64| {
        json!({"board": b, "type": kind, "member": member, "window": "1h", "rank": rank,
            "score": score, "cause": "write"})
    };
    let mut moved_b = change("moved", "b", 1, 3);
    moved_b["from"] = json!(2);
    moved_b["to"] = json!(1);
    moved_b["passed"] = json!(["a"]);
    let mut moved_a = change("moved", "a", 2, 2);
    moved_a["from"] = json!(1);
    moved_a["to"] = json!(2);
    moved_a["passed"] = json!(["b"]);
    // In order (the first attempt failed and was retried), each once, unsigned.
    assert_eq!(
        bodies,
        [
            change("entered", "a", 1, 2),
            change("entered", "b", 2, 1),
            moved_b,
            moved_a,
        ]
    );
    assert_eq!(keys.len(), 4);
    assert!(accepted.iter().all(|a| a.signature.is_none()));
    assert_cursor_at(&redis, &b, &accepted).await;
}

#[cfg(feature = "tls")]
#[tokio::test]
async fn an_https_webhook_whose_ca_file_does_not_exist_stops_the_start_naming_it() {
    let redis = TestRedis::start().await;
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("hooks-ca.pem");
    let config = ServiceConfig {
        changes_webhook: Some(WebhookOptions {
            ca: Some(missing.clone()),
            ..options("https://127.0.0.1:9/hook", Duration::from_secs(30))
        }),
        max_clock_skew: None,
        ..ServiceConfig::default()
    };
    let boards = Rollboard::with(redis.store().await, Arc::new(clock()), Settings::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let error = rollboard::service::run(boards, &config, listener, std::future::pending())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "the webhook CA {} (webhook_ca, ROLLBOARD_WEBHOOK_CA) cannot be read (No such file \
             or directory (os error 2)): give the PEM file of the CA that signed the \
             receiver's certificate, or unset it to trust the system's roots only",
            missing.display()
        )
    );
}
