//! Rate windows over HTTP: hits, counts, checks and deletes, their errors and tokens,
//! the OpenAPI entries, and exactly `limit` allowed under concurrent checks.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use rollboard::http::Tokens;
use rollboard::service::ServiceConfig;
use serde_json::json;

use crate::support::{START, TestRedis, clock, rejected_codes, spawn_app, spawn_app_with, unique};

#[tokio::test]
async fn hits_are_counted_read_checked_and_deleted() {
    let app = spawn_app().await;
    // A key with a tag, a separator, a space and non-ASCII, percent-encoded in the path.
    let key = format!("{}%7Bu%7D%3A%20%E7%94%A8", unique("r"));
    let base = format!("/v1/rates/{key}");

    let hit = app.post(&format!("{base}/hits"), json!({"count": 3})).await;
    assert_eq!(
        (hit.status, hit.body.clone()),
        (StatusCode::OK, json!({"accepted": 3, "tiers": 4}))
    );
    let empty = app
        .request(Method::POST, &format!("{base}/hits"), None, None)
        .await;
    assert_eq!(empty.body, json!({"accepted": 1, "tiers": 4}));
    let late = app
        .post(&format!("{base}/hits"), json!({"at": START as f64 - 90.0}))
        .await;
    assert_eq!(late.body, json!({"accepted": 1, "tiers": 3}));

    let read = app.get(&format!("{base}?last=5s,5m")).await;
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(read.body["at"], json!(START as f64));
    assert_eq!(read.body["counts"], json!({"5s": 4, "5m": 5}));
    let all = app.get(&base).await;
    assert_eq!(
        all.body["counts"],
        json!({"5s": 4, "5m": 5, "5h": 5, "5d": 5, "180d": 5})
    );
    let decoded = all.body["key"].as_str().unwrap();
    assert!(decoded.ends_with("{u}: 用"), "{decoded}");

    let check_path = format!("{base}/check");
    let check = |limit: u64| app.post(&check_path, json!({"limit": limit, "last": "5s"}));
    assert_eq!(
        check(5).await.body,
        json!({"allowed": true, "count": 5, "limit": 5, "retry_after": 0.0})
    );
    assert_eq!(
        check(5).await.body,
        json!({"allowed": false, "count": 5, "limit": 5, "retry_after": 5.0})
    );

    assert_eq!(app.delete(&base).await.status, StatusCode::NO_CONTENT);
    assert_eq!(
        app.get(&format!("{base}?last=5s")).await.body["counts"],
        json!({"5s": 0})
    );
}

#[tokio::test]
async fn an_empty_body_is_one_hit_and_a_blank_one_is_not_json() {
    let app = spawn_app().await;
    let key = unique("blank");
    let path = format!("/v1/rates/{key}/hits");
    let empty = app.post_keyed(&path, "", None).await;
    assert_eq!(
        (empty.status, empty.body),
        (StatusCode::OK, json!({"accepted": 1, "tiers": 4}))
    );
    for blank in ["\t", " \n "] {
        let reply = app.post_keyed(&path, blank, None).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::BAD_REQUEST, "bad_request"),
            "{blank:?}: {:?}",
            reply.body
        );
    }
    // Nothing more was counted.
    let counts = app.get(&format!("/v1/rates/{key}?last=5m")).await;
    assert_eq!(counts.body["counts"], json!({"5m": 1}));
}

#[tokio::test]
async fn coverage_full_counts_the_oldest_slot_whole_on_reads_and_checks() {
    let app = spawn_app().await;
    let base = format!("/v1/rates/{}", unique("r"));
    app.clock
        .set(rollboard::Timestamp::from_unix_seconds(START + 50).unwrap());
    let check_path = format!("{base}/check");
    let check = |coverage: &str| {
        app.post(
            &check_path,
            json!({"limit": 3, "last": "5m", "count": 1, "coverage": coverage}),
        )
    };
    for want in 1..=3 {
        assert_eq!(
            check("full").await.body,
            json!({"allowed": true, "count": want, "limit": 3, "retry_after": 0.0})
        );
    }
    // 4 min 19 s later: the partial window misses minute 0, the full one counts it.
    app.clock
        .set(rollboard::Timestamp::from_unix_seconds(START + 309).unwrap());
    let partial = app.get(&format!("{base}?last=5m,6m")).await;
    assert_eq!(partial.body["counts"], json!({"5m": 0, "6m": 3}));
    let named = app
        .get(&format!("{base}?last=5m,6m&coverage=partial"))
        .await;
    assert_eq!(named.body["counts"], json!({"5m": 0, "6m": 3}));
    let full = app.get(&format!("{base}?last=5m,60s&coverage=full")).await;
    assert_eq!(full.body["counts"], json!({"5m": 3, "1m": 0}));
    assert_eq!(
        check("full").await.body,
        json!({"allowed": false, "count": 3, "limit": 3, "retry_after": 51.0})
    );
    // The default coverage is partial: it would let a 4th hit in within 5 minutes.
    let partial_check = app
        .post(&check_path, json!({"limit": 3, "last": "5m"}))
        .await;
    assert_eq!(
        partial_check.body,
        json!({"allowed": true, "count": 1, "limit": 3, "retry_after": 0.0})
    );
}

