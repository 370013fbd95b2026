//! Bearer tokens: writes need the write (or admin) token, administration the admin
//! token, reads stay open; 401 without a valid token, 403 with a token lacking the right.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use rollboard::http::Tokens;
use rollboard::service::ServiceConfig;
use serde_json::json;

use crate::support::{TestApp, TestRedis, clock, spawn_app_with, unique};

async fn app_with(tokens: Tokens) -> TestApp {
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
        admin: None,
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
        write: None,
        admin: Some("a-Token".into()),
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
