//! `GET /v1/dashboard`, `/v1/dashboard/boards` and `/v1/dashboard/member` over HTTP, each
//! case on a fresh Redis and on the memory store (the service is the same; only its store
//! differs); the dashboard's own requests recorded as `DashboardTime`; and the retirement
//! lag the dashboard reports, read through the library where no retirer runs.

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use rollboard::{
    BoardConfig, DashboardBoard, DashboardQuery, ManualClock, MemoryStore, Rollboard, Settings,
    Store, Timestamp,
};
use serde_json::{Value, json};

use crate::scheduler::wait_retired;
use crate::support::{START, TestApp, TestRedis, unique};

on_memory_and_redis!(
    a_windowed_board_answers_each_window_s_top_snapshot_leaders_and_histories,
    a_watched_board_answers_its_newest_changes_newest_first,
    a_trending_board_answers_its_top_by_decayed_score,
    a_missing_board_is_an_error_entry_and_the_others_still_answer,
    counters_list_every_name_and_show_the_newest_samples,
    stats_list_every_kind_and_the_slowest_of_the_kind_asked,
    health_runs_the_readiness_checks,
    the_search_matches_parts_of_names_in_any_case,
    the_member_lookup_answers_every_window_and_the_history,
    the_member_lookup_on_a_trending_board_answers_now,
    every_bad_parameter_is_a_422_saying_what_to_fix,
    dashboard_requests_are_recorded_as_dashboard_time_only,
);

