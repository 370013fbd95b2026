//! `default_board` (`ROLLBOARD_DEFAULT_BOARD`): with a default config, the first event to
//! an unknown board creates it, by every write route (one event, a batch, a keyed write,
//! a standing write, `POST /v1/events`); reads of an unknown board stay 404; without a
//! default an unknown board's write is refused as before.

use std::sync::Arc;

use reqwest::StatusCode;
use rollboard::service::{ConfigFile, Overrides, ServiceConfig};
use serde_json::{Value, json};

use crate::support::{TestApp, TestRedis, clock, spawn_app_with, unique};

/// The service with `default_board` given in the file as `toml`.
async fn app_with_default(toml: &str) -> TestApp {
    let file: ConfigFile = toml::from_str(toml).unwrap();
    let config = ServiceConfig::resolve(file, Overrides::default()).unwrap();
    let redis = Arc::new(TestRedis::start().await);
    spawn_app_with(redis, clock(), config).await
}

/// The board's config as `GET /v1/boards/{board}` shows it.
async fn config_of(app: &TestApp, board: &str) -> Value {
    let reply = app.get(&format!("/v1/boards/{board}")).await;
    assert_eq!(reply.status, StatusCode::OK, "{board}: {:?}", reply.body);
    reply.body["config"].clone()
}

#[tokio::test]
async fn the_first_write_to_an_unknown_board_creates_it_with_the_default() {
    let app = app_with_default(
        "[default_board]\nslot = \"1h\"\nwindows = [\"1h\", \"24h\"]\nties = \"dense\"\n",
    )
    .await;
    let want = json!({"slot": "1h", "windows": ["1h", "1d"], "offset": 0, "ties": "dense"});

    // A read of an unknown board creates nothing.
    let read = unique("read");
    let reply = app.get(&format!("/v1/boards/{read}/top")).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::NOT_FOUND, "board_not_found")
    );
    assert_eq!(
        app.get(&format!("/v1/boards/{read}")).await.status,
        StatusCode::NOT_FOUND
    );

    // One event, a batch, a keyed batch, a standing write: each to a board of its own.
    let one = unique("one");
    let reply = app
        .post(
            &format!("/v1/boards/{one}/events"),
            json!({"member": "a", "delta": 2}),
        )
        .await;
    assert_eq!(
        (reply.status, &reply.body["accepted"]),
        (StatusCode::OK, &json!(1))
    );
    let batch = unique("batch");
    let events = json!({"events": [{"member": "a", "delta": 2}, {"member": "b", "delta": 0}]});
    let reply = app
        .post(&format!("/v1/boards/{batch}/events"), events.clone())
        .await;
    assert_eq!(
        (
            reply.status,
            &reply.body["accepted"],
            reply.body["rejected"][0]["index"].clone()
        ),
        (StatusCode::OK, &json!(1), json!(1))
    );
    let keyed = unique("keyed");
    let path = format!("/v1/boards/{keyed}/events");
    for _ in 0..2 {
        let reply = app
            .post_keyed(&path, &events.to_string(), Some("k-1"))
            .await;
        assert_eq!(
            (reply.status, &reply.body["accepted"]),
            (StatusCode::OK, &json!(1))
        );
    }
    let standing = unique("standing");
    let reply = app
        .post(
            &format!("/v1/boards/{standing}/events?return=standing&windows=24h"),
            json!({"member": "a", "delta": 3}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(reply.body["standings"][0]["windows"][0]["score"], 3);
    for board in [&one, &batch, &keyed, &standing] {
        assert_eq!(config_of(&app, board).await, want, "{board}");
        let top = app.get(&format!("/v1/boards/{board}/top?window=24h")).await;
        assert_eq!(top.body["entries"][0]["member"], "a", "{board}");
    }
    // The keyed write was applied once.
    let top = app.get(&format!("/v1/boards/{keyed}/top")).await;
    assert_eq!(
        top.body["entries"],
        json!([{"rank": 1, "member": "a", "score": 2}])
    );

    // `POST /v1/events`: every unknown board it names.
    let (known, new) = (one.clone(), unique("multi"));
    let body = json!({"boards": [known, new], "member": "c", "delta": 5});
    let reply = app.post_keyed("/v1/events", &body.to_string(), None).await;
    let accepted: Vec<&Value> = reply.body["boards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["accepted"])
        .collect();
    assert_eq!(
        (reply.status, accepted),
        (StatusCode::OK, vec![&json!(1), &json!(1)])
    );
    assert_eq!(config_of(&app, &new).await, want);
    // An explicit PUT of another config still finds the board as created.
    let reply = app
        .put(
            &format!("/v1/boards/{new}"),
            json!({"slot": "1m", "windows": ["1h"]}),
        )
        .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::CONFLICT, "board_conflict")
    );
}

#[tokio::test]
async fn a_trending_default_creates_trending_boards() {
    let app = app_with_default("[default_board]\nkind = \"trending\"\nhalf_life = \"6h\"\n").await;
    let hot = unique("hot");
    let reply = app
        .post(
            &format!("/v1/boards/{hot}/events"),
            json!({"member": "a", "delta": 4}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let board = app.get(&format!("/v1/boards/{hot}")).await.body;
    assert_eq!(
        (&board["kind"], &board["config"]["half_life"]),
        (&json!("trending"), &json!("6h"))
    );
}

#[tokio::test]
async fn without_a_default_an_unknown_board_is_refused_and_a_bad_default_stops_the_start() {
    let app = app_with_default("").await;
    let nowhere = unique("nowhere");
    let reply = app
        .post(
            &format!("/v1/boards/{nowhere}/events"),
            json!({"member": "a", "delta": 1}),
        )
        .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::NOT_FOUND, "board_not_found")
    );
    assert_eq!(
        app.get(&format!("/v1/boards/{nowhere}")).await.status,
        StatusCode::NOT_FOUND
    );

    let file: ConfigFile = toml::from_str("[default_board]\nslot = \"1h\"\n").unwrap();
    let refused = ServiceConfig::resolve(file, Overrides::default()).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "default_board: invalid board config: a windowed board needs `windows`"
    );
}
