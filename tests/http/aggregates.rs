//! Max, min and latest boards over HTTP (`"aggregate":"max"`, `"min"`, `"latest"`): "the
//! best run of the last 7 days", rolling, "the fastest solve of the last 24 hours" and
//! "each player's latest rating, among those who played in the last 30 days". Writes carry a
//! `value`; a member's value in a window is the max (min) of its events whose slots are
//! inside it, zero and negative values ranked like any other; when the slot of a best
//! leaves the window the member falls back to its best of the slots left, or leaves.
//! A min board ranks lowest first: `order` names values (`asc` lowest first), absent it
//! reads from rank 1. Deltas, values and options where they do not belong are refused
//! with what to send instead; snapshots, history, ranks, around and score ranges answer
//! the board's own values.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{START, TestApp, page, ranked, spawn_app, unique, wait_entries};

const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;

/// Creates the board `config` under a fresh name: its path.
async fn create(app: &TestApp, config: Value) -> String {
    let path = format!("/v1/boards/{}", unique("agg"));
    let created = app.put(&path, config).await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    path
}

/// Posts a batch of events, all of which must be accepted.
async fn write(app: &TestApp, path: &str, events: Value) {
    let reply = app
        .post(&format!("{path}/events"), json!({ "events": events }))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(reply.body["rejected"], json!([]), "{:?}", reply.body);
}

#[tokio::test]
async fn a_max_board_keeps_each_players_best_run_of_the_last_seven_days() {
    let app = spawn_app().await;
    let path = create(
        &app,
        json!({"slot": "1d", "windows": ["7d"], "aggregate": "max"}),
    )
    .await;
    assert_eq!(
        app.get(&path).await.body["config"],
        json!({"slot": "1d", "windows": ["7d"], "offset": 0, "ties": "competition", "aggregate": "max"})
    );
    app.at(HOUR);
    write(
        &app,
        &path,
        json!([{"member": "ann", "value": 4200}, {"member": "bob", "value": 3900},
               {"member": "ann", "value": 1000}, {"member": "cy", "value": 0},
               {"member": "dee", "value": -5}]),
    )
    .await;
    app.at(2 * DAY + HOUR);
    write(
        &app,
        &path,
        json!([{"member": "ann", "value": 3000}, {"member": "bob", "value": 4100}]),
    )
    .await;
    let top = format!("{path}/top");
    assert_eq!(
        page(&app, &top).await,
        ranked(&[
            (1, "ann", 4200),
            (2, "bob", 4100),
            (3, "cy", 0),
            (4, "dee", -5)
        ])
    );
    // A lower run never lowers a best; the same value again changes nothing.
    write(&app, &path, json!([{"member": "bob", "value": 4100}])).await;
    let bob = app.get(&format!("{path}/members/bob")).await.body;
    assert_eq!(
        (&bob["score"], &bob["rank"], &bob["percentile"]),
        (&json!(4100), &json!(2), &json!(0.5))
    );
    let history = app.get(&format!("{path}/members/ann/history")).await.body;
    let day0 = START - START % DAY;
    assert_eq!(
        history["points"],
        json!([{"slot": day0, "value": 4200}, {"slot": day0 + 2 * DAY, "value": 3000}])
    );
    // Day 0 leaves the window at day 7: ann falls back to her best of day 2, cy and dee
    // (no run since) leave, bob keeps his day-2 best.
    app.at(7 * DAY + HOUR);
    wait_entries(&app, &top, &ranked(&[(1, "bob", 4100), (2, "ann", 3000)])).await;
    let cy = app.get(&format!("{path}/members/cy")).await;
    assert_eq!(
        (cy.status, cy.code()),
        (StatusCode::NOT_FOUND, "member_not_found")
    );
    let ranks = app.get(&format!("{path}/ranks?members=ann,cy")).await;
    assert_eq!(
        ranks.body["entries"],
        json!([{"member": "ann", "score": 3000, "rank": 2}, {"member": "cy", "score": 0, "rank": null}])
    );
}

