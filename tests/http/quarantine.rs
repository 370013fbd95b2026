//! Quarantine (`POST /v1/contributors/{by}/quarantine` and `…/release`): a bot's likes
//! stop counting on every board keeping contributors, one created later included, while
//! its writes answer as before; released, they count again; the contributor's view shows
//! them counting nothing meanwhile.

use reqwest::StatusCode;
use serde_json::json;

use crate::contributors::{create, top};
use crate::support::{TestApp, ranked};

on_memory_and_redis!(a_bot_quarantined_counts_nowhere_until_released);

async fn like(app: &TestApp, board: &str, member: &str, by: &str) -> i64 {
    let event = json!({"member": member, "by": by});
    let reply = app.post(&format!("/v1/boards/{board}/events"), event).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    reply.body["counted"].as_i64().unwrap()
}

async fn a_bot_quarantined_counts_nowhere_until_released(app: TestApp) {
    let capped = json!({"slot": "1h", "windows": ["1h", "24h"], "per_contributor_member": 1});
    create(&app, "forum", capped.clone()).await;
    for (post, by) in [
        ("post:1", "u1"),
        ("post:1", "u2"),
        ("post:1", "bot"),
        ("post:2", "bot"),
    ] {
        assert_eq!(like(&app, "forum", post, by).await, 1);
    }
    let all = [(1, "post:1", 3), (2, "post:2", 1)];
    assert_eq!(top(&app, "forum", "24h").await, ranked(&all));

    let held = app.post("/v1/contributors/bot/quarantine", json!({})).await;
    assert_eq!(
        (held.status, held.body),
        (
            StatusCode::OK,
            json!({"by": "bot", "quarantined": true, "changed": true, "boards": 1, "sums": 4})
        )
    );
    assert_eq!(top(&app, "forum", "24h").await, ranked(&[(1, "post:1", 2)]));
    // Its likes answer as ever, and count nowhere: on a board created later too.
    assert_eq!(like(&app, "forum", "post:3", "bot").await, 1);
    create(&app, "later", capped).await;
    assert_eq!(like(&app, "later", "post:9", "bot").await, 1);
    assert_eq!(top(&app, "forum", "24h").await, ranked(&[(1, "post:1", 2)]));
    assert_eq!(top(&app, "later", "24h").await, ranked(&[]));
    let view = app.get("/v1/contributors/bot?boards=later").await;
    let window = |w: &str| {
        json!({"window": w, "contributed": 1, "counted": 0, "members": [
            {"member": "post:9", "contributed": 1, "counted": 0},
        ]})
    };
    assert_eq!(
        view.body,
        json!({"by": "bot", "boards": [{"board": "later", "windows": [window("1h"), window("1d")]}]})
    );

    let released = app.post("/v1/contributors/bot/release", json!({})).await;
    assert_eq!(
        (released.status, released.body),
        (
            StatusCode::OK,
            json!({"by": "bot", "quarantined": false, "changed": true, "boards": 2, "sums": 8})
        )
    );
    let all = [(1, "post:1", 3), (2, "post:2", 1), (2, "post:3", 1)];
    assert_eq!(top(&app, "forum", "24h").await, ranked(&all));
    assert_eq!(top(&app, "later", "1h").await, ranked(&[(1, "post:9", 1)]));
    let again = app.post("/v1/contributors/bot/release", json!({})).await;
    assert_eq!(
        again.body,
        json!({"by": "bot", "quarantined": false, "changed": false, "boards": 2, "sums": 0})
    );
    let bad = app
        .post("/v1/contributors/b%07t/quarantine", json!({}))
        .await;
    assert_eq!(
        (bad.status, bad.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_contributor")
    );
}
