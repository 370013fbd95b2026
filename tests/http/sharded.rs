//! `"shards": K` on `PUT /v1/boards/{board}`: shown in the board's config, its ranks and
//! pages as a board of one shard answers them, the shards never listed, and what a
//! sharded board refuses answered with its code and message; its period snapshots taken
//! by the service from the merged top.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::{Backend, START, entries, fresh_app, ranked, unique};

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

    // Period snapshots: the service's retirer takes one per boundary from the merged top.
    let snapped = format!("/v1/boards/{}", unique("shard"));
    let config = json!({"slot": "1h", "windows": ["2h"], "shards": 3,
                        "snapshots": {"top": 4, "keep": 5}});
    assert_eq!(app.put(&snapped, config).await.status, StatusCode::CREATED);
    app.post(&format!("{snapped}/events"), json!({"events": events}))
        .await;
    app.at(3600 + 60);
    let snapshots = format!("{snapped}/snapshots");
    let mut listed = json!([]);
    for _ in 0..100 {
        listed = app.get(&snapshots).await.body["snapshots"].clone();
        if listed.as_array().is_some_and(|l| !l.is_empty()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let [snapshot] = listed.as_array().unwrap().as_slice() else {
        panic!("{snapshots} listed {listed}");
    };
    assert_eq!(snapshot["boundary"], START + 3600);
    assert_eq!(
        entries(snapshot),
        ranked(&[
            (1, "m09", 10),
            (1, "m19", 10),
            (1, "m29", 10),
            (4, "m08", 9)
        ])
    );

    for board in [&path, &snapped] {
        assert_eq!(app.delete(board).await.status, StatusCode::NO_CONTENT);
    }
    assert_eq!(app.get("/v1/boards").await.body["boards"], json!([]));
}

#[tokio::test]
async fn a_board_resharded_over_http_on_redis() {
    a_board_resharded_over_http(Backend::Redis).await;
}

#[tokio::test]
async fn a_board_resharded_over_http_on_memory() {
    a_board_resharded_over_http(Backend::Memory).await;
}

/// `POST /v1/boards/{board}/reshard {"shards": K}`: the members move, every read stays
/// the same, the config says the new count, and bad requests are answered with their
/// code.
async fn a_board_resharded_over_http(backend: Backend) {
    let app = fresh_app(backend).await;
    let b = unique("reshard");
    let path = format!("/v1/boards/{b}");
    let config = json!({"slot": "1h", "windows": ["1h"], "shards": 2});
    assert_eq!(app.put(&path, config).await.status, StatusCode::CREATED);
    let events: Vec<_> = (0..30)
        .map(|m| json!({"member": format!("m{m:02}"), "delta": m % 10 + 1}))
        .collect();
    app.post(&format!("{path}/events"), json!({"events": events}))
        .await;
    let before = app.get(&format!("{path}/top?limit=30")).await.body;
    let expected: Vec<(u64, String, i64)> = (0..30)
        .map(|k| {
            // Totals 10 down to 1, three members each (m09, m19, m29 hold 10).
            let total = 10 - k / 3;
            let member = format!("m{}{}", k % 3, total - 1);
            (k as u64 / 3 * 3 + 1, member, total)
        })
        .collect();
    assert_eq!(entries(&before), expected);

    let reply = app
        .post(&format!("{path}/reshard"), json!({"shards": 4}))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(
        (reply.body["from"].clone(), reply.body["to"].clone()),
        (json!(2), json!(4))
    );
    // Each member holds one slot value; growing to 4 moves about half of them.
    let moved = reply.body["moved_members"].as_u64().unwrap();
    assert_eq!(reply.body["moved_values"].as_u64(), Some(moved));
    assert!((5..=25).contains(&moved), "{:?}", reply.body);
    assert_eq!(app.get(&format!("{path}/top?limit=30")).await.body, before);
    assert_eq!(app.get(&path).await.body["config"]["shards"], 4);
    let member = app.get(&format!("{path}/members/m18")).await;
    assert_eq!(
        (member.body["rank"].clone(), member.body["score"].clone()),
        (json!(4), json!(9))
    );
    let again = app
        .post(&format!("{path}/reshard"), json!({"shards": 4}))
        .await;
    assert_eq!(again.body["moved_members"], 0, "{:?}", again.body);

    for (body, status, code) in [
        (
            json!({"shards": 33}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_config",
        ),
        (
            json!({"shards": 0}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_config",
        ),
        (
            json!({"shards": "3"}),
            StatusCode::BAD_REQUEST,
            "bad_request",
        ),
        (json!({"count": 3}), StatusCode::BAD_REQUEST, "bad_request"),
    ] {
        let reply = app.post(&format!("{path}/reshard"), body.clone()).await;
        assert_eq!(
            (reply.status, reply.code()),
            (status, code),
            "{body}: {:?}",
            reply.body
        );
    }
    let missing = app
        .post("/v1/boards/no-such-board/reshard", json!({"shards": 2}))
        .await;
    assert_eq!(missing.code(), "board_not_found");
    let max = format!("/v1/boards/{}", unique("reshard"));
    let config = json!({"slot": "1h", "windows": ["1h"], "aggregate": "max", "shards": 2});
    assert_eq!(app.put(&max, config).await.status, StatusCode::CREATED);
    let refused = app
        .post(&format!("{max}/reshard"), json!({"shards": 3}))
        .await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert_eq!(refused.code(), "aggregate_unsupported");
}
