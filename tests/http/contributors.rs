//! Contributors (`by` on events, `per_contributor_member` and `per_contributor` on a sum
//! board): a contributor's likes to one member count at most the cap in each window, net
//! of unlikes, and all their likes at most the budget in the largest window, events
//! without `by` in full; every write reply says what counted (`counted`: single, batch,
//! `return=standing`, several boards); `GET /v1/contributors/{by}` shows who gave what
//! (admin only), and `GET /v1/boards/{board}/members/{member}/contributors` who gave to
//! a post; bad contributors and caps are refused saying what to fix.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use rollboard::MemoryStore;
use rollboard::http::Tokens;
use rollboard::service::ServiceConfig;
use serde_json::{Value, json};

use crate::support::{Reply, TestApp, TestRedis, clock, entries, ranked, spawn_app_on};

on_memory_and_redis!(
    likes_count_once_per_contributor_net_of_unlikes,
    a_contributor_counts_once_in_each_window_after_retirement,
    several_boards_and_return_standing_report_counted,
    bad_contributors_are_refused_with_what_to_fix,
    contributor_caps_are_checked_and_fixed_at_creation,
    a_budget_admits_likes_while_it_lasts_and_frees_as_they_leave,
);

/// A sum board of 1 h slots over 1 h and 24 h counting each contributor once per member.
fn capped() -> Value {
    json!({"slot": "1h", "windows": ["1h", "24h"], "per_contributor_member": 1})
}

pub(crate) async fn create(app: &TestApp, board: &str, config: Value) {
    let created = app.put(&format!("/v1/boards/{board}"), config).await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
}

async fn like(app: &TestApp, board: &str, event: Value) -> Reply {
    let reply = app.post(&format!("/v1/boards/{board}/events"), event).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    reply
}

pub(crate) async fn top(app: &TestApp, board: &str, window: &str) -> Vec<(u64, String, i64)> {
    let page = app
        .get(&format!("/v1/boards/{board}/top?window={window}"))
        .await;
    assert_eq!(page.status, StatusCode::OK, "{:?}", page.body);
    entries(&page.body)
}

/// Asserts an error reply exactly.
fn refused(reply: &Reply, status: StatusCode, code: &str, message: &str) {
    assert_eq!(
        (reply.status, reply.body.clone()),
        (status, json!({"error": {"code": code, "message": message}}))
    );
}

