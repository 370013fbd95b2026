//! Recompute and added windows over HTTP.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::support::spawn_app;

#[tokio::test]
async fn an_admin_recomputes_a_board_over_http() {
    let app = spawn_app().await;
    let b = app.board("1h", &["1h", "24h"]).await;
    app.post(
        &format!("/v1/boards/{b}/events"),
        json!({"events": [{"member": "a", "delta": 3}, {"member": "b"}]}),
    )
    .await;
    // Drift the 24h totals by hand.
    let mut raw = app.redis.raw().await;
    let _: () = redis::cmd("ZADD")
        .arg(format!("stats_{{{b}}}_86400"))
        .arg(100)
        .arg("b")
        .query_async(&mut raw)
        .await
        .unwrap();
    let drifted = app.get(&format!("/v1/boards/{b}/top?window=24h")).await;
    assert_eq!(drifted.body["entries"][0]["member"], "b");

    let reply = app
        .request(
            Method::POST,
            &format!("/v1/boards/{b}/recompute?window=24h"),
            None,
            None,
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(reply.body["windows"], json!(["1d"]));
    assert_eq!(reply.body["fields_scanned"], 2);
    let top = app.get(&format!("/v1/boards/{b}/top?window=24h")).await;
    assert_eq!(
        top.body["entries"],
        json!([{"rank": 1, "member": "a", "score": 3}, {"rank": 2, "member": "b", "score": 1}])
    );

    let unknown = app
        .request(Method::POST, "/v1/boards/nope/recompute", None, None)
        .await;
    assert_eq!(
        (unknown.status, unknown.code()),
        (StatusCode::NOT_FOUND, "board_not_found")
    );
    let bad = app
        .request(
            Method::POST,
            &format!("/v1/boards/{b}/recompute?window=3h"),
            None,
            None,
        )
        .await;
    assert_eq!(
        (bad.status, bad.code()),
        (StatusCode::NOT_FOUND, "window_not_found")
    );
}

#[tokio::test]
async fn putting_a_larger_window_adds_and_builds_it() {
    let app = spawn_app().await;
    let b = app.board("1h", &["1h"]).await;
    app.post(
        &format!("/v1/boards/{b}/events"),
        json!({"member": "a", "delta": 2}),
    )
    .await;
    let reply = app
        .put(
            &format!("/v1/boards/{b}"),
            json!({"slot": "1h", "windows": ["1h", "24h"]}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{:?}", reply.body);
    // The background build finishes shortly.
    let mut built = None;
    for _ in 0..100 {
        let status = app.get(&format!("/v1/boards/{b}")).await.body;
        if status["windows"][1]["building"] == false {
            built = Some(status);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let status = built.expect("the added window was built");
    assert_eq!(status["windows"][1]["window"], "1d");
    assert_eq!(
        status["windows"][1]["complete_from"],
        crate::support::START + 23 * 3600
    );
    let top = app.get(&format!("/v1/boards/{b}/top?window=24h")).await;
    assert_eq!(
        top.body["entries"],
        json!([{"rank": 1, "member": "a", "score": 2}])
    );
    let smaller = app
        .put(
            &format!("/v1/boards/{b}"),
            json!({"slot": "1h", "windows": ["1h", "2h", "24h"]}),
        )
        .await;
    assert_eq!(
        (smaller.status, smaller.code()),
        (StatusCode::CONFLICT, "board_conflict")
    );
}

#[tokio::test]
async fn an_admin_relayouts_a_board_over_http() {
    let app = spawn_app().await;
    let b = app.board("1h", &["1h", "24h"]).await;
    app.post(
        &format!("/v1/boards/{b}/events"),
        json!({"events": [{"member": "a", "delta": 3}, {"member": "b"}]}),
    )
    .await;
    let reply = app
        .request(
            Method::POST,
            &format!("/v1/boards/{b}/relayout?layout=compact"),
            None,
            None,
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    // The one live slot was made before, while open: plain (a compact board, the
    // service's default, writes its open slot plain until it closes).
    assert_eq!(
        reply.body,
        json!({"layout": "compact", "live_slots": 1, "old_layout_slots": 1,
               "converted_slots": 0, "moved_values": 0, "complete": true})
    );
    let board = app.get(&format!("/v1/boards/{b}")).await;
    assert_eq!(
        board.body["config"]["layout"], "compact",
        "{:?}",
        board.body
    );
    let top = app.get(&format!("/v1/boards/{b}/top?window=24h")).await;
    assert_eq!(
        top.body["entries"],
        json!([{"rank": 1, "member": "a", "score": 3}, {"rank": 2, "member": "b", "score": 1}])
    );
    // `now`: the live plain slot is converted (its two values move to buckets).
    let now = app
        .request(
            Method::POST,
            &format!("/v1/boards/{b}/relayout?layout=compact&now=true"),
            None,
            None,
        )
        .await;
    assert_eq!(now.status, StatusCode::OK, "{:?}", now.body);
    assert_eq!(
        now.body,
        json!({"layout": "compact", "live_slots": 1, "old_layout_slots": 0,
               "converted_slots": 1, "moved_values": 2, "complete": true})
    );
    let top = app.get(&format!("/v1/boards/{b}/top?window=24h")).await;
    assert_eq!(
        top.body["entries"],
        json!([{"rank": 1, "member": "a", "score": 3}, {"rank": 2, "member": "b", "score": 1}])
    );
    let history = app.get(&format!("/v1/boards/{b}/members/a/history")).await;
    assert_eq!(history.status, StatusCode::OK, "{:?}", history.body);
    assert_eq!(history.body["points"][0]["value"], 3, "{:?}", history.body);

    let bad = app
        .request(
            Method::POST,
            &format!("/v1/boards/{b}/relayout?layout=round"),
            None,
            None,
        )
        .await;
    assert_eq!(
        (bad.status, bad.code()),
        (StatusCode::BAD_REQUEST, "bad_request")
    );
    let unknown = app
        .request(
            Method::POST,
            "/v1/boards/nope/relayout?layout=plain",
            None,
            None,
        )
        .await;
    assert_eq!(
        (unknown.status, unknown.code()),
        (StatusCode::NOT_FOUND, "board_not_found")
    );
}