#[tokio::test]
async fn bad_coverage_is_422_naming_the_accepted_values() {
    let app = spawn_app().await;
    let base = format!("/v1/rates/{}", unique("r"));
    let read = app.get(&format!("{base}?last=5m&coverage=whole")).await;
    let check = app
        .post(
            &format!("{base}/check"),
            json!({"limit": 3, "last": "5m", "coverage": "FULL"}),
        )
        .await;
    let too_long = app
        .post(
            &format!("{base}/check"),
            json!({"limit": 3, "last": "366d", "coverage": "full"}),
        )
        .await;
    let not_text = app
        .post(
            &format!("{base}/check"),
            json!({"limit": 3, "last": "5m", "coverage": 1}),
        )
        .await;
    assert_eq!(
        (read.status, read.body),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"error": {"code": "invalid_query", "message": "invalid query: coverage must be \"partial\" or \"full\", not \"whole\""}})
        )
    );
    assert_eq!(
        (check.status, check.body),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"error": {"code": "invalid_query", "message": "invalid query: coverage must be \"partial\" or \"full\", not \"FULL\""}})
        )
    );
    assert_eq!(
        (too_long.status, too_long.body),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"error": {"code": "invalid_rate_window", "message": "invalid rate window \"366d\": no tier answers it with full coverage, which needs one slot more than the window (tiers: 60x1s,60x1m,24x1h,366x1d)"}})
        )
    );
    assert_eq!(
        (not_text.status, not_text.code().to_owned()),
        (StatusCode::BAD_REQUEST, "bad_request".to_owned())
    );
    // Nothing was counted.
    assert_eq!(
        app.get(&format!("{base}?last=5m")).await.body["counts"],
        json!({"5m": 0})
    );
}

#[tokio::test]
async fn bad_rate_requests_get_their_error_codes() {
    let app = spawn_app().await;
    let base = format!("/v1/rates/{}", unique("r"));
    let cases = [
        app.get(&format!("{base}?last=90s")).await,
        app.post(
            &format!("{base}/hits"),
            json!({"at": START as f64 + 3600.0}),
        )
        .await,
        app.post(
            &format!("{base}/hits"),
            json!({"at": START as f64 - 400.0 * 86400.0}),
        )
        .await,
        app.post(&format!("{base}/hits"), json!({"count": 0})).await,
        app.post(&format!("{base}/hits"), json!({"cuont": 1})).await,
        app.post(&format!("{base}/check"), json!({"limit": 1, "last": "25h"}))
            .await,
        app.post(&format!("{base}/check"), json!({"last": "5s"}))
            .await,
        app.get(&format!("/v1/rates/{}", "k".repeat(257))).await,
    ];
    let got: Vec<(u16, String)> = cases
        .iter()
        .map(|r| (r.status.as_u16(), r.code().to_owned()))
        .collect();
    let want = [
        (422, "invalid_rate_window"),
        (422, "in_future"),
        (422, "too_late"),
        (422, "invalid_delta"),
        (400, "bad_request"),
        (422, "invalid_rate_window"),
        (400, "bad_request"),
        (422, "invalid_rate_key"),
    ];
    let want: Vec<(u16, String)> = want.iter().map(|(s, c)| (*s, c.to_string())).collect();
    assert_eq!(got, want);
}