async fn likes_count_once_per_contributor_net_of_unlikes(app: TestApp) {
    create(&app, "forum", capped()).await;
    let described = app.get("/v1/boards/forum").await;
    assert_eq!(described.body["config"]["per_contributor_member"], json!(1));

    // u1 likes post:1 three times: the first counts, the others are over the cap.
    for counted in [1, 0, 0] {
        let reply = like(&app, "forum", json!({"member": "post:1", "by": "u1"})).await;
        assert_eq!(reply.body, json!({"accepted": 1, "counted": counted}));
    }
    assert_eq!(top(&app, "forum", "24h").await, ranked(&[(1, "post:1", 1)]));
    let u2 = like(&app, "forum", json!({"member": "post:1", "by": "u2"})).await;
    assert_eq!(u2.body, json!({"accepted": 1, "counted": 1}));
    assert_eq!(top(&app, "forum", "24h").await, ranked(&[(1, "post:1", 2)]));
    // Without by: in full, and no counted in the reply.
    let anonymous = like(&app, "forum", json!({"member": "post:1", "delta": 2})).await;
    assert_eq!(anonymous.body, json!({"accepted": 1}));
    assert_eq!(top(&app, "forum", "1h").await, ranked(&[(1, "post:1", 4)]));

    // A batch: counted by index, for the applied events with a by only.
    let batch = like(
        &app,
        "forum",
        json!({"events": [
            {"member": "post:1", "delta": -1, "by": "u1"},
            {"member": "post:2", "by": "u1"},
            {"member": "post:2"},
            {"member": "post:3", "delta": 2, "by": "u1"},
            {"member": "", "by": "u1"},
            {"member": "post:1", "delta": -1, "by": "u1"},
        ]}),
    )
    .await;
    assert_eq!(
        batch.body,
        json!({
            "accepted": 5,
            "rejected": [{"index": 4, "error": {"code": "invalid_member", "message": "invalid member: must be 1 to 256 bytes of UTF-8, got 0 bytes"}}],
            "counted": [
                {"index": 0, "counted": 0},
                {"index": 1, "counted": 1},
                {"index": 3, "counted": 1},
                {"index": 5, "counted": 0},
            ],
        })
    );
    // u1 has one like left on post:1; the unlike takes it back.
    let unlike = like(
        &app,
        "forum",
        json!({"member": "post:1", "delta": -1, "by": "u1"}),
    )
    .await;
    assert_eq!(unlike.body, json!({"accepted": 1, "counted": -1}));
    let again = like(
        &app,
        "forum",
        json!({"member": "post:1", "delta": -1, "by": "u1"}),
    )
    .await;
    assert_eq!(again.body, json!({"accepted": 1, "counted": -1}));
    // u2 1 + 2 anonymous − u1's net −1 (clamped to −1).
    assert_eq!(
        top(&app, "forum", "24h").await,
        ranked(&[(1, "post:1", 2), (1, "post:2", 2), (3, "post:3", 1)])
    );

    let view = app.get("/v1/contributors/u1").await;
    assert_eq!(view.status, StatusCode::OK, "{:?}", view.body);
    let window = |w: &str| {
        json!({"window": w, "contributed": 2, "counted": 1, "members": [
            {"member": "post:3", "contributed": 2, "counted": 1},
            {"member": "post:2", "contributed": 1, "counted": 1},
            {"member": "post:1", "contributed": -1, "counted": -1},
        ]})
    };
    assert_eq!(
        view.body,
        json!({"by": "u1", "boards": [{"board": "forum", "windows": [window("1h"), window("1d")]}]})
    );
    // Named, and with a board without contributors beside it: only the capped ones.
    create(&app, "plain", json!({"slot": "1h", "windows": ["1h"]})).await;
    let named = app.get("/v1/contributors/u2?boards=forum").await;
    let u2_window = |w: &str| {
        json!({"window": w, "contributed": 1, "counted": 1, "members": [
            {"member": "post:1", "contributed": 1, "counted": 1},
        ]})
    };
    assert_eq!(
        named.body,
        json!({"by": "u2", "boards": [{"board": "forum", "windows": [u2_window("1h"), u2_window("1d")]}]})
    );
    let nobody = app.get("/v1/contributors/u9").await;
    let empty = |w: &str| json!({"window": w, "contributed": 0, "counted": 0, "members": []});
    assert_eq!(
        nobody.body,
        json!({"by": "u9", "boards": [{"board": "forum", "windows": [empty("1h"), empty("1d")]}]})
    );

    // Who liked post:1: u2 once, and u1 net −1 (its unlikes outnumber its likes).
    let post = app
        .get("/v1/boards/forum/members/post:1/contributors?limit=1")
        .await;
    let window = |w: &str| {
        json!({"window": w, "contributors": 2, "contributed": 0, "counted": 0,
               "top": [{"by": "u2", "contributed": 1, "counted": 1}]})
    };
    assert_eq!(
        post.body,
        json!({"board": "forum", "member": "post:1", "windows": [window("1h"), window("1d")]})
    );
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    let plain = app
        .get("/v1/boards/plain/members/post:1/contributors")
        .await;
    refused(
        &plain,
        unprocessable,
        "invalid_query",
        "invalid query: board \"plain\" keeps no contributors: it has neither \
         \"per_contributor_member\" nor \"per_contributor\" (set when a sum board is created)",
    );
    let over = app
        .get("/v1/boards/forum/members/post:1/contributors?limit=1001")
        .await;
    refused(
        &over,
        unprocessable,
        "invalid_query",
        "invalid query: limit must be between 1 and 1000, got 1001",
    );
}

