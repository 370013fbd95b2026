//! The HTTP contract's edges (issue 13): media types, escaped and repeated keys, times out
//! of range, names and durations written loosely, a removed member's history, and the
//! OpenAPI document itself.

use reqwest::StatusCode;
use serde_json::{Value, json};

use rollboard::http::Tokens;

use crate::auth::{all_tokens, app_with};
use crate::support::{START, TestApp, rejected_codes, spawn_app};

/// Sends `body` as is with `content_type` (none when `None`); returns status, code, body.
async fn raw(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    content_type: Option<&str>,
    body: &str,
) -> (StatusCode, String, Value) {
    let mut request = app
        .client
        .request(method, format!("{}{path}", app.url))
        .body(body.to_owned());
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap_or(Value::Null);
    let code = body["error"]["code"].as_str().unwrap_or("").to_owned();
    (status, code, body)
}

async fn post_json(app: &TestApp, path: &str, body: &str) -> (StatusCode, String, Value) {
    raw(
        app,
        reqwest::Method::POST,
        path,
        Some("application/json"),
        body,
    )
    .await
}

#[tokio::test]
async fn a_time_out_of_range_is_invalid_time_for_one_event_and_in_a_batch() {
    let app = spawn_app().await;
    let b = app.board("1h", &["1h"]).await;
    let path = format!("/v1/boards/{b}/events");
    for at in ["-1", "-5.5", "1e300", "253402300800"] {
        let (status, code, _) =
            post_json(&app, &path, &format!(r#"{{"member":"m","at":{at}}}"#)).await;
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_time"),
            "at {at}"
        );
    }
    let batch = format!(
        r#"{{"events":[{{"member":"a","at":-1}},{{"member":"b","at":{}}},{{"member":"c","at":1e300}}]}}"#,
        START + 10
    );
    let (status, _, body) = post_json(&app, &path, &batch).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["accepted"], 1);
    let codes: Vec<(u64, &str)> = rejected_codes(&body);
    assert_eq!(codes, [(0, "invalid_time"), (2, "invalid_time")]);
}

