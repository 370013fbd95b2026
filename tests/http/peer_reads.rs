//! The reads users of other leaderboards reach for, over HTTP: `"ties":"position"` in
//! every read that answers a rank (and in snapshots), `order=asc` on `top` and `around`,
//! and `around?…&fill=true`; bad values are refused with a message naming what to send.
//! Exact values, ties inside and at the edges of pages.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{START, TestApp, entries, ranked, spawn_app, unique};

/// Creates a windowed board ranking ties by `ties` and writes the ranking
/// a 9, b 7, c 7, d 7, e 5, f 3, g 3, h 1 (and x at −2, not ranked).
async fn ranked_board(app: &TestApp, ties: &str) -> String {
    let b = unique("h");
    let path = format!("/v1/boards/{b}");
    let config = json!({"slot": "1h", "windows": ["1h"], "ties": ties});
    let created = app.put(&path, config).await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    let events = json!({"events": [
        {"member": "d", "delta": 7}, {"member": "a", "delta": 9}, {"member": "c", "delta": 7},
        {"member": "x", "delta": -2}, {"member": "g", "delta": 3}, {"member": "b", "delta": 7},
        {"member": "e", "delta": 5}, {"member": "h", "delta": 1}, {"member": "f", "delta": 3},
    ]});
    let reply = app.post(&format!("{path}/events"), events).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    b
}

#[tokio::test]
async fn a_position_board_numbers_ties_one_two_three_in_every_read() {
    let app = spawn_app().await;
    let b = ranked_board(&app, "position").await;
    let path = format!("/v1/boards/{b}");
    assert_eq!(app.get(&path).await.body["config"]["ties"], "position");
    let top = app.get(&format!("{path}/top?limit=10")).await;
    assert_eq!(top.status, StatusCode::OK, "{:?}", top.body);
    let all = ranked(&[
        (1, "a", 9),
        (2, "b", 7),
        (3, "c", 7),
        (4, "d", 7),
        (5, "e", 5),
        (6, "f", 3),
        (7, "g", 3),
        (8, "h", 1),
    ]);
    assert_eq!(entries(&top.body), all);
    // A page starting and ending inside tie groups.
    let page = app.get(&format!("{path}/top?offset=2&limit=4")).await;
    assert_eq!(entries(&page.body), all[2..6]);
    let member = app.get(&format!("{path}/members/d")).await;
    assert_eq!(
        (
            member.body["rank"].clone(),
            member.body["percentile"].clone()
        ),
        (json!(4), json!(0.5))
    );
    let ranks = app.get(&format!("{path}/ranks?members=g,x,c")).await;
    assert_eq!(
        ranks.body["entries"],
        json!([
            {"member": "g", "score": 3, "rank": 7},
            {"member": "x", "score": -2, "rank": null},
            {"member": "c", "score": 7, "rank": 3},
        ])
    );
    let around = app.get(&format!("{path}/members/c/around?n=1")).await;
    assert_eq!(entries(&around.body), all[1..4]);
    // A trending board ranks by competition: it refuses position ties.
    let trending = app
        .put(
            &format!("/v1/boards/{}", unique("h")),
            json!({"kind": "trending", "half_life": "1h", "ties": "position"}),
        )
        .await;
    assert_eq!(trending.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(trending.code(), "invalid_config");
}

#[tokio::test]
async fn order_asc_reads_the_ranking_from_the_bottom_with_the_boards_ranks() {
    let app = spawn_app().await;
    let b = ranked_board(&app, "competition").await;
    let top = |query: &'static str| {
        let path = format!("/v1/boards/{b}/top?{query}");
        let app = &app;
        async move {
            let reply = app.get(&path).await;
            assert_eq!(reply.status, StatusCode::OK, "{query}: {:?}", reply.body);
            entries(&reply.body)
        }
    };
    assert_eq!(
        top("order=asc&limit=3").await,
        ranked(&[(8, "h", 1), (6, "g", 3), (6, "f", 3)])
    );
    assert_eq!(
        top("order=asc&offset=3&limit=3").await,
        ranked(&[(5, "e", 5), (2, "d", 7), (2, "c", 7)])
    );
    assert_eq!(
        top("order=asc&offset=6").await,
        ranked(&[(2, "b", 7), (1, "a", 9)])
    );
    assert_eq!(top("order=asc&offset=8").await, ranked(&[]));
    assert_eq!(
        top("order=asc&min_score=3&max_score=7&offset=2&limit=3").await,
        ranked(&[(5, "e", 5), (2, "d", 7), (2, "c", 7)])
    );
    assert_eq!(
        top("order=desc&limit=2").await,
        ranked(&[(1, "a", 9), (2, "b", 7)])
    );
    let around = app
        .get(&format!("/v1/boards/{b}/members/c/around?n=1&order=asc"))
        .await;
    assert_eq!(
        entries(&around.body),
        ranked(&[(2, "d", 7), (2, "c", 7), (2, "b", 7)])
    );
}