async fn a_contributor_counts_once_in_each_window_after_retirement(app: TestApp) {
    create(&app, "forum", capped()).await;
    let first = like(&app, "forum", json!({"member": "post:9", "by": "u3"})).await;
    assert_eq!(first.body, json!({"accepted": 1, "counted": 1}));
    // 90 minutes on: the first like has left the 1 h window, not the 24 h one.
    app.at(5400);
    crate::scheduler::wait_retired(&app, "forum").await;
    assert_eq!(top(&app, "forum", "1h").await, ranked(&[]));
    let now = like(&app, "forum", json!({"member": "post:9", "by": "u3"})).await;
    assert_eq!(now.body, json!({"accepted": 1, "counted": 0}));
    let again = like(&app, "forum", json!({"member": "post:9", "by": "u3"})).await;
    assert_eq!(again.body, json!({"accepted": 1, "counted": 0}));
    assert_eq!(top(&app, "forum", "1h").await, ranked(&[(1, "post:9", 1)]));
    assert_eq!(top(&app, "forum", "24h").await, ranked(&[(1, "post:9", 1)]));
    let view = app.get("/v1/contributors/u3").await;
    assert_eq!(
        view.body,
        json!({"by": "u3", "boards": [{"board": "forum", "windows": [
            {"window": "1h", "contributed": 2, "counted": 1, "members": [{"member": "post:9", "contributed": 2, "counted": 1}]},
            {"window": "1d", "contributed": 3, "counted": 1, "members": [{"member": "post:9", "contributed": 3, "counted": 1}]},
        ]}]})
    );
}

async fn several_boards_and_return_standing_report_counted(app: TestApp) {
    create(&app, "forum", capped()).await;
    create(&app, "plain", json!({"slot": "1h", "windows": ["1h"]})).await;
    let one = app
        .post(
            "/v1/events",
            json!({"boards": ["forum", "plain"], "member": "post:1", "by": "u1"}),
        )
        .await;
    assert_eq!(one.status, StatusCode::OK, "{:?}", one.body);
    assert_eq!(
        one.body,
        json!({"boards": [
            {"board": "forum", "accepted": 1, "rejected": [], "replayed": false, "counted": 1},
            {"board": "plain", "accepted": 1, "rejected": [], "replayed": false},
        ]})
    );
    let batch = app
        .post(
            "/v1/events",
            json!({"events": [
                {"boards": ["plain"], "member": "post:2", "by": "u1"},
                {"boards": ["forum", "plain"], "member": "post:1", "by": "u1"},
                {"boards": ["forum"], "member": "post:2", "by": "u2"},
            ]}),
        )
        .await;
    assert_eq!(
        batch.body,
        json!({"boards": [
            {"board": "plain", "accepted": 2, "rejected": [], "replayed": false},
            {"board": "forum", "accepted": 2, "rejected": [], "replayed": false,
             "counted": [{"index": 1, "counted": 0}, {"index": 2, "counted": 1}]},
        ]})
    );
    // The board without the cap counts every like; the capped one each liker once.
    assert_eq!(
        top(&app, "plain", "1h").await,
        ranked(&[(1, "post:1", 2), (2, "post:2", 1)])
    );
    assert_eq!(
        top(&app, "forum", "24h").await,
        ranked(&[(1, "post:1", 1), (1, "post:2", 1)])
    );
    // A bad by refuses the whole multi-board event.
    let bad = app
        .post(
            "/v1/events",
            json!({"boards": ["forum", "plain"], "member": "post:1", "by": ""}),
        )
        .await;
    refused(
        &bad,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_contributor",
        "invalid contributor: \"by\" must be 1 to 128 bytes of UTF-8, got 0 bytes",
    );

    // return=standing: a Counted event is applied, so its member's standing is answered.
    let standing = app
        .post(
            "/v1/boards/forum/events?return=standing&windows=24h",
            json!({"member": "post:2", "by": "u3"}),
        )
        .await;
    assert_eq!(standing.status, StatusCode::OK, "{:?}", standing.body);
    assert_eq!(
        standing.body,
        json!({"accepted": 1, "counted": 1, "standings": [{"member": "post:2", "windows": [
            {"window": "1d", "score": 2, "rank": 1, "score_before": 1, "rank_before": 1},
        ]}]})
    );
    let over_cap = app
        .post(
            "/v1/boards/forum/events?return=standing&windows=24h",
            json!({"events": [{"member": "post:1", "by": "u1"}, {"member": "post:3"}]}),
        )
        .await;
    assert_eq!(
        over_cap.body,
        json!({"accepted": 2, "rejected": [], "counted": [{"index": 0, "counted": 0}], "standings": [
            {"member": "post:1", "windows": [{"window": "1d", "score": 1, "rank": 2, "score_before": 1, "rank_before": 2}]},
            {"member": "post:3", "windows": [{"window": "1d", "score": 1, "rank": 2, "score_before": 0, "rank_before": null}]},
        ]})
    );
}

