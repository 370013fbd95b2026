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

/// The events of a Server-Sent Events answer, read as they come: (id, event, data).
struct Events {
    answer: reqwest::Response,
    buffer: String,
}

impl Events {
    /// The next event (comments, such as keep-alives, skipped); fails after 5 s.
    async fn next(&mut self) -> (String, String, Value) {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let field = |name: &str| {
                    let prefix = format!("{name}: ");
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix(&prefix).map(str::to_owned))
                };
                if let Some(data) = field("data") {
                    let id = field("id").unwrap_or_default();
                    let event = field("event").unwrap_or_default();
                    return (id, event, serde_json::from_str(&data).unwrap());
                }
                continue;
            }
            let chunk =
                tokio::time::timeout(std::time::Duration::from_secs(5), self.answer.chunk());
            let chunk = chunk
                .await
                .expect("an event within 5 s")
                .unwrap()
                .expect("more of the stream");
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }
}

#[tokio::test]
async fn an_event_source_follows_the_changes_and_resumes_after_the_last_one() {
    let app = spawn_app().await;
    let b = unique("streamed");
    let path = format!("/v1/boards/{b}");
    let config = json!({"slot": "1h", "windows": ["1h"], "watch": [{"window": "1h", "top": 2}]});
    assert_eq!(app.put(&path, config).await.status, StatusCode::CREATED);
    let like = |member: &str, delta: i64| json!({"member": member, "delta": delta});
    app.post(&format!("{path}/events"), like("a", 2)).await;
    let url = format!("{}{path}/changes", app.url);
    let open = |last: Option<String>| {
        let request = app.client.get(&url).header("accept", "text/event-stream");
        let request = match last {
            Some(id) => request.header("last-event-id", id),
            None => request,
        };
        request.send()
    };
    let answer = open(None).await.unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let content_type = answer.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let mut events = Events {
        answer,
        buffer: String::new(),
    };
    let (first, event, data) = events.next().await;
    assert_eq!(event, "change");
    assert_eq!(
        (
            data["id"].as_str(),
            data["type"].clone(),
            data["member"].clone()
        ),
        (Some(first.as_str()), json!("entered"), json!("a"))
    );
    // A like recorded after the stream opened arrives on it.
    app.post(&format!("{path}/events"), like("b", 3)).await;
    let mut next = Vec::new();
    for _ in 0..2 {
        let (_, _, data) = events.next().await;
        next.push((
            data["type"].clone(),
            data["member"].clone(),
            data["rank"].clone(),
            data["passed"].clone(),
        ));
    }
    assert_eq!(
        next,
        [
            (json!("entered"), json!("b"), json!(1), Value::Null),
            (json!("moved"), json!("a"), json!(2), json!(["b"])),
        ]
    );
    // A reconnect says the last id it saw, and resumes after it.
    let mut resumed = Events {
        answer: open(Some(first)).await.unwrap(),
        buffer: String::new(),
    };
    let (_, _, data) = resumed.next().await;
    assert_eq!(
        (data["type"].clone(), data["member"].clone()),
        (json!("entered"), json!("b"))
    );
    // A stream after a malformed id is refused before it starts, as a page is.
    let refused = open(Some("x".into())).await.unwrap();
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn a_top_read_with_movement_shows_each_watched_posts_rank_at_since() {
    let app = spawn_app().await;
    let b = unique("moving");
    let path = format!("/v1/boards/{b}");
    let config = json!({"slot": "1h", "windows": ["1h", "24h"],
        "watch": [{"window": "24h", "top": 2}]});
    assert_eq!(app.put(&path, config).await.status, StatusCode::CREATED);
    let events = json!({"events": [
        {"member": "post:1", "delta": 5},
        {"member": "post:2", "delta": 3},
        {"member": "post:3", "delta": 1},
    ]});
    assert_eq!(
        app.post(&format!("{path}/events"), events).await.status,
        StatusCode::OK
    );
    // Ten minutes later post:3 takes the lead: post:1 goes down one, post:2 drops out.
    app.clock.advance_secs(600);
    let like = json!({"member": "post:3", "delta": 9});
    assert_eq!(
        app.post(&format!("{path}/events"), like).await.status,
        StatusCode::OK
    );
    let top = |query: &str| format!("{path}/top?window=24h&limit=3&{query}");
    let read = app.get(&top("with=movement&since=5m")).await;
    assert_eq!(read.status, StatusCode::OK, "{:?}", read.body);
    let rows: Vec<Value> = read.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| json!([e["member"], e["rank"], e.get("movement")]))
        .collect();
    assert_eq!(
        rows,
        [
            json!(["post:3", 1, {"was": null}]),
            json!(["post:1", 2, {"was": 1}]),
            json!(["post:2", 3, null]),
        ]
    );
    // Since a time after the like: no movement; with data too.
    let now = read.body["to"].as_i64().unwrap();
    let read = app
        .get(&top(&format!("with=data,movement&since={now}")))
        .await;
    assert_eq!(read.status, StatusCode::OK, "{:?}", read.body);
    let first = &read.body["entries"][0];
    assert_eq!(
        (&first["movement"], &first["data"]),
        (&json!({"was": 1}), &Value::Null)
    );
    // What a read gets wrong is said.
    for (query, says) in [
        ("with=movement", "add since=24h"),
        ("since=1h", "add with=movement"),
        (
            "with=movement&since=yesterday",
            "neither a span back from now",
        ),
        ("with=badges", "with=\"badges\" is not known"),
    ] {
        let bad = app.get(&top(query)).await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{query}");
        assert_eq!(bad.body["error"]["code"], "invalid_query", "{query}");
        let message = bad.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{query}: {message}");
    }
    let unwatched = app
        .get(&format!("{path}/top?window=1h&with=movement&since=1h"))
        .await;
    assert_eq!(unwatched.status, StatusCode::UNPROCESSABLE_ENTITY);
    let message = unwatched.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("window 1h of board"), "{message}");
}
