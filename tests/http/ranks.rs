//! `GET` and `POST /v1/boards/{board}/ranks`: a list of members' ranks, exact values.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{START, spawn_app};

async fn seeded(app: &crate::support::TestApp) -> String {
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
    b
}

fn expected_entries() -> Value {
    json!([
        {"member": "carol", "score": 5, "rank": 2},
        {"member": "zed", "score": 0, "rank": null},
        {"member": "bob", "score": 7, "rank": 1},
        {"member": "erin", "score": -3, "rank": null},
        {"member": "carol", "score": 5, "rank": 2},
        {"member": "dave", "score": 2, "rank": 4},
    ])
}

#[tokio::test]
async fn get_ranks_answers_in_the_order_asked() {
    let app = spawn_app().await;
    let b = seeded(&app).await;
    let reply = app
        .get(&format!(
            "/v1/boards/{b}/ranks?members=carol,zed,bob,erin,carol,dave&window=24h"
        ))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(
        reply.body,
        json!({
            "kind": "windowed", "board": b, "window": "1d", "from": START - 23 * 3600, "to": START + 3600,
            "behind": false, "lag_ms": 0, "age_ms": 0, "entries": expected_entries(),
        })
    );
}

#[tokio::test]
async fn post_ranks_takes_the_members_in_the_body() {
    let app = spawn_app().await;
    let b = seeded(&app).await;
    let path = format!("/v1/boards/{b}/ranks");
    let body = json!({"members": ["carol", "zed", "bob", "erin", "carol", "dave"]});
    let reply = app.post(&path, body).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(reply.body["window"], "1h");
    assert_eq!(reply.body["entries"], expected_entries());
    // A member holding a comma can only be asked for in a body.
    let reply = app
        .post(&path, json!({"members": ["a,b"], "window": "1h"}))
        .await;
    assert_eq!(
        reply.body["entries"],
        json!([{"member": "a,b", "score": 0, "rank": null}])
    );
}

#[tokio::test]
async fn ranks_refuse_bad_lists_with_their_codes() {
    let app = spawn_app().await;
    let b = seeded(&app).await;
    let path = format!("/v1/boards/{b}/ranks");
    let many: Vec<String> = (0..1001).map(|i| format!("m{i}")).collect();
    let cases = [
        (
            app.post(&path, json!({"members": many})).await,
            422,
            "invalid_query",
        ),
        (
            app.post(&path, json!({"members": []})).await,
            422,
            "invalid_query",
        ),
        (
            app.post(&path, json!({"members": ["a", ""]})).await,
            422,
            "invalid_member",
        ),
        (
            app.post(&path, json!({"members": ["a"], "limit": 1})).await,
            400,
            "bad_request",
        ),
        (
            app.get(&format!("{path}?members=a,,b")).await,
            422,
            "invalid_member",
        ),
        (app.get(&path).await, 400, "bad_request"),
        (
            app.get(&format!("{path}?members=a&window=2h")).await,
            404,
            "window_not_found",
        ),
        (
            app.get("/v1/boards/nope/ranks?members=a").await,
            404,
            "board_not_found",
        ),
    ];
    for (i, (reply, status, code)) in cases.iter().enumerate() {
        assert_eq!(
            (reply.status.as_u16(), reply.code()),
            (*status, *code),
            "case {i}"
        );
    }
    let thousand: Vec<String> = (0..1000).map(|i| format!("m{i}")).collect();
    let reply = app.post(&path, json!({"members": thousand})).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["entries"].as_array().unwrap().len(), 1000);
}

#[tokio::test]
async fn the_ranks_routes_state_their_bounds_in_the_openapi_document() {
    // Every token set: the document lists the 401 of a route that needs one.
    let app = crate::auth::app_with(crate::auth::all_tokens()).await;
    let doc = app.get("/openapi.json").await.body;
    let schemas = &doc["components"]["schemas"];
    let members = &schemas["RanksBody"]["properties"]["members"];
    assert_eq!(
        (members["minItems"].clone(), members["maxItems"].clone()),
        (json!(1), json!(1000))
    );
    assert_eq!(
        (
            members["items"]["minLength"].clone(),
            members["items"]["maxLength"].clone()
        ),
        (json!(1), json!(256))
    );
    assert_eq!(schemas["RanksBody"]["additionalProperties"], json!(false));
    assert_eq!(
        schemas["MemberRank"]["required"],
        json!(["member", "score", "rank"])
    );
    let ranks = &doc["paths"]["/v1/boards/{board}/ranks"];
    for method in ["get", "post"] {
        let statuses: Vec<&String> = ranks[method]["responses"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        let expected = if method == "get" {
            vec!["200", "400", "401", "404", "422", "503"]
        } else {
            vec!["200", "400", "401", "404", "413", "415", "422", "503"]
        };
        assert_eq!(statuses, expected, "{method}");
    }
    let params = ranks["get"]["parameters"].as_array().unwrap();
    let members = params.iter().find(|p| p["name"] == "members").unwrap();
    assert_eq!(
        (members["in"].as_str(), members["required"].as_bool()),
        (Some("query"), Some(true))
    );
}