async fn bad_contributors_are_refused_with_what_to_fix(app: TestApp) {
    create(&app, "forum", capped()).await;
    create(&app, "plain", json!({"slot": "1h", "windows": ["1h"]})).await;
    let long = "x".repeat(129);
    let too_long = "invalid contributor: \"by\" must be 1 to 128 bytes of UTF-8, got 129 bytes";
    let control = "invalid contributor: \"by\" contains the control character '\\u{7}'";
    for board in ["forum", "plain"] {
        let path = format!("/v1/boards/{board}/events");
        let reply = app
            .post(&path, json!({"member": "post:1", "by": long}))
            .await;
        refused(
            &reply,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_contributor",
            too_long,
        );
        let reply = app
            .post(&path, json!({"member": "post:1", "by": "a\u{7}b"}))
            .await;
        refused(
            &reply,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_contributor",
            control,
        );
        let reply = app.post(&path, json!({"member": "post:1", "by": 7})).await;
        refused(
            &reply,
            StatusCode::BAD_REQUEST,
            "bad_request",
            "by must be a string (who gave the event), got 7",
        );
    }
    // On a board without the cap, a good by is checked and not kept.
    let plain = like(&app, "plain", json!({"member": "post:1", "by": "u1"})).await;
    assert_eq!(plain.body, json!({"accepted": 1}));
    // In a batch, a bad by rejects its event alone.
    let batch = like(
        &app,
        "forum",
        json!({"events": [{"member": "post:1", "by": long}, {"member": "post:1", "by": "u1"}]}),
    )
    .await;
    assert_eq!(
        batch.body,
        json!({
            "accepted": 1,
            "rejected": [{"index": 0, "error": {"code": "invalid_contributor", "message": too_long}}],
            "counted": [{"index": 1, "counted": 1}],
        })
    );

    // The view: the same checks on by, and on the boards named.
    let view = app.get(&format!("/v1/contributors/{long}")).await;
    refused(
        &view,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_contributor",
        too_long,
    );
    let view = app.get("/v1/contributors/a%07b").await;
    refused(
        &view,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_contributor",
        control,
    );
    let view = app.get("/v1/contributors/u1?boards=forum,nope").await;
    refused(
        &view,
        StatusCode::NOT_FOUND,
        "board_not_found",
        "board \"nope\" does not exist",
    );
    let view = app.get("/v1/contributors/u1?boards=plain").await;
    refused(
        &view,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_query",
        "invalid query: board \"plain\" keeps no contributors: it has neither \
         \"per_contributor_member\" nor \"per_contributor\" (set when a sum board is created); \
         leave it out of boards",
    );
    let view = app.get("/v1/contributors/u1?boards=forum,forum").await;
    refused(
        &view,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_query",
        "invalid query: board \"forum\" is named twice in boards: name each board once",
    );
}

