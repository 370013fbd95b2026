//! `POST /v1/boards/{board}/members/{member}/hide` and `/show`: a hidden member leaves
//! the top page (the ranks below close up) and every list read, its own read answers its
//! score with `"hidden": true` and `"rank": null`, writes keep counting it, and shown
//! again it ranks as its counts give; max and sharded boards alike; what a board that
//! cannot hide answers.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::{entries, ranked, spawn_app, unique};

#[tokio::test]
async fn a_hidden_member_leaves_every_ranking_and_comes_back_with_its_likes() {
    let app = spawn_app().await;
    let b = unique("mod");
    let path = format!("/v1/boards/{b}");
    let created = app
        .put(&path, json!({"slot": "1h", "windows": ["1h", "24h"]}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    let events = json!({"events": [
        {"member": "post:1", "delta": 9},
        {"member": "post:2", "delta": 5},
        {"member": "post:3", "delta": 5},
        {"member": "post:4", "delta": 2},
    ]});
    assert_eq!(
        app.post(&format!("{path}/events"), events).await.status,
        StatusCode::OK
    );

    let hidden = app
        .post(&format!("{path}/members/post:1/hide"), json!({}))
        .await;
    assert_eq!(hidden.status, StatusCode::OK, "{:?}", hidden.body);
    assert_eq!(
        hidden.body,
        json!({"board": b, "member": "post:1", "hidden": true, "changed": true})
    );
    let again = app
        .post(&format!("{path}/members/post:1/hide"), json!({}))
        .await;
    assert_eq!(again.body["changed"], false);
    // A like while hidden still counts.
    let like = app
        .post(&format!("{path}/events"), json!({"member": "post:1"}))
        .await;
    assert_eq!(like.status, StatusCode::OK, "{:?}", like.body);

    let top = app.get(&format!("{path}/top?window=24h")).await;
    assert_eq!(
        entries(&top.body),
        ranked(&[(1, "post:2", 5), (1, "post:3", 5), (3, "post:4", 2)])
    );
    let own = app.get(&format!("{path}/members/post:1?window=24h")).await;
    assert_eq!(own.status, StatusCode::OK, "{:?}", own.body);
    assert_eq!(
        (
            own.body["score"].clone(),
            own.body["rank"].clone(),
            own.body["hidden"].clone()
        ),
        (json!(10), json!(null), json!(true))
    );
    let shown = app.get(&format!("{path}/members/post:4")).await;
    assert_eq!(
        (shown.body["rank"].clone(), shown.body.get("hidden")),
        (json!(3), None)
    );
    let across = app.get(&format!("/v1/members/post:1?boards={b}")).await;
    assert_eq!(
        across.body["boards"][0]["windows"][1],
        json!({"window": "1d", "score": 10, "rank": null, "percentile": 0.0, "behind": false, "hidden": true})
    );
    let listed = app.get(&format!("{path}/hidden?window=24h")).await;
    assert_eq!(
        listed.body,
        json!({"board": b, "window": "1d", "members": [{"member": "post:1", "score": 10}]})
    );
    let around = app.get(&format!("{path}/members/post:1/around")).await;
    assert_eq!(around.status, StatusCode::NOT_FOUND, "{:?}", around.body);
    let ranks = app
        .get(&format!("{path}/ranks?members=post:1,post:4"))
        .await;
    assert_eq!(ranks.status, StatusCode::OK, "{:?}", ranks.body);
    assert_eq!(
        ranks.body["entries"],
        json!([
            {"member": "post:1", "score": 0, "rank": null},
            {"member": "post:4", "score": 2, "rank": 3},
        ])
    );

    let shown = app
        .post(&format!("{path}/members/post:1/show"), json!({}))
        .await;
    assert_eq!(
        shown.body,
        json!({"board": b, "member": "post:1", "hidden": false, "changed": true})
    );
    let top = app.get(&format!("{path}/top?window=24h")).await;
    assert_eq!(
        entries(&top.body),
        ranked(&[
            (1, "post:1", 10),
            (2, "post:2", 5),
            (2, "post:3", 5),
            (4, "post:4", 2)
        ])
    );
    let not_hidden = app
        .post(&format!("{path}/members/post:1/show"), json!({}))
        .await;
    assert_eq!(not_hidden.body["changed"], false);
}

#[tokio::test]
async fn max_and_sharded_boards_hide_and_trending_boards_say_why_not() {
    let app = spawn_app().await;
    // A max board hides too (its values kept, as a sum board's totals).
    let max = format!("/v1/boards/{}", unique("modmax"));
    let config = json!({"slot": "1h", "windows": ["1h"], "aggregate": "max"});
    assert_eq!(app.put(&max, config).await.status, StatusCode::CREATED);
    let values = json!({"events": [{"member": "a", "value": 7}, {"member": "b", "value": 3}]});
    let posted = app.post(&format!("{max}/events"), values).await;
    assert_eq!(posted.status, StatusCode::OK, "{:?}", posted.body);
    let hidden = app.post(&format!("{max}/members/a/hide"), json!({})).await;
    assert_eq!(hidden.status, StatusCode::OK, "{:?}", hidden.body);
    let higher = app
        .post(&format!("{max}/events"), json!({"member": "a", "value": 9}))
        .await;
    assert_eq!(higher.status, StatusCode::OK, "{:?}", higher.body);
    let top = app.get(&format!("{max}/top")).await;
    assert_eq!(entries(&top.body), ranked(&[(1, "b", 3)]));
    let own = app.get(&format!("{max}/members/a")).await;
    assert_eq!(
        (&own.body["score"], &own.body["hidden"]),
        (&json!(9), &json!(true))
    );
    // A sharded board hides on the member's shard; a trending board cannot hide.
    let sharded = format!("/v1/boards/{}", unique("modshards"));
    let config = json!({"slot": "1h", "windows": ["1h"], "shards": 3});
    assert_eq!(app.put(&sharded, config).await.status, StatusCode::CREATED);
    let hidden = app
        .post(&format!("{sharded}/members/a/hide"), json!({}))
        .await;
    assert_eq!(hidden.body["changed"], true, "{:?}", hidden.body);
    let trending = format!("/v1/boards/{}", unique("modtrend"));
    let config = json!({"kind": "trending", "half_life": "1h"});
    assert_eq!(app.put(&trending, config).await.status, StatusCode::CREATED);
    let refused = app
        .post(&format!("{trending}/members/a/hide"), json!({}))
        .await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::CONFLICT, "board_kind")
    );
    let missing = app
        .post(
            &format!("/v1/boards/{}/members/a/hide", unique("none")),
            json!({}),
        )
        .await;
    assert_eq!(
        (missing.status, missing.code()),
        (StatusCode::NOT_FOUND, "board_not_found")
    );
}

