//! `POST /v1/events` (one event, or a batch, to several boards) and
//! `GET /v1/members/{member}?boards=` (one member across boards) over HTTP, each case on
//! a fresh Redis and on the memory store: exact totals on every board, an
//! `Idempotency-Key` applied once per board (a retry fills in the board that failed),
//! per-board errors in a 200, 422s that say what to fix, and exact cross-board reads.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{START, TestApp, pairs, top_pairs, unique};

on_memory_and_redis!(
    one_like_counts_once_on_each_of_three_boards,
    a_batch_sends_each_event_to_its_boards_with_rejections_by_index,
    a_retry_with_the_same_key_is_applied_once_per_board_after_one_failed,
    each_board_reports_its_own_error_in_a_200,
    invalid_requests_are_refused_whole_with_a_message,
    one_member_is_read_across_boards_with_exact_scores_and_ranks,
);

fn written(board: &str, accepted: u64, replayed: bool) -> Value {
    json!({"board": board, "accepted": accepted, "rejected": [], "replayed": replayed})
}

/// A board with a unique name whose prefix shows in it (`hot-posts-…`).
async fn board(app: &TestApp, prefix: &str, windows: &[&str]) -> String {
    let name = unique(prefix);
    let reply = app
        .put(
            &format!("/v1/boards/{name}"),
            json!({"slot": "1h", "windows": windows}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    name
}

async fn one_like_counts_once_on_each_of_three_boards(app: TestApp) {
    let hot = board(&app, "hot-posts", &["1h", "24h"]).await;
    let rust = format!("{hot}:rust");
    let created = app
        .put(
            &format!("/v1/boards/{rust}"),
            json!({"slot": "1h", "windows": ["24h"]}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    let authors = board(&app, "top-authors", &["7d"]).await;
    let boards = json!([hot, rust, authors]);
    for (member, delta) in [("post:42", 1), ("post:7", 3), ("post:42", 1)] {
        let body = json!({"boards": boards, "member": member, "delta": delta});
        let reply = app.post_keyed("/v1/events", &body.to_string(), None).await;
        assert_eq!(
            (reply.status, reply.body),
            (
                StatusCode::OK,
                json!({"boards": [written(&hot, 1, false), written(&rust, 1, false), written(&authors, 1, false)]})
            )
        );
    }
    let expected = pairs(&[("post:7", 3), ("post:42", 2)]);
    assert_eq!(top_pairs(&app, &hot, "1h").await, expected);
    assert_eq!(top_pairs(&app, &hot, "24h").await, expected);
    assert_eq!(top_pairs(&app, &rust, "24h").await, expected);
    assert_eq!(top_pairs(&app, &authors, "7d").await, expected);
}

async fn a_batch_sends_each_event_to_its_boards_with_rejections_by_index(app: TestApp) {
    let hour = board(&app, "hour", &["1h"]).await;
    let day = board(&app, "day", &["24h"]).await;
    app.at(2 * 3600);
    let body = json!({"events": [
        {"boards": [hour, day], "member": "a", "delta": 2},
        {"boards": [hour, day], "member": "b", "delta": 0},
        {"boards": [day], "member": "d", "delta": 4, "at": START},
        {"boards": [hour], "member": "d", "at": START},
        {"boards": [day, hour], "member": "a"},
    ]});
    let reply = app.post_keyed("/v1/events", &body.to_string(), None).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    // Messages are checked elsewhere: keep the codes.
    let mut body = reply.body.clone();
    for b in body["boards"].as_array_mut().unwrap() {
        for r in b["rejected"].as_array_mut().unwrap() {
            r["error"].as_object_mut().unwrap().remove("message");
        }
    }
    let rejected = |index: u64, code: &str| json!({"index": index, "error": {"code": code}});
    assert_eq!(
        body,
        json!({"boards": [
            {"board": hour, "accepted": 2, "rejected": [rejected(1, "invalid_delta"), rejected(3, "too_late")], "replayed": false},
            {"board": day, "accepted": 3, "rejected": [rejected(1, "invalid_delta")], "replayed": false},
        ]})
    );
    assert_eq!(top_pairs(&app, &hour, "1h").await, pairs(&[("a", 3)]));
    assert_eq!(
        top_pairs(&app, &day, "24h").await,
        pairs(&[("d", 4), ("a", 3)])
    );
    // An element that is not an event with its boards refuses the request: nothing is
    // applied.
    let many: Vec<Value> = (0..21)
        .map(|i| json!({"boards": [format!("{hour}-{i}")], "member": "a"}))
        .collect();
    for (events, status, message) in [
        (
            json!([{"boards": [hour], "member": "a"}, {"boards": [hour], "member": 5}]),
            StatusCode::BAD_REQUEST,
            "events[1]: member must be a string; nothing was applied".to_owned(),
        ),
        (
            json!([{"member": "a"}]),
            StatusCode::BAD_REQUEST,
            "events[0]: boards is missing: name the boards to write to, as {\"boards\": [\"hot-posts\"], \"member\": \"post:1\"}; nothing was applied".to_owned(),
        ),
        (
            json!([{"boards": [hour], "member": "a"}, {"boards": [], "member": "a"}]),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid query: events[1]: boards is empty: name 1 to 20 boards".to_owned(),
        ),
        (
            Value::Array(many),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid query: the events name 21 boards in all: name at most 20".to_owned(),
        ),
    ] {
        let reply = app.post_keyed("/v1/events", &json!({"events": events}).to_string(), None).await;
        assert_eq!(
            (reply.status, reply.body["error"]["message"].as_str().unwrap_or("")),
            (status, message.as_str()),
            "{events}"
        );
    }
    let bad_time = json!({"events": [{"boards": [hour], "member": "a", "at": -1}]});
    let reply = app
        .post_keyed("/v1/events", &bad_time.to_string(), None)
        .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_time")
    );
    assert!(
        reply.body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("events[0]: "),
        "{:?}",
        reply.body
    );
    assert_eq!(top_pairs(&app, &hour, "1h").await, pairs(&[("a", 3)]));
}

async fn a_retry_with_the_same_key_is_applied_once_per_board_after_one_failed(app: TestApp) {
    let hot = board(&app, "hot", &["1h"]).await;
    let later = unique("later");
    let body = json!({"boards": [hot, later], "member": "post:42", "delta": 2});
    let first = app
        .post_keyed("/v1/events", &body.to_string(), Some("like-42"))
        .await;
    assert_eq!(first.status, StatusCode::OK, "{:?}", first.body);
    assert_eq!(first.body["boards"][0], written(&hot, 1, false));
    assert_eq!(
        first.body["boards"][1],
        json!({"board": later, "error": {"code": "board_not_found", "message": format!("board {later:?} does not exist")}})
    );
    let created = app
        .put(
            &format!("/v1/boards/{later}"),
            json!({"slot": "1h", "windows": ["1h"]}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    app.at(60);
    let retry = app
        .post_keyed("/v1/events", &body.to_string(), Some("like-42"))
        .await;
    assert_eq!(
        (retry.status, retry.body),
        (
            StatusCode::OK,
            json!({"boards": [written(&hot, 1, true), written(&later, 1, false)]})
        )
    );
    let again = app
        .post_keyed("/v1/events", &body.to_string(), Some("like-42"))
        .await;
    assert_eq!(
        again.body,
        json!({"boards": [written(&hot, 1, true), written(&later, 1, true)]})
    );
    assert_eq!(top_pairs(&app, &hot, "1h").await, pairs(&[("post:42", 2)]));
    assert_eq!(
        top_pairs(&app, &later, "1h").await,
        pairs(&[("post:42", 2)])
    );
    // The same key with another event: each board refuses it, nothing applied.
    let other = json!({"boards": [hot, later], "member": "post:1"});
    let reused = app
        .post_keyed("/v1/events", &other.to_string(), Some("like-42"))
        .await;
    assert_eq!(reused.status, StatusCode::OK);
    for b in 0..2 {
        assert_eq!(
            reused.body["boards"][b]["error"]["code"], "idempotency_key_reused",
            "{:?}",
            reused.body
        );
    }
    assert_eq!(top_pairs(&app, &hot, "1h").await, pairs(&[("post:42", 2)]));
}

async fn each_board_reports_its_own_error_in_a_200(app: TestApp) {
    let hour = board(&app, "hour", &["1h"]).await;
    let day = board(&app, "day", &["24h"]).await;
    let trend = unique("trend");
    let created = app
        .put(
            &format!("/v1/boards/{trend}"),
            json!({"kind": "trending", "half_life": "6h"}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    let missing = unique("missing");
    app.at(3 * 3600);
    let body = json!({"boards": [hour, missing, day, trend], "member": "post:1", "delta": 5, "at": START + 3600});
    let reply = app.post_keyed("/v1/events", &body.to_string(), None).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let codes: Vec<(&str, &str)> = reply.body["boards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["board"].as_str().unwrap(),
                b["error"]["code"].as_str().unwrap_or("written"),
            )
        })
        .collect();
    assert_eq!(
        codes,
        [
            (hour.as_str(), "too_late"),
            (missing.as_str(), "board_not_found"),
            (day.as_str(), "written"),
            (trend.as_str(), "written")
        ]
    );
    assert_eq!(top_pairs(&app, &hour, "1h").await, pairs(&[]));
    assert_eq!(top_pairs(&app, &day, "24h").await, pairs(&[("post:1", 5)]));
    let trend_top = app.get(&format!("/v1/boards/{trend}/top")).await;
    assert_eq!(trend_top.body["entries"][0]["member"], "post:1");
}

async fn invalid_requests_are_refused_whole_with_a_message(app: TestApp) {
    let a = board(&app, "a", &["1h"]).await;
    let many: Vec<String> = (0..21).map(|i| format!("{a}-{i}")).collect();
    let cases = [
        (
            json!({"boards": [], "member": "m"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_query",
            "invalid query: boards is empty: name 1 to 20 boards".to_owned(),
        ),
        (
            json!({"boards": many, "member": "m"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_query",
            "invalid query: boards names 21 boards: name at most 20".to_owned(),
        ),
        (
            json!({"boards": [a, a], "member": "m"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_query",
            format!("invalid query: board {a:?} is named twice in boards: name each board once"),
        ),
        (
            json!({"boards": [a], "member": ""}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_member",
            String::new(),
        ),
        (
            json!({"boards": [a], "member": "m", "delta": 0}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_delta",
            String::new(),
        ),
        (
            json!({"boards": [a, "no space"], "member": "m"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_board_name",
            String::new(),
        ),
        (
            json!({"member": "m"}),
            StatusCode::BAD_REQUEST,
            "bad_request",
            "boards is missing: name the boards to write to, as {\"boards\": [\"hot-posts\"], \"member\": \"post:1\"}".to_owned(),
        ),
        (
            json!({"boards": [a], "member": "m", "events": []}),
            StatusCode::BAD_REQUEST,
            "bad_request",
            "a batch is {\"events\": [{\"boards\": [...], \"member\": ...}, ...]} and nothing else: each event names its boards".to_owned(),
        ),
        (
            json!({"boards": [a]}),
            StatusCode::BAD_REQUEST,
            "bad_request",
            "member is missing".to_owned(),
        ),
    ];
    for (body, status, code, message) in cases {
        let reply = app.post_keyed("/v1/events", &body.to_string(), None).await;
        assert_eq!(
            (reply.status, reply.code()),
            (status, code),
            "{body}: {:?}",
            reply.body
        );
        if !message.is_empty() {
            assert_eq!(reply.body["error"]["message"], message.as_str(), "{body}");
        }
    }
    let body = json!({"boards": [a], "member": "m", "detla": 1});
    let unknown = app.post_keyed("/v1/events", &body.to_string(), None).await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
    assert!(
        unknown.body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("unknown field `detla`"),
        "{:?}",
        unknown.body
    );
    assert_eq!(top_pairs(&app, &a, "1h").await, pairs(&[]));
    // The cross-board read refuses the same lists, and a bad member or window.
    for (path, code, message) in [
        (
            format!("/v1/members/m?boards={a},{a}"),
            "invalid_query",
            format!("invalid query: board {a:?} is named twice in boards: name each board once"),
        ),
        (
            format!("/v1/members/m?boards={}", many.join(",")),
            "invalid_query",
            "invalid query: boards names 21 boards: name at most 20".to_owned(),
        ),
        (
            format!("/v1/members/m?boards={a}&window=0"),
            "invalid_span",
            String::new(),
        ),
        (
            format!("/v1/members/m?boards={a},bad%20name"),
            "invalid_board_name",
            String::new(),
        ),
    ] {
        let reply = app.get(&path).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, code),
            "{path}: {:?}",
            reply.body
        );
        if !message.is_empty() {
            assert_eq!(reply.body["error"]["message"], message.as_str(), "{path}");
        }
    }
}

async fn one_member_is_read_across_boards_with_exact_scores_and_ranks(app: TestApp) {
    let hot = board(&app, "hot", &["1h", "24h"]).await;
    let hour = board(&app, "hour", &["1h"]).await;
    let missing = unique("missing");
    app.at(2 * 3600);
    for (member, delta) in [("a", 5), ("b", 3), ("c", -2)] {
        let body = json!({"boards": [hot, hour], "member": member, "delta": delta});
        assert_eq!(
            app.post_keyed("/v1/events", &body.to_string(), None)
                .await
                .status,
            StatusCode::OK
        );
    }
    // Two hours ago: in hot's day, too late for any last hour.
    let old = json!({"member": "b", "delta": 4, "at": START});
    let reply = app.post(&format!("/v1/boards/{hot}/events"), old).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let w = |window: &str, score: i64, rank: Value, percentile: f64| json!({"window": window, "score": score, "rank": rank, "percentile": percentile, "behind": false});
    let reply = app
        .get(&format!("/v1/members/b?boards={hot},{missing},{hour}"))
        .await;
    assert_eq!(
        (reply.status, reply.body),
        (
            StatusCode::OK,
            json!({"member": "b", "boards": [
                {"kind": "windowed", "board": hot, "windows": [w("1h", 3, json!(2), 0.0), w("1d", 7, json!(1), 0.5)]},
                {"board": missing, "error": {"code": "board_not_found", "message": format!("board {missing:?} does not exist")}},
                {"kind": "windowed", "board": hour, "windows": [w("1h", 3, json!(2), 0.0)]},
            ]})
        )
    );
    let reply = app
        .get(&format!("/v1/members/c?boards={hot},{hour}&window=24h"))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(
        reply.body["boards"][0],
        json!({"kind": "windowed", "board": hot, "windows": [w("1d", -2, Value::Null, 0.0)]})
    );
    assert_eq!(reply.body["boards"][1]["board"], hour.as_str());
    assert_eq!(reply.body["boards"][1]["error"]["code"], "window_not_found");
    let reply = app.get(&format!("/v1/members/z?boards={hour}")).await;
    assert_eq!(
        reply.body["boards"][0],
        json!({"kind": "windowed", "board": hour, "windows": [w("1h", 0, Value::Null, 0.0)]})
    );
}