async fn contributor_caps_are_checked_and_fixed_at_creation(app: TestApp) {
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    for (config, message) in [
        (
            json!({"slot": "1h", "windows": ["1h"], "per_contributor_member": 0}),
            "invalid board config: \"per_contributor_member\" must be between 1 and 1000000000, got 0",
        ),
        (
            json!({"slot": "1h", "windows": ["1h"], "aggregate": "max", "per_contributor_member": 1}),
            "invalid board config: \"per_contributor_member\" is for sum boards (a max, min or \
             latest board keeps one value per member, not a sum of contributions): leave it out",
        ),
        (
            json!({"slot": "1h", "windows": ["1h"], "shards": 2, "per_contributor_member": 1}),
            "invalid board config: \"per_contributor_member\" needs a board of one shard (a \
             contributor's events must be capped in one step, on one Redis node): leave out \
             \"shards\" or the cap",
        ),
        (
            json!({"slot": "1h", "windows": ["1h"], "per_contributor": 0}),
            "invalid board config: \"per_contributor\" must be between 1 and 1000000000, got 0",
        ),
        (
            json!({"slot": "1h", "windows": ["1h"], "aggregate": "latest", "per_contributor": 5}),
            "invalid board config: \"per_contributor\" is for sum boards (a max, min or latest \
             board keeps one value per member, not a sum of contributions): leave it out",
        ),
    ] {
        let reply = app.put("/v1/boards/bad", config).await;
        refused(&reply, unprocessable, "invalid_config", message);
    }
    assert_eq!(app.get("/v1/boards/bad").await.code(), "board_not_found");

    create(&app, "forum", capped()).await;
    let same = app.put("/v1/boards/forum", capped()).await;
    assert_eq!(same.status, StatusCode::OK, "{:?}", same.body);
    let other_cap = app
        .put(
            "/v1/boards/forum",
            json!({"slot": "1h", "windows": ["1h", "24h"], "per_contributor_member": 2}),
        )
        .await;
    refused(
        &other_cap,
        StatusCode::CONFLICT,
        "board_conflict",
        "board \"forum\" already exists with another config: per_contributor_member: stored 1, \
         asked 2",
    );
    let no_cap = app
        .put(
            "/v1/boards/forum",
            json!({"slot": "1h", "windows": ["1h", "24h"]}),
        )
        .await;
    refused(
        &no_cap,
        StatusCode::CONFLICT,
        "board_conflict",
        "board \"forum\" already exists with another config: per_contributor_member: stored 1, \
         asked none",
    );
    // No new windows on a board keeping contributors.
    let wider = app
        .put(
            "/v1/boards/forum",
            json!({"slot": "1h", "windows": ["1h", "24h", "7d"], "per_contributor_member": 1}),
        )
        .await;
    refused(
        &wider,
        StatusCode::CONFLICT,
        "board_conflict",
        "board \"forum\" already exists with another config: windows: stored [1h, 1d], asked \
         [1h, 1d, 7d]",
    );
    // Recompute does not rebuild contributions yet: refused.
    let recompute = app
        .request(Method::POST, "/v1/boards/forum/recompute", None, None)
        .await;
    refused(
        &recompute,
        unprocessable,
        "invalid_config",
        "invalid board config: the board keeps contributors (\"per_contributor_member\" or \
         \"per_contributor\"), which a recompute does not rebuild yet: its totals are kept \
         exact by its writes and retirement",
    );
}

/// Who liked what is for the admin token only, when tokens are set.
#[tokio::test]
async fn the_view_needs_the_admin_token_when_tokens_are_set() {
    let config = ServiceConfig {
        tokens: Tokens {
            read: Some("r".into()),
            write: Some("w".into()),
            admin: Some("a".into()),
        },
        max_clock_skew: None,
        ..ServiceConfig::default()
    };
    let redis = Arc::new(TestRedis::spawn().await);
    let app = spawn_app_on(Arc::new(MemoryStore::new()), redis, clock(), config).await;
    let created = app
        .request(Method::PUT, "/v1/boards/forum", Some(capped()), Some("a"))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    let liked = app
        .request(
            Method::POST,
            "/v1/boards/forum/events",
            Some(json!({"member": "post:1", "by": "u1"})),
            Some("w"),
        )
        .await;
    assert_eq!(liked.body, json!({"accepted": 1, "counted": 1}));

    for path in [
        "/v1/contributors/u1",
        "/v1/boards/forum/members/post:1/contributors",
    ] {
        let anonymous = app.request(Method::GET, path, None, None).await;
        assert_eq!(
            (anonymous.status, anonymous.code()),
            (StatusCode::UNAUTHORIZED, "unauthorized")
        );
        for token in ["r", "w"] {
            let weaker = app.request(Method::GET, path, None, Some(token)).await;
            refused(
                &weaker,
                StatusCode::FORBIDDEN,
                "forbidden",
                "this token may not administer boards: it needs the admin token",
            );
        }
    }
    let path = "/v1/contributors/u1";
    let admin = app.request(Method::GET, path, None, Some("a")).await;
    let window = |w: &str| {
        json!({"window": w, "contributed": 1, "counted": 1, "members": [
            {"member": "post:1", "contributed": 1, "counted": 1},
        ]})
    };
    assert_eq!(
        (admin.status, admin.body),
        (
            StatusCode::OK,
            json!({"by": "u1", "boards": [{"board": "forum", "windows": [window("1h"), window("1d")]}]})
        )
    );
}

