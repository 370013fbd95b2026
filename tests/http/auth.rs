//! Bearer tokens: writes need the write (or admin) token, administration the admin
//! token, reads stay open unless a read token is configured; 401 without a valid token,
//! 403 with a token lacking the right. Every route of the document is checked against
//! each token.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use rollboard::http::Tokens;
use rollboard::service::ServiceConfig;
use serde_json::json;

use crate::support::{TestApp, TestRedis, clock, spawn_app_with, unique};

/// Every token set: the document served then lists every route's security.
pub(crate) fn all_tokens() -> Tokens {
    Tokens {
        read: Some("r".into()),
        write: Some("w".into()),
        admin: Some("a".into()),
    }
}

/// The service with `tokens`.
pub(crate) async fn app_with(tokens: Tokens) -> TestApp {
    let config = ServiceConfig {
        tokens,
        ..ServiceConfig::default()
    };
    spawn_app_with(Arc::new(TestRedis::start().await), clock(), config).await
}

#[tokio::test]
async fn writes_and_administration_need_their_tokens() {
    let app = app_with(Tokens {
        write: Some("w-token".into()),
        admin: Some("a-token".into()),
        ..Tokens::default()
    })
    .await;
    let b = unique("auth");
    let board = format!("/v1/boards/{b}");
    let config = json!({"slot": "1h", "windows": ["1h"]});

    let anonymous = app
        .request(Method::PUT, &board, Some(config.clone()), None)
        .await;
    assert_eq!(
        (anonymous.status, anonymous.code()),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );
    assert_eq!(anonymous.headers["www-authenticate"], "Bearer");
    let wrong = app
        .request(Method::PUT, &board, Some(config.clone()), Some("nope"))
        .await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    let writer = app
        .request(Method::PUT, &board, Some(config.clone()), Some("w-token"))
        .await;
    assert_eq!(
        (writer.status, writer.code()),
        (StatusCode::FORBIDDEN, "forbidden")
    );
    let admin = app
        .request(Method::PUT, &board, Some(config), Some("a-token"))
        .await;
    assert_eq!(admin.status, StatusCode::CREATED);

    let events = format!("{board}/events");
    let event = json!({"member": "m"});
    assert_eq!(
        app.request(Method::POST, &events, Some(event.clone()), None)
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    let basic = app
        .client
        .post(format!("{}{events}", app.url))
        .header("authorization", "Basic dzp0b2tlbg==")
        .json(&event)
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        app.request(Method::POST, &events, Some(event.clone()), Some("w-token"))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        app.request(Method::POST, &events, Some(event), Some("a-token"))
            .await
            .status,
        StatusCode::OK
    );

    // Reads need nothing.
    let top = app.get(&format!("{board}/top")).await;
    assert_eq!(top.body["entries"][0]["score"], 2);

    let member = format!("{board}/members/m");
    assert_eq!(
        app.request(Method::DELETE, &member, None, Some("w-token"))
            .await
            .status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        app.request(Method::DELETE, &member, None, Some("a-token"))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        app.request(Method::DELETE, &board, None, None).await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        app.request(Method::DELETE, &board, None, Some("a-token"))
            .await
            .status,
        StatusCode::NO_CONTENT
    );
}

#[tokio::test]
async fn a_lone_write_token_also_guards_administration() {
    let app = app_with(Tokens {
        write: Some("only".into()),
        ..Tokens::default()
    })
    .await;
    let board = format!("/v1/boards/{}", unique("auth"));
    let config = json!({"slot": "1h", "windows": ["1h"]});
    assert_eq!(
        app.request(Method::PUT, &board, Some(config.clone()), None)
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        app.request(Method::PUT, &board, Some(config), Some("only"))
            .await
            .status,
        StatusCode::CREATED
    );
    assert_eq!(
        app.request(Method::DELETE, &board, None, Some("only"))
            .await
            .status,
        StatusCode::NO_CONTENT
    );
}

