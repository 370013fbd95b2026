//! Bulk maintenance and reads by share over HTTP: `POST …/members/remove` (a list with
//! absent members, a range on one window while another keeps other totals), `POST
//! …/trim` (ties at the cut in the board's tie order, writes going on), admin only;
//! `top?percent=P` at its edges and `score_at` at Q = 0, just below 1 and on ties, with
//! the 404/422 answers. Exact values.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use rollboard::http::Tokens;
use rollboard::service::ServiceConfig;
use serde_json::{Value, json};

use crate::support::{START, TestApp, TestRedis, clock, spawn_app, spawn_app_with};

const HOUR: i64 = 3600;

async fn events(app: &TestApp, b: &str, items: &[(&str, i64)], at: i64) {
    let events: Vec<Value> = items
        .iter()
        .map(|(m, d)| json!({"member": m, "delta": d, "at": at}))
        .collect();
    let reply = app
        .post(&format!("/v1/boards/{b}/events"), json!({"events": events}))
        .await;
    assert_eq!(reply.body["accepted"], items.len(), "{:?}", reply.body);
}

async fn top(app: &TestApp, b: &str, query: &str) -> Value {
    let reply = app.get(&format!("/v1/boards/{b}/top?{query}")).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    Value::Array(
        reply.body["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| json!([e["member"], e["score"]]))
            .collect(),
    )
}

/// The ranking written by the read tests: a 9, b c d 7, e 5, f g 3, h 1; x −2 (not ranked).
async fn ranked_board(app: &TestApp) -> String {
    app.at(HOUR + 60);
    let b = app.board("1h", &["1h"]).await;
    let items = [
        ("d", 7),
        ("a", 9),
        ("c", 7),
        ("x", -2),
        ("g", 3),
        ("b", 7),
        ("e", 5),
        ("h", 1),
        ("f", 3),
    ];
    events(app, &b, &items, START + HOUR).await;
    b
}

#[tokio::test]
async fn members_are_removed_by_list_and_by_a_range_in_one_window() {
    let app = spawn_app().await;
    app.at(3 * HOUR + 60);
    let b = app.board("1h", &["1h", "1d"]).await;
    events(&app, &b, &[("a", 10), ("b", 10), ("c", 1)], START + HOUR).await;
    let now = START + 3 * HOUR;
    events(
        &app,
        &b,
        &[("a", 1), ("b", 5), ("c", 3), ("d", 2), ("e", 4)],
        now,
    )
    .await;
    let remove = format!("/v1/boards/{b}/members/remove");

    let listed = app
        .post(&remove, json!({"members": ["e", "ghost", "e"]}))
        .await;
    assert_eq!(listed.status, StatusCode::OK, "{:?}", listed.body);
    assert_eq!(
        listed.body,
        json!({"removed": 1, "members": ["e"], "more": false})
    );

    // 2..=3 in 1h: c (3) and d (2); in 1d c holds 4 and stays ranked elsewhere until removed.
    let ranged = app
        .post(
            &remove,
            json!({"min_score": 2, "max_score": 3, "window": "1h"}),
        )
        .await;
    assert_eq!(
        ranged.body,
        json!({"removed": 2, "members": ["c", "d"], "more": false})
    );
    assert_eq!(
        top(&app, &b, "window=1h").await,
        json!([["b", 5], ["a", 1]])
    );
    assert_eq!(
        top(&app, &b, "window=1d").await,
        json!([["b", 15], ["a", 11]])
    );
    let gone = app
        .get(&format!("/v1/boards/{b}/members/c?window=1d"))
        .await;
    assert_eq!(gone.code(), "member_not_found");

    for (body, reason) in [
        (json!({}), "send either"),
        (json!({"members": ["a"], "min_score": 1}), "send either"),
        (
            json!({"members": []}),
            "members must list 1 to 1000 members, got 0",
        ),
        (json!({"window": "1h"}), "a removal by score needs"),
        (
            json!({"min_score": 5, "max_score": 1}),
            "min_score (5) must not be above max_score (1)",
        ),
    ] {
        let reply = app.post(&remove, body.clone()).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_query"),
            "{body}: {:?}",
            reply.body
        );
        let message = reply.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(reason), "{body}: {message}");
    }
    let missing = app
        .post(
            "/v1/boards/no-such/members/remove",
            json!({"members": ["a"]}),
        )
        .await;
    assert_eq!(missing.code(), "board_not_found");
    // Nothing else moved.
    assert_eq!(
        top(&app, &b, "window=1d").await,
        json!([["b", 15], ["a", 11]])
    );
}

