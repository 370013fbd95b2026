//! Retraction (`POST /v1/contributors/{by}/retract`): a brigade's likes are taken back
//! from every window of every board keeping contributors (or those named, or from a
//! slot on), as if never written: totals, caps and the budget they used; it answers 200
//! with what it took back, or 202 with a `Location` to poll; bad requests are refused
//! saying what to fix.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::contributors::{create, top};
use crate::support::{START, TestApp, ranked};

on_memory_and_redis!(
    a_brigade_is_taken_back_from_every_window_and_budget,
    a_retraction_without_waiting_answers_202_and_is_polled,
    bad_retractions_are_refused_with_what_to_fix,
);

/// Likes `members` on `board` as `by`: what each counted.
async fn likes(app: &TestApp, board: &str, by: &str, members: &[&str]) -> Vec<i64> {
    let mut counted = Vec::new();
    for member in members {
        let event = json!({"member": member, "by": by});
        let reply = app.post(&format!("/v1/boards/{board}/events"), event).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        counted.push(reply.body["counted"].as_i64().unwrap());
    }
    counted
}

/// A board of 1 h slots over 1 h and 24 h counting each contributor once per post.
async fn forum(app: &TestApp) {
    let config = json!({"slot": "1h", "windows": ["1h", "24h"], "per_contributor_member": 1});
    create(app, "forum", config).await;
}

/// Two boards keep contributors (a per-member cap of 1, a budget of 3), a third does
/// not; brigade b1 likes on both, u1 too. Its likes from a slot on go first, then all:
/// every window is what u1's likes alone make, and b1's budget is free again.
async fn a_brigade_is_taken_back_from_every_window_and_budget(app: TestApp) {
    forum(&app).await;
    create(
        &app,
        "daily",
        json!({"slot": "1h", "windows": ["1h", "24h"], "per_contributor": 3}),
    )
    .await;
    create(
        &app,
        "plain",
        json!({"slot": "1h", "windows": ["1h", "24h"]}),
    )
    .await;
    let plain = app
        .post("/v1/boards/plain/events", json!({"member": "post:1"}))
        .await;
    assert_eq!(plain.status, StatusCode::OK);

    assert_eq!(
        likes(&app, "forum", "u1", &["post:1", "post:2"]).await,
        [1, 1]
    );
    let brigade = ["post:1", "post:3", "post:3"];
    assert_eq!(likes(&app, "forum", "b1", &brigade).await, [1, 1, 0]);
    let daily = ["post:1", "post:2", "post:3", "post:4"];
    assert_eq!(likes(&app, "daily", "b1", &daily).await, [1, 1, 1, 0]);
    assert_eq!(likes(&app, "daily", "u1", &["post:1"]).await, [1]);
    // Two hours on, b1 likes post:3 again on the forum: a slot of its own.
    app.at(7_200);
    for board in ["forum", "daily", "plain"] {
        crate::scheduler::wait_retired(&app, board).await;
    }
    assert_eq!(likes(&app, "forum", "b1", &["post:3"]).await, [0]);
    assert_eq!(top(&app, "forum", "1h").await, ranked(&[(1, "post:3", 1)]));

    // From the slot holding START + 1h on: the later like only.
    let since = START + 3_600;
    let later = app
        .post(
            "/v1/contributors/b1/retract",
            json!({"since": since, "boards": ["forum"]}),
        )
        .await;
    assert_eq!(
        (later.status, later.body),
        (
            StatusCode::OK,
            json!({"by": "b1", "state": "done", "boards": 1, "boards_left": 0, "contributions": 1, "events": 1})
        )
    );
    assert_eq!(top(&app, "forum", "1h").await, ranked(&[]));
    let forum_day = [(1, "post:1", 2), (2, "post:2", 1), (2, "post:3", 1)];
    assert_eq!(top(&app, "forum", "24h").await, ranked(&forum_day));

    // Everything else of b1, on every board keeping contributors: forum post:1 and
    // post:3 (two likes, one contribution), daily post:1 to post:4 (post:4 refused).
    let all = app.post("/v1/contributors/b1/retract", json!({})).await;
    assert_eq!(
        (all.status, all.body.clone()),
        (
            StatusCode::OK,
            json!({"by": "b1", "state": "done", "boards": 2, "boards_left": 0, "contributions": 6, "events": 7})
        )
    );
    let forum_day = [(1, "post:1", 1), (1, "post:2", 1)];
    assert_eq!(top(&app, "forum", "24h").await, ranked(&forum_day));
    assert_eq!(top(&app, "daily", "24h").await, ranked(&[(1, "post:1", 1)]));
    assert_eq!(top(&app, "daily", "1h").await, ranked(&[]));
    assert_eq!(top(&app, "plain", "24h").await, ranked(&[(1, "post:1", 1)]));
    let view = app.get("/v1/contributors/b1").await;
    let empty = |board: &str| {
        json!({"board": board, "windows": [
            {"window": "1h", "contributed": 0, "counted": 0, "members": []},
            {"window": "1d", "contributed": 0, "counted": 0, "members": []},
        ]})
    };
    assert_eq!(
        view.body,
        json!({"by": "b1", "boards": [empty("daily"), empty("forum")]})
    );
    // Its budget is free again: three likes count, the fourth does not.
    let again = ["post:5", "post:6", "post:7", "post:8"];
    assert_eq!(likes(&app, "daily", "b1", &again).await, [1, 1, 1, 0]);
    // The last retraction's status, as a poll reads it.
    let polled = app.get("/v1/contributors/b1/retract").await;
    assert_eq!((polled.status, polled.body), (StatusCode::OK, all.body));
    // Nothing left to take back from the forum: done, with nothing.
    let nothing = app
        .post("/v1/contributors/b1/retract", json!({"boards": ["forum"]}))
        .await;
    assert_eq!(
        nothing.body,
        json!({"by": "b1", "state": "done", "boards": 0, "boards_left": 0, "contributions": 0, "events": 0})
    );
}