#[tokio::test]
async fn keys_written_with_escapes_are_keys_on_every_route() {
    let app = spawn_app().await;
    let (status, _, body) = raw(
        &app,
        reqwest::Method::PUT,
        "/v1/boards/escaped",
        Some("application/json"),
        r#"{"\u0073lot":"1h","w\u0069ndows":["1h"]}"#,
    )
    .await;
    assert_eq!(
        (status, body["config"]["slot"].clone()),
        (StatusCode::CREATED, json!("1h"))
    );
    let events = "/v1/boards/escaped/events";
    let (status, _, body) = post_json(&app, events, r#"{"\u006dember":"x","\u0064elta":2}"#).await;
    assert_eq!(
        (status, body["accepted"].clone()),
        (StatusCode::OK, json!(1))
    );
    let (status, _, body) =
        post_json(&app, events, r#"{"\u0065vents":[{"m\u0065mber":"y"}]}"#).await;
    assert_eq!(
        (status, body["accepted"].clone()),
        (StatusCode::OK, json!(1))
    );
    let top = app.get("/v1/boards/escaped/top").await;
    assert_eq!(
        top.body["entries"],
        json!([{"rank": 1, "member": "x", "score": 2}, {"rank": 2, "member": "y", "score": 1}])
    );
    let (status, _, body) = post_json(&app, "/v1/counters/esc", r#"{"c\u006funt":3}"#).await;
    assert_eq!((status, body["count"].clone()), (StatusCode::OK, json!(3)));
    let (status, _, body) = post_json(&app, "/v1/rates/esc/hits", r#"{"c\u006funt":4}"#).await;
    assert_eq!(
        (status, body["accepted"].clone()),
        (StatusCode::OK, json!(4))
    );
    let (status, _, body) = post_json(
        &app,
        "/v1/rates/esc/check",
        r#"{"\u006cimit":10,"l\u0061st":"1m"}"#,
    )
    .await;
    assert_eq!((status, body["count"].clone()), (StatusCode::OK, json!(5)));
    let (status, _, body) = post_json(&app, "/v1/stats/ctx/Kind", r#"{"v\u0061lue":1.5}"#).await;
    assert_eq!(
        (status, body["value"].clone()),
        (StatusCode::OK, json!(1.5))
    );
}

#[tokio::test]
async fn a_key_given_twice_is_refused_not_last_wins() {
    let app = spawn_app().await;
    let b = app.board("1h", &["1h"]).await;
    let events = format!("/v1/boards/{b}/events");
    for (path, body) in [
        (events.as_str(), r#"{"member":"a","member":"b"}"#),
        (events.as_str(), r#"{"member":"a","\u006dember":"b"}"#),
        (events.as_str(), r#"{"member":"a","delta":1,"delta":5}"#),
        (
            events.as_str(),
            r#"{"events":[],"events":[{"member":"a"}]}"#,
        ),
        ("/v1/counters/twice", r#"{"count":1,"count":2}"#),
        ("/v1/rates/twice/hits", r#"{"count":1,"count":2}"#),
        ("/v1/stats/ctx/Kind", r#"{"value":1,"value":2}"#),
    ] {
        let (status, code, body) = post_json(&app, path, body).await;
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::BAD_REQUEST, "bad_request"),
            "{path} {body}"
        );
    }
    // In a batch too: the element is not an event, so the batch is refused whole.
    let (status, code, body) = post_json(
        &app,
        &events,
        r#"{"events":[{"member":"c"},{"member":"a","member":"b"}]}"#,
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::BAD_REQUEST, "bad_request")
    );
    assert_eq!(
        body["error"]["message"],
        "events[1]: duplicate key \"member\": each key may appear once at line 1 column 22; nothing was applied"
    );
    assert_eq!(
        app.get(&format!("/v1/boards/{b}/top")).await.body["entries"],
        json!([])
    );
}

#[tokio::test]
async fn content_type_is_a_media_type_matched_alike_on_every_route() {
    let app = spawn_app().await;
    let b = app.board("1h", &["1h"]).await;
    let routes = [
        (
            reqwest::Method::PUT,
            format!("/v1/boards/{b}"),
            r#"{"slot":"1h","windows":["1h"]}"#,
        ),
        (
            reqwest::Method::POST,
            format!("/v1/boards/{b}/events"),
            r#"{"member":"m"}"#,
        ),
        (
            reqwest::Method::POST,
            "/v1/counters/typed".into(),
            r#"{"count":1}"#,
        ),
        (
            reqwest::Method::POST,
            "/v1/rates/typed/hits".into(),
            r#"{"count":1}"#,
        ),
        (
            reqwest::Method::POST,
            "/v1/rates/typed/check".into(),
            r#"{"limit":100,"last":"1m"}"#,
        ),
        (
            reqwest::Method::POST,
            "/v1/stats/ctx/Kind".into(),
            r#"{"value":1}"#,
        ),
    ];
    for (method, path, body) in &routes {
        for json_type in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "APPLICATION/json;charset=\"utf-8\"",
            "application/vnd.x+json",
        ] {
            let (status, code, _) = raw(&app, method.clone(), path, Some(json_type), body).await;
            assert_eq!(
                (status, code.as_str()),
                (StatusCode::OK, ""),
                "{method} {path} as {json_type}"
            );
        }
        for other in [
            Some("application/jsonx"),
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            None,
        ] {
            let (status, code, reply) = raw(&app, method.clone(), path, other, body).await;
            assert_eq!(
                (status, code.as_str()),
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type"),
                "{method} {path} as {other:?}"
            );
            assert_eq!(
                reply["error"]["message"],
                "send the body as JSON with Content-Type: application/json"
            );
        }
    }
    // The four JSON media types each recorded one event; the refused ones none.
    let top = app.get(&format!("/v1/boards/{b}/top")).await;
    assert_eq!(
        top.body["entries"],
        json!([{"rank": 1, "member": "m", "score": 4}])
    );
}

#[tokio::test]
async fn names_of_dots_and_durations_with_spaces_are_refused() {
    let app = spawn_app().await;
    for name in ["...", "...."] {
        let reply = app
            .put(
                &format!("/v1/boards/{name}"),
                json!({"slot": "1h", "windows": ["1h"]}),
            )
            .await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_board_name"),
            "{name}"
        );
        let reply = app.post(&format!("/v1/counters/{name}"), json!({})).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_counter_name"),
            "{name}"
        );
    }
    for config in [
        json!({"slot": " 1h", "windows": ["1h"]}),
        json!({"slot": "1h", "windows": ["1h "]}),
        json!({"slot": "1h", "windows": ["\t24h"]}),
    ] {
        let reply = app.put("/v1/boards/spaced", config.clone()).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_span"),
            "{config}"
        );
    }
    let b = app.board("1h", &["1h"]).await;
    let reply = app.get(&format!("/v1/boards/{b}/top?window=%201h")).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_span")
    );
    let reply = app.get("/v1/rates/k?last=5s,%205m").await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_rate_window")
    );
}

#[tokio::test]
async fn a_removed_members_history_is_404_like_its_score() {
    let app = spawn_app().await;
    let b = app.board("1h", &["1h"]).await;
    app.post(
        &format!("/v1/boards/{b}/events"),
        json!({"member": "gone", "delta": 3}),
    )
    .await;
    let history = format!("/v1/boards/{b}/members/gone/history");
    assert_eq!(
        app.get(&history).await.body["points"],
        json!([{"slot": START, "value": 3}])
    );
    let removed = app.delete(&format!("/v1/boards/{b}/members/gone")).await;
    assert_eq!(removed.body["slot_values"], 1);
    for path in [history.clone(), format!("/v1/boards/{b}/members/gone")] {
        let reply = app.get(&path).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::NOT_FOUND, "member_not_found"),
            "{path}"
        );
    }
    let never = app
        .get(&format!("/v1/boards/{b}/members/never/history"))
        .await;
    assert_eq!(
        (never.status, never.code()),
        (StatusCode::NOT_FOUND, "member_not_found")
    );
}