#[tokio::test]
async fn a_batch_of_hits_counts_each_and_rejects_each_bad_one_by_index() {
    let app = spawn_app().await;
    let (a, b) = (unique("a{x}"), unique("b c"));
    let body = json!({"hits": [
        {"key": a, "count": 2},
        {"key": b},
        {"key": a, "count": 0},
        {"key": b, "at": START as f64 - 400.0 * 86_400.0},
        {"key": "", "count": 1},
        {"key": a, "at": START as f64 + 3_600.0},
        {"key": a, "at": -1.0},
        {"key": b, "count": 3, "at": START as f64 - 90.0},
        {"key": a, "count": -2},
        {"key": b, "count": 4_294_967_296_u64},
    ]});
    let reply = app.post("/v1/rates", body).await;
    assert_eq!(reply.status, StatusCode::OK);
    let codes = rejected_codes(&reply.body);
    let want = [
        (2, "invalid_delta"),
        (3, "too_late"),
        (4, "invalid_rate_key"),
        (5, "in_future"),
        (6, "invalid_time"),
        (8, "invalid_delta"),
        (9, "invalid_delta"),
    ];
    assert_eq!(
        (reply.body["accepted"].clone(), codes),
        (json!(3), want.to_vec())
    );
    let path = |key: &str| format!("/v1/rates/{}?last=5s,5m", urlencode(key));
    let counts = app.get(&path(&a)).await.body["counts"].clone();
    assert_eq!(counts, json!({"5s": 2, "5m": 2}));
    let counts = app.get(&path(&b)).await.body["counts"].clone();
    assert_eq!(counts, json!({"5s": 1, "5m": 4}));

    let many: Vec<_> = (0..10_001).map(|_| json!({"key": a})).collect();
    let too_many = app.post("/v1/rates", json!({ "hits": many })).await;
    assert_eq!(
        (too_many.status, too_many.body["error"]["code"].clone()),
        (StatusCode::PAYLOAD_TOO_LARGE, json!("batch_too_large"))
    );
    let unknown_field = app
        .post("/v1/rates", json!({"hits": [{"key": a, "n": 1}]}))
        .await;
    assert_eq!(unknown_field.status, StatusCode::BAD_REQUEST);
    let counts = app.get(&path(&a)).await.body["counts"].clone();
    assert_eq!(counts, json!({"5s": 2, "5m": 2}));
}

/// `key` percent-encoded for one path segment.
fn urlencode(key: &str) -> String {
    key.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[tokio::test]
async fn rate_writes_need_the_write_token_and_reads_stay_open() {
    let config = ServiceConfig {
        tokens: Tokens {
            write: Some("w".into()),
            admin: Some("a".into()),
            ..Tokens::default()
        },
        ..ServiceConfig::default()
    };
    let app = spawn_app_with(Arc::new(TestRedis::start().await), clock(), config).await;
    let base = format!("/v1/rates/{}", unique("r"));
    let hits = format!("{base}/hits");
    let check = format!("{base}/check");
    let body = json!({"limit": 1, "last": "5s"});
    let statuses = [
        app.request(Method::POST, &hits, Some(json!({})), None)
            .await
            .status,
        app.request(Method::POST, &check, Some(body.clone()), None)
            .await
            .status,
        app.request(Method::DELETE, &base, None, None).await.status,
        app.request(Method::POST, "/v1/rates", Some(json!({"hits": []})), None)
            .await
            .status,
        app.request(Method::POST, &hits, Some(json!({})), Some("w"))
            .await
            .status,
        app.request(Method::POST, &check, Some(body), Some("w"))
            .await
            .status,
        app.request(Method::GET, &base, None, None).await.status,
        app.request(Method::DELETE, &base, None, Some("w"))
            .await
            .status,
    ];
    assert_eq!(
        statuses.map(|s| s.as_u16()),
        [401, 401, 401, 401, 200, 200, 200, 204]
    );
}

#[tokio::test]
async fn the_rate_routes_are_in_the_openapi_document() {
    let app = spawn_app().await;
    let doc = app.get("/openapi.json").await.body;
    for (path, method) in [
        ("/v1/rates/{key}/hits", "post"),
        ("/v1/rates/{key}", "get"),
        ("/v1/rates/{key}", "delete"),
        ("/v1/rates/{key}/check", "post"),
        ("/v1/rates", "post"),
    ] {
        assert_eq!(
            doc["paths"][path][method]["tags"],
            json!(["rates"]),
            "{method} {path}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_http_clients_sending_400_checks_against_a_limit_of_100_get_exactly_100() {
    let app = Arc::new(spawn_app().await);
    let path = format!("/v1/rates/{}/check", unique("c"));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (app, path) = (app.clone(), path.clone());
        tasks.push(tokio::spawn(async move {
            let mut allowed = 0;
            for _ in 0..50 {
                let reply = app.post(&path, json!({"limit": 100, "last": "1m"})).await;
                assert_eq!(reply.status, StatusCode::OK);
                allowed += usize::from(reply.body["allowed"] == json!(true));
            }
            allowed
        }));
    }
    let mut allowed = 0;
    for t in tasks {
        allowed += t.await.unwrap();
    }
    assert_eq!(allowed, 100);
}
