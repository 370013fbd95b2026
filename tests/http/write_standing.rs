//! `POST /v1/boards/{b}/events?return=standing[&windows=…]`: a write answering each
//! written member's score and rank before and after it; the refusals (a window not of
//! the board, `return` other than `standing`, `windows` alone, more than 100 members, a
//! trending board) name what to send; an idempotent replay answers the first outcome
//! with the standing read afresh. Exact bodies.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{Reply, TestApp, spawn_app};

/// A board of 1-minute slots and windows 1h and 24h holding a 6, b 4, c 3, m 2.
async fn board(app: &TestApp) -> String {
    let b = app.board("1m", &["1h", "24h"]).await;
    let events = json!({"events": [
        {"member": "a", "delta": 6}, {"member": "b", "delta": 4},
        {"member": "c", "delta": 3}, {"member": "m", "delta": 2},
    ]});
    let reply = app.post(&format!("/v1/boards/{b}/events"), events).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    b
}

#[tokio::test]
async fn a_write_with_return_standing_answers_each_members_move() {
    let app = spawn_app().await;
    let b = board(&app).await;
    let path = format!("/v1/boards/{b}/events?return=standing");
    let reply = app.post(&path, json!({"member": "m", "delta": 3})).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(
        reply.body,
        json!({"accepted": 1, "standings": [{"member": "m", "windows": [
            {"window": "1h", "score": 5, "rank": 2, "rank_before": 4, "score_before": 2},
            {"window": "1d", "score": 5, "rank": 2, "rank_before": 4, "score_before": 2},
        ]}]})
    );
    // A batch, one window: a repeated member summed, a rejected event, a member back to 0.
    let path = format!("/v1/boards/{b}/events?return=standing&windows=24h");
    let batch = json!({"events": [
        {"member": "c", "delta": 1}, {"member": "n", "delta": 0},
        {"member": "c", "delta": 2}, {"member": "b", "delta": -4},
    ]});
    let reply = app.post(&path, batch).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(reply.body["accepted"], 3);
    assert_eq!(reply.body["rejected"][0]["index"], 1);
    assert_eq!(reply.body["rejected"][0]["error"]["code"], "invalid_delta");
    assert_eq!(
        reply.body["standings"],
        json!([
            {"member": "c", "windows": [
                {"window": "1d", "score": 6, "rank": 1, "rank_before": 4, "score_before": 3}]},
            {"member": "b", "windows": [
                {"window": "1d", "score": 0, "rank": null, "rank_before": 3, "score_before": 4}]},
        ])
    );
    // Without return=standing the answer is as before.
    let reply = app
        .post(&format!("/v1/boards/{b}/events"), json!({"member": "m"}))
        .await;
    assert_eq!(reply.body, json!({"accepted": 1}));
}

#[tokio::test]
async fn bad_standing_requests_are_refused_with_what_to_send() {
    let app = spawn_app().await;
    let b = board(&app).await;
    let one = json!({"member": "m"});
    let refused = |reply: &Reply, code: &str| {
        assert_eq!(
            (reply.status, reply.body["error"]["code"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some(code)),
            "{:?}",
            reply.body
        );
        reply.body["error"]["message"].as_str().unwrap().to_owned()
    };
    let reply = app
        .post(
            &format!("/v1/boards/{b}/events?return=standing&windows=1h,7d"),
            one.clone(),
        )
        .await;
    assert_eq!(
        refused(&reply, "invalid_query"),
        format!("invalid query: board \"{b}\" has no window 7d: its windows are 1h, 1d")
    );
    let reply = app
        .post(&format!("/v1/boards/{b}/events?return=rank"), one.clone())
        .await;
    assert_eq!(
        refused(&reply, "invalid_query"),
        "invalid query: return=\"rank\" is not known: the accepted value is return=standing"
    );
    let reply = app
        .post(&format!("/v1/boards/{b}/events?windows=1h"), one.clone())
        .await;
    assert_eq!(
        refused(&reply, "invalid_query"),
        "invalid query: windows is read with return=standing only: add return=standing, or \
         leave out windows"
    );
    let many: Vec<Value> = (0..21)
        .map(|i| json!({"member": format!("p{i}")}))
        .collect();
    let reply = app
        .post(
            &format!("/v1/boards/{b}/events?return=standing"),
            json!({ "events": many }),
        )
        .await;
    assert_eq!(
        refused(&reply, "invalid_query"),
        "invalid query: a write that returns its standing carries at most 20 distinct \
         members, this one has 21: split the batch, or drop return=standing"
    );
    let t = crate::support::unique("ht");
    let created = app
        .put(
            &format!("/v1/boards/{t}"),
            json!({"kind": "trending", "half_life": "6h"}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    let reply = app
        .post(
            &format!("/v1/boards/{t}/events?return=standing"),
            one.clone(),
        )
        .await;
    assert!(
        refused(&reply, "invalid_query")
            .starts_with(&format!("invalid query: board \"{t}\" is a trending board")),
        "{:?}",
        reply.body
    );
    // Nothing of the refused writes was applied: m is still 2.
    let m = app.get(&format!("/v1/boards/{b}/members/m")).await;
    assert_eq!(m.body["score"], 2, "{:?}", m.body);
}

#[tokio::test]
async fn an_idempotent_replay_answers_the_first_outcome_and_the_standing_now() {
    let app = spawn_app().await;
    let b = board(&app).await;
    let path = format!("/v1/boards/{b}/events?return=standing&windows=1h");
    let body = json!({"member": "m", "delta": 3});
    let first = app
        .post_keyed(&path, &body.to_string(), Some("like-1"))
        .await;
    assert_eq!(first.status, StatusCode::OK, "{:?}", first.body);
    assert_eq!(
        first.body,
        json!({"accepted": 1, "standings": [{"member": "m", "windows": [
            {"window": "1h", "score": 5, "rank": 2, "rank_before": 4, "score_before": 2}]}]})
    );
    // b passes m; the replay applies nothing and reads m's standing now.
    let reply = app
        .post(
            &format!("/v1/boards/{b}/events"),
            json!({"member": "b", "delta": 2}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let replay = app
        .post_keyed(&path, &body.to_string(), Some("like-1"))
        .await;
    assert_eq!(replay.status, StatusCode::OK, "{:?}", replay.body);
    assert_eq!(
        replay.body,
        json!({"accepted": 1, "standings": [{"member": "m", "windows": [
            {"window": "1h", "score": 5, "rank": 3, "rank_before": null, "score_before": null}]}]})
    );
    let m = app.get(&format!("/v1/boards/{b}/members/m")).await;
    assert_eq!(m.body["score"], 5, "{:?}", m.body);
}