#[tokio::test]
async fn around_with_fill_answers_a_full_page_shifted_at_the_ends() {
    let app = spawn_app().await;
    let b = ranked_board(&app, "competition").await;
    let around = |member: &'static str, query: &'static str| {
        let path = format!("/v1/boards/{b}/members/{member}/around?{query}");
        let app = &app;
        async move {
            let reply = app.get(&path).await;
            assert_eq!(reply.status, StatusCode::OK, "{query}: {:?}", reply.body);
            entries(&reply.body)
        }
    };
    let top5 = ranked(&[
        (1, "a", 9),
        (2, "b", 7),
        (2, "c", 7),
        (2, "d", 7),
        (5, "e", 5),
    ]);
    let bottom5 = ranked(&[
        (2, "d", 7),
        (5, "e", 5),
        (6, "f", 3),
        (6, "g", 3),
        (8, "h", 1),
    ]);
    assert_eq!(around("a", "n=2&fill=true").await, top5);
    assert_eq!(around("b", "n=2&fill=true").await, top5);
    assert_eq!(around("h", "n=2&fill=true").await, bottom5);
    assert_eq!(around("g", "n=2&fill=true").await, bottom5);
    assert_eq!(
        around("e", "n=1&fill=true").await,
        ranked(&[(2, "d", 7), (5, "e", 5), (6, "f", 3)])
    );
    // The default stays n on each side, fewer at the ends.
    assert_eq!(around("a", "n=2").await, top5[..3]);
    assert_eq!(around("a", "n=2&fill=false").await, top5[..3]);
    // Fewer only when fewer are ranked: n=5 asks 11, 8 are ranked.
    assert_eq!(around("c", "n=5&fill=true").await.len(), 8);
    let mut reversed = bottom5.clone();
    reversed.reverse();
    assert_eq!(around("h", "n=2&fill=true&order=asc").await, reversed);
    let missing = app
        .get(&format!("/v1/boards/{b}/members/x/around?fill=true"))
        .await;
    assert_eq!(
        (missing.status, missing.code()),
        (StatusCode::NOT_FOUND, "member_not_found")
    );
}

#[tokio::test]
async fn trending_boards_take_order_and_fill_too() {
    let app = spawn_app().await;
    let b = unique("h");
    let path = format!("/v1/boards/{b}");
    let created = app
        .put(&path, json!({"kind": "trending", "half_life": "1h"}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    let events = json!({"events": [
        {"member": "a", "delta": 4}, {"member": "b", "delta": 2},
        {"member": "c", "delta": 2}, {"member": "d", "delta": 1},
    ]});
    let reply = app.post(&format!("{path}/events"), events).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let at = START as f64;
    let bottom = app.get(&format!("{path}/top?order=asc&limit=3")).await;
    assert_eq!(
        bottom.body,
        json!({"kind": "trending", "board": b, "at": at, "age_ms": 0, "entries": [
            {"rank": 4, "member": "d", "score": 1.0},
            {"rank": 2, "member": "c", "score": 2.0},
            {"rank": 2, "member": "b", "score": 2.0},
        ]})
    );
    let around = app
        .get(&format!("{path}/members/a/around?n=1&fill=true"))
        .await;
    assert_eq!(
        around.body,
        json!({"kind": "trending", "board": b, "at": at, "age_ms": 0, "entries": [
            {"rank": 1, "member": "a", "score": 4.0},
            {"rank": 2, "member": "b", "score": 2.0},
            {"rank": 2, "member": "c", "score": 2.0},
        ]})
    );
}

#[tokio::test]
async fn bad_order_and_fill_values_are_refused_with_what_to_send() {
    let app = spawn_app().await;
    let b = ranked_board(&app, "competition").await;
    for query in [
        "top?order=up",
        "top?order=ASC",
        "members/a/around?order=bottom",
        "members/a/around?fill=yes",
    ] {
        let reply = app.get(&format!("/v1/boards/{b}/{query}")).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::BAD_REQUEST, "bad_request"),
            "{query}: {:?}",
            reply.body
        );
        let message = reply.body["error"]["message"].as_str().unwrap();
        let names = if query.contains("fill") {
            "`true` or `false`"
        } else {
            "`desc` or `asc`"
        };
        assert!(message.contains(names), "{query}: {message}");
    }
}

