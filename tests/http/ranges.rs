//! A member's percentile, `top?min_score=&max_score=` and the ranked count per window
//! over HTTP, exact values.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::{START, spawn_app};

#[tokio::test]
async fn member_percentile_score_ranges_and_ranked_counts() {
    let app = spawn_app().await;
    let b = app.board("1h", &["1h", "24h"]).await;
    let events = json!({"events": [
        {"member": "bob", "delta": 7},
        {"member": "alice", "delta": 5},
        {"member": "carol", "delta": 5},
        {"member": "dave", "delta": 2},
        {"member": "erin", "delta": -3},
    ]});
    let reply = app.post(&format!("/v1/boards/{b}/events"), events).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);

    let bob = app.get(&format!("/v1/boards/{b}/members/bob")).await;
    assert_eq!(
        bob.body,
        json!({"kind": "windowed", "member": "bob", "score": 7, "rank": 1, "percentile": 0.75, "window": "1h",
               "from": START, "to": START + 3600, "behind": false, "lag_ms": 0, "age_ms": 0})
    );
    let carol = app.get(&format!("/v1/boards/{b}/members/carol")).await;
    assert_eq!(
        (carol.body["rank"].clone(), carol.body["percentile"].clone()),
        (json!(2), json!(0.25))
    );

    let page = app
        .get(&format!(
            "/v1/boards/{b}/top?min_score=2&max_score=5&offset=1&limit=5"
        ))
        .await;
    assert_eq!(page.status, StatusCode::OK, "{:?}", page.body);
    assert_eq!(
        page.body["entries"],
        json!([{"rank": 2, "member": "carol", "score": 5}, {"rank": 4, "member": "dave", "score": 2}])
    );
    let reversed = app
        .get(&format!("/v1/boards/{b}/top?min_score=5&max_score=2"))
        .await;
    assert_eq!(
        (reversed.status.as_u16(), reversed.code()),
        (422, "invalid_query")
    );
    let huge = app
        .get(&format!("/v1/boards/{b}/top?max_score=9007199254740992"))
        .await;
    assert_eq!((huge.status.as_u16(), huge.code()), (422, "invalid_query"));
    let text = app.get(&format!("/v1/boards/{b}/top?min_score=x")).await;
    assert_eq!((text.status.as_u16(), text.code()), (400, "bad_request"));

    let board = app.get(&format!("/v1/boards/{b}")).await;
    let counts: Vec<(u64, u64)> = board.body["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["members"].as_u64().unwrap(),
                w["ranked"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(counts, [(5, 4), (5, 4)]);
}
