//! `watch` in a board's config and `GET /v1/boards/{board}/changes`: a like that passes a
//! post is recorded as two moves naming each other, a watch read back with the config,
//! paging by `after`, the answers to a trimmed or malformed `after`, and the boards that
//! cannot be watched.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{spawn_app, unique};

/// The changes' fields a test compares (id and time left out).
fn shown(body: &Value) -> Vec<Value> {
    let changes = body["changes"].as_array().expect("changes");
    let strip = |c: &Value| {
        let mut c = c.clone();
        let fields = c.as_object_mut().unwrap();
        assert!(fields.remove("id").unwrap().is_string() && fields.remove("at").unwrap().is_i64());
        c
    };
    changes.iter().map(strip).collect()
}

#[tokio::test]
async fn a_like_that_passes_a_post_is_recorded_as_two_moves_naming_each_other() {
    let app = spawn_app().await;
    let b = unique("watched");
    let path = format!("/v1/boards/{b}");
    let config = json!({"slot": "1h", "windows": ["1h", "24h"],
        "watch": [{"window": "24h", "top": 2}], "changes": {"keep": 4, "keep_for": "1d"}});
    let created = app.put(&path, config.clone()).await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    assert_eq!(
        created.body["config"]["watch"],
        json!([{"window": "1d", "top": 2}])
    );
    assert_eq!(
        created.body["config"]["changes"],
        json!({"keep": 4, "keep_for": "1d"})
    );
    let events = json!({"events": [
        {"member": "post:1", "delta": 5},
        {"member": "post:2", "delta": 3},
        {"member": "post:3", "delta": 1},
    ]});
    assert_eq!(
        app.post(&format!("{path}/events"), events).await.status,
        StatusCode::OK
    );
    let like = json!({"member": "post:2", "delta": 4});
    assert_eq!(
        app.post(&format!("{path}/events"), like).await.status,
        StatusCode::OK
    );
    let all = app.get(&format!("{path}/changes")).await;
    assert_eq!(all.status, StatusCode::OK, "{:?}", all.body);
    assert_eq!(all.body["board"], json!(b));
    let w = |kind: &str, member: &str, rank: u64, score: i64| json!({"type": kind, "member": member, "window": "1d", "rank": rank, "score": score, "cause": "write"});
    let mut moved_2 = w("moved", "post:2", 1, 7);
    moved_2["from"] = json!(2);
    moved_2["to"] = json!(1);
    moved_2["passed"] = json!(["post:1"]);
    let mut moved_1 = w("moved", "post:1", 2, 5);
    moved_1["from"] = json!(1);
    moved_1["to"] = json!(2);
    moved_1["passed"] = json!(["post:2"]);
    let expected = vec![
        w("entered", "post:1", 1, 5),
        w("entered", "post:2", 2, 3),
        moved_2,
        moved_1,
    ];
    assert_eq!(shown(&all.body), expected);
    // Paged by after: the changes after the second.
    let second = all.body["changes"][1]["id"].as_str().unwrap();
    let rest = app
        .get(&format!("{path}/changes?after={second}&limit=1"))
        .await;
    assert_eq!(shown(&rest.body), expected[2..3]);
    // Keeping 4: post:3's likes make three more changes, the first three go, and a read
    // after one of them is refused.
    app.post(
        &format!("{path}/events"),
        json!({"member": "post:3", "delta": 9}),
    )
    .await;
    let fourth = all.body["changes"][3]["id"].as_str().unwrap();
    let kept = app.get(&format!("{path}/changes?after={fourth}")).await;
    let members: Vec<&Value> = kept.body["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["member"])
        .collect();
    assert_eq!(
        members,
        [&json!("post:1"), &json!("post:3"), &json!("post:2")]
    );
    for after in [all.body["changes"][0]["id"].as_str().unwrap(), "0-0"] {
        let gone = app.get(&format!("{path}/changes?after={after}")).await;
        assert_eq!(gone.status, StatusCode::GONE, "{:?}", gone.body);
        assert_eq!(gone.body["error"]["code"], json!("changes_trimmed"));
    }
    for bad in ["after=x", "limit=0", "limit=1001"] {
        let refused = app.get(&format!("{path}/changes?{bad}")).await;
        assert_eq!(
            refused.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{bad}: {:?}",
            refused.body
        );
        assert_eq!(
            refused.body["error"]["code"],
            json!("invalid_query"),
            "{bad}"
        );
    }
}

#[tokio::test]
async fn a_board_that_cannot_be_watched_says_so() {
    let app = spawn_app().await;
    let watch = json!([{"window": "1h", "top": 3}]);
    for (config, says) in [
        (
            json!({"slot": "1h", "windows": ["1h"], "aggregate": "max", "watch": watch}),
            "sum board",
        ),
        (
            json!({"slot": "1h", "windows": ["1h"], "shards": 2, "watch": watch}),
            "one shard",
        ),
        (
            json!({"slot": "1h", "windows": ["1h"], "watch": [{"window": "2h", "top": 3}]}),
            "not one of the board's windows",
        ),
        (
            json!({"slot": "1h", "windows": ["1h"], "watch": [{"window": "1h", "top": 101}]}),
            "watch.top",
        ),
        (
            json!({"slot": "1h", "windows": ["1h"], "watch": [watch[0], watch[0]]}),
            "watched twice",
        ),
        (
            json!({"kind": "trending", "half_life": "1h", "watch": watch}),
            "not an option of a trending board",
        ),
    ] {
        let refused = app
            .put(&format!("/v1/boards/{}", unique("unwatched")), config)
            .await;
        assert_eq!(
            refused.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{says}: {:?}",
            refused.body
        );
        assert_eq!(
            refused.body["error"]["code"],
            json!("invalid_config"),
            "{says}"
        );
        let message = refused.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{says}: {message}");
    }
}