/// Posts `events` (a batch) to board `b` at `START + at`.
async fn post_events(app: &TestApp, b: &str, at: i64, events: Value) {
    app.at(at);
    let reply = app
        .post(
            &format!("/v1/boards/{b}/events"),
            json!({ "events": events }),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(reply.body["rejected"], json!([]), "{:?}", reply.body);
}

/// `GET path`, asserting 200.
async fn get_ok(app: &TestApp, path: &str) -> Value {
    let reply = app.get(path).await;
    assert_eq!(reply.status, StatusCode::OK, "{path}: {:?}", reply.body);
    reply.body
}

/// Polls the dashboard until `done` holds for its answer (the service's retirer and
/// access-time records run in the background once the clock moves).
async fn wait_dashboard(app: &TestApp, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..100 {
        let body = get_ok(app, path).await;
        if done(&body) {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "{path} never answered as expected: {:?}",
        get_ok(app, path).await
    );
}

/// Boards of hourly slots ranked over 1 h and 3 h (one per entry of `snapshots`, which
/// says whether it takes snapshots), each with a at 5 and b at 3 in slot START, then
/// (slot START + 1 h) c at 4 and a at 1; retired, the clock at START + 1 h + 2 min. The
/// boundary START + 1 h's snapshots are taken before the second slot's events.
async fn two_slot_boards(app: &TestApp, snapshots: &[bool]) -> Vec<String> {
    let mut boards = Vec::new();
    for &with in snapshots {
        let b = unique("dash");
        let mut config = json!({"slot": "1h", "windows": ["1h", "3h"]});
        if with {
            config["snapshots"] = json!({"top": 2, "keep": 5});
        }
        let created = app.put(&format!("/v1/boards/{b}"), config).await;
        assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
        post_events(
            app,
            &b,
            60,
            json!([{"member": "a", "delta": 5}, {"member": "b", "delta": 3}]),
        )
        .await;
        boards.push(b);
    }
    app.at(3600 + 5);
    for (b, &with) in boards.iter().zip(snapshots) {
        if with {
            wait_dashboard(app, &format!("/v1/dashboard?boards={b}"), |d| {
                d["boards"][0]["windows"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|w| !w["snapshot"].is_null())
            })
            .await;
        }
        wait_retired(app, b).await;
    }
    for b in &boards {
        post_events(
            app,
            b,
            3600 + 60,
            json!([{"member": "c", "delta": 4}, {"member": "a", "delta": 1}]),
        )
        .await;
    }
    app.at(3600 + 120);
    boards
}

async fn a_windowed_board_answers_each_window_s_top_snapshot_leaders_and_histories(app: TestApp) {
    let boards = two_slot_boards(&app, &[true, false]).await;
    let (b, plain) = (&boards[0], &boards[1]);
    // Member data shows beside its member in every table (null for a member without).
    let put = app
        .put(
            &format!("/v1/boards/{b}/members/c/data"),
            json!({"title": "C"}),
        )
        .await;
    assert_eq!(put.status, StatusCode::NO_CONTENT, "{:?}", put.body);
    let d = get_ok(
        &app,
        &format!("/v1/dashboard?boards={b}&top=2&leaders=2&counters="),
    )
    .await;
    assert_eq!(d["now"], START + 3600 + 120);
    let taken_ms = (START + 3600 + 5) * 1000;
    assert_eq!(
        d["boards"],
        json!([{
            "name": b, "kind": "windowed",
            "config": {"slot": "1h", "windows": ["1h", "3h"], "offset": 0, "ties": "competition",
                       "snapshots": {"top": 2, "keep": 5}},
            "windows": [
                {"window": "1h", "members": 2, "ranked": 2, "lag_seconds": 0,
                 "from": START + 3600, "to": START + 7200,
                 "entries": [{"rank": 1, "member": "c", "score": 4, "data": {"title": "C"}},
                             {"rank": 2, "member": "a", "score": 1, "data": null}],
                 // At the boundary the 1 h window held only the new, empty slot.
                 "snapshot": {"window": "1h", "boundary": START + 3600, "taken_ms": taken_ms, "entries": []},
                 "leaders": ["c", "a"]},
                {"window": "3h", "members": 3, "ranked": 3, "lag_seconds": 0,
                 "from": START - 3600, "to": START + 7200,
                 // top=2: the third member (b at 3) is cut.
                 "entries": [{"rank": 1, "member": "a", "score": 6, "data": null},
                             {"rank": 2, "member": "c", "score": 4, "data": {"title": "C"}}],
                 "snapshot": {"window": "3h", "boundary": START + 3600, "taken_ms": taken_ms,
                              "entries": [{"rank": 1, "member": "a", "score": 5}, {"rank": 2, "member": "b", "score": 3}]},
                 "leaders": ["a", "c"]},
            ],
            // Each leader once, in the order first met.
            "histories": [
                {"member": "c", "slot": "1h", "from": START - 3600, "to": START + 7200,
                 "points": [{"slot": START + 3600, "value": 4}]},
                {"member": "a", "slot": "1h", "from": START - 3600, "to": START + 7200,
                 "points": [{"slot": START, "value": 5}, {"slot": START + 3600, "value": 1}]},
            ],
        }])
    );
    // The same board as GET /v1/boards/{board} describes it.
    let described = get_ok(&app, &format!("/v1/boards/{b}")).await;
    for (shown, window) in d["boards"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .zip(described["windows"].as_array().unwrap())
    {
        for field in ["window", "members", "ranked", "lag_seconds", "from", "to"] {
            assert_eq!(shown[field], window[field], "{field}");
        }
    }
    // leaders=0: no history read; defaults (top 10, leaders 3) on a board without
    // snapshots.
    let none = get_ok(&app, &format!("/v1/dashboard?boards={b}&leaders=0")).await;
    assert_eq!(none["boards"][0]["histories"], json!([]));
    assert_eq!(none["boards"][0]["windows"][0]["leaders"], json!([]));
    let d = get_ok(&app, &format!("/v1/dashboard?boards={plain}")).await;
    let window = &d["boards"][0]["windows"][1];
    assert_eq!(window["snapshot"], Value::Null);
    assert_eq!(window["leaders"], json!(["a", "c", "b"]));
    assert_eq!(window["entries"].as_array().unwrap().len(), 3);
    let members: Vec<&str> = d["boards"][0]["histories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["member"].as_str().unwrap())
        .collect();
    assert_eq!(members, ["c", "a", "b"]);
    // order=asc: each table shows the bottom, lowest first, with the board's ranks; its
    // leaders are the first rows.
    let d = get_ok(
        &app,
        &format!("/v1/dashboard?boards={b}&top=2&leaders=1&counters=&order=asc"),
    )
    .await;
    let shown: Vec<(Value, Value)> = d["boards"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["entries"].clone(), w["leaders"].clone()))
        .collect();
    assert_eq!(
        shown,
        [
            (
                json!([{"rank": 2, "member": "a", "score": 1, "data": null},
                       {"rank": 1, "member": "c", "score": 4, "data": {"title": "C"}}]),
                json!(["a"])
            ),
            (
                json!([{"rank": 3, "member": "b", "score": 3, "data": null},
                       {"rank": 2, "member": "c", "score": 4, "data": {"title": "C"}}]),
                json!(["b"])
            ),
        ]
    );
}

async fn a_watched_board_answers_its_newest_changes_newest_first(app: TestApp) {
    let watched = |top: u32| json!({"slot": "1h", "windows": ["1h"], "watch": [{"window": "1h", "top": top}]});
    let mut boards = Vec::new();
    for config in [
        watched(2),
        watched(2),
        json!({"slot": "1h", "windows": ["1h"]}),
    ] {
        let b = unique("dashwatch");
        let created = app.put(&format!("/v1/boards/{b}"), config).await;
        assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
        boards.push(b);
    }
    let (b, quiet, plain) = (&boards[0], &boards[1], &boards[2]);
    for board in [b, plain] {
        post_events(
            &app,
            board,
            60,
            json!([{"member": "a", "delta": 5}, {"member": "b", "delta": 3}]),
        )
        .await;
        post_events(&app, board, 120, json!([{"member": "b", "delta": 4}])).await;
    }
    let d = get_ok(
        &app,
        &format!("/v1/dashboard?boards={b},{quiet},{plain}&counters="),
    )
    .await;
    // The ids are the store's: those `GET …/changes` answers, oldest first.
    let listed = get_ok(&app, &format!("/v1/boards/{b}/changes")).await;
    let ids: Vec<&str> = listed["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 4, "{listed:?}");
    let (first, second) = ((START + 60) * 1000, (START + 120) * 1000);
    assert_eq!(
        d["boards"][0]["changes"],
        json!([
            {"id": ids[3], "type": "moved", "member": "a", "window": "1h", "rank": 2, "score": 5,
             "from": 1, "to": 2, "passed": ["b"], "cause": "write", "at": second},
            {"id": ids[2], "type": "moved", "member": "b", "window": "1h", "rank": 1, "score": 7,
             "from": 2, "to": 1, "passed": ["a"], "cause": "write", "at": second},
            {"id": ids[1], "type": "entered", "member": "b", "window": "1h", "rank": 2, "score": 3,
             "cause": "write", "at": first},
            {"id": ids[0], "type": "entered", "member": "a", "window": "1h", "rank": 1, "score": 5,
             "cause": "write", "at": first},
        ])
    );
    // Watched with no change yet: an empty list; not watched: no `changes` at all.
    assert_eq!(d["boards"][1]["changes"], json!([]));
    let mut fields: Vec<&String> = d["boards"][2].as_object().unwrap().keys().collect();
    fields.sort();
    assert_eq!(fields, ["config", "histories", "kind", "name", "windows"]);
}

async fn a_trending_board_answers_its_top_by_decayed_score(app: TestApp) {
    let t = unique("trend");
    let created = app
        .put(
            &format!("/v1/boards/{t}"),
            json!({"kind": "trending", "half_life": "1h"}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    post_events(
        &app,
        &t,
        60,
        json!([{"member": "x", "delta": 4}, {"member": "y", "delta": 2}]),
    )
    .await;
    // One half-life later: 2.0 and 1.0.
    app.at(60 + 3600);
    let d = get_ok(&app, &format!("/v1/dashboard?boards={t}")).await;
    assert_eq!(
        d["boards"],
        json!([{
            "name": t, "kind": "trending",
            "config": {"half_life": "1h", "floor": 0.001, "max_age": "10h"},
            "members": 2, "ranked": 2,
            "entries": [{"rank": 1, "member": "x", "score": 2.0}, {"rank": 2, "member": "y", "score": 1.0}],
        }])
    );
    let d = get_ok(&app, &format!("/v1/dashboard?boards={t}&order=asc")).await;
    assert_eq!(
        d["boards"][0]["entries"],
        json!([{"rank": 2, "member": "y", "score": 1.0}, {"rank": 1, "member": "x", "score": 2.0}])
    );
}

async fn a_missing_board_is_an_error_entry_and_the_others_still_answer(app: TestApp) {
    let b = app.board("1h", &["1h"]).await;
    let missing = unique("gone");
    let d = get_ok(
        &app,
        &format!("/v1/dashboard?boards={missing},{b},{missing}"),
    )
    .await;
    let boards = d["boards"].as_array().unwrap();
    let error = json!({"name": missing, "error": {"code": "board_not_found",
                       "message": format!("board {missing:?} does not exist")}});
    assert_eq!(boards.len(), 3);
    assert_eq!(boards[0], error);
    assert_eq!(boards[1]["name"], b.as_str());
    assert_eq!(boards[1]["windows"][0]["entries"], json!([]));
    assert_eq!(boards[2], error);
    // No board asked: none answered.
    assert_eq!(get_ok(&app, "/v1/dashboard").await["boards"], json!([]));
    assert_eq!(
        get_ok(&app, "/v1/dashboard?boards=").await["boards"],
        json!([])
    );
}

/// Adds `count` to counter `name` at `START + at` (the clock is at `START + 10`).
async fn count(app: &TestApp, name: &str, count: i64, at: i64) {
    let reply = app
        .post(
            &format!("/v1/counters/{name}"),
            json!({"count": count, "at": START + at}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
}

async fn counters_list_every_name_and_show_the_newest_samples(app: TestApp) {
    app.at(10);
    count(&app, "likes", 3, 1).await;
    count(&app, "likes", 2, 2).await;
    count(&app, "posts", 7, 6).await;
    for i in 0..11 {
        count(&app, &format!("z{i:02}"), 1, 3).await;
    }
    let d = get_ok(&app, "/v1/dashboard?samples=1").await;
    let counters = &d["counters"];
    assert_eq!(counters["total"], 13);
    let mut names = vec!["likes".to_owned(), "posts".to_owned()];
    names.extend((0..11).map(|i| format!("z{i:02}")));
    assert_eq!(counters["names"], json!(names));
    // Absent `counters`: the first 10 by name.
    let shown: Vec<&str> = counters["shown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(shown, names[..10]);
    // samples=1: the newest non-zero slice of each precision.
    assert_eq!(
        counters["shown"][0],
        json!({"name": "likes", "precisions": [
            {"precision": "1s", "samples": [[START + 2, 2]]},
            {"precision": "5s", "samples": [[START, 5]]},
            {"precision": "1m", "samples": [[START, 5]]},
            {"precision": "5m", "samples": [[START, 5]]},
            {"precision": "1h", "samples": [[START, 5]]},
            {"precision": "5h", "samples": [[START - START % 18000, 5]]},
            {"precision": "1d", "samples": [[START - START % 86400, 5]]},
        ]})
    );
    let d = get_ok(&app, "/v1/dashboard?counters=posts,nothing,likes").await;
    let shown = &d["counters"]["shown"];
    assert_eq!(shown.as_array().unwrap().len(), 3);
    assert_eq!(
        shown[0]["precisions"][0],
        json!({"precision": "1s", "samples": [[START + 6, 7]]})
    );
    assert_eq!(
        shown[0]["precisions"][1],
        json!({"precision": "5s", "samples": [[START + 5, 7]]})
    );
    assert_eq!(
        shown[1],
        json!({"name": "nothing", "precisions": [],
               "error": {"code": "counter_not_found", "message": "counter \"nothing\" does not exist"}})
    );
    // The default of 120 samples keeps both of likes' 1 s slices, oldest first.
    assert_eq!(
        shown[2]["precisions"][0],
        json!({"precision": "1s", "samples": [[START + 1, 3], [START + 2, 2]]})
    );
    let none = get_ok(&app, "/v1/dashboard?counters=").await;
    assert_eq!(none["counters"]["shown"], json!([]));
    assert_eq!(none["counters"]["total"], 13);
}

async fn stats_list_every_kind_and_the_slowest_of_the_kind_asked(app: TestApp) {
    for (context, value) in [
        ("%2Fcheckout", 0.25),
        ("%2Fcheckout", 0.75),
        ("%2Fcart", 0.1),
    ] {
        let reply = app
            .post(
                &format!("/v1/stats/{context}/Latency"),
                json!({ "value": value }),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    }
    // The service's own records (AccessTime, DashboardTime) land in the background.
    let d = wait_dashboard(&app, "/v1/dashboard?kind=Latency&slowest=1", |d| {
        d["stats"]["kinds"] == json!(["AccessTime", "DashboardTime", "Latency"])
    })
    .await;
    let checkout = get_ok(&app, "/v1/stats/%2Fcheckout/Latency").await;
    assert_eq!(
        d["stats"],
        json!({"kind": "Latency", "kinds": ["AccessTime", "DashboardTime", "Latency"],
               "slowest": [{"context": "/checkout", "mean": 0.5, "count": 2,
                            "p95": checkout["current"]["p95"]}]})
    );
    // The default kind is AccessTime, its entries with a p95 each.
    let d = get_ok(&app, "/v1/dashboard").await;
    assert_eq!(d["stats"]["kind"], "AccessTime");
    let slowest = d["stats"]["slowest"].as_array().unwrap();
    assert!(!slowest.is_empty());
    assert!(slowest.iter().all(|e| e["p95"].as_f64().unwrap() > 0.0));
    // A kind with no list: empty.
    let d = get_ok(&app, "/v1/dashboard?kind=Nothing").await;
    assert_eq!(d["stats"]["slowest"], json!([]));
}

async fn health_runs_the_readiness_checks(app: TestApp) {
    let health = get_ok(&app, "/v1/dashboard").await["health"].clone();
    if health["store"] == "memory" {
        assert_eq!(
            health,
            json!({"ready": true, "problem": null, "store": "memory",
                   "clock_skew_seconds": 0.0, "memory": null})
        );
        return;
    }
    assert_eq!(
        (&health["ready"], &health["problem"], &health["store"]),
        (&json!(true), &Value::Null, &json!("redis"))
    );
    // The test clock stands in 2023: the skew is a number (not judged by this service).
    assert!(health["clock_skew_seconds"].as_f64().unwrap() < -1e7);
    let config = |name: &'static str| {
        let redis = app.redis.clone();
        async move {
            let pair: Vec<String> = ::redis::cmd("CONFIG")
                .arg("GET")
                .arg(name)
                .query_async(&mut redis.raw().await)
                .await
                .unwrap();
            pair[1].clone()
        }
    };
    assert_eq!(health["memory"]["policy"], config("maxmemory-policy").await);
    assert_eq!(
        health["memory"]["max_bytes"].as_u64().unwrap().to_string(),
        config("maxmemory").await
    );
    assert!(health["memory"]["used_bytes"].as_u64().unwrap() > 0);
    // An evicting policy: not ready, with /readyz's problem, still a 200 (on a server of
    // the test's own: the policy is server-wide).
    if !app.redis.owned() {
        return;
    }
    app.redis
        .config_set("maxmemory-policy", "allkeys-lru")
        .await;
    let health = get_ok(&app, "/v1/dashboard").await["health"].clone();
    assert_eq!(health["ready"], false);
    assert_eq!(health["problem"]["code"], "eviction_policy");
    assert_eq!(health["memory"]["policy"], "allkeys-lru");
    let readyz = app.get("/readyz").await;
    assert_eq!(readyz.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        health["problem"]["message"],
        readyz.body["error"]["message"]
    );
}

async fn the_search_matches_parts_of_names_in_any_case(app: TestApp) {
    for name in ["Alpha-posts", "beta-POSTS", "gamma"] {
        let reply = app
            .put(
                &format!("/v1/boards/{name}"),
                json!({"slot": "1h", "windows": ["1h"]}),
            )
            .await;
        assert_eq!(reply.status, StatusCode::CREATED);
    }
    let reply = app
        .put(
            "/v1/boards/delta-posts",
            json!({"kind": "trending", "half_life": "1h"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    let windowed = |name: &str| json!({"name": name, "kind": "windowed"});
    assert_eq!(
        get_ok(&app, "/v1/dashboard/boards?search=Posts").await,
        json!({"total": 4, "matched": 3, "boards": [
            windowed("Alpha-posts"), windowed("beta-POSTS"),
            {"name": "delta-posts", "kind": "trending"},
        ]})
    );
    assert_eq!(
        get_ok(&app, "/v1/dashboard/boards?search=posts&limit=1").await,
        json!({"total": 4, "matched": 3, "boards": [windowed("Alpha-posts")]})
    );
    let all = get_ok(&app, "/v1/dashboard/boards").await;
    assert_eq!((&all["total"], &all["matched"]), (&json!(4), &json!(4)));
    assert_eq!(all["boards"][3], windowed("gamma"));
    assert_eq!(
        get_ok(&app, "/v1/dashboard/boards?search=").await["matched"],
        4
    );
    assert_eq!(
        get_ok(&app, "/v1/dashboard/boards?search=nothing").await,
        json!({"total": 4, "matched": 0, "boards": []})
    );

    // The busiest first: the most members ranked now, then by name.
    let members =
        |n: usize| -> Value { (0..n).map(|i| json!({"member": format!("m{i}")})).collect() };
    post_events(&app, "gamma", 0, members(3)).await;
    post_events(&app, "delta-posts", 0, members(2)).await;
    post_events(&app, "beta-POSTS", 0, members(1)).await;
    let ranked = |name: &str, kind: &str, n: u64| json!({"name": name, "kind": kind, "ranked": n});
    assert_eq!(
        get_ok(&app, "/v1/dashboard/boards?sort=busiest").await,
        json!({"total": 4, "matched": 4, "boards": [
            ranked("gamma", "windowed", 3), ranked("delta-posts", "trending", 2),
            ranked("beta-POSTS", "windowed", 1), ranked("Alpha-posts", "windowed", 0),
        ]})
    );
    assert_eq!(
        get_ok(
            &app,
            "/v1/dashboard/boards?search=posts&sort=busiest&limit=2"
        )
        .await,
        json!({"total": 4, "matched": 3, "boards": [
            ranked("delta-posts", "trending", 2), ranked("beta-POSTS", "windowed", 1),
        ]})
    );
    assert_eq!(
        get_ok(&app, "/v1/dashboard/boards?sort=name&limit=1").await["boards"],
        json!([windowed("Alpha-posts")])
    );
}

async fn the_member_lookup_answers_every_window_and_the_history(app: TestApp) {
    let b = two_slot_boards(&app, &[false]).await.remove(0);
    let history = |points: Value| {
        json!({"member": points[0]["member"], "slot": "1h", "from": START - 3600,
               "to": START + 7200, "points": points[1]})
    };
    assert_eq!(
        get_ok(&app, &format!("/v1/dashboard/member?board={b}&member=a")).await,
        json!({"board": b, "member": "a", "windows": [
            // 1 h: c 4, a 1 (nothing below a); 3 h: a 6, c 4, b 3.
            {"window": "1h", "score": 1, "rank": 2, "percentile": 0.0, "ranked": 2},
            {"window": "3h", "score": 6, "rank": 1, "percentile": 2.0 / 3.0, "ranked": 3},
        ], "history": history(json!([{"member": "a"},
            [{"slot": START, "value": 5}, {"slot": START + 3600, "value": 1}]]))})
    );
    // b has no event in the 1 h window: its total, no rank, no 404.
    assert_eq!(
        get_ok(&app, &format!("/v1/dashboard/member?board={b}&member=b")).await,
        json!({"board": b, "member": "b", "windows": [
            {"window": "1h", "score": 0, "rank": null, "percentile": null, "ranked": 2},
            {"window": "3h", "score": 3, "rank": 3, "percentile": 0.0, "ranked": 3},
        ], "history": history(json!([{"member": "b"}, [{"slot": START, "value": 3}]]))})
    );
    let unknown = app
        .get(&format!("/v1/dashboard/member?board={b}&member=zed"))
        .await;
    assert_eq!(
        (unknown.status, unknown.code()),
        (StatusCode::NOT_FOUND, "member_not_found")
    );
    let missing = unique("gone");
    let no_board = app
        .get(&format!("/v1/dashboard/member?board={missing}&member=a"))
        .await;
    assert_eq!(
        (no_board.status, no_board.code()),
        (StatusCode::NOT_FOUND, "board_not_found")
    );
    for (query, names) in [
        (format!("board={b}"), "member"),
        ("member=a".to_owned(), "board"),
        (format!("board={b}&member="), "member"),
        ("board=a%20b&member=a".to_owned(), "board"),
    ] {
        let reply = app.get(&format!("/v1/dashboard/member?{query}")).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_query"),
            "{query}"
        );
        let message = reply.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(names), "{query}: {message}");
    }
}

async fn the_member_lookup_on_a_trending_board_answers_now(app: TestApp) {
    let t = unique("trend");
    let created = app
        .put(
            &format!("/v1/boards/{t}"),
            json!({"kind": "trending", "half_life": "1h"}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    post_events(
        &app,
        &t,
        60,
        json!([{"member": "x", "delta": 4}, {"member": "y", "delta": 2}]),
    )
    .await;
    app.at(60 + 3600);
    assert_eq!(
        get_ok(&app, &format!("/v1/dashboard/member?board={t}&member=y")).await,
        json!({"board": t, "member": "y", "windows": [
            {"window": "now", "score": 1.0, "rank": 2, "percentile": 0.0, "ranked": 2}
        ], "history": null})
    );
    assert_eq!(
        get_ok(&app, &format!("/v1/dashboard/member?board={t}&member=x")).await["windows"][0]["percentile"],
        0.5
    );
    let unknown = app
        .get(&format!("/v1/dashboard/member?board={t}&member=zed"))
        .await;
    assert_eq!(
        (unknown.status, unknown.code()),
        (StatusCode::NOT_FOUND, "member_not_found")
    );
}

async fn every_bad_parameter_is_a_422_saying_what_to_fix(app: TestApp) {
    let boards: Vec<String> = (0..51).map(|i| format!("b{i}")).collect();
    let counters: Vec<String> = (0..21).map(|i| format!("c{i}")).collect();
    let cases = [
        (format!("boards={}", boards.join(",")), "at most 50 boards"),
        ("boards=ok,a%20b".to_owned(), "boards"),
        ("top=0".to_owned(), "top must be 1 to 100"),
        ("top=101".to_owned(), "top must be 1 to 100"),
        ("top=abc".to_owned(), "top must be a whole number"),
        ("top=-1".to_owned(), "top must be a whole number"),
        ("leaders=11".to_owned(), "leaders must be 0 to 10"),
        ("leaders=x".to_owned(), "leaders must be a whole number"),
        (
            format!("counters={}", counters.join(",")),
            "at most 20 counters",
        ),
        ("counters=a%20b".to_owned(), "counters"),
        ("samples=0".to_owned(), "samples must be 1 to 1000"),
        ("samples=1001".to_owned(), "samples must be 1 to 1000"),
        ("kind=a%20b".to_owned(), "kind"),
        ("kind=".to_owned(), "kind"),
        ("slowest=0".to_owned(), "slowest must be 1 to 100"),
        ("slowest=101".to_owned(), "slowest must be 1 to 100"),
        ("order=up".to_owned(), "order must be asc or desc"),
    ];
    for (query, says) in cases {
        let reply = app.get(&format!("/v1/dashboard?{query}")).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_query"),
            "{query}: {:?}",
            reply.body
        );
        let message = reply.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{query}: {message}");
    }
    // The bounds themselves are accepted.
    let edge = "top=100&leaders=10&samples=1000&slowest=100";
    get_ok(&app, &format!("/v1/dashboard?{edge}")).await;
    let boards50: Vec<String> = (0..50).map(|i| format!("b{i}")).collect();
    let d = get_ok(
        &app,
        &format!("/v1/dashboard?boards={}", boards50.join(",")),
    )
    .await;
    assert_eq!(d["boards"].as_array().unwrap().len(), 50);
    for (query, says) in [
        ("limit=0", "limit must be 1 to 500"),
        ("limit=501", "limit must be 1 to 500"),
        ("limit=many", "limit must be a whole number"),
    ] {
        let reply = app.get(&format!("/v1/dashboard/boards?{query}")).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_query"),
            "{query}"
        );
        let message = reply.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{query}: {message}");
    }
}

/// The contexts of a kind's slowest list with their counts.
async fn slowest(app: &TestApp, kind: &str) -> Vec<(String, u64)> {
    let body = get_ok(app, &format!("/v1/stats/slowest?kind={kind}&limit=100")).await;
    let mut entries: Vec<(String, u64)> = body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["context"].as_str().unwrap().to_owned(),
                e["count"].as_u64().unwrap(),
            )
        })
        .collect();
    entries.sort();
    entries
}

async fn dashboard_requests_are_recorded_as_dashboard_time_only(app: TestApp) {
    let page = app.get_text("/").await;
    assert!(page.contains("<html"), "the page");
    get_ok(&app, "/v1/dashboard").await;
    get_ok(&app, "/v1/dashboard?counters=").await;
    get_ok(&app, "/v1/dashboard/boards?search=x").await;
    let _ = app.get("/v1/dashboard/member?board=none&member=a").await;
    get_ok(&app, "/v1/boards").await;
    let expected = vec![
        ("/".to_owned(), 1),
        ("/v1/dashboard".to_owned(), 2),
        ("/v1/dashboard/boards".to_owned(), 1),
        ("/v1/dashboard/member".to_owned(), 1),
    ];
    for _ in 0..100 {
        let access = slowest(&app, "AccessTime").await;
        if slowest(&app, "DashboardTime").await == expected
            && access.contains(&("/v1/boards".to_owned(), 1))
        {
            // No dashboard route among the service's access times.
            let contexts: Vec<&str> = access.iter().map(|(c, _)| c.as_str()).collect();
            assert!(
                !contexts
                    .iter()
                    .any(|c| *c == "/" || c.starts_with("/v1/dashboard")),
                "{contexts:?}"
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "DashboardTime {:?}, AccessTime {:?}",
        slowest(&app, "DashboardTime").await,
        slowest(&app, "AccessTime").await
    );
}

/// The lag of a window whose retirement is behind, as the dashboard and `describe_board`
/// report it, read through the library on a clock no retirer follows.
async fn lag_is_reported_while_retirement_is_behind(store: Arc<dyn Store>) {
    let clock = ManualClock::new(Timestamp::from_unix_seconds(START + 60).unwrap());
    let boards = Rollboard::with(store, Arc::new(clock.clone()), Settings::default());
    let b = unique("lag");
    boards
        .create(&b, BoardConfig::parse("1h", &["1h", "2h"]).unwrap())
        .await
        .unwrap();
    boards.windowed(&b).incr("a", 3, None).await.unwrap();
    // Slot START left the 1 h window 10 minutes ago; nothing retired it: its hour of events
    // is still counted.
    clock.set(Timestamp::from_unix_seconds(START + 3600 + 600).unwrap());
    let query = DashboardQuery {
        boards: vec![b.clone()],
        max_clock_skew: None,
        ..DashboardQuery::default()
    };
    let dashboard = boards.dashboard(&query).await.unwrap();
    let DashboardBoard::Windowed(view) = &dashboard.boards[0] else {
        panic!("{:?}", dashboard.boards[0]);
    };
    let lags: Vec<(u64, i64, Vec<i64>)> = view
        .windows
        .iter()
        .map(|w| {
            (
                w.lag_seconds,
                w.from,
                w.entries.iter().map(|e| e.score).collect(),
            )
        })
        .collect();
    assert_eq!(lags, [(3600, START, vec![3]), (0, START, vec![3])]);
    let described = boards.describe_board(&b).await.unwrap();
    assert_eq!(described.windows[0].lag_seconds, 3600);
}

#[tokio::test]
async fn lag_is_reported_while_retirement_is_behind_on_memory() {
    lag_is_reported_while_retirement_is_behind(Arc::new(MemoryStore::new())).await;
}

#[tokio::test]
async fn lag_is_reported_while_retirement_is_behind_on_redis() {
    let redis = TestRedis::start().await;
    lag_is_reported_while_retirement_is_behind(redis.store().await).await;
}