/// `wait_ms` 0 answers 202 at once, with the progress and a `Location`; polling it ends
/// in `done` with what was taken back.
async fn a_retraction_without_waiting_answers_202_and_is_polled(app: TestApp) {
    forum(&app).await;
    let posts: Vec<String> = (0..50).map(|i| format!("post:{i}")).collect();
    let posts: Vec<&str> = posts.iter().map(String::as_str).collect();
    likes(&app, "forum", "user:bot 1", &posts).await;
    let started = app
        .post(
            "/v1/contributors/user:bot%201/retract",
            // 0.0 is the integer 0, as JSON counts.
            json!({"wait_ms": 0.0}),
        )
        .await;
    assert_eq!(started.status, StatusCode::ACCEPTED, "{:?}", started.body);
    assert_eq!(
        started.headers["location"],
        "/v1/contributors/user%3Abot%201/retract"
    );
    assert_eq!(started.body["by"], "user:bot 1");
    let mut polled = Value::Null;
    for _ in 0..200 {
        polled = app
            .get("/v1/contributors/user%3Abot%201/retract")
            .await
            .body;
        if polled["state"] != "running" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        polled,
        json!({"by": "user:bot 1", "state": "done", "boards": 1, "boards_left": 0, "contributions": 50, "events": 50})
    );
    assert_eq!(top(&app, "forum", "24h").await, ranked(&[]));
}

async fn bad_retractions_are_refused_with_what_to_fix(app: TestApp) {
    create(
        &app,
        "forum",
        json!({"slot": "1h", "windows": ["1h"], "per_contributor_member": 1}),
    )
    .await;
    create(&app, "plain", json!({"slot": "1h", "windows": ["1h"]})).await;
    let cases = [
        (
            json!({"boards": ["plain"]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_query",
            "invalid query: board \"plain\" keeps no contributors: it has neither \
             \"per_contributor_member\" nor \"per_contributor\" (set when a sum board is \
             created); leave it out of boards",
        ),
        (
            json!({"boards": ["nowhere"]}),
            StatusCode::NOT_FOUND,
            "board_not_found",
            "board \"nowhere\" does not exist",
        ),
        (
            json!({"boards": ["forum", "forum"]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_query",
            "invalid query: board \"forum\" is named twice in boards: name each board once",
        ),
        (
            json!({"since": -1}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_time",
            "invalid time: -1 is not a unix time in seconds between 1970 and 9999",
        ),
        (
            json!({"wait_ms": 10_001}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_query",
            "invalid query: wait_ms must be 0 to 10000, got 10001",
        ),
    ];
    for (body, status, code, message) in cases {
        let reply = app.post("/v1/contributors/u1/retract", body.clone()).await;
        assert_eq!(
            (reply.status, reply.body),
            (status, json!({"error": {"code": code, "message": message}})),
            "{body}"
        );
    }
    let unknown = app
        .post("/v1/contributors/u1/retract", json!({"from": 1}))
        .await;
    assert_eq!(
        (unknown.status, unknown.code()),
        (StatusCode::BAD_REQUEST, "bad_request")
    );
    let control = app.post("/v1/contributors/u%071/retract", json!({})).await;
    assert_eq!(control.code(), "invalid_contributor");
    let never = app.get("/v1/contributors/u1/retract").await;
    assert_eq!(
        (never.status, never.body),
        (
            StatusCode::NOT_FOUND,
            json!({"error": {"code": "retraction_not_found", "message":
                "no retraction of contributor \"u1\" has run here since this process started: \
                 POST /v1/contributors/{by}/retract runs one (running it again is harmless)"}})
        )
    );
}