#[tokio::test]
async fn trim_keeps_exactly_n_while_writes_go_on_and_needs_the_admin_token() {
    let app = spawn_app().await;
    let b = ranked_board(&app).await;
    // 100 writes to a (above the cut all along) run while the board is trimmed.
    let writer = {
        let client = app.client.clone();
        let url = format!("{}/v1/boards/{b}/events", app.url);
        tokio::spawn(async move {
            for _ in 0..100 {
                let reply = client
                    .post(&url)
                    .json(&json!({"member": "a", "delta": 1, "at": START + HOUR}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(reply.status(), StatusCode::OK);
            }
        })
    };
    let trimmed = app
        .post(&format!("/v1/boards/{b}/trim?top=2&window=1h"), json!({}))
        .await;
    writer.await.unwrap();
    assert_eq!(trimmed.status, StatusCode::OK, "{:?}", trimmed.body);
    // The cut falls inside b, c, d at 7: b stays (ties by member ascending).
    assert_eq!(
        trimmed.body,
        json!({"removed": 6, "members": ["c", "d", "e", "f", "g", "h"], "more": false})
    );
    assert_eq!(top(&app, &b, "").await, json!([["a", 109], ["b", 7]]));
    let x = app.get(&format!("/v1/boards/{b}/members/x")).await;
    assert_eq!(
        (x.body["score"].clone(), x.body["rank"].clone()),
        (json!(-2), Value::Null)
    );
    // A removed member's later events count again.
    events(&app, &b, &[("c", 2)], START + HOUR).await;
    assert_eq!(
        top(&app, &b, "").await,
        json!([["a", 109], ["b", 7], ["c", 2]])
    );
    let bad = app.post(&format!("/v1/boards/{b}/trim"), json!({})).await;
    // A missing or malformed query parameter is a bad request, as on every route.
    assert_eq!(
        (bad.status, bad.code()),
        (StatusCode::BAD_REQUEST, "bad_request")
    );

    let config = ServiceConfig {
        tokens: Tokens {
            write: Some("w-token".into()),
            admin: Some("a-token".into()),
            ..Tokens::default()
        },
        ..ServiceConfig::default()
    };
    let guarded = spawn_app_with(Arc::new(TestRedis::start().await), clock(), config).await;
    for path in ["/v1/boards/b/trim?top=1", "/v1/boards/b/members/remove"] {
        let body = Some(json!({"members": ["a"]}));
        let writer = guarded
            .request(Method::POST, path, body.clone(), Some("w-token"))
            .await;
        assert_eq!(
            (writer.status, writer.code()),
            (StatusCode::FORBIDDEN, "forbidden"),
            "{path}"
        );
        let admin = guarded
            .request(Method::POST, path, body, Some("a-token"))
            .await;
        assert_eq!(admin.code(), "board_not_found", "{path}");
    }
}

#[tokio::test]
async fn top_percent_answers_the_rounded_up_share_of_the_ranking() {
    let app = spawn_app().await;
    let b = ranked_board(&app).await;
    let members = |v: Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e[0].as_str().unwrap().to_owned())
            .collect()
    };
    // Without a limit a percent read answers the whole share (up to max_limit).
    assert_eq!(
        members(top(&app, &b, "percent=100").await),
        ["a", "b", "c", "d", "e", "f", "g", "h"]
    );
    assert_eq!(members(top(&app, &b, "percent=0.01").await), ["a"]);
    assert_eq!(members(top(&app, &b, "percent=30").await), ["a", "b", "c"]);
    assert_eq!(
        members(top(&app, &b, "percent=50&offset=1&limit=2").await),
        ["b", "c"]
    );
    assert_eq!(members(top(&app, &b, "percent=50&offset=3").await), ["d"]);
    assert_eq!(
        members(top(&app, &b, "percent=25&order=asc").await),
        ["h", "g"]
    );
    let page = app.get(&format!("/v1/boards/{b}/top?percent=50")).await;
    assert_eq!(
        page.body["entries"],
        json!([
            {"rank": 1, "member": "a", "score": 9},
            {"rank": 2, "member": "b", "score": 7},
            {"rank": 2, "member": "c", "score": 7},
            {"rank": 2, "member": "d", "score": 7},
        ])
    );
    for query in [
        "percent=0",
        "percent=100.5",
        "percent=-3",
        "percent=50&min_score=2",
    ] {
        let reply = app.get(&format!("/v1/boards/{b}/top?{query}")).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_query"),
            "{query}: {:?}",
            reply.body
        );
    }
}

#[tokio::test]
async fn score_at_is_the_lowest_score_beating_a_share_of_the_ranked_members() {
    let app = spawn_app().await;
    let b = ranked_board(&app).await;
    // Ascending: h 1, f 3, g 3, e 5, b 7, c 7, d 7, a 9.
    for (q, score, below) in [
        ("0", 1, 0),
        ("0.125", 2, 1),
        ("0.25", 4, 2),
        ("0.5", 6, 4),
        ("0.51", 8, 5),
        ("0.999", 10, 8),
        ("1", 10, 8),
    ] {
        let reply = app
            .get(&format!("/v1/boards/{b}/score_at?percentile={q}&window=1h"))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{q}: {:?}", reply.body);
        assert_eq!(
            (
                reply.body["score"].clone(),
                reply.body["below"].clone(),
                reply.body["ranked"].clone(),
                reply.body["window"].clone()
            ),
            (json!(score), json!(below), json!(8), json!("1h")),
            "Q = {q}"
        );
    }
    for (query, status, code) in [
        (
            "percentile=1.5",
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_query",
        ),
        (
            "percentile=-0.1",
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_query",
        ),
        ("percentile=x", StatusCode::BAD_REQUEST, "bad_request"),
        ("", StatusCode::BAD_REQUEST, "bad_request"),
    ] {
        let reply = app.get(&format!("/v1/boards/{b}/score_at?{query}")).await;
        assert_eq!(
            (reply.status, reply.code()),
            (status, code),
            "{query}: {:?}",
            reply.body
        );
    }
    let empty = app.board("1h", &["1h"]).await;
    let reply = app
        .get(&format!("/v1/boards/{empty}/score_at?percentile=0.5"))
        .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::NOT_FOUND, "ranking_empty")
    );
    let trending = crate::support::unique("t");
    let created = app
        .put(
            &format!("/v1/boards/{trending}"),
            json!({"kind": "trending", "half_life": "1h"}),
        )
        .await;
    assert!(created.status.is_success(), "{:?}", created.body);
    for path in [
        format!("/v1/boards/{trending}/score_at?percentile=0.5"),
        format!("/v1/boards/{trending}/top?percent=10"),
    ] {
        let reply = app.get(&path).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_query"),
            "{path}"
        );
        let message = reply.body["error"]["message"].as_str().unwrap();
        assert!(message.contains("is a trending board"), "{message}");
    }
}