/// A budget of 3 in the largest window (24 h): likes count while it lasts, in write
/// order, and the same in both windows; an unlike takes back at most what was counted
/// for that post and gives no budget back; once the counted likes leave the 24 h window
/// the budget is free again, and a refused like never comes back.
async fn a_budget_admits_likes_while_it_lasts_and_frees_as_they_leave(app: TestApp) {
    let budget = json!({"slot": "1h", "windows": ["1h", "24h"], "per_contributor": 3});
    create(&app, "daily", budget.clone()).await;
    let described = app.get("/v1/boards/daily").await;
    assert_eq!(described.body["config"]["per_contributor"], json!(3));
    let posts: Vec<Value> = (1..=5)
        .map(|i| json!({"member": format!("post:{i}"), "by": "u1"}))
        .collect();
    let batch = like(&app, "daily", json!({"events": posts})).await;
    let counted: Vec<Value> = [1, 1, 1, 0, 0]
        .iter()
        .enumerate()
        .map(|(index, c)| json!({"index": index, "counted": c}))
        .collect();
    assert_eq!(
        batch.body,
        json!({"accepted": 5, "rejected": [], "counted": counted})
    );
    for (event, counted) in [
        // Nothing was counted for post:5: nothing to take back.
        (json!({"member": "post:5", "delta": -1, "by": "u1"}), 0),
        (json!({"member": "post:1", "delta": -1, "by": "u1"}), -1),
        // The unlike gave no budget back.
        (json!({"member": "post:6", "by": "u1"}), 0),
        // Another contributor has a budget of their own.
        (json!({"member": "post:4", "delta": 2, "by": "u2"}), 2),
    ] {
        let reply = like(&app, "daily", event).await;
        assert_eq!(reply.body, json!({"accepted": 1, "counted": counted}));
    }
    let expected = ranked(&[(1, "post:4", 2), (2, "post:2", 1), (2, "post:3", 1)]);
    assert_eq!(top(&app, "daily", "1h").await, expected);
    assert_eq!(top(&app, "daily", "24h").await, expected);
    let window = |w: &str| {
        json!({"window": w, "contributed": 4, "counted": 2, "members": [
            {"member": "post:2", "contributed": 1, "counted": 1},
            {"member": "post:3", "contributed": 1, "counted": 1},
            {"member": "post:4", "contributed": 1, "counted": 0},
            {"member": "post:6", "contributed": 1, "counted": 0},
        ]})
    };
    let view = app.get("/v1/contributors/u1?boards=daily").await;
    assert_eq!(
        view.body,
        json!({"by": "u1", "boards": [{"board": "daily", "windows": [window("1h"), window("1d")]}]})
    );
    let conflict = app
        .put(
            "/v1/boards/daily",
            json!({"slot": "1h", "windows": ["1h", "24h"], "per_contributor": 4}),
        )
        .await;
    refused(
        &conflict,
        StatusCode::CONFLICT,
        "board_conflict",
        "board \"daily\" already exists with another config: per_contributor: stored 3, asked 4",
    );

    // A day on, the counted likes have left the 24 h window: the budget is free again.
    app.at(86_400);
    crate::scheduler::wait_retired(&app, "daily").await;
    let again = like(
        &app,
        "daily",
        json!({"member": "post:7", "delta": 5, "by": "u1"}),
    )
    .await;
    assert_eq!(again.body, json!({"accepted": 1, "counted": 3}));
    assert_eq!(top(&app, "daily", "24h").await, ranked(&[(1, "post:7", 3)]));
}
