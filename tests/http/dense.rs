//! `"ties":"dense"` on `PUT /v1/boards/{board}`: shown in the board, fixed once created,
//! and every rank read answers dense ranks (1, 1, 2), exact values.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::{spawn_app, unique};

#[tokio::test]
async fn a_dense_board_ranks_ties_one_one_two_and_keeps_its_option() {
    let app = spawn_app().await;
    let b = unique("h");
    let path = format!("/v1/boards/{b}");
    let config = json!({"slot": "1h", "windows": ["1h"], "ties": "dense"});
    let created = app.put(&path, config.clone()).await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    assert_eq!(
        created.body["config"],
        json!({"slot": "1h", "windows": ["1h"], "offset": 0, "ties": "dense"})
    );
    assert_eq!(app.put(&path, config).await.status, StatusCode::OK);
    let conflict = app
        .put(&path, json!({"slot": "1h", "windows": ["1h"]}))
        .await;
    assert_eq!(conflict.status, StatusCode::CONFLICT);
    assert_eq!(conflict.code(), "board_conflict");
    let bad = app
        .put(
            &format!("/v1/boards/{}", unique("h")),
            json!({"slot": "1h", "windows": ["1h"], "ties": "modified"}),
        )
        .await;
    assert!(bad.status.is_client_error(), "{:?}", bad.body);
    assert_eq!(app.get(&path).await.body["config"]["ties"], "dense");

    let events = json!({"events": [
        {"member": "bob", "delta": 7},
        {"member": "alice", "delta": 5},
        {"member": "carol", "delta": 5},
        {"member": "dave", "delta": 2},
    ]});
    let reply = app.post(&format!("{path}/events"), events).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let top = app.get(&format!("{path}/top?limit=10")).await;
    assert_eq!(top.status, StatusCode::OK, "{:?}", top.body);
    assert_eq!(
        top.body["entries"],
        json!([
            {"rank": 1, "member": "bob", "score": 7},
            {"rank": 2, "member": "alice", "score": 5},
            {"rank": 2, "member": "carol", "score": 5},
            {"rank": 3, "member": "dave", "score": 2},
        ])
    );
    let member = app.get(&format!("{path}/members/dave")).await;
    assert_eq!(
        (
            member.body["rank"].clone(),
            member.body["percentile"].clone()
        ),
        (json!(3), json!(0.0))
    );
    let ranks = app.get(&format!("{path}/ranks?members=dave,carol")).await;
    assert_eq!(
        ranks.body["entries"],
        json!([
            {"member": "dave", "score": 2, "rank": 3},
            {"member": "carol", "score": 5, "rank": 2},
        ])
    );
}
