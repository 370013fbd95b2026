//! Trending boards over HTTP: create with `"kind":"trending"`, events, top with float
//! scores, member, around, ranks, the board list and description, 409 when the name is
//! taken by the other kind, 422 on options of the other kind or a `window`.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::{START, spawn_app, unique};

#[tokio::test]
async fn trending_boards_over_http() {
    let app = spawn_app().await;
    let b = unique("tr");
    let put = app
        .put(
            &format!("/v1/boards/{b}"),
            json!({"kind": "trending", "half_life": "1h", "floor": 0.01, "max_age": "3h"}),
        )
        .await;
    assert_eq!(put.status, StatusCode::CREATED, "{:?}", put.body);
    assert_eq!(
        put.body,
        json!({"name": b, "kind": "trending",
               "config": {"half_life": "1h", "floor": 0.01, "max_age": "3h"},
               "created_at": "2023-11-14T22:00:00Z", "members": 0, "ranked": 0,
               "landmark": START as f64, "rescaling": false})
    );
    let again = app
        .put(
            &format!("/v1/boards/{b}"),
            json!({"kind": "trending", "half_life": "1h", "floor": 0.01, "max_age": "3h"}),
        )
        .await;
    assert_eq!(again.status, StatusCode::OK);
    let other = app
        .put(
            &format!("/v1/boards/{b}"),
            json!({"kind": "trending", "half_life": "2h"}),
        )
        .await;
    assert_eq!(
        (other.status.as_u16(), other.code()),
        (409, "board_conflict")
    );
    let windowed = app
        .put(
            &format!("/v1/boards/{b}"),
            json!({"slot": "1h", "windows": ["1h"]}),
        )
        .await;
    assert_eq!(
        (windowed.status.as_u16(), windowed.code()),
        (409, "board_kind")
    );

    let events = json!({"events": [
        {"member": "alice", "delta": 8, "at": START - 3600},
        {"member": "bob", "delta": 3},
        {"member": "carol", "delta": 3},
        {"member": "dave", "delta": -2},
        {"member": "erin", "delta": 1, "at": START - 4 * 3600},
    ]});
    let posted = app.post(&format!("/v1/boards/{b}/events"), events).await;
    assert_eq!(posted.status, StatusCode::OK, "{:?}", posted.body);
    assert_eq!(posted.body["accepted"], json!(4));
    assert_eq!(posted.body["rejected"][0]["index"], json!(4));
    assert_eq!(
        posted.body["rejected"][0]["error"]["code"],
        json!("too_old")
    );
    let single = app
        .post(
            &format!("/v1/boards/{b}/events"),
            json!({"member": "bob", "delta": 1, "at": START - 7200}),
        )
        .await;
    assert_eq!(single.body, json!({"accepted": 1}));
    let too_old = app
        .post(
            &format!("/v1/boards/{b}/events"),
            json!({"member": "bob", "at": START - 4 * 3600}),
        )
        .await;
    assert_eq!((too_old.status.as_u16(), too_old.code()), (422, "too_old"));

    // An hour later: alice 8·2^-2 = 2, bob 3·2^-1 + 2^-3 = 1.625, carol 1.5.
    app.at(3600);
    let top = app.get(&format!("/v1/boards/{b}/top?limit=2")).await;
    assert_eq!(top.status, StatusCode::OK, "{:?}", top.body);
    assert_eq!(
        top.body,
        json!({"kind": "trending", "board": b, "at": (START + 3600) as f64, "age_ms": 0, "entries": [
            {"rank": 1, "member": "alice", "score": 2.0},
            {"rank": 2, "member": "bob", "score": 1.625},
        ]})
    );
    let page2 = app.get(&format!("/v1/boards/{b}/top?offset=2")).await;
    assert_eq!(
        page2.body["entries"],
        json!([{"rank": 3, "member": "carol", "score": 1.5}])
    );
    // Score ranges, inclusive: alice's 2.0 is in [2, 5]; [1, 2] holds all three.
    let range = app
        .get(&format!("/v1/boards/{b}/top?min_score=2&max_score=5"))
        .await;
    assert_eq!(
        range.body["entries"],
        json!([{"rank": 1, "member": "alice", "score": 2.0}])
    );
    let range = app
        .get(&format!(
            "/v1/boards/{b}/top?min_score=1&max_score=2&offset=1"
        ))
        .await;
    assert_eq!(
        range.body["entries"],
        json!([{"rank": 2, "member": "bob", "score": 1.625},
               {"rank": 3, "member": "carol", "score": 1.5}])
    );
    let range = app.get(&format!("/v1/boards/{b}/top?max_score=1")).await;
    assert_eq!(range.body["entries"], json!([]));
    let bob = app.get(&format!("/v1/boards/{b}/members/bob")).await;
    assert_eq!(
        bob.body,
        json!({"kind": "trending", "member": "bob", "score": 1.625, "rank": 2,
               "percentile": 1.0 / 3.0, "at": (START + 3600) as f64, "age_ms": 0})
    );
    // dave's score is negative: answered, not ranked; zed holds none.
    let dave = app.get(&format!("/v1/boards/{b}/members/dave")).await;
    assert_eq!(
        dave.body,
        json!({"kind": "trending", "member": "dave", "score": -1.0, "rank": null,
               "percentile": 0.0, "at": (START + 3600) as f64, "age_ms": 0})
    );
    let zed = app.get(&format!("/v1/boards/{b}/members/zed")).await;
    assert_eq!((zed.status.as_u16(), zed.code()), (404, "member_not_found"));
    let around = app
        .get(&format!("/v1/boards/{b}/members/carol/around?n=1"))
        .await;
    assert_eq!(
        around.body["entries"],
        json!([{"rank": 2, "member": "bob", "score": 1.625},
               {"rank": 3, "member": "carol", "score": 1.5}])
    );
    let ranks = app
        .get(&format!("/v1/boards/{b}/ranks?members=carol,dave,alice"))
        .await;
    assert_eq!(
        ranks.body["entries"],
        json!([{"member": "carol", "score": 1.5, "rank": 3},
               {"member": "dave", "score": -1.0, "rank": null},
               {"member": "alice", "score": 2.0, "rank": 1}])
    );
    let posted_ranks = app
        .post(
            &format!("/v1/boards/{b}/ranks"),
            json!({"members": ["bob"]}),
        )
        .await;
    assert_eq!(
        posted_ranks.body["entries"],
        json!([{"member": "bob", "score": 1.625, "rank": 2}])
    );

    for path in [
        format!("/v1/boards/{b}/top?window=1h"),
        format!("/v1/boards/{b}/members/bob?window=1h"),
        format!("/v1/boards/{b}/ranks?members=bob&window=1h"),
    ] {
        let reply = app.get(&path).await;
        assert_eq!(
            (reply.status.as_u16(), reply.code()),
            (422, "invalid_query"),
            "{path}"
        );
    }
    let history = app
        .get(&format!("/v1/boards/{b}/members/bob/history"))
        .await;
    assert_eq!(
        (history.status.as_u16(), history.code()),
        (409, "board_kind")
    );

    let described = app.get(&format!("/v1/boards/{b}")).await;
    assert_eq!(described.body["kind"], json!("trending"));
    // alice, bob, carol and dave (negative: held, not ranked).
    assert_eq!(
        (
            described.body["members"].clone(),
            described.body["ranked"].clone()
        ),
        (json!(4), json!(3))
    );
    let w = app.board("1h", &["1h"]).await;
    let list = app.get("/v1/boards").await;
    let kinds: Vec<(String, String)> = list.body["boards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["name"].as_str().unwrap().to_owned(),
                x["kind"].as_str().unwrap().to_owned(),
            )
        })
        .filter(|(n, _)| *n == b || *n == w)
        .collect();
    let mut want = vec![
        (b.clone(), "trending".to_owned()),
        (w.clone(), "windowed".to_owned()),
    ];
    want.sort();
    assert_eq!(kinds, want);
    let on_windowed = app
        .put(
            &format!("/v1/boards/{w}"),
            json!({"kind": "trending", "half_life": "1h"}),
        )
        .await;
    assert_eq!(
        (on_windowed.status.as_u16(), on_windowed.code()),
        (409, "board_kind")
    );

    let dropped = app.delete(&format!("/v1/boards/{b}")).await;
    assert_eq!(dropped.status, StatusCode::NO_CONTENT);
    let gone = app.get(&format!("/v1/boards/{b}/top")).await;
    assert_eq!(
        (gone.status.as_u16(), gone.code()),
        (404, "board_not_found")
    );
}