#[tokio::test]
async fn a_member_hidden_on_every_board_is_logged_and_shown_back_everywhere() {
    let app = spawn_app().await;
    let (one, later) = (unique("every"), unique("later"));
    let config = json!({"slot": "1h", "windows": ["1h", "24h"]});
    let events =
        json!({"events": [{"member": "post:1", "delta": 9}, {"member": "post:2", "delta": 5}]});
    let board = |b: &str| format!("/v1/boards/{b}");
    assert_eq!(
        app.put(&board(&one), config.clone()).await.status,
        StatusCode::CREATED
    );
    assert_eq!(
        app.post(&format!("{}/events", board(&one)), events.clone())
            .await
            .status,
        StatusCode::OK
    );

    let note = json!({"reason": "spam bot", "actor": "mod:alice"});
    let hidden = app.post("/v1/members/post:1/hide", note).await;
    assert_eq!(hidden.status, StatusCode::OK, "{:?}", hidden.body);
    assert_eq!(
        hidden.body,
        json!({"member": "post:1", "hidden": true, "every_board": true, "boards": 1, "changed": 1, "skipped": []})
    );
    // A board created afterwards hides it too.
    assert_eq!(
        app.put(&board(&later), config).await.status,
        StatusCode::CREATED
    );
    assert_eq!(
        app.post(&format!("{}/events", board(&later)), events)
            .await
            .status,
        StatusCode::OK
    );
    for b in [&one, &later] {
        let top = app.get(&format!("{}/top?window=24h", board(b))).await;
        assert_eq!(entries(&top.body), ranked(&[(1, "post:2", 5)]), "{b}");
    }
    let listed = app.get("/v1/moderation/hidden").await;
    assert_eq!(listed.body, json!({"members": ["post:1"]}));
    let refused = app
        .post(&format!("{}/members/post:1/show", board(&one)), json!({}))
        .await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::CONFLICT, "hidden_everywhere")
    );

    let shown = app
        .post("/v1/members/post:1/show", json!({"actor": "mod:bob"}))
        .await;
    assert_eq!(
        shown.body,
        json!({"member": "post:1", "hidden": false, "every_board": true, "boards": 2, "changed": 2, "skipped": []})
    );
    let top = app.get(&format!("{}/top?window=24h", board(&later))).await;
    assert_eq!(
        entries(&top.body),
        ranked(&[(1, "post:1", 9), (2, "post:2", 5)])
    );

    // The log, newest first, paged by `next`.
    let page = app.get("/v1/moderation/log?limit=1").await;
    assert_eq!(page.status, StatusCode::OK, "{:?}", page.body);
    let newest = &page.body["entries"][0];
    assert_eq!(
        (
            &newest["action"],
            &newest["member"],
            newest.get("boards"),
            &newest["changed"],
            &newest["actor"],
            newest.get("reason")
        ),
        (
            &json!("show"),
            &json!("post:1"),
            None,
            &json!(2),
            &json!("mod:bob"),
            None
        )
    );
    let next = page.body["next"].as_str().unwrap();
    let older = app
        .get(&format!("/v1/moderation/log?limit=5&before={next}"))
        .await;
    assert_eq!(
        older.body["entries"].as_array().unwrap().len(),
        1,
        "{:?}",
        older.body
    );
    let first = &older.body["entries"][0];
    assert_eq!(
        (
            &first["action"],
            &first["reason"],
            &first["actor"],
            &first["changed"]
        ),
        (
            &json!("hide"),
            &json!("spam bot"),
            &json!("mod:alice"),
            &json!(1)
        )
    );
    assert_eq!(older.body.get("next"), None);

    // What to fix.
    let empty = app
        .post("/v1/members/post:1/hide", json!({"reason": ""}))
        .await;
    assert_eq!(
        (empty.status, empty.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_moderation")
    );
    let unknown = app
        .post("/v1/members/post:1/hide", json!({"why": "x"}))
        .await;
    assert_eq!(
        unknown.status,
        StatusCode::BAD_REQUEST,
        "{:?}",
        unknown.body
    );
    let limit = app.get("/v1/moderation/log?limit=0").await;
    assert_eq!(
        (limit.status, limit.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_query")
    );
    // Nothing refused was logged.
    let all = app.get("/v1/moderation/log").await;
    assert_eq!(all.body["entries"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn a_pinned_announcement_leads_the_first_page_until_unpinned() {
    let app = spawn_app().await;
    let b = unique("pinned");
    let path = format!("/v1/boards/{b}");
    let config = json!({"slot": "1h", "windows": ["1h", "24h"]});
    assert_eq!(app.put(&path, config).await.status, StatusCode::CREATED);
    let events =
        json!({"events": [{"member": "post:1", "delta": 9}, {"member": "post:2", "delta": 5}]});
    assert_eq!(
        app.post(&format!("{path}/events"), events).await.status,
        StatusCode::OK
    );

    let until = crate::support::START + 3600;
    let body = json!({"member": "news", "position": 1, "until": until, "actor": "editor:1"});
    let pinned = app.post(&format!("{path}/pins"), body).await;
    assert_eq!(pinned.status, StatusCode::OK, "{:?}", pinned.body);
    let pins = json!({"board": b, "pins": [{"member": "news", "position": 1, "until": until}]});
    assert_eq!(pinned.body, pins);
    assert_eq!(app.get(&format!("{path}/pins")).await.body, pins);
    let top = app.get(&format!("{path}/top?window=24h&limit=2")).await;
    assert_eq!(
        top.body["entries"],
        json!([
            {"rank": 0, "member": "news", "score": 0, "pinned": true},
            {"rank": 1, "member": "post:1", "score": 9},
        ])
    );
    // The pin pushed post:2 off the first page: the next page starts with it.
    assert_eq!(top.body["next_offset"], 1);
    let second = app
        .get(&format!("{path}/top?window=24h&limit=2&offset=1"))
        .await;
    assert_eq!(entries(&second.body), ranked(&[(2, "post:2", 5)]));
    assert_eq!(second.body.get("next_offset"), None);

    for (body, code) in [
        (
            json!({"member": "news", "position": 0, "until": until}),
            "invalid_moderation",
        ),
        (
            json!({"member": "news", "position": 1, "until": until - 7200}),
            "invalid_moderation",
        ),
        (
            json!({"member": "", "position": 1, "until": until}),
            "invalid_member",
        ),
    ] {
        let refused = app.post(&format!("{path}/pins"), body).await;
        assert_eq!(
            (refused.status, refused.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, code)
        );
    }
    let unpinned = app.delete(&format!("{path}/pins/news")).await;
    assert_eq!(
        unpinned.body,
        json!({"board": b, "member": "news", "removed": true})
    );
    let top = app.get(&format!("{path}/top?window=24h&limit=2")).await;
    assert_eq!(
        entries(&top.body),
        ranked(&[(1, "post:1", 9), (2, "post:2", 5)])
    );
    let again = app.delete(&format!("{path}/pins/news")).await;
    assert_eq!(again.body["removed"], false);
}

#[tokio::test]
async fn a_review_gate_holds_new_members_at_the_top_until_a_moderator_decides() {
    let app = spawn_app().await;
    let b = unique("review");
    let path = format!("/v1/boards/{b}");
    let config = json!({"slot": "1h", "windows": ["1h", "24h"], "review": {"above_rank": 2}});
    let created = app.put(&path, config.clone()).await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    assert_eq!(created.body["config"]["review"], json!({"above_rank": 2}));
    for member in ["post:1", "post:2"] {
        let body = json!({"member": member, "decision": "allow", "actor": "mod:a"});
        let allowed = app.post(&format!("{path}/review"), body).await;
        assert_eq!(
            allowed.body,
            json!({"board": b, "member": member, "decision": "allow", "changed": true})
        );
    }
    let events = json!({"events": [
        {"member": "post:1", "delta": 9},
        {"member": "post:2", "delta": 5},
        {"member": "post:3", "delta": 7},
        {"member": "post:4", "delta": 2},
    ]});
    assert_eq!(
        app.post(&format!("{path}/events"), events).await.status,
        StatusCode::OK
    );
    // post:3 would rank 2nd, over the 2nd allowed member: held; post:4 ranks below.
    let top = app.get(&format!("{path}/top?window=24h")).await;
    assert_eq!(
        entries(&top.body),
        ranked(&[(1, "post:1", 9), (2, "post:2", 5), (3, "post:4", 2)])
    );
    let queue = app.get(&format!("{path}/review?window=24h")).await;
    assert_eq!(
        queue.body,
        json!({"board": b, "window": "1d", "above_rank": 2,
            "held": [{"member": "post:3", "score": 7, "rank": 2}]})
    );
    let own = app.get(&format!("{path}/members/post:3")).await;
    assert_eq!(
        (own.body["rank"].clone(), own.body["hidden"].clone()),
        (json!(null), json!(true))
    );

    // Denied: hidden; the queue empties. Allowed again: it ranks as its likes say.
    let deny = json!({"member": "post:3", "decision": "deny", "reason": "spam"});
    assert_eq!(
        app.post(&format!("{path}/review"), deny).await.body["changed"],
        true
    );
    assert_eq!(
        app.get(&format!("{path}/review")).await.body["held"],
        json!([])
    );
    let listed = app.get(&format!("{path}/hidden")).await;
    assert_eq!(
        listed.body["members"],
        json!([{"member": "post:3", "score": 7}])
    );
    let shown = app
        .post(&format!("{path}/members/post:3/show"), json!({}))
        .await;
    assert_eq!(shown.body["changed"], true);
    assert_eq!(
        app.get(&format!("{path}/review")).await.body["held"][0]["member"],
        "post:3"
    );
    let allow = json!({"member": "post:3", "decision": "allow"});
    assert_eq!(
        app.post(&format!("{path}/review"), allow).await.body["changed"],
        true
    );
    let top = app.get(&format!("{path}/top")).await;
    assert_eq!(
        entries(&top.body),
        ranked(&[
            (1, "post:1", 9),
            (2, "post:3", 7),
            (3, "post:2", 5),
            (4, "post:4", 2)
        ])
    );
    let log = app.get("/v1/moderation/log?limit=3").await;
    let actions: Vec<_> = log.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(actions, ["allow", "show", "deny"]);

    // The gate goes by a PUT without it, as it came; boards of every aggregate and shard
    // count take one.
    let mut ungated = config.clone();
    ungated.as_object_mut().unwrap().remove("review");
    assert_eq!(app.put(&path, ungated).await.status, StatusCode::OK);
    assert_eq!(
        app.get(&format!("{path}/review")).await.body["above_rank"],
        json!(null)
    );
    let max =
        json!({"slot": "1h", "windows": ["1h"], "aggregate": "max", "review": {"above_rank": 2}});
    let created = app.put(&format!("/v1/boards/{}", unique("max")), max).await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    assert_eq!(created.body["config"]["review"], json!({"above_rank": 2}));
    let sharded =
        json!({"slot": "1h", "windows": ["1h"], "shards": 2, "review": {"above_rank": 2}});
    let created = app
        .put(&format!("/v1/boards/{}", unique("sharded")), sharded)
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    let bad = json!({"member": "post:3", "decision": "maybe"});
    let refused = app.post(&format!("{path}/review"), bad).await;
    assert_eq!(
        refused.status,
        StatusCode::BAD_REQUEST,
        "{:?}",
        refused.body
    );
    let zero = json!({"slot": "1h", "windows": ["1h"], "review": {"above_rank": 0}});
    let refused = app
        .put(&format!("/v1/boards/{}", unique("zero")), zero)
        .await;
    assert_eq!(refused.body["error"]["code"], "invalid_config");
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("above_rank")
    );
}
