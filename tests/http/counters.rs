//! `/v1/counters`: increments, samples at a precision, listing, dropping, tokens, JSON
//! errors; and the scheduler's clean-up pass.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use rollboard::http::Tokens;
use rollboard::service::{Scheduler, ServiceConfig};
use rollboard::{Rollboard, Settings};
use serde_json::{Value, json};

use crate::support::{START, TestRedis, clock, spawn_app, spawn_app_with, unique};

#[tokio::test]
async fn counters_count_at_every_precision_and_answer_samples() {
    let app = spawn_app().await;
    let c = unique("hits");
    let path = format!("/v1/counters/{c}");
    app.at(7);
    let reply = app.post(&path, json!({})).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(reply.body, json!({"name": c, "count": 1}));
    let at = START + 3;
    assert_eq!(
        app.post(&path, json!({"count": 4, "at": at as f64 + 0.5}))
            .await
            .status,
        StatusCode::OK
    );
    let one = app.get(&format!("{path}?precision=1")).await;
    assert_eq!(
        one.body,
        json!({"name": c, "precision": 1, "samples": [[START + 3, 4], [START + 7, 1]], "open": START + 7})
    );
    let five = app.get(&format!("{path}?precision=5s")).await.body;
    assert_eq!(five["samples"], json!([[START, 4], [START + 5, 1]]));
    let filled = app
        .get(&format!("{path}?precision=1&from={}&fill=true", START + 5))
        .await
        .body;
    assert_eq!(
        filled["samples"],
        json!([[START + 5, 0], [START + 6, 0], [START + 7, 1]])
    );
    let minute = app.get(&format!("{path}?precision=1m")).await.body;
    assert_eq!(minute["samples"], json!([[START, 5]]));

    let listed = app.get("/v1/counters").await.body;
    let ours: Vec<&Value> = listed["counters"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == c)
        .collect();
    assert_eq!(
        ours,
        [&json!({"name": c, "precisions": ["1s", "5s", "1m", "5m", "1h", "5h", "1d"]})]
    );

    assert_eq!(app.delete(&path).await.status, StatusCode::NO_CONTENT);
    let gone = app.get(&path).await;
    assert_eq!(
        (gone.status, gone.code()),
        (StatusCode::NOT_FOUND, "counter_not_found")
    );
}