#[tokio::test]
async fn bad_trending_options_are_422() {
    let app = spawn_app().await;
    let cases = [
        json!({"kind": "trending", "half_life": "1h", "slot": "1h"}),
        json!({"kind": "trending", "half_life": "1h", "windows": ["1h"]}),
        json!({"kind": "trending", "half_life": "1h", "ties": "dense"}),
        json!({"kind": "trending", "half_life": "1h", "offset": 5}),
        json!({"kind": "trending", "half_life": "1h", "floor": -1}),
        json!({"kind": "trending", "half_life": "1h", "max_age": "101h"}),
        json!({"slot": "1h", "windows": ["1h"], "half_life": "1h"}),
        json!({"slot": "1h", "windows": ["1h"], "floor": 0.5}),
        // What a kind needs, left out: the schema cannot say it, so it is a rule (422).
        json!({"kind": "trending"}),
        json!({"kind": "trending", "half_life": null}),
        json!({"windows": ["1h"]}),
        json!({"kind": "windowed", "slot": null, "windows": ["1h"]}),
        json!({"slot": "1h"}),
    ];
    for body in cases {
        let reply = app
            .put(&format!("/v1/boards/{}", unique("x")), body.clone())
            .await;
        assert_eq!(
            (reply.status.as_u16(), reply.code()),
            (422, "invalid_config"),
            "{body}"
        );
    }
    let span = app
        .put(
            &format!("/v1/boards/{}", unique("x")),
            json!({"kind": "trending", "half_life": "soon"}),
        )
        .await;
    assert_eq!((span.status.as_u16(), span.code()), (422, "invalid_span"));
    for body in [
        json!({"kind": "hot", "half_life": "1h"}),
        json!({"kind": "trending", "half_life": "1h", "colour": "red"}),
    ] {
        let reply = app
            .put(&format!("/v1/boards/{}", unique("x")), body.clone())
            .await;
        assert_eq!(
            (reply.status.as_u16(), reply.code()),
            (400, "bad_request"),
            "{body}"
        );
    }
}