#[tokio::test]
async fn whole_floats_are_integers_and_bodies_are_objects() {
    let app = spawn_app().await;
    let reply = app
        .put(
            "/v1/boards/floats",
            json!({"slot": 3600.0, "windows": [7200.0], "offset": 60.0}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    assert_eq!(
        reply.body["config"],
        json!({"slot": "1h", "windows": ["2h"], "offset": 60, "ties": "competition"})
    );
    let (status, _, _) = post_json(
        &app,
        "/v1/boards/floats/events",
        r#"{"member":"m","delta":2.0}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, code, _) = post_json(
        &app,
        "/v1/boards/floats/events",
        r#"{"member":"m","delta":2.5}"#,
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::BAD_REQUEST, "bad_request")
    );
    assert_eq!(
        app.get("/v1/boards/floats/members/m").await.body["score"],
        2
    );
    let (status, _, body) = post_json(&app, "/v1/counters/floats", "3.0e0").await;
    assert_eq!(
        (status, body["error"]["message"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("the JSON body must be an object")
        )
    );
    let (status, _, body) = post_json(&app, "/v1/counters/floats", "[null, null]").await;
    assert_eq!(
        (status, body["error"]["message"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("the JSON body must be an object")
        )
    );
    let (status, _, body) = post_json(&app, "/v1/counters/floats", "null").await;
    assert_eq!((status, body["count"].clone()), (StatusCode::OK, json!(1)));
    let (status, _, body) = post_json(&app, "/v1/counters/floats", r#"{"count":3.0}"#).await;
    assert_eq!((status, body["count"].clone()), (StatusCode::OK, json!(3)));
}

#[tokio::test]
async fn the_openapi_document_states_the_contract() {
    let app = app_with(all_tokens()).await;
    let doc = app.get("/openapi.json").await.body;
    let mut queries = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            for (status, response) in op["responses"].as_object().unwrap() {
                assert!(
                    response["description"].is_string(),
                    "{method} {path} {status} has no description"
                );
            }
            for p in op["parameters"].as_array().into_iter().flatten() {
                let name = p["name"].as_str().unwrap();
                let declared = if path.contains(&format!("{{{name}}}")) {
                    "path"
                } else if name == "Idempotency-Key" {
                    "header"
                } else {
                    "query"
                };
                assert_eq!(p["in"], declared, "{method} {path} {name}");
                if declared == "query" {
                    queries.push(format!("{path} {name}"));
                }
            }
            if op.get("requestBody").is_some() {
                for status in ["400", "413", "415"] {
                    assert!(
                        op["responses"].get(status).is_some(),
                        "{method} {path} lacks {status}"
                    );
                }
            }
            // Every operation states its security; a public one with an empty list.
            let security = op["security"].as_array();
            assert!(security.is_some(), "{method} {path} states no security");
            if security.is_some_and(|s| !s.is_empty()) {
                assert!(
                    op["responses"].get("401").is_some(),
                    "{method} {path} lacks 401"
                );
            } else {
                assert!(
                    op["responses"].get("401").is_none(),
                    "{method} {path} is public but documents 401"
                );
            }
            if op["security"] == json!([{"adminToken": []}]) {
                assert!(
                    op["responses"].get("403").is_some(),
                    "{method} {path} lacks 403"
                );
            }
            assert!(
                op["responses"].get("503").is_some(),
                "{method} {path} lacks 503"
            );
        }
    }
    assert!(
        queries.contains(&"/v1/boards/{board}/top limit".to_owned()),
        "{queries:?}"
    );
    let top = &doc["paths"]["/v1/boards/{board}/top"]["get"]["parameters"];
    let limit = top
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "limit")
        .unwrap();
    assert_eq!(
        (
            limit["schema"]["minimum"].clone(),
            limit["schema"]["maximum"].clone()
        ),
        (json!(1), json!(1000))
    );
    let board = &top[0]["schema"];
    assert_eq!(
        (board["minLength"].clone(), board["maxLength"].clone()),
        (json!(1), json!(64))
    );
    let schemas = &doc["components"]["schemas"];
    let body = &doc["paths"]["/v1/boards/{board}/events"]["post"]["requestBody"]["content"]["application/json"]
        ["schema"];
    assert_eq!(body["$ref"], "#/components/schemas/EventsBody");
    let one_of: Vec<&Value> = schemas["EventsBody"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["$ref"])
        .collect();
    assert_eq!(
        one_of,
        [
            &json!("#/components/schemas/EventIn"),
            &json!("#/components/schemas/EventBatch")
        ]
    );
    assert_eq!(schemas["EventIn"]["required"], json!(["member"]));
    assert_eq!(schemas["EventIn"]["additionalProperties"], false);
    assert_eq!(
        schemas["EventBatch"]["properties"]["events"]["maxItems"],
        10_000
    );
    assert_eq!(
        schemas["ConfigBody"]["properties"]["windows"]["minItems"],
        1
    );
}

#[tokio::test]
async fn stats_that_overflow_a_double_answer_null_as_documented() {
    let app = spawn_app().await;
    for _ in 0..2 {
        let reply = app
            .post("/v1/stats/huge/Kind", json!({"value": -f64::MAX}))
            .await;
        assert_eq!(reply.status, StatusCode::OK);
    }
    let current = app.get("/v1/stats/huge/Kind").await.body["current"].clone();
    assert_eq!(
        (current["count"].clone(), current["sum"].clone()),
        (json!(2), Value::Null)
    );
    let doc = app.get("/openapi.json").await.body;
    let sum = &doc["components"]["schemas"]["HourStats"]["properties"]["sum"]["type"];
    assert_eq!(sum, &json!(["number", "null"]));
}

#[tokio::test]
async fn the_openapi_document_states_the_ties_option() {
    let app = spawn_app().await;
    let doc = app.get("/openapi.json").await.body;
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["Ties"]["enum"],
        json!(["competition", "dense", "position"])
    );
    assert_eq!(schemas["Ties"]["type"], "string");
    // Optional in a PUT (competition by default), always stated in a board's config.
    for (config, required) in [("ConfigBody", false), ("BoardConfig", true)] {
        let ties = &schemas[config]["properties"]["ties"];
        assert_eq!(
            ties["$ref"], "#/components/schemas/Ties",
            "{config}: {ties}"
        );
        let listed = schemas[config]["required"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("ties")));
        assert_eq!(listed, required, "{config}");
        assert_eq!(ties["default"], "competition", "{config}");
    }
}

