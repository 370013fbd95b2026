//! `"shards": K` on `PUT /v1/boards/{board}`: shown in the board's config, its ranks and
//! pages as a board of one shard answers them, the shards never listed, and what a
//! sharded board refuses answered with its code and message.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::{Backend, entries, fresh_app, ranked, unique};

#[tokio::test]
async fn a_sharded_board_over_http_on_redis() {
    a_sharded_board_over_http(Backend::Redis).await;
}

#[tokio::test]
async fn a_sharded_board_over_http_on_memory() {
    a_sharded_board_over_http(Backend::Memory).await;
}

async fn a_sharded_board_over_http(backend: Backend) {
    let app = fresh_app(backend).await;
    let b = unique("shard");
    let path = format!("/v1/boards/{b}");
    let config = json!({"slot": "1h", "windows": ["1h"], "ties": "position", "shards": 3});
    let created = app.put(&path, config.clone()).await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    assert_eq!(
        created.body["config"],
        json!({"slot": "1h", "windows": ["1h"], "offset": 0, "ties": "position", "shards": 3})
    );
    assert_eq!(app.put(&path, config).await.status, StatusCode::OK);
    let other = app
        .put(
            &path,
            json!({"slot": "1h", "windows": ["1h"], "ties": "position"}),
        )
        .await;
    assert_eq!(other.status, StatusCode::CONFLICT);
    assert!(
        other.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("shards: stored 3, asked 1"),
        "{:?}",
        other.body
    );

    // 30 members with totals 1..=10, three to a total: ties inside and across shards.
    let events: Vec<_> = (0..30)
        .map(|m| json!({"member": format!("m{m:02}"), "delta": m % 10 + 1}))
        .collect();
    let reply = app
        .post(&format!("{path}/events"), json!({"events": events}))
        .await;
    assert_eq!(reply.body["accepted"], 30, "{:?}", reply.body);
    let page = entries(&app.get(&format!("{path}/top?offset=2&limit=4")).await.body);
    assert_eq!(
        page,
        ranked(&[(3, "m29", 10), (4, "m08", 9), (5, "m18", 9), (6, "m28", 9)])
    );
    let member = app.get(&format!("{path}/members/m18")).await;
    assert_eq!(member.body["rank"], 5, "{:?}", member.body);
    assert_eq!(member.body["score"], 9);
    // 24 of the 30 ranked members are below 9.
    assert_eq!(member.body["percentile"], 0.8);

    let listed = app.get("/v1/boards").await;
    let names: Vec<&str> = listed.body["boards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [b.as_str()]);

    let standing = app
        .post(
            &format!("{path}/events?return=standing"),
            json!({"member": "m01", "delta": 1}),
        )
        .await;
    assert_eq!(standing.status, StatusCode::CONFLICT);
    assert_eq!(standing.code(), "sharded_unsupported");
    assert!(
        standing.body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!(
                "board \"{b}\" is sharded: a write that answers its standing"
            )),
        "{:?}",
        standing.body
    );

    let dense = app
        .put(
            &format!("/v1/boards/{}", unique("shard")),
            json!({"slot": "1h", "windows": ["1h"], "ties": "dense", "shards": 2}),
        )
        .await;
    assert_eq!(dense.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(dense.code(), "invalid_config");
    let zero = app
        .put(
            &format!("/v1/boards/{}", unique("shard")),
            json!({"slot": "1h", "windows": ["1h"], "shards": 0}),
        )
        .await;
    assert_eq!(
        zero.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{:?}",
        zero.body
    );
    assert_eq!(
        zero.body["error"]["message"],
        "invalid board config: shards must be between 1 and 32, got 0"
    );

    assert_eq!(app.delete(&path).await.status, StatusCode::NO_CONTENT);
    assert_eq!(app.get("/v1/boards").await.body["boards"], json!([]));
}