#[tokio::test]
async fn without_tokens_everything_is_open() {
    let app = app_with(Tokens::default()).await;
    let board = format!("/v1/boards/{}", unique("open"));
    let reply = app
        .put(&board, json!({"slot": "1h", "windows": ["1h"]}))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    assert_eq!(
        app.post(&format!("{board}/events"), json!({"member": "m"}))
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive_and_the_token_exact() {
    let app = app_with(Tokens {
        admin: Some("a-Token".into()),
        ..Tokens::default()
    })
    .await;
    let put = |authorization: &'static str| {
        let url = format!("{}/v1/boards/{}", app.url, unique("case"));
        app.client
            .put(url)
            .header("authorization", authorization)
            .json(&json!({"slot": "1h", "windows": ["1h"]}))
            .send()
    };
    for accepted in ["bearer a-Token", "BEARER a-Token", "Bearer  a-Token"] {
        let reply = put(accepted).await.unwrap();
        assert_eq!(reply.status(), StatusCode::CREATED, "{accepted:?}");
    }
    for refused in [
        "Bearer a-token",
        "Bearer A-TOKEN",
        "Basic a-Token",
        "Bearer ",
    ] {
        let reply = put(refused).await.unwrap();
        assert_eq!(reply.status(), StatusCode::UNAUTHORIZED, "{refused:?}");
    }
}

/// The path of `template` with each parameter filled in: `board` names a board that
/// exists, anything else an arbitrary name.
fn fill(template: &str, board: &str) -> String {
    template
        .split('/')
        .map(|part| match part {
            "{board}" => board,
            p if p.starts_with('{') => "x",
            p => p,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The status of `method path` with `token` (none: no Authorization header), no body.
async fn status(app: &TestApp, method: &Method, path: &str, token: Option<&str>) -> StatusCode {
    app.request(method.clone(), path, None, token).await.status
}

/// A new board, created with `token`.
async fn new_board(app: &TestApp, token: &str) -> String {
    let b = unique("guarded");
    let config = json!({"slot": "1h", "windows": ["1h"]});
    let path = format!("/v1/boards/{b}");
    let reply = app
        .request(Method::PUT, &path, Some(config), Some(token))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    b
}

#[tokio::test]
async fn with_every_token_set_each_route_answers_by_the_tokens_it_lists() {
    let app = app_with(Tokens {
        read: Some("r-token".into()),
        write: Some("w-token".into()),
        admin: Some("a-token".into()),
    })
    .await;
    let b = new_board(&app, "a-token").await;

    // Open without a token: the probes, the document and the dashboard page.
    for open in ["/healthz", "/readyz", "/openapi.json", "/"] {
        assert_eq!(
            status(&app, &Method::GET, open, None).await,
            StatusCode::OK,
            "{open}"
        );
    }
    let document = app.get("/openapi.json").await.body;
    let mut kinds = std::collections::BTreeSet::new();
    for (template, item) in document["paths"].as_object().unwrap() {
        let path = fill(template, &b);
        for (method, operation) in item.as_object().unwrap() {
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let schemes: Vec<&str> = operation["security"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|s| s.as_object().unwrap().keys().map(String::as_str))
                .collect();
            let what = format!("{method} {template}");
            if template == "/healthz" || template == "/readyz" {
                assert!(schemes.is_empty(), "{what}: {schemes:?}");
                continue;
            }
            let (allowed, refused): (&[&str], &[&str]) = match schemes.as_slice() {
                ["readToken", "writeToken", "adminToken"] => {
                    (&["r-token", "w-token", "a-token"], &[])
                }
                ["writeToken", "adminToken"] => (&["w-token", "a-token"], &["r-token"]),
                ["adminToken"] => (&["a-token"], &["r-token", "w-token"]),
                other => panic!("{what}: unexpected security {other:?}"),
            };
            for token in [None, Some("nope")] {
                let got = status(&app, &method, &path, token).await;
                assert_eq!(got, StatusCode::UNAUTHORIZED, "{what} with {token:?}");
            }
            for token in refused {
                let got = status(&app, &method, &path, Some(token)).await;
                assert_eq!(got, StatusCode::FORBIDDEN, "{what} with {token}");
            }
            for token in allowed {
                let got = status(&app, &method, &path, Some(token)).await;
                assert!(
                    got != StatusCode::UNAUTHORIZED && got != StatusCode::FORBIDDEN,
                    "{what} with {token}: {got}"
                );
            }
            kinds.insert(schemes.len());
        }
    }
    // Reads, writes and administration were all among them.
    assert_eq!(kinds.into_iter().collect::<Vec<_>>(), [1, 2, 3]);

    // The reads themselves, exactly (the loop above dropped the board: a new one).
    let b = new_board(&app, "a-token").await;
    let events = format!("/v1/boards/{b}/events");
    let reply = app
        .request(
            Method::POST,
            &events,
            Some(json!({"member": "m"})),
            Some("w-token"),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let top = format!("/v1/boards/{b}/top");
    let anonymous = app.get(&top).await;
    assert_eq!(
        (anonymous.status, anonymous.code()),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );
    assert_eq!(anonymous.headers["www-authenticate"], "Bearer");
    let read = app.request(Method::GET, &top, None, Some("r-token")).await;
    assert_eq!(read.body["entries"][0]["member"], "m");
    assert_eq!(read.body["entries"][0]["score"], 1);
    let metrics = app
        .request(Method::GET, "/metrics", None, Some("r-token"))
        .await;
    assert_eq!(metrics.status, StatusCode::OK);
    // The read token writes nothing: the event above is still the only one.
    let refused = app
        .request(
            Method::POST,
            &events,
            Some(json!({"member": "m"})),
            Some("r-token"),
        )
        .await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::FORBIDDEN, "forbidden")
    );
    let read = app.request(Method::GET, &top, None, Some("a-token")).await;
    assert_eq!(read.body["entries"][0]["score"], 1);
}

#[tokio::test]
async fn a_lone_read_token_guards_reads_writes_and_administration() {
    let app = app_with(Tokens {
        read: Some("only-r".into()),
        ..Tokens::default()
    })
    .await;
    let board = format!("/v1/boards/{}", unique("lone-read"));
    let config = json!({"slot": "1h", "windows": ["1h"]});
    for (method, path, body) in [
        (Method::PUT, board.clone(), Some(config.clone())),
        (Method::GET, "/v1/boards".into(), None),
        (Method::GET, "/metrics".into(), None),
    ] {
        let reply = app.request(method, &path, body, None).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{path}");
    }
    let reply = app
        .request(Method::PUT, &board, Some(config), Some("only-r"))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    let reply = app
        .request(
            Method::POST,
            &format!("{board}/events"),
            Some(json!({"member": "m", "delta": 4})),
            Some("only-r"),
        )
        .await;
    assert_eq!(reply.body, json!({"accepted": 1}));
    let top = app
        .request(Method::GET, &format!("{board}/top"), None, Some("only-r"))
        .await;
    assert_eq!(top.body["entries"][0]["score"], 4);
}