#[tokio::test]
async fn the_openapi_document_states_snapshots() {
    let app = spawn_app().await;
    let doc = app.get("/openapi.json").await.body;
    let schemas = &doc["components"]["schemas"];
    // Optional in a PUT and in a board's config (absent: no snapshots), with its bounds.
    for config in ["ConfigBody", "BoardConfig"] {
        // (A PUT's body has no required field: which ones it needs depends on `kind`.)
        let required = schemas[config]["required"].as_array();
        assert!(
            required.is_none_or(|r| !r.contains(&json!("snapshots"))),
            "{config}"
        );
        assert!(
            schemas[config]["properties"]["snapshots"] != serde_json::Value::Null,
            "{config}"
        );
    }
    let body = &schemas["SnapshotsBody"]["properties"];
    assert_eq!(
        (
            body["top"]["minimum"].clone(),
            body["top"]["maximum"].clone()
        ),
        (json!(1), json!(1000))
    );
    assert_eq!(
        (
            body["keep"]["minimum"].clone(),
            body["keep"]["maximum"].clone()
        ),
        (json!(1), json!(100000))
    );
    let get = &doc["paths"]["/v1/boards/{board}/snapshots"]["get"];
    let names: Vec<&str> = get["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["board", "window", "from", "to", "limit"]);
    for status in ["200", "404", "422"] {
        assert!(
            get["responses"][status] != serde_json::Value::Null,
            "{status}"
        );
    }
    let snapshot = &schemas["Snapshot"]["properties"];
    for field in ["window", "boundary", "taken_ms", "entries"] {
        assert!(snapshot[field] != serde_json::Value::Null, "{field}");
    }
}

#[tokio::test]
async fn the_openapi_document_names_operations_tokens_and_its_server() {
    let app = app_with(all_tokens()).await;
    let doc = app.get("/openapi.json").await.body;
    assert_eq!(doc["servers"][0]["url"], "/");
    let write = json!([{"writeToken": []}, {"adminToken": []}]);
    let admin = json!([{"adminToken": []}]);
    let public = json!([]);
    let read = json!([{"readToken": []}, {"writeToken": []}, {"adminToken": []}]);
    let expected = [
        ("post", "/v1/rates/{key}/hits", "ratesHit", &write),
        ("post", "/v1/rates", "ratesHits", &write),
        ("get", "/v1/rates/{key}", "ratesCounts", &read),
        ("delete", "/v1/rates/{key}", "ratesDelete", &write),
        ("post", "/v1/rates/{key}/check", "ratesCheck", &write),
        ("post", "/v1/counters/{name}", "countersIncr", &write),
        ("put", "/v1/counters/{name}", "countersConfigure", &admin),
        ("get", "/v1/counters/{name}", "countersSamples", &read),
        ("get", "/v1/counters", "countersList", &read),
        ("delete", "/v1/counters/{name}", "countersDelete", &admin),
        ("post", "/v1/stats/{context}/{kind}", "statsRecord", &write),
        ("get", "/v1/stats/{context}/{kind}", "statsGet", &read),
        ("get", "/v1/stats/slowest", "statsSlowest", &read),
        ("get", "/healthz", "opsHealthz", &public),
        ("get", "/readyz", "opsReadyz", &public),
        ("get", "/metrics", "opsMetrics", &read),
        (
            "get",
            "/v1/boards/{board}/snapshots",
            "boardsSnapshots",
            &read,
        ),
    ];
    for (method, path, id, security) in expected {
        let op = &doc["paths"][path][method];
        assert_eq!(
            (&op["operationId"], &op["security"]),
            (&json!(id), security),
            "{method} {path}"
        );
        // Examples of every body and every answer with a body.
        if let Some(body) = op.get("requestBody") {
            assert!(
                body["content"]["application/json"]["example"].is_object(),
                "{method} {path}: request example"
            );
        }
        for (status, response) in op["responses"].as_object().unwrap() {
            if status.starts_with('2')
                && let Some(content) = response["content"].as_object()
            {
                for (media, content) in content {
                    assert!(
                        content.get("example").is_some(),
                        "{method} {path} {status} {media}: example"
                    );
                }
            }
        }
    }
    // Descriptions are prose, not rustdoc links.
    let schemas = &doc["components"]["schemas"];
    for (schema, field) in [
        ("Standing", "rank"),
        ("Standing", "behind"),
        ("Ranks", "behind"),
        ("BoardConfig", "layout"),
    ] {
        let text = schemas[schema]["properties"][field]["description"]
            .as_str()
            .unwrap();
        assert!(
            !text.contains("](") && !text.contains("[`"),
            "{schema}.{field}: {text}"
        );
    }
}

/// `(method path, security, documents 401)` of some operations of `app`'s document.
async fn security_of(app: &TestApp) -> Vec<(String, Value, bool)> {
    let doc = app.get("/openapi.json").await.body;
    [
        ("get", "/v1/boards/{board}/top"),
        ("post", "/v1/boards/{board}/events"),
        ("put", "/v1/boards/{board}"),
    ]
    .iter()
    .map(|(method, path)| {
        let op = &doc["paths"][path][method];
        let unauthorized = op["responses"].get("401").is_some();
        (
            format!("{method} {path}"),
            op["security"].clone(),
            unauthorized,
        )
    })
    .collect()
}

#[tokio::test]
async fn the_document_served_asks_for_the_tokens_the_service_has() {
    // No read token: reads are public (and document no 401); writes still need a token.
    let writes_only = app_with(Tokens {
        write: Some("w".into()),
        admin: Some("a".into()),
        ..Tokens::default()
    })
    .await;
    let (write, admin) = (
        json!([{"writeToken": []}, {"adminToken": []}]),
        json!([{"adminToken": []}]),
    );
    assert_eq!(
        security_of(&writes_only).await,
        [
            ("get /v1/boards/{board}/top".into(), json!([]), false),
            ("post /v1/boards/{board}/events".into(), write, true),
            ("put /v1/boards/{board}".into(), admin, true),
        ]
    );
    // No token at all: every operation is public, so a generated client needs none.
    let open = spawn_app().await;
    assert_eq!(
        security_of(&open).await,
        [
            ("get /v1/boards/{board}/top".into(), json!([]), false),
            ("post /v1/boards/{board}/events".into(), json!([]), false),
            ("put /v1/boards/{board}".into(), json!([]), false),
        ]
    );
}

#[tokio::test]
async fn a_parameter_that_does_not_parse_is_named_in_plain_words() {
    let app = spawn_app().await;
    for (path, message) in [
        (
            "/v1/boards/x/top?min_score=abc",
            "query parameter min_score: expected a number",
        ),
        (
            "/v1/boards/x/top?limit=-1",
            "query parameter limit: expected a non-negative integer",
        ),
        (
            "/v1/boards/x/top?limit=",
            "query parameter limit: expected an integer, not an empty value",
        ),
        (
            "/v1/boards/x/top?limit=99999999999999999999",
            "query parameter limit: the number is too large",
        ),
        (
            "/v1/counters/c?from=soon",
            "query parameter from: expected a number",
        ),
        (
            "/v1/counters/c?fill=yes",
            "query parameter fill: expected `true` or `false`",
        ),
        (
            "/v1/boards/x/snapshots?to=1.5",
            "query parameter to: expected an integer",
        ),
        (
            "/v1/counters/%FF",
            "path parameter name: expected UTF-8 text once percent-decoded",
        ),
    ] {
        let reply = app.get(path).await;
        assert_eq!(
            (reply.status, reply.code(), &reply.body["error"]["message"]),
            (StatusCode::BAD_REQUEST, "bad_request", &json!(message)),
            "{path}"
        );
    }
}

#[tokio::test]
async fn snapshots_from_after_to_is_the_documented_422() {
    let app = spawn_app().await;
    let reply = app
        .get("/v1/boards/x/snapshots?from=253402300798&to=0")
        .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_query")
    );
    let doc = app.get("/openapi.json").await.body;
    let get = &doc["paths"]["/v1/boards/{board}/snapshots"]["get"];
    let described = get["responses"]["422"]["description"].as_str().unwrap();
    assert!(described.contains("`from` after `to`"), "{described}");
    for p in get["parameters"].as_array().unwrap() {
        if p["name"] == "from" || p["name"] == "to" {
            assert_eq!(
                (
                    p["schema"]["minimum"].clone(),
                    p["schema"]["maximum"].clone()
                ),
                (json!(0), json!(253_402_300_799_i64)),
                "{}",
                p["name"]
            );
        }
    }
}