#[tokio::test]
async fn bad_counter_requests_get_json_errors_and_count_nothing() {
    let app = spawn_app().await;
    let c = unique("hits");
    let path = format!("/v1/counters/{c}");
    assert_eq!(
        app.post(&path, json!({"count": 2})).await.status,
        StatusCode::OK
    );
    let cases = [
        (
            app.get(&format!("{path}?precision=7")).await,
            StatusCode::NOT_FOUND,
            "precision_not_found",
        ),
        (
            app.get(&format!("{path}?precision=soon")).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_span",
        ),
        (
            app.post("/v1/counters/a%7Bb%7D", json!({})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_counter_name",
        ),
        (
            app.post(&path, json!({"count": 0})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_delta",
        ),
        (
            app.post(&path, json!({"count": 1, "at": START + 3600}))
                .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "in_future",
        ),
        (
            app.post(&path, json!({"count": "many"})).await,
            StatusCode::BAD_REQUEST,
            "bad_request",
        ),
        (
            app.post(&path, json!({"cuont": 1})).await,
            StatusCode::BAD_REQUEST,
            "bad_request",
        ),
        (
            app.delete(&format!("/v1/counters/{}", unique("none")))
                .await,
            StatusCode::NOT_FOUND,
            "counter_not_found",
        ),
    ];
    for (i, (reply, status, code)) in cases.iter().enumerate() {
        assert_eq!((reply.status, reply.code()), (*status, *code), "case {i}");
    }
    let body = app.get(&format!("{path}?precision=1")).await.body;
    assert_eq!(body["samples"], json!([[START, 2]]));
}

#[tokio::test]
async fn a_counter_given_its_own_precisions_counts_and_answers_at_them() {
    let app = spawn_app().await;
    let c = unique("own");
    let path = format!("/v1/counters/{c}");
    let set = app.put(&path, json!({"precisions": ["1m", 10]})).await;
    assert_eq!(
        (set.status, set.body),
        (StatusCode::OK, json!({"name": c, "precisions": [10, 60]}))
    );
    app.at(7);
    assert_eq!(
        app.post(&path, json!({"count": 2})).await.status,
        StatusCode::OK
    );
    // The default precision is the counter's finest.
    let samples = app.get(&path).await.body;
    assert_eq!(samples["precision"], json!(10));
    assert_eq!(samples["samples"], json!([[START, 2]]));
    let one = app.get(&format!("{path}?precision=1")).await;
    assert_eq!(one.status, StatusCode::NOT_FOUND);
    for bad in [json!({"precisions": []}), json!({"precisions": ["soon"]})] {
        let reply = app.put(&path, bad).await;
        assert_eq!(
            reply.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{:?}",
            reply.body
        );
    }
    let reset = app.put(&path, json!({"precisions": null})).await.body;
    assert_eq!(
        reset["precisions"],
        json!([1, 5, 60, 300, 3600, 18000, 86400])
    );
    assert_eq!(app.get(&path).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn counting_needs_the_write_token_and_dropping_the_admin_token() {
    let config = ServiceConfig {
        tokens: Tokens {
            write: Some("w".into()),
            admin: Some("a".into()),
            ..Tokens::default()
        },
        ..ServiceConfig::default()
    };
    let app = spawn_app_with(Arc::new(TestRedis::start().await), clock(), config).await;
    let path = format!("/v1/counters/{}", unique("hits"));
    let post = |token| app.request(Method::POST, &path, Some(json!({})), token);
    assert_eq!(post(None).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(post(Some("w")).await.status, StatusCode::OK);
    let put = |token| {
        let body = json!({"precisions": [60]});
        app.request(Method::PUT, &path, Some(body), token)
    };
    assert_eq!(put(Some("w")).await.status, StatusCode::FORBIDDEN);
    assert_eq!(put(Some("a")).await.status, StatusCode::OK);
    let delete = |token| app.request(Method::DELETE, &path, None, token);
    assert_eq!(delete(Some("w")).await.status, StatusCode::FORBIDDEN);
    assert_eq!(delete(Some("a")).await.status, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn the_scheduler_cleans_counters_visiting_coarse_precisions_less_often() {
    let redis = TestRedis::start().await;
    let clock = clock();
    let settings = Settings {
        counter_keep: 2,
        ..Settings::default()
    };
    let boards = Rollboard::with(redis.store().await, Arc::new(clock.clone()), settings);
    let c = unique("hits");
    boards.counters().incr(&c, 1, None).await.unwrap();
    clock.advance_secs(600);
    let scheduler = Scheduler::new(boards.clone());
    let samples = |p: u64| {
        let (boards, c) = (boards.clone(), c.clone());
        async move {
            let p = rollboard::Span::from_seconds(p).unwrap();
            let s = boards.counters().samples(&c, p, Default::default()).await;
            s.unwrap().len()
        }
    };
    // Pass 0 visits every precision: the 5 min slice 10 minutes ago goes.
    scheduler.clean_counters().await.unwrap();
    assert_eq!(
        (samples(60).await, samples(300).await, samples(3600).await),
        (0, 0, 1)
    );
    boards
        .counters()
        .incr(
            &c,
            1,
            Some(rollboard::Timestamp::from_unix_seconds(START).unwrap()),
        )
        .await
        .unwrap();
    // Pass 1 visits precisions up to a minute only.
    let report = scheduler.clean_counters().await.unwrap();
    assert_eq!(report.removed, 3);
    assert_eq!((samples(60).await, samples(300).await), (0, 1));
}

#[tokio::test]
async fn openapi_documents_the_counter_routes() {
    let app = spawn_app().await;
    let doc = app.get("/openapi.json").await.body;
    let counter = &doc["paths"]["/v1/counters/{name}"];
    for method in ["get", "post", "put", "delete"] {
        assert!(counter[method].is_object(), "{method}");
    }
    assert!(doc["paths"]["/v1/counters"]["get"].is_object());
}