#[tokio::test]
async fn a_trending_board_accepts_competition_ties_as_a_generated_client_sends_them() {
    let app = spawn_app().await;
    let reply = app
        .put(
            &format!("/v1/boards/{}", unique("x")),
            json!({"kind": "trending", "half_life": "1h", "ties": "competition"}),
        )
        .await;
    assert_eq!(reply.status.as_u16(), 201, "{:?}", reply.body);
    assert_eq!(reply.body["kind"], "trending", "{:?}", reply.body);
    assert_eq!(reply.body["config"]["half_life"], "1h", "{:?}", reply.body);
}

#[tokio::test]
async fn an_idempotency_key_applies_a_trending_write_once() {
    let app = spawn_app().await;
    let b = unique("tr");
    let put = app
        .put(
            &format!("/v1/boards/{b}"),
            json!({"kind": "trending", "half_life": "1h"}),
        )
        .await;
    assert_eq!(put.status, StatusCode::CREATED);
    let post = |body: &'static str, key: &'static str| {
        let request = app
            .client
            .post(format!("{}/v1/boards/{b}/events", app.url))
            .header("content-type", "application/json")
            .header("idempotency-key", key)
            .body(body);
        async move {
            let response = request.send().await.unwrap();
            let status = response.status();
            let body: serde_json::Value = response.json().await.unwrap();
            (status, body)
        }
    };
    let batch = r#"{"events":[{"member":"a","delta":2},{"member":"","delta":1}]}"#;
    let first = post(batch, "k1").await;
    assert_eq!(first.0, StatusCode::OK, "{:?}", first.1);
    assert_eq!(first.1["accepted"], json!(1));
    assert_eq!(
        first.1["rejected"][0]["error"]["code"],
        json!("invalid_member")
    );
    let again = post(batch, "k1").await;
    assert_eq!(again, first);
    let single = post(r#"{"member":"a","delta":5}"#, "k2").await;
    assert_eq!(single.1, json!({"accepted": 1}));
    assert_eq!(post(r#"{"member":"a","delta":5}"#, "k2").await, single);
    let reused = post(r#"{"member":"a","delta":6}"#, "k2").await;
    assert_eq!(
        (reused.0.as_u16(), reused.1["error"]["code"].clone()),
        (422, json!("idempotency_key_reused"))
    );
    let top = app.get(&format!("/v1/boards/{b}/top")).await;
    assert_eq!(
        top.body["entries"],
        json!([{"rank": 1, "member": "a", "score": 7.0}])
    );
}

#[tokio::test]
async fn the_openapi_document_states_trending_boards() {
    let app = spawn_app().await;
    let doc = app.get("/openapi.json").await.body;
    let schemas = &doc["components"]["schemas"];
    let body = &schemas["ConfigBody"]["properties"];
    for field in ["kind", "half_life", "floor", "max_age", "slot", "windows"] {
        assert!(body[field].is_object(), "ConfigBody.{field}: {body}");
    }
    assert_eq!(
        schemas["BoardKind"]["enum"],
        json!(["windowed", "trending"])
    );
    // Each reply of a board route is one of two shapes, each with a `kind` of one value,
    // under a discriminator on it: what a generated client narrows on.
    let kinds = |name: &str, windowed: &str, trending: &str| {
        let reference = |n: &str| format!("#/components/schemas/{n}");
        assert_eq!(
            schemas[name]["oneOf"],
            json!([{"$ref": reference(windowed)}, {"$ref": reference(trending)}]),
            "{name}"
        );
        assert_eq!(
            schemas[name]["discriminator"],
            json!({"propertyName": "kind", "mapping": {
                "windowed": reference(windowed), "trending": reference(trending)}}),
            "{name}"
        );
        for (variant, kind) in [(windowed, "windowed"), (trending, "trending")] {
            assert_eq!(
                schemas[variant]["properties"]["kind"]["enum"],
                json!([kind]),
                "{variant}"
            );
            assert_eq!(schemas[variant]["required"][0], "kind", "{variant}");
        }
    };
    kinds("BoardPage", "TopPage", "TrendPage");
    kinds("MemberStanding", "Standing", "TrendStanding");
    kinds("MemberRanks", "Ranks", "TrendRanks");
    kinds("BoardState", "BoardStatus", "TrendingStatus");
    kinds("BoardSummary", "WindowedSummary", "TrendingSummary");
    let entry = &schemas["TrendEntry"]["properties"]["score"]["type"];
    assert_eq!(entry, &json!("number"));
    let top = &doc["paths"]["/v1/boards/{board}/top"]["get"]["responses"]["200"];
    assert_eq!(
        top["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/BoardPage"
    );
    let min_score = doc["paths"]["/v1/boards/{board}/top"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "min_score")
        .unwrap()["schema"]["type"]
        .clone();
    assert_eq!(min_score, json!("number"));
}