#[tokio::test]
async fn a_min_board_ranks_the_fastest_solve_of_the_last_24_hours_first() {
    let app = spawn_app().await;
    let path = create(
        &app,
        json!({"slot": "1h", "windows": ["24h"], "aggregate": "min", "snapshots": {"top": 2, "keep": 3}}),
    )
    .await;
    app.at(60);
    write(
        &app,
        &path,
        json!([{"member": "ann", "value": 95}, {"member": "bob", "value": 80},
               {"member": "cy", "value": 120}, {"member": "ann", "value": 70}]),
    )
    .await;
    app.at(5 * HOUR);
    write(
        &app,
        &path,
        json!([{"member": "bob", "value": 90}, {"member": "dee", "value": 80}]),
    )
    .await;
    let fastest = ranked(&[
        (1, "ann", 70),
        (2, "bob", 80),
        (2, "dee", 80),
        (4, "cy", 120),
    ]);
    assert_eq!(page(&app, &format!("{path}/top")).await, fastest);
    // `order` names values: asc is the ranking's own order here, desc reads the bottom.
    assert_eq!(page(&app, &format!("{path}/top?order=asc")).await, fastest);
    assert_eq!(
        page(&app, &format!("{path}/top?order=desc&limit=2")).await,
        ranked(&[(4, "cy", 120), (2, "dee", 80)])
    );
    assert_eq!(
        page(&app, &format!("{path}/top?min_score=75&max_score=100")).await,
        fastest[1..3]
    );
    let dee = app.get(&format!("{path}/members/dee")).await.body;
    assert_eq!(
        (&dee["score"], &dee["rank"], &dee["percentile"]),
        (&json!(80), &json!(2), &json!(0.25))
    );
    assert_eq!(
        page(&app, &format!("{path}/members/cy/around?n=1")).await,
        fastest[2..4]
    );
    assert_eq!(
        page(&app, &format!("{path}/members/ann/around?n=1&order=desc")).await,
        ranked(&[(2, "bob", 80), (1, "ann", 70)])
    );
    let history = app.get(&format!("{path}/members/bob/history")).await.body;
    assert_eq!(
        history["points"],
        json!([{"slot": START, "value": 80}, {"slot": START + 5 * HOUR, "value": 90}])
    );
    // Hour 0 leaves the window at hour 24: bob's best is now his 90, ann and cy leave;
    // the snapshot at that boundary lists the fastest first.
    app.at(24 * HOUR + 60);
    wait_entries(
        &app,
        &format!("{path}/top"),
        &ranked(&[(1, "dee", 80), (2, "bob", 90)]),
    )
    .await;
    let snapshots = format!("{path}/snapshots?from={}", START + 24 * HOUR);
    for _ in 0..100 {
        let reply = app.get(&snapshots).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        if let [snapshot] = reply.body["snapshots"].as_array().unwrap().as_slice() {
            assert_eq!(
                snapshot["entries"],
                json!([{"rank": 1, "member": "dee", "score": 80}, {"rank": 2, "member": "bob", "score": 90}])
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{snapshots} listed no snapshot within 5 s");
}

#[tokio::test]
async fn a_dense_min_board_ranks_equal_rounds_together_and_the_next_one_second() {
    let app = spawn_app().await;
    let path = create(
        &app,
        json!({"slot": "1d", "windows": ["7d"], "aggregate": "min", "ties": "dense"}),
    )
    .await;
    app.at(HOUR);
    write(
        &app,
        &path,
        json!([{"member": "ann", "value": 68}, {"member": "bob", "value": 68},
               {"member": "cy", "value": 71}, {"member": "dee", "value": 74},
               {"member": "eve", "value": 66}]),
    )
    .await;
    app.at(3 * DAY);
    write(
        &app,
        &path,
        json!([{"member": "eve", "value": 71}, {"member": "cy", "value": 70}]),
    )
    .await;
    let round = ranked(&[
        (1, "eve", 66),
        (2, "ann", 68),
        (2, "bob", 68),
        (3, "cy", 70),
        (4, "dee", 74),
    ]);
    assert_eq!(page(&app, &format!("{path}/top")).await, round);
    let dee = app.get(&format!("{path}/members/dee")).await;
    assert_eq!(
        (dee.body["score"].clone(), dee.body["rank"].clone()),
        (json!(74), json!(4))
    );
    // Day 1 leaves the window: eve falls back to her 71 of day 3, level with nobody
    // (cy's 70 is better), ann, bob and dee leave.
    app.at(8 * DAY + HOUR);
    wait_entries(
        &app,
        &format!("{path}/top"),
        &ranked(&[(1, "cy", 70), (2, "eve", 71)]),
    )
    .await;
    write(&app, &path, json!([{"member": "bob", "value": 70}])).await;
    assert_eq!(
        page(&app, &format!("{path}/top")).await,
        ranked(&[(1, "bob", 70), (1, "cy", 70), (2, "eve", 71)])
    );
}

#[tokio::test]
async fn deltas_values_and_options_are_refused_where_they_do_not_belong() {
    let app = spawn_app().await;
    let max = create(
        &app,
        json!({"slot": "1h", "windows": ["1h"], "aggregate": "max"}),
    )
    .await;
    let sum = create(&app, json!({"slot": "1h", "windows": ["1h"]})).await;
    let refused = |reply: &crate::support::Reply, status: StatusCode, code: &str, says: &str| {
        assert_eq!(
            (reply.status, reply.code()),
            (status, code),
            "{:?}",
            reply.body
        );
        let message = reply.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{message:?} should say {says:?}");
    };
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    let delta = app
        .post(&format!("{max}/events"), json!({"member": "a", "delta": 3}))
        .await;
    refused(&delta, unprocessable, "invalid_value", "send \"value\"");
    let value = app
        .post(&format!("{sum}/events"), json!({"member": "a", "value": 3}))
        .await;
    refused(&value, unprocessable, "invalid_value", "send \"delta\"");
    let both = app
        .post(
            &format!("{max}/events"),
            json!({"member": "a", "value": 3, "delta": 1}),
        )
        .await;
    refused(&both, unprocessable, "invalid_value", "not both");
    let huge = app
        .post(
            &format!("{max}/events"),
            json!({"member": "a", "value": 9_007_199_254_740_992_i64}),
        )
        .await;
    refused(&huge, unprocessable, "invalid_value", "2^53");
    // In a batch, each such event alone is rejected by its index; nothing else is lost.
    let batch = app
        .post(
            &format!("{max}/events"),
            json!({"events": [{"member": "a", "value": 5}, {"member": "b"}, {"member": "c", "value": 1, "delta": 2}]}),
        )
        .await;
    assert_eq!(batch.status, StatusCode::OK, "{:?}", batch.body);
    assert_eq!(batch.body["accepted"], 1);
    assert_eq!(
        crate::support::rejected_codes(&batch.body),
        [(1, "invalid_value"), (2, "invalid_value")]
    );
    assert_eq!(
        page(&app, &format!("{max}/top")).await,
        ranked(&[(1, "a", 5)])
    );
    // Options a max, min or latest board cannot keep, and changes once created.
    for (config, says) in [
        (
            json!({"slot": "1h", "windows": ["1h"], "aggregate": "max", "rank": "nonzero"}),
            "\"rank\"",
        ),
        (
            json!({"slot": "1h", "windows": ["1h"], "rank": "all"}),
            "max, min and latest boards",
        ),
    ] {
        let reply = app
            .put(&format!("/v1/boards/{}", unique("agg")), config)
            .await;
        refused(&reply, unprocessable, "invalid_config", says);
    }
    let changed = app
        .put(
            &max,
            json!({"slot": "1h", "windows": ["1h"], "aggregate": "min"}),
        )
        .await;
    refused(
        &changed,
        StatusCode::CONFLICT,
        "board_conflict",
        "aggregate: stored max, asked min",
    );
    // What is built for sum boards only says so.
    let relayout = app
        .request(
            reqwest::Method::POST,
            &format!("{max}/relayout?layout=compact"),
            None,
            None,
        )
        .await;
    refused(
        &relayout,
        StatusCode::CONFLICT,
        "aggregate_unsupported",
        "relayout",
    );
    assert_eq!(
        page(&app, &format!("{max}/top")).await,
        ranked(&[(1, "a", 5)])
    );
}

#[tokio::test]
async fn a_new_fastest_solve_answers_its_rank_before_and_after() {
    let app = spawn_app().await;
    let path = create(
        &app,
        json!({"slot": "1h", "windows": ["24h", "7d"], "aggregate": "min"}),
    )
    .await;
    write(
        &app,
        &path,
        json!([{"member": "ann", "value": 70}, {"member": "bob", "value": 80},
               {"member": "cy", "value": 95}]),
    )
    .await;
    let reply = app
        .post(
            &format!("{path}/events?return=standing&windows=24h"),
            json!({"events": [{"member": "cy", "value": 75}, {"member": "cy", "value": 90}]}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(reply.body["accepted"], 2);
    assert_eq!(
        reply.body["standings"],
        json!([{"member": "cy", "windows": [{"window": "1d", "score": 75, "rank": 2,
                                             "score_before": 95, "rank_before": 3}]}])
    );
    // A member with no value before: score 0 and no rank before.
    let reply = app
        .post(
            &format!("{path}/events?return=standing"),
            json!({"member": "dee", "value": 60}),
        )
        .await;
    assert_eq!(
        reply.body["standings"][0]["windows"],
        json!([{"window": "1d", "score": 60, "rank": 1, "score_before": 0, "rank_before": null},
               {"window": "7d", "score": 60, "rank": 1, "score_before": 0, "rank_before": null}]),
        "{:?}",
        reply.body
    );
}

#[tokio::test]
async fn a_member_removed_from_a_max_board_leaves_every_window_and_its_history() {
    let app = spawn_app().await;
    let path = create(
        &app,
        json!({"slot": "1h", "windows": ["24h", "7d"], "aggregate": "max"}),
    )
    .await;
    app.at(HOUR);
    write(
        &app,
        &path,
        json!([{"member": "spam", "value": 900}, {"member": "ann", "value": 50}]),
    )
    .await;
    app.at(3 * HOUR);
    write(
        &app,
        &path,
        json!([{"member": "spam", "value": 990}, {"member": "bob", "value": 70}]),
    )
    .await;
    let removed = app.delete(&format!("{path}/members/spam")).await;
    assert_eq!(removed.status, StatusCode::OK, "{:?}", removed.body);
    assert_eq!(removed.body["slot_values"], 2);
    let left = ranked(&[(1, "bob", 70), (2, "ann", 50)]);
    assert_eq!(page(&app, &format!("{path}/top")).await, left);
    assert_eq!(page(&app, &format!("{path}/top?window=7d")).await, left);
    let history = app.get(&format!("{path}/members/spam/history")).await;
    assert_eq!(
        (history.status, history.code()),
        (StatusCode::NOT_FOUND, "member_not_found")
    );
    // Trimmed to its top 1 (the board's own order): ann leaves every window.
    let trimmed = app.post(&format!("{path}/trim?top=1"), json!({})).await;
    assert_eq!(trimmed.status, StatusCode::OK, "{:?}", trimmed.body);
    assert_eq!(trimmed.body["members"], json!(["ann"]));
    let left = ranked(&[(1, "bob", 70)]);
    assert_eq!(page(&app, &format!("{path}/top?window=7d")).await, left);
    // A later event of the member counts again.
    write(&app, &path, json!([{"member": "spam", "value": 10}])).await;
    assert_eq!(
        page(&app, &format!("{path}/top")).await,
        ranked(&[(1, "bob", 70), (2, "spam", 10)])
    );
}

#[tokio::test]
async fn an_admin_recomputes_a_drifted_min_board_from_its_slots() {
    let app = spawn_app().await;
    let path = create(
        &app,
        json!({"slot": "1h", "windows": ["1h", "24h"], "aggregate": "min"}),
    )
    .await;
    write(
        &app,
        &path,
        json!([{"member": "ann", "value": 95}, {"member": "bob", "value": 80},
               {"member": "ann", "value": 70}]),
    )
    .await;
    // Drift the 24h window by hand: a min board keeps its values negated.
    let board = path.trim_start_matches("/v1/boards/");
    let mut raw = app.redis.raw().await;
    let _: () = redis::cmd("ZADD")
        .arg(format!("stats_{{{board}}}_86400"))
        .arg(-1)
        .arg("bob")
        .arg(-5)
        .arg("ghost")
        .query_async(&mut raw)
        .await
        .unwrap();
    let day = format!("{path}/top?window=24h");
    assert_eq!(
        page(&app, &day).await,
        ranked(&[(1, "bob", 1), (2, "ghost", 5), (3, "ann", 70)])
    );
    let reply = app
        .request(
            reqwest::Method::POST,
            &format!("{path}/recompute"),
            None,
            None,
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(reply.body["windows"], json!(["1h", "1d"]));
    // Each window reads the slot's two members.
    assert_eq!(reply.body["fields_scanned"], 4);
    let fastest = ranked(&[(1, "ann", 70), (2, "bob", 80)]);
    assert_eq!(page(&app, &day).await, fastest);
    assert_eq!(page(&app, &format!("{path}/top?window=1h")).await, fastest);
}

#[tokio::test]
async fn a_max_board_given_a_7_day_window_keeps_each_best_for_the_week() {
    let app = spawn_app().await;
    let path = create(
        &app,
        json!({"slot": "1h", "windows": ["24h"], "aggregate": "max"}),
    )
    .await;
    app.at(HOUR);
    write(
        &app,
        &path,
        json!([{"member": "ann", "value": 50}, {"member": "bob", "value": 70}]),
    )
    .await;
    app.at(2 * HOUR);
    let wider = app
        .put(
            &path,
            json!({"slot": "1h", "windows": ["24h", "7d"], "aggregate": "max"}),
        )
        .await;
    assert_eq!(wider.status, StatusCode::ACCEPTED, "{:?}", wider.body);
    let week = format!("{path}/top?window=7d");
    wait_entries(&app, &week, &ranked(&[(1, "bob", 70), (2, "ann", 50)])).await;
    // Day 2: the first day has left the 24h window, not the week.
    app.at(2 * DAY);
    write(&app, &path, json!([{"member": "ann", "value": 60}])).await;
    wait_entries(&app, &format!("{path}/top"), &ranked(&[(1, "ann", 60)])).await;
    assert_eq!(
        page(&app, &week).await,
        ranked(&[(1, "bob", 70), (2, "ann", 60)])
    );
    // Day 8: the first day has left the week too.
    app.at(8 * DAY);
    wait_entries(&app, &week, &ranked(&[(1, "ann", 60)])).await;
}

#[tokio::test]
async fn one_run_counts_on_a_best_board_and_a_latest_board_at_once() {
    let app = spawn_app().await;
    let best = create(
        &app,
        json!({"slot": "1d", "windows": ["7d"], "aggregate": "max"}),
    )
    .await;
    let last = create(
        &app,
        json!({"slot": "1d", "windows": ["7d"], "aggregate": "latest"}),
    )
    .await;
    let plays = create(&app, json!({"slot": "1d", "windows": ["7d"]})).await;
    let [best_name, last_name, plays_name] =
        [&best, &last, &plays].map(|p| p.trim_start_matches("/v1/boards/").to_owned());
    app.at(HOUR);
    let one = app
        .post(
            "/v1/events",
            json!({"boards": [best_name, last_name], "member": "ann", "value": 4200}),
        )
        .await;
    assert_eq!(one.status, StatusCode::OK, "{:?}", one.body);
    app.at(2 * HOUR);
    let batch = app
        .post(
            "/v1/events",
            json!({"events": [
                {"boards": [best_name, last_name, plays_name], "member": "ann", "value": 3900},
                {"boards": [plays_name], "member": "ann"},
                {"boards": [best_name], "member": "bob", "delta": 2},
            ]}),
        )
        .await;
    assert_eq!(batch.status, StatusCode::OK, "{:?}", batch.body);
    let outcomes = &batch.body["boards"];
    assert_eq!(outcomes[0]["accepted"], 1, "{outcomes}");
    assert_eq!(
        crate::support::rejected_codes(&outcomes[0]),
        [(2, "invalid_value")]
    );
    assert_eq!(outcomes[1]["accepted"], 1, "{outcomes}");
    assert_eq!(outcomes[2]["accepted"], 1, "{outcomes}");
    assert_eq!(
        crate::support::rejected_codes(&outcomes[2]),
        [(0, "invalid_value")]
    );
    assert_eq!(
        page(&app, &format!("{best}/top")).await,
        ranked(&[(1, "ann", 4200)])
    );
    assert_eq!(
        page(&app, &format!("{last}/top")).await,
        ranked(&[(1, "ann", 3900)])
    );
    assert_eq!(
        page(&app, &format!("{plays}/top")).await,
        ranked(&[(1, "ann", 1)])
    );
    // One event whose value a board of the other kind refuses: that board's error.
    let mixed = app
        .post(
            "/v1/events",
            json!({"boards": [best_name, plays_name], "member": "cy", "value": 5}),
        )
        .await;
    assert_eq!(mixed.status, StatusCode::OK, "{:?}", mixed.body);
    assert_eq!(mixed.body["boards"][0]["accepted"], 1);
    assert_eq!(mixed.body["boards"][1]["error"]["code"], "invalid_value");
}

#[tokio::test]
async fn a_value_written_again_under_its_idempotency_key_changes_nothing() {
    let app = spawn_app().await;
    let path = create(
        &app,
        json!({"slot": "1h", "windows": ["2h"], "aggregate": "max"}),
    )
    .await;
    let body = r#"{"events": [{"member": "a", "value": 7}, {"member": "b", "value": 3}]}"#;
    // The retry comes in the next hour: the events (sent without "at") stay in the
    // first call's hour, as it applied them.
    for at in [HOUR / 2, HOUR + HOUR / 6] {
        app.at(at);
        let reply = app
            .post_keyed(&format!("{path}/events"), body, Some("run-1"))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        assert_eq!(reply.body["accepted"], 2);
    }
    assert_eq!(
        page(&app, &format!("{path}/top")).await,
        ranked(&[(1, "a", 7), (2, "b", 3)])
    );
    let history = app.get(&format!("{path}/members/a/history")).await;
    assert_eq!(
        history.body["points"],
        json!([{"slot": START, "value": 7}]),
        "{:?}",
        history.body
    );
    let other = app
        .post_keyed(
            &format!("{path}/events"),
            r#"{"member": "a", "value": 9}"#,
            Some("run-1"),
        )
        .await;
    assert_eq!(
        (other.status, other.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "idempotency_key_reused"),
        "{:?}",
        other.body
    );
}

#[tokio::test]
async fn the_openapi_document_states_the_aggregate_option_and_event_values() {
    let app = spawn_app().await;
    let doc = app.get("/openapi.json").await.body;
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["Aggregate"]["enum"],
        json!(["sum", "max", "min", "latest"])
    );
    for config in ["ConfigBody", "BoardConfig"] {
        let aggregate = &schemas[config]["properties"]["aggregate"];
        assert_eq!(
            aggregate["$ref"], "#/components/schemas/Aggregate",
            "{config}"
        );
        assert_eq!(aggregate["default"], "sum", "{config}");
    }
    for event in ["EventIn", "BatchEvent"] {
        let value = &schemas[event]["properties"]["value"];
        assert_eq!(value["format"], "int64", "{event}: {value}");
    }
}

#[tokio::test]
async fn a_latest_board_ranks_each_players_latest_rating_among_those_who_played_lately() {
    let app = spawn_app().await;
    let path = create(
        &app,
        json!({"slot": "1d", "windows": ["30d"], "aggregate": "latest"}),
    )
    .await;
    let day = |d: i64| START - START % DAY + d * DAY + HOUR;
    app.at(40 * DAY);
    write(
        &app,
        &path,
        json!([{"member": "ann", "value": 1500, "at": day(20)}, {"member": "ann", "value": 1620, "at": day(35)},
               {"member": "bob", "value": 1800, "at": day(15)}, {"member": "cy", "value": 1400, "at": day(38)},
               {"member": "cy", "value": 1450, "at": day(38)}]),
    )
    .await;
    // An event older than the newest changes nothing, however it arrives.
    write(
        &app,
        &path,
        json!([{"member": "ann", "value": 9999, "at": day(30)}]),
    )
    .await;
    let top = format!("{path}/top");
    assert_eq!(
        page(&app, &top).await,
        ranked(&[(1, "bob", 1800), (2, "ann", 1620), (3, "cy", 1450)])
    );
    let history = app.get(&format!("{path}/members/ann/history")).await.body;
    let slot = |d: i64| day(d) - HOUR;
    assert_eq!(
        history["points"],
        json!([{"slot": slot(20), "value": 1500}, {"slot": slot(30), "value": 9999}, {"slot": slot(35), "value": 1620}])
    );
    // Day 15 leaves the 30-day window at day 45: bob, who has not played since, leaves.
    app.at(45 * DAY + 60);
    wait_entries(&app, &top, &ranked(&[(1, "ann", 1620), (2, "cy", 1450)])).await;
}