#[tokio::test]
async fn the_openapi_document_states_order_and_fill() {
    let app = spawn_app().await;
    let doc = app.get("/openapi.json").await.body;
    let param = |path: &str, name: &str| -> Value {
        doc["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{path} has no {name}"))
            .clone()
    };
    for path in [
        "/v1/boards/{board}/top",
        "/v1/boards/{board}/members/{member}/around",
    ] {
        let order = param(path, "order");
        assert_eq!(order["in"], "query");
        assert_eq!(order["required"], json!(false));
        assert_eq!(order["schema"]["enum"], json!(["desc", "asc"]), "{order}");
        assert_eq!(order["example"], "asc");
        assert!(
            order["description"]
                .as_str()
                .unwrap()
                .contains("lowest first")
        );
    }
    let fill = param("/v1/boards/{board}/members/{member}/around", "fill");
    assert_eq!(fill["schema"]["type"], "boolean", "{fill}");
    assert_eq!(fill["example"], json!(true));
    assert!(fill["description"].as_str().unwrap().contains("2n + 1"));
}

#[tokio::test]
async fn a_member_read_answers_every_total_truthfully() {
    let app = spawn_app().await;
    let b = ranked_board(&app, "competition").await;
    let path = format!("/v1/boards/{b}");
    // x holds −2: answered, not ranked (no ranked member is below it).
    let down = app.get(&format!("{path}/members/x")).await;
    assert_eq!(down.status, StatusCode::OK, "{:?}", down.body);
    assert_eq!(
        (
            down.body["kind"].clone(),
            down.body["member"].clone(),
            down.body["score"].clone(),
            down.body["rank"].clone(),
            down.body["percentile"].clone()
        ),
        (
            json!("windowed"),
            json!("x"),
            json!(-2),
            Value::Null,
            json!(0.0)
        )
    );
    let ranks = app.get(&format!("{path}/ranks?members=x,zed")).await;
    assert_eq!(
        ranks.body["entries"],
        json!([
            {"member": "x", "score": -2, "rank": null},
            {"member": "zed", "score": 0, "rank": null},
        ])
    );
    // A total back to zero is no total: 404, saying so.
    let reply = app
        .post(
            &format!("{path}/events"),
            json!({"member": "x", "delta": 2}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    for member in ["x", "zed"] {
        let missing = app.get(&format!("{path}/members/{member}")).await;
        assert_eq!(
            (missing.status, missing.code()),
            (StatusCode::NOT_FOUND, "member_not_found")
        );
        assert_eq!(
            missing.body["error"]["message"],
            format!("member \"{member}\" has no score on board \"{b}\"")
        );
    }
    // A negative total has no place in the ranking to read around.
    let reply = app
        .post(
            &format!("{path}/events"),
            json!({"member": "y", "delta": -1}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let around = app.get(&format!("{path}/members/y/around")).await;
    assert_eq!(around.status, StatusCode::NOT_FOUND);
    assert_eq!(
        around.body["error"]["message"],
        format!("member \"y\" has no total that ranks it on board \"{b}\"")
    );
}
