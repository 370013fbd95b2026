//! Net-vote boards over HTTP (`"rank":"nonzero"`): a board of likes minus dislikes at
//! +3, +1, −2, −5 and a member whose votes cancel out. Every read that ranks (top,
//! bottom, score ranges, member reads and percentiles, ranks, around with and without
//! fill, the ranked count of the board) ranks the negative totals below the positive
//! ones; a board of the default `"rank":"positive"` answers them without ranking them;
//! retirement that turns a total from positive to negative, and from negative to zero,
//! moves the member down, then out; snapshots hold negative leaders. The option is shown
//! in the board, fixed once created, refused on a trending board and with dense ties.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{START, TestApp, page, ranked, spawn_app, unique, wait_entries};

const HOUR: i64 = 3600;

/// Creates a board with `config` and writes a +3, b +1, c −2, d −5, and z +2 then −2.
async fn voted_board(app: &TestApp, config: Value) -> String {
    let b = unique("nz");
    let path = format!("/v1/boards/{b}");
    let created = app.put(&path, config).await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    let events = json!({"events": [
        {"member": "a", "delta": 3}, {"member": "b", "delta": 1}, {"member": "c", "delta": -2},
        {"member": "d", "delta": -5}, {"member": "z", "delta": 2}, {"member": "z", "delta": -2},
    ]});
    let reply = app.post(&format!("{path}/events"), events).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    b
}

/// `(score, rank, percentile)` of `GET …/members/{member}`.
async fn standing(app: &TestApp, path: &str) -> (Value, Value, Value) {
    let reply = app.get(path).await;
    assert_eq!(reply.status, StatusCode::OK, "{path}: {:?}", reply.body);
    let b = &reply.body;
    (
        b["score"].clone(),
        b["rank"].clone(),
        b["percentile"].clone(),
    )
}

