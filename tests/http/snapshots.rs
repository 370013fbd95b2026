//! Period snapshots over HTTP: the `snapshots` option of `PUT /v1/boards/{board}` (shown
//! in the board, set on a live board, bounds 422), snapshots taken by the service's own
//! retirer at a slot boundary, and `GET …/snapshots` with its filters and errors.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{START, TestApp, spawn_app, unique};

/// Polls `GET path` until it lists `count` snapshots (the retirer runs in the
/// background once the clock moves).
async fn wait_snapshots(app: &TestApp, path: &str, count: usize) -> Value {
    for _ in 0..100 {
        let reply = app.get(path).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        if reply.body["snapshots"].as_array().unwrap().len() >= count {
            return reply.body;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{path} did not list {count} snapshots within 5 s");
}

#[tokio::test]
async fn the_service_takes_snapshots_at_boundaries_and_lists_them() {
    let app = spawn_app().await;
    let b = unique("snap");
    let path = format!("/v1/boards/{b}");
    let plain = json!({"slot": "1h", "windows": ["1h", "2h"]});
    assert_eq!(
        app.put(&path, plain.clone()).await.status,
        StatusCode::CREATED
    );
    // Added to the live board: 200, shown in its config.
    let with = json!({"slot": "1h", "windows": ["1h", "2h"], "snapshots": {"top": 2, "keep": 5}});
    let reply = app.put(&path, with.clone()).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(
        reply.body["config"],
        json!({"slot": "1h", "windows": ["1h", "2h"], "offset": 0, "ties": "competition",
               "snapshots": {"top": 2, "keep": 5}})
    );
    assert_eq!(app.put(&path, with).await.status, StatusCode::OK);
    assert_eq!(
        app.get(&path).await.body["config"]["snapshots"],
        json!({"top": 2, "keep": 5})
    );
    let events = json!({"events": [
        {"member": "bob", "delta": 7},
        {"member": "alice", "delta": 5},
        {"member": "carol", "delta": 5},
    ]});
    app.at(60);
    assert_eq!(
        app.post(&format!("{path}/events"), events).await.status,
        StatusCode::OK
    );
    app.at(3600 + 5);
    let listed = wait_snapshots(&app, &format!("{path}/snapshots?window=2h"), 1).await;
    assert_eq!(
        listed,
        json!({"board": b, "window": "2h", "snapshots": [{
            "window": "2h", "boundary": START + 3600, "taken_ms": (START + 3600 + 5) * 1000,
            "entries": [
                {"rank": 1, "member": "bob", "score": 7},
                {"rank": 2, "member": "alice", "score": 5},
            ]
        }]})
    );
    // The 1h window retired slot START: an empty snapshot, the first window by default.
    let first = wait_snapshots(&app, &format!("{path}/snapshots"), 1).await;
    assert_eq!(first["window"], "1h");
    assert_eq!(first["snapshots"][0]["entries"], json!([]));
    app.at(2 * 3600 + 5);
    let two = wait_snapshots(&app, &format!("{path}/snapshots?window=2h"), 2).await;
    let boundaries: Vec<&Value> = two["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["boundary"])
        .collect();
    assert_eq!(boundaries, [&json!(START + 7200), &json!(START + 3600)]);
    let ranged = app
        .get(&format!(
            "{path}/snapshots?window=2h&from={}&to={}&limit=1",
            START + 3600,
            START + 3600
        ))
        .await;
    assert_eq!(ranged.body["snapshots"][0]["boundary"], START + 3600);
    assert_eq!(ranged.body["snapshots"].as_array().unwrap().len(), 1);
    let newest = app
        .get(&format!("{path}/snapshots?window=2h&limit=1"))
        .await;
    assert_eq!(newest.body["snapshots"][0]["boundary"], START + 7200);
}

#[tokio::test]
async fn snapshot_options_and_reads_refuse_bad_input() {
    let app = spawn_app().await;
    let b = unique("snap");
    let path = format!("/v1/boards/{b}");
    for (snapshots, fragment) in [
        (json!({"top": 0, "keep": 5}), "snapshots.top"),
        (json!({"top": 1001, "keep": 5}), "snapshots.top"),
        (json!({"top": 1, "keep": 0}), "snapshots.keep"),
        (json!({"top": 1, "keep": 100001}), "snapshots.keep"),
    ] {
        let reply = app
            .put(
                &path,
                json!({"slot": "1h", "windows": ["1h"], "snapshots": snapshots}),
            )
            .await;
        assert_eq!(
            reply.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{snapshots}"
        );
        assert_eq!(reply.code(), "invalid_config");
        assert!(
            reply.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains(fragment),
            "{:?}",
            reply.body
        );
    }
    let reply = app
        .put(
            &path,
            json!({"slot": "1h", "windows": ["1h"], "snapshots": {"top": 1}}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{:?}", reply.body);
    assert_eq!(app.get(&path).await.status, StatusCode::NOT_FOUND);

    let missing = app.get(&format!("{path}/snapshots")).await;
    assert_eq!(
        (missing.status, missing.code()),
        (StatusCode::NOT_FOUND, "board_not_found")
    );
    let created = app
        .put(
            &path,
            json!({"slot": "1h", "windows": ["1h"], "snapshots": {"top": 1, "keep": 1}}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let window = app.get(&format!("{path}/snapshots?window=2h")).await;
    assert_eq!(
        (window.status, window.code()),
        (StatusCode::NOT_FOUND, "window_not_found")
    );
    for query in ["from=10&to=5", "limit=0", "limit=1001", "to=-1"] {
        let reply = app.get(&format!("{path}/snapshots?{query}")).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_query"),
            "{query}"
        );
    }
    let empty = app.get(&format!("{path}/snapshots")).await;
    assert_eq!(
        empty.body,
        json!({"board": b, "window": "1h", "snapshots": []})
    );
}