/// `(members, ranked)` of each window of `GET /v1/boards/{board}`.
async fn counts(app: &TestApp, board: &str) -> Vec<(u64, u64)> {
    let reply = app.get(&format!("/v1/boards/{board}")).await;
    reply.body["windows"]
        .as_array()
        .unwrap_or_else(|| panic!("no windows in {:?}", reply.body))
        .iter()
        .map(|w| {
            (
                w["members"].as_u64().unwrap(),
                w["ranked"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_net_vote_board_ranks_every_non_zero_total_in_every_read() {
    let app = spawn_app().await;
    let b = voted_board(
        &app,
        json!({"slot": "1h", "windows": ["1h"], "rank": "nonzero"}),
    )
    .await;
    let path = format!("/v1/boards/{b}");
    assert_eq!(
        app.get(&path).await.body["config"],
        json!({"slot": "1h", "windows": ["1h"], "offset": 0, "ties": "competition", "rank": "nonzero"})
    );
    let listed = app.get("/v1/boards").await.body;
    let mine = listed["boards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == b.as_str())
        .unwrap_or_else(|| panic!("{b} not in {listed}"));
    assert_eq!(mine["config"]["rank"], "nonzero");
    let all = ranked(&[(1, "a", 3), (2, "b", 1), (3, "c", -2), (4, "d", -5)]);
    assert_eq!(page(&app, &format!("{path}/top")).await, all);
    assert_eq!(
        page(&app, &format!("{path}/top?offset=2&limit=1")).await,
        all[2..3]
    );
    // The bottom: the most downvoted first.
    assert_eq!(
        page(&app, &format!("{path}/top?order=asc")).await,
        ranked(&[(4, "d", -5), (3, "c", -2), (2, "b", 1), (1, "a", 3)])
    );
    assert_eq!(
        page(&app, &format!("{path}/top?order=asc&limit=2")).await,
        ranked(&[(4, "d", -5), (3, "c", -2)])
    );
    // A score range across zero, and one of negative totals only.
    assert_eq!(
        page(&app, &format!("{path}/top?min_score=-3&max_score=2")).await,
        all[1..3]
    );
    assert_eq!(
        page(&app, &format!("{path}/top?max_score=-1")).await,
        all[2..4]
    );
    // Member reads: ranks of every sign, percentiles over the 4 ranked members.
    for (member, score, rank, percentile) in [
        ("a", 3, 1, 0.75),
        ("b", 1, 2, 0.5),
        ("c", -2, 3, 0.25),
        ("d", -5, 4, 0.0),
    ] {
        assert_eq!(
            standing(&app, &format!("{path}/members/{member}")).await,
            (json!(score), json!(rank), json!(percentile)),
            "{member}"
        );
    }
    let zero = app.get(&format!("{path}/members/z")).await;
    assert_eq!(
        (zero.status, zero.code()),
        (StatusCode::NOT_FOUND, "member_not_found")
    );
    let ranks = app.get(&format!("{path}/ranks?members=d,z,a,c")).await;
    assert_eq!(
        ranks.body["entries"],
        json!([
            {"member": "d", "score": -5, "rank": 4},
            {"member": "z", "score": 0, "rank": null},
            {"member": "a", "score": 3, "rank": 1},
            {"member": "c", "score": -2, "rank": 3},
        ])
    );
    // Around the lowest member: n on each side, or a full page shifted at the end.
    let around = |query: &str| format!("{path}/members/{query}");
    assert_eq!(page(&app, &around("d/around?n=1")).await, all[2..4]);
    assert_eq!(
        page(&app, &around("d/around?n=1&fill=true")).await,
        all[1..4]
    );
    assert_eq!(
        page(&app, &around("c/around?n=1&order=asc")).await,
        ranked(&[(4, "d", -5), (3, "c", -2), (2, "b", 1)])
    );
    let missing = app.get(&around("z/around?fill=true")).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(counts(&app, &b).await, [(4, 4)]);
}

#[tokio::test]
async fn a_board_of_positive_totals_answers_negative_ones_without_ranking_them() {
    let app = spawn_app().await;
    let b = voted_board(&app, json!({"slot": "1h", "windows": ["1h"]})).await;
    let path = format!("/v1/boards/{b}");
    let config = app.get(&path).await.body["config"].clone();
    assert_eq!(config["rank"], Value::Null, "{config}");
    let positive = ranked(&[(1, "a", 3), (2, "b", 1)]);
    assert_eq!(page(&app, &format!("{path}/top")).await, positive);
    assert_eq!(
        page(&app, &format!("{path}/top?order=asc")).await,
        ranked(&[(2, "b", 1), (1, "a", 3)])
    );
    assert_eq!(
        page(&app, &format!("{path}/top?min_score=-3&max_score=2")).await,
        positive[1..2]
    );
    assert_eq!(
        standing(&app, &format!("{path}/members/d")).await,
        (json!(-5), Value::Null, json!(0.0))
    );
    assert_eq!(
        standing(&app, &format!("{path}/members/a")).await,
        (json!(3), json!(1), json!(0.5))
    );
    let ranks = app.get(&format!("{path}/ranks?members=d,a")).await;
    assert_eq!(
        ranks.body["entries"],
        json!([
            {"member": "d", "score": -5, "rank": null},
            {"member": "a", "score": 3, "rank": 1},
        ])
    );
    let around = app.get(&format!("{path}/members/d/around?fill=true")).await;
    assert_eq!(around.status, StatusCode::NOT_FOUND);
    assert_eq!(counts(&app, &b).await, [(4, 2)]);
}

#[tokio::test]
async fn the_rank_option_is_fixed_and_refused_where_it_cannot_hold() {
    let app = spawn_app().await;
    let config = json!({"slot": "1h", "windows": ["1h"], "rank": "nonzero"});
    let b = voted_board(&app, config.clone()).await;
    let path = format!("/v1/boards/{b}");
    assert_eq!(app.put(&path, config).await.status, StatusCode::OK);
    let other = app
        .put(&path, json!({"slot": "1h", "windows": ["1h"]}))
        .await;
    assert_eq!(
        (other.status, other.code()),
        (StatusCode::CONFLICT, "board_conflict")
    );
    let message = other.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("rank: stored nonzero, asked positive"),
        "{message}"
    );
    let refused = [
        json!({"slot": "1h", "windows": ["1h"], "rank": "nonzero", "ties": "dense"}),
        json!({"kind": "trending", "half_life": "1h", "rank": "nonzero"}),
    ];
    for config in refused {
        let reply = app
            .put(&format!("/v1/boards/{}", unique("nz")), config)
            .await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_config"),
            "{:?}",
            reply.body
        );
    }
    let dense = app
        .put(
            &format!("/v1/boards/{}", unique("nz")),
            json!({"slot": "1h", "windows": ["1h"], "rank": "nonzero", "ties": "dense"}),
        )
        .await;
    let message = dense.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("not dense"), "{message}");
    let unknown = app
        .put(
            &format!("/v1/boards/{}", unique("nz")),
            json!({"slot": "1h", "windows": ["1h"], "rank": "negative"}),
        )
        .await;
    // An unknown value is a malformed body, as for `ties`, naming the values taken.
    assert_eq!(
        (unknown.status, unknown.code()),
        (StatusCode::BAD_REQUEST, "bad_request")
    );
    let message = unknown.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("expected one of `positive`, `nonzero`, `all`"),
        "{message}"
    );
    // A trending board may say the default.
    let trending = app
        .put(
            &format!("/v1/boards/{}", unique("nz")),
            json!({"kind": "trending", "half_life": "1h", "rank": "positive"}),
        )
        .await;
    assert_eq!(trending.status, StatusCode::CREATED, "{:?}", trending.body);
}

#[tokio::test]
async fn retirement_moves_totals_across_zero_and_snapshots_hold_negative_leaders() {
    let app = spawn_app().await;
    let b = unique("nzr");
    let path = format!("/v1/boards/{b}");
    let config = json!({"slot": "1h", "windows": ["1h", "2h"], "rank": "nonzero",
                        "snapshots": {"top": 3, "keep": 5}});
    assert_eq!(app.put(&path, config).await.status, StatusCode::CREATED);
    let write = |events: Value| {
        let (app, path) = (&app, format!("{path}/events"));
        async move {
            let reply = app.post(&path, json!({ "events": events })).await;
            assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        }
    };
    app.at(10);
    write(
        json!([{"member": "p", "delta": 6}, {"member": "n", "delta": -3},
                 {"member": "q", "delta": 1}]),
    )
    .await;
    assert_eq!(
        page(&app, &format!("{path}/top?window=1h")).await,
        ranked(&[(1, "p", 6), (2, "q", 1), (3, "n", -3)])
    );
    app.at(HOUR + 10);
    write(json!([{"member": "p", "delta": -5}, {"member": "q", "delta": 2}])).await;
    // Slot 0 leaves the 1-hour window: p goes from +1 to −5, n from −3 to nothing.
    wait_entries(
        &app,
        &format!("{path}/top?window=1h"),
        &ranked(&[(1, "q", 2), (2, "p", -5)]),
    )
    .await;
    assert_eq!(
        standing(&app, &format!("{path}/members/p?window=1h")).await,
        (json!(-5), json!(2), json!(0.0))
    );
    let n = app.get(&format!("{path}/members/n?window=1h")).await;
    assert_eq!(n.status, StatusCode::NOT_FOUND, "{:?}", n.body);
    let ranks = app
        .get(&format!("{path}/ranks?members=n,p,q&window=1h"))
        .await;
    assert_eq!(
        ranks.body["entries"],
        json!([
            {"member": "n", "score": 0, "rank": null},
            {"member": "p", "score": -5, "rank": 2},
            {"member": "q", "score": 2, "rank": 1},
        ])
    );
    // The 2-hour window still holds slot 0: p at +1, n at −3.
    let two = ranked(&[(1, "q", 3), (2, "p", 1), (3, "n", -3)]);
    assert_eq!(page(&app, &format!("{path}/top?window=2h")).await, two);
    assert_eq!(
        page(
            &app,
            &format!("{path}/members/n/around?window=2h&n=1&fill=true")
        )
        .await,
        two
    );
    assert_eq!(counts(&app, &b).await, [(2, 2), (3, 3)]);
    // At 2h slot 0 leaves the 2-hour window: its snapshot at that boundary holds p at −5.
    app.at(2 * HOUR + 5);
    wait_entries(
        &app,
        &format!("{path}/top?window=2h"),
        &ranked(&[(1, "q", 2), (2, "p", -5)]),
    )
    .await;
    let snapshots = format!("{path}/snapshots?window=2h&from={}", START + 2 * HOUR);
    for _ in 0..100 {
        let reply = app.get(&snapshots).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        if let [snapshot] = reply.body["snapshots"].as_array().unwrap().as_slice() {
            assert_eq!(snapshot["boundary"], START + 2 * HOUR);
            assert_eq!(
                snapshot["entries"],
                json!([
                    {"rank": 1, "member": "q", "score": 2},
                    {"rank": 2, "member": "p", "score": -5},
                ])
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{snapshots} listed no snapshot within 5 s");
}

#[tokio::test]
async fn the_openapi_document_states_the_rank_option() {
    let app = spawn_app().await;
    let doc = app.get("/openapi.json").await.body;
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["RankedTotals"]["enum"],
        json!(["positive", "nonzero", "all"])
    );
    assert_eq!(schemas["RankedTotals"]["type"], "string");
    // Optional in a PUT and in a board's config (shown there only when nonzero).
    for config in ["ConfigBody", "BoardConfig"] {
        let rank = &schemas[config]["properties"]["rank"];
        assert_eq!(
            rank["$ref"], "#/components/schemas/RankedTotals",
            "{config}: {rank}"
        );
        assert_eq!(rank["default"], "positive", "{config}");
        let listed = schemas[config]["required"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("rank")));
        assert!(!listed, "{config}");
    }
}
