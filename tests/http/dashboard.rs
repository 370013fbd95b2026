//! The dashboard at `/`, rendered by headless Chromium (Debian's `chromium` package): what it
//! shows for the boards picked in its URL (each window's top, movement since the newest
//! snapshot, the leaders' history, a watched board's recent changes, a trending board's top
//! and leaders over time), that member names stay text, that it says when there are no
//! boards and works under a prefix; with 200 boards, that each refresh costs the service
//! exactly one request and a paused or hidden page none, what each panel shows, and a
//! screenshot of each panel for a reviewer.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use rollboard::http::{HttpOptions, router};
use rollboard::service::ServiceConfig;
use rollboard::{BoardConfig, MemoryStore, Rollboard};
use serde_json::json;
use tokio::sync::oneshot;

use crate::support::{START, TestApp, TestRedis, clock, spawn_app_with, unique};

/// Chromium runs the page's timers on virtual time (paused while fetches are pending)
/// for this long before it dumps the DOM: several of the page's 2 s refreshes.
const VIRTUAL_TIME_MS: u32 = 10_000;
/// Virtual time before a screenshot: the first refresh and the charts are drawn.
const SCREENSHOT_TIME_MS: u32 = 3_000;
/// Longest a Chromium run may take in real time.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(90);

/// The service for a page Chromium drives, on a fresh Redis, keeping idle connections
/// open for the whole test. Chromium's virtual time lets seconds of the page pass in an
/// instant, but a loaded machine can hold the page for seconds of real time: a connection
/// the service closes as idle (after its 5 s keep-alive timeout) just as the page reuses
/// it makes Chromium send the request again, and the gate would count it twice.
async fn spawn_page_app() -> TestApp {
    let mut config = ServiceConfig::default();
    config.connections.keep_alive_timeout = Duration::from_secs(3600);
    spawn_app_with(Arc::new(TestRedis::start().await), clock(), config).await
}

#[tokio::test]
async fn picked_boards_show_each_window_top_the_leaders_history_and_a_trending_top() {
    let app = spawn_page_app().await;
    let board = app.board("1h", &["1h", "24h"]).await;
    let hostile_board = app.board("1h", &["1h"]).await;
    let trending = unique("tr");
    let put = app
        .put(
            &format!("/v1/boards/{trending}"),
            json!({"kind": "trending", "half_life": "1h"}),
        )
        .await;
    assert_eq!(put.status.as_u16(), 201, "{:?}", put.body);
    app.at(1800);
    let now = START + 1800;
    let previous = START - 1800; // in the slot before the current one
    let current = START + 600;
    let reply = app
        .post(
            &format!("/v1/boards/{board}/events"),
            events(&[
                ("post:a", 2, previous),
                ("post:b", 2, previous),
                ("post:c", 1, previous),
                ("post:d", 1, previous),
                ("post:a", 3, current),
                ("post:c", 2, current),
                ("post:b", 1, current),
            ]),
        )
        .await;
    assert_eq!(reply.body, json!({"accepted": 7, "rejected": []}));
    let hostile = "<img src=x onerror=alert(1)>&\"q\" /?#%ü";
    let reply = app
        .post(
            &format!("/v1/boards/{hostile_board}/events"),
            json!({"events": [{"member": hostile, "delta": 7, "at": START}]}),
        )
        .await;
    assert_eq!(reply.body, json!({"accepted": 1, "rejected": []}));
    // Now: alice's 3 now, bob's 5 an hour ago (one half-life: 2.5), carol's 1 two hours
    // ago (0.25).
    let reply = app
        .post(
            &format!("/v1/boards/{trending}/events"),
            events(&[
                ("alice", 3, now),
                ("bob", 5, now - 3600),
                ("carol", 1, now - 7200),
            ]),
        )
        .await;
    assert_eq!(reply.body, json!({"accepted": 3, "rejected": []}));

    let unranked = app.board("1h", &["1h"]).await;
    let reply = app
        .post(
            &format!("/v1/boards/{unranked}/events"),
            events(&[("post:x", -2, START)]),
        )
        .await;
    assert_eq!(reply.body, json!({"accepted": 1, "rejected": []}));
    let gone = unique("gone");
    let page = format!("/?boards={board},{trending},{hostile_board},{gone},{unranked}&every=2");
    let dom = render(&format!("{}{page}", app.url)).await;
    let section = board_section(&dom, &board);
    assert!(
        section.contains("slot 1h · windows 1h, 1d"),
        "board header:\n{section}"
    );
    assert_eq!(
        top_rows(section, "1h"),
        rows(&[
            ("1", "post:a", "3"),
            ("2", "post:c", "2"),
            ("3", "post:b", "1")
        ])
    );
    assert_eq!(
        top_rows(section, "1d"),
        rows(&[
            ("1", "post:a", "5"),
            ("2", "post:b", "3"),
            ("2", "post:c", "3"),
            ("4", "post:d", "1"),
        ])
    );
    assert_eq!(coverage(section, "1h"), "3 members · lag 0 s");
    assert_eq!(coverage(section, "1d"), "4 members · lag 0 s");

    // The chart: a canvas, the picked (first) window's three leaders, and their per-slot
    // history zero-filled over the largest window (24 one-hour slots).
    let chart = slice(
        section,
        &format!("<div class=\"chart\" data-board=\"{board}\""),
        "<details class=\"chart-data\">",
    );
    assert!(chart.contains(" data-slots=\"24\">"), "chart:\n{chart}");
    assert!(
        chart.contains("<canvas "),
        "no canvas in the chart:\n{chart}"
    );
    assert_eq!(legend(section), ["post:a", "post:c", "post:b"]);
    assert_eq!(history_row(section, START - 3600), ["2", "1", "2"]);
    assert_eq!(history_row(section, START), ["3", "2", "1"]);
    assert_eq!(history_row(section, START - 7200), ["0", "0", "0"]);

    // Member names are text, never markup, and their history is found.
    let section = board_section(&dom, &hostile_board);
    assert!(
        !dom.contains("<img"),
        "a member name became markup:\n{section}"
    );
    assert_eq!(top_rows(section, "1h"), rows(&[("1", hostile, "7")]));
    assert_eq!(coverage(section, "1h"), "1 member · lag 0 s");
    assert_eq!(legend(section), [hostile]);
    assert_eq!(history_row(section, START), ["7"]);

    // The trending board: its top by decayed score, and its leaders as the page saw them
    // (one moment so far: the service's clock stood still).
    let section = board_section(&dom, &trending);
    assert!(section.contains("trending · half-life 1h"), "{section}");
    assert_eq!(
        top_rows(section, "trending"),
        rows(&[
            ("1", "alice", "3"),
            ("2", "bob", "2.5"),
            ("3", "carol", "0.25")
        ])
    );
    assert_eq!(coverage(section, "trending"), "3 ranked of 3 members");
    assert_eq!(legend(section), ["alice", "bob", "carol"]);
    assert_eq!(history_row(section, now), ["3", "2.5", "0.25"]);
    assert_eq!(section.matches("<tr data-slot=").count(), 1, "{section}");
    // A member, none ranked (its total is below 1): said so, no empty chart.
    let section = board_section(&dom, &unranked);
    assert_eq!(coverage(section, "1h"), "1 member · lag 0 s");
    assert!(
        section.contains(
            "<tbody><tr class=\"empty\"><td colspan=\"3\">no ranked members yet</td></tr></tbody>"
        ),
        "{section}"
    );
    assert!(
        section.contains("<p class=\"empty\">No ranked members in the 1h window yet.</p>"),
        "{section}"
    );
    // A board that cannot be read says why on its card; the others still show.
    let section = slice(
        &dom,
        &format!("<section class=\"card panel\" data-board=\"{gone}\">"),
        "</section>",
    );
    let error = slice(section, "<p class=\"error\">", "</p>");
    assert!(
        error.starts_with("<p class=\"error\">Could not load: ")
            && error.ends_with(" (board_not_found)"),
        "{section}"
    );
    // The cards come in the URL's order.
    let order: Vec<_> = [&board, &trending, &hostile_board]
        .iter()
        .map(|b| {
            dom.find(&format!(
                "<section class=\"card panel\" data-board=\"{b}\">"
            ))
        })
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");

    // The page refreshes by itself: in one session, events posted after its first
    // render show once it has refreshed. The gate holds the page's second refresh until
    // the events are in and the clock has moved on a minute.
    let mut gate = Gate::open(&app.url, 2);
    let url = format!("{}{page}", gate.url);
    let mut browser = tokio::task::spawn_blocking(move || dump_dom(&url, VIRTUAL_TIME_MS));
    tokio::select! {
        _ = &mut gate.reached => {}
        dom = &mut browser => panic!("the page never refreshed by itself:\n{}", dom.unwrap()),
    }
    let reply = app
        .post(
            &format!("/v1/boards/{board}/events"),
            events(&[("post:d", 10, current), ("post:e", 1, current)]),
        )
        .await;
    assert_eq!(reply.body, json!({"accepted": 2, "rejected": []}));
    app.at(1860);
    gate.release.send(()).unwrap();
    let dom = browser.await.unwrap();
    let section = board_section(&dom, &board);
    assert_eq!(
        top_rows(section, "1h"),
        rows(&[
            ("1", "post:d", "10"),
            ("2", "post:a", "3"),
            ("3", "post:c", "2"),
            ("4", "post:b", "1"),
            ("4", "post:e", "1"),
        ])
    );
    assert_eq!(
        top_rows(section, "1d"),
        rows(&[
            ("1", "post:d", "11"),
            ("2", "post:a", "5"),
            ("3", "post:b", "3"),
            ("3", "post:c", "3"),
            ("5", "post:e", "1"),
        ])
    );
    assert_eq!(coverage(section, "1h"), "5 members · lag 0 s");
    assert_eq!(legend(section), ["post:d", "post:a", "post:c"]);
    assert_eq!(history_row(section, START - 3600), ["1", "2", "1"]);
    assert_eq!(history_row(section, START), ["10", "3", "2"]);
    // The trending chart gathered a second moment, a minute later.
    let section = board_section(&dom, &trending);
    assert_eq!(history_row(section, now), ["3", "2.5", "0.25"]);
    assert_eq!(section.matches("<tr data-slot=").count(), 2, "{section}");
    assert!(
        section.contains(&format!("<tr data-slot=\"{}\">", now + 60)),
        "{section}"
    );
}

#[tokio::test]
async fn the_rows_picker_shows_the_bottom_and_member_data_below_each_member() {
    let app = spawn_page_app().await;
    let board = app.board("1h", &["1h"]).await;
    app.at(1800);
    let reply = app
        .post(
            &format!("/v1/boards/{board}/events"),
            events(&[
                ("post:a", 3, START),
                ("post:b", 2, START),
                ("post:c", 1, START),
            ]),
        )
        .await;
    assert_eq!(reply.body, json!({"accepted": 3, "rejected": []}));
    // A title shows as it is; any other value as compact JSON.
    for (member, data) in [
        ("post:a", json!({"title": "Lifetimes", "tags": ["rust"]})),
        ("post:c", json!([1, 2])),
    ] {
        let put = app
            .put(&format!("/v1/boards/{board}/members/{member}/data"), data)
            .await;
        assert_eq!(put.status.as_u16(), 204, "{:?}", put.body);
    }
    let titled = "post:a<span class=\"data\" title=\"{\"tags\":[\"rust\"],\"title\":\"Lifetimes\"}\">Lifetimes</span>";
    let listed = "post:c<span class=\"data\" title=\"[1,2]\">[1,2]</span>";

    let dom = render(&format!("{}/?boards={board}&order=asc&every=0", app.url)).await;
    let section = board_section(&dom, &board);
    assert!(section.contains("<h3>Bottom 10 · 1h</h3>"), "{section}");
    assert_eq!(
        top_rows(section, "1h"),
        rows(&[("3", listed, "1"), ("2", "post:b", "2"), ("1", titled, "3")])
    );
    let dom = render(&format!("{}/?boards={board}&every=0", app.url)).await;
    let section = board_section(&dom, &board);
    assert!(section.contains("<h3>Top 10 · 1h</h3>"), "{section}");
    assert_eq!(
        top_rows(section, "1h"),
        rows(&[("1", titled, "3"), ("2", "post:b", "2"), ("3", listed, "1")])
    );
}

#[tokio::test]
async fn a_board_with_snapshots_shows_each_leaders_move_since_the_newest_one() {
    let app = spawn_page_app().await;
    let b = unique("moves");
    let config = json!({"slot": "1h", "windows": ["2h"], "snapshots": {"top": 10, "keep": 5}});
    let created = app.put(&format!("/v1/boards/{b}"), config).await;
    assert_eq!(created.status.as_u16(), 201, "{:?}", created.body);
    app.at(60);
    let t = START + 60;
    let reply = app
        .post(
            &format!("/v1/boards/{b}/events"),
            events(&[
                ("bob", 7, t),
                ("alice", 5, t),
                ("carol", 5, t),
                ("erin", 1, t),
            ]),
        )
        .await;
    assert_eq!(reply.body, json!({"accepted": 4, "rejected": []}));
    // The service's retirer takes the snapshot at START + 1h: bob 1, alice 2, carol 2, erin 4.
    app.at(3600 + 5);
    let path = format!("/v1/boards/{b}/snapshots?window=2h");
    let mut taken = false;
    for _ in 0..100 {
        if app.get(&path).await.body["snapshots"]
            .as_array()
            .unwrap()
            .len()
            == 1
        {
            taken = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(taken, "no snapshot taken within 5 s");
    let t = START + 3600 + 10;
    let reply = app
        .post(
            &format!("/v1/boards/{b}/events"),
            events(&[("carol", 4, t), ("dave", 1, t)]),
        )
        .await;
    assert_eq!(reply.body, json!({"accepted": 2, "rejected": []}));

    let dom = render(&format!("{}/?boards={b}", app.url)).await;
    let section = board_section(&dom, &b);
    assert_eq!(
        top_rows(section, "2h"),
        rows(&[
            ("1", "carol", "9"),
            ("2", "bob", "7"),
            ("3", "alice", "5"),
            ("4", "dave", "1"),
            ("4", "erin", "1"),
        ])
    );
    assert_eq!(moves(section, "2h"), ["↑1", "↓1", "↓1", "new", "="]);
    // One time zone throughout, UTC by default whatever the browser's.
    assert!(
        dom.contains(" · updated 23:00:05 UTC · every 5 s</p>"),
        "{}",
        slice(&dom, "<header>", "</header>")
    );
    assert_eq!(slot_time(section, START), "2023-11-14 22:00");
    assert!(section.contains("<th>time (UTC)</th>"), "{section}");
}

#[tokio::test]
async fn a_watched_board_shows_its_ten_newest_changes_and_an_unwatched_one_none() {
    let app = spawn_page_app().await;
    let b = unique("watched");
    let config =
        json!({"slot": "1h", "windows": ["1h", "24h"], "watch": [{"window": "24h", "top": 3}]});
    let created = app.put(&format!("/v1/boards/{b}"), config).await;
    assert_eq!(created.status.as_u16(), 201, "{:?}", created.body);
    let plain = app.board("1h", &["1h", "24h"]).await;
    // Four writes, a minute apart, to both boards: 12 changes of the watched top 3.
    for (minute, batch) in [
        (1, vec![("post:1", 5), ("post:2", 3)]),
        (2, vec![("post:3", 4)]),
        (3, vec![("post:4", 9)]),
        (4, vec![("post:2", 10)]),
    ] {
        app.at(60 * minute);
        let t = START + 60 * minute;
        let batch: Vec<_> = batch.into_iter().map(|(m, d)| (m, d, t)).collect();
        for board in [&b, &plain] {
            let reply = app
                .post(&format!("/v1/boards/{board}/events"), events(&batch))
                .await;
            assert_eq!(reply.status.as_u16(), 200, "{:?}", reply.body);
        }
    }

    let dom = render(&format!("{}/?boards={b},{plain}&every=0", app.url)).await;
    let section = board_section(&dom, &b);
    assert!(section.contains("<h3>Recent changes</h3>"), "{section}");
    assert_eq!(
        change_rows(section),
        [
            [
                "2023-11-14 22:04",
                "1d",
                "post:1",
                "#2 → #3 (passed by post:2)",
                "write"
            ],
            [
                "2023-11-14 22:04",
                "1d",
                "post:4",
                "#1 → #2 (passed by post:2)",
                "write"
            ],
            ["2023-11-14 22:04", "1d", "post:2", "entered at #1", "write"],
            ["2023-11-14 22:04", "1d", "post:3", "left from #3", "write"],
            [
                "2023-11-14 22:03",
                "1d",
                "post:3",
                "#2 → #3 (passed by post:4)",
                "write"
            ],
            [
                "2023-11-14 22:03",
                "1d",
                "post:1",
                "#1 → #2 (passed by post:4)",
                "write"
            ],
            ["2023-11-14 22:03", "1d", "post:4", "entered at #1", "write"],
            ["2023-11-14 22:03", "1d", "post:2", "left from #3", "write"],
            [
                "2023-11-14 22:02",
                "1d",
                "post:2",
                "#2 → #3 (passed by post:3)",
                "write"
            ],
            ["2023-11-14 22:02", "1d", "post:3", "entered at #2", "write"],
        ]
    );
    assert!(
        section.contains("<th class=\"at\">time (UTC)</th>"),
        "{section}"
    );
    let plain_section = board_section(&dom, &plain);
    assert_eq!(
        top_rows(plain_section, "1d"),
        rows(&[
            ("1", "post:2", "13"),
            ("2", "post:4", "9"),
            ("3", "post:1", "5"),
            ("4", "post:3", "4"),
        ])
    );
    assert!(!plain_section.contains("Recent changes"), "{plain_section}");
    assert!(
        !plain_section.contains("class=\"changes\""),
        "{plain_section}"
    );
}

#[tokio::test]
async fn without_boards_the_dashboard_says_so() {
    let app = spawn_page_app().await;
    let dom = render(&format!("{}/", app.url)).await;
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page never finished a refresh:\n{dom}"
    );
    assert!(
        dom.contains("<section id=\"boards\" data-panel=\"boards\"><p class=\"empty panel\">No boards yet.</p></section>"),
        "{dom}"
    );
    assert!(
        dom.contains("<p class=\"hint\">No boards yet.</p>"),
        "{dom}"
    );
    assert!(
        dom.contains("<p class=\"empty\">No counters yet.</p>"),
        "{dom}"
    );
}

#[tokio::test]
async fn a_max_boards_chart_leaves_a_slot_without_a_value_empty_where_sums_show_zero() {
    let app = spawn_page_app().await;
    let board = unique("best");
    let put = app
        .put(
            &format!("/v1/boards/{board}"),
            json!({"slot": "1h", "windows": ["1d"], "aggregate": "max"}),
        )
        .await;
    assert_eq!(put.status.as_u16(), 201, "{:?}", put.body);
    let reply = app
        .post(
            &format!("/v1/boards/{board}/events"),
            json!({"events": [
                {"member": "ann", "value": 42, "at": START - 7200},
                {"member": "ann", "value": 40, "at": START},
            ]}),
        )
        .await;
    assert_eq!(reply.body, json!({"accepted": 2, "rejected": []}));
    let dom = render(&format!("{}/?boards={board}", app.url)).await;
    let section = board_section(&dom, &board);
    assert_eq!(history_row(section, START - 7200), ["42"]);
    assert_eq!(history_row(section, START - 3600), ["–"]);
    assert_eq!(history_row(section, START), ["40"]);
}

#[tokio::test]
async fn with_a_read_token_the_page_asks_for_it_and_reads_with_the_one_in_its_address() {
    let mut config = ServiceConfig::default();
    config.tokens.read = Some("r-Token".into());
    let app = spawn_app_with(Arc::new(TestRedis::start().await), clock(), config).await;
    let board = unique("tok");
    let reply = app
        .request(
            reqwest::Method::PUT,
            &format!("/v1/boards/{board}"),
            Some(json!({"slot": "1h", "windows": ["1h"]})),
            Some("r-Token"),
        )
        .await;
    assert_eq!(reply.status.as_u16(), 201);

    let dom = render(&format!("{}/?boards={board}", app.url)).await;
    assert!(!dom.contains("data-ready=\"1\""), "{dom}");
    assert!(
        dom.contains("<form id=\"token\">"),
        "the form stays hidden:\n{dom}"
    );
    assert!(
        dom.contains("Could not refresh: this route needs Authorization: Bearer &lt;token&gt;"),
        "{dom}"
    );

    let dom = render(&format!("{}/?boards={board}#token=r-Token", app.url)).await;
    assert!(dom.contains("data-ready=\"1\""), "{dom}");
    assert!(dom.contains("<form id=\"token\" hidden=\"\">"), "{dom}");
    assert!(
        board_section(&dom, &board).contains("no members yet"),
        "{dom}"
    );
}

#[tokio::test]
async fn a_moderator_sees_what_each_window_hides_below_its_table() {
    let mut config = ServiceConfig::default();
    config.tokens.read = Some("r-Token".into());
    config.tokens.admin = Some("a-Token".into());
    config.connections.keep_alive_timeout = Duration::from_secs(3600);
    let app = spawn_app_with(Arc::new(TestRedis::start().await), clock(), config).await;
    let board = unique("modview");
    let admin = |method: reqwest::Method, path: String, body: Option<serde_json::Value>| {
        let app = &app;
        async move { app.request(method, &path, body, Some("a-Token")).await }
    };
    let put = admin(
        reqwest::Method::PUT,
        format!("/v1/boards/{board}"),
        Some(json!({"slot": "1h", "windows": ["1h"]})),
    )
    .await;
    assert_eq!(put.status.as_u16(), 201);
    let events =
        json!({"events": [{"member": "post:a", "delta": 3}, {"member": "post:b", "delta": 1}]});
    let posted = admin(
        reqwest::Method::POST,
        format!("/v1/boards/{board}/events"),
        Some(events),
    )
    .await;
    assert_eq!(posted.body, json!({"accepted": 2, "rejected": []}));
    let hidden = admin(
        reqwest::Method::POST,
        format!("/v1/boards/{board}/members/post:a/hide"),
        None,
    )
    .await;
    assert_eq!(hidden.status.as_u16(), 200, "{:?}", hidden.body);

    // A reader's page: the ranking without it, and no list.
    let dom = render(&format!("{}/?boards={board}#token=r-Token", app.url)).await;
    let section = board_section(&dom, &board);
    assert_eq!(top_rows(section, "1h"), rows(&[("1", "post:b", "1")]));
    assert!(
        section.contains("<p class=\"hidden-members note\" hidden=\"\"></p>"),
        "{section}"
    );
    // A moderator's (the admin token): the same ranking, and what it hides below it.
    let dom = render(&format!("{}/?boards={board}#token=a-Token", app.url)).await;
    let section = board_section(&dom, &board);
    assert_eq!(top_rows(section, "1h"), rows(&[("1", "post:b", "1")]));
    assert!(
        section.contains("<p class=\"hidden-members note\">hidden: post:a (3)</p>"),
        "{section}"
    );
}

/// A moderator's member lookup on a board keeping contributors shows who gave to the
/// member in each window (the first five, what each counted and, when the cap took some,
/// gave); a reader's shows none, and its JSON has no `contributors`.
#[tokio::test]
async fn a_moderators_member_lookup_shows_who_gave_to_it() {
    let mut config = ServiceConfig::default();
    config.tokens.read = Some("r-Token".into());
    config.tokens.admin = Some("a-Token".into());
    config.connections.keep_alive_timeout = Duration::from_secs(3600);
    let app = spawn_app_with(Arc::new(TestRedis::start().await), clock(), config).await;
    let board = unique("likers");
    let admin = |method: reqwest::Method, path: String, body: Option<serde_json::Value>| {
        let app = &app;
        async move { app.request(method, &path, body, Some("a-Token")).await }
    };
    let capped = json!({"slot": "1h", "windows": ["1h", "24h"], "per_contributor_member": 1});
    let put = admin(
        reqwest::Method::PUT,
        format!("/v1/boards/{board}"),
        Some(capped),
    )
    .await;
    assert_eq!(put.status.as_u16(), 201);
    let events = json!({"events": [
        {"member": "post:a", "by": "u1"}, {"member": "post:a", "by": "u1"},
        {"member": "post:a", "by": "u2"}, {"member": "post:a", "delta": 2, "by": "u3"},
        {"member": "post:a"},
    ]});
    let path = format!("/v1/boards/{board}/events");
    let posted = admin(reqwest::Method::POST, path, Some(events)).await;
    assert_eq!(posted.body["accepted"], json!(5));
    let lookup = format!("/v1/dashboard/member?board={board}&member=post:a");
    let read = app
        .request(reqwest::Method::GET, &lookup, None, Some("r-Token"))
        .await;
    assert_eq!(
        read.body["contributors"],
        serde_json::Value::Null,
        "{:?}",
        read.body
    );

    let page = format!("{}/?boards={board}&lookup={board}&member=post:a", app.url);
    let dom = render(&format!("{page}#token=a-Token")).await;
    let section = slice(&dom, "<section id=\"member\"", "</section>");
    assert_eq!(
        lookup_rows(section),
        [
            ["1h", "4", "1 of 1", "0 % below"],
            ["1d", "4", "1 of 1", "0 % below"]
        ]
    );
    let given = "u1 (1 of 2), u3 (1 of 2), u2 (1)";
    assert_eq!(
        table_rows(section, "contributors"),
        [
            ["1h", "3", "3", given].map(String::from),
            ["1d", "3", "3", given].map(String::from)
        ]
    );
    let dom = render(&format!("{page}#token=r-Token")).await;
    let section = slice(&dom, "<section id=\"member\"", "</section>");
    assert_eq!(lookup_rows(section).len(), 2, "{section}");
    assert!(!section.contains("class=\"contributors\""), "{section}");
}

/// Without `boards=` the page shows the busiest boards (up to 5: the most members ranked
/// in their first window now); a failed refresh keeps what the page shows.
#[tokio::test]
async fn under_a_prefix_the_dashboard_reads_the_api_next_to_it_and_keeps_it_when_a_refresh_fails() {
    let boards = Rollboard::new(Arc::new(MemoryStore::new()));
    let app = axum::Router::new().nest("/rank", router(boards.clone(), HttpOptions::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let config = BoardConfig::parse("1h", &["1h"]).unwrap();
    boards.create("hot", config).await.unwrap();
    for (member, delta) in [("post:1", 2), ("post:2", 1)] {
        boards
            .windowed("hot")
            .incr(member, delta, None)
            .await
            .unwrap();
    }
    // Five quieter boards, before "hot" by name: by name, "hot" would not be shown.
    for quiet in ["a1", "a2", "a3", "a4", "a5"] {
        boards
            .create(quiet, BoardConfig::parse("1h", &["1h"]).unwrap())
            .await
            .unwrap();
        boards
            .windowed(quiet)
            .incr("post:1", 1, None)
            .await
            .unwrap();
    }

    // The page's second refresh and the later ones fail: it says so and keeps the data
    // of the first.
    let gate = Gate::failing(url.trim_end_matches('/'), 2);
    let dom = render(&format!("{}/rank?every=2&counters=ghost", gate.url)).await;
    assert_eq!(attr(&dom, "<body ", "data-refreshes"), "1");
    let status = slice(&dom, "<p id=\"status\"", "</p>");
    assert!(
        status.contains(
            " class=\"failed\">Could not refresh: the store is down · showing the data of "
        ),
        "{status}"
    );
    let section = board_section(&dom, "hot");
    assert_eq!(
        top_rows(section, "1h"),
        rows(&[("1", "post:1", "2"), ("2", "post:2", "1")])
    );
    assert_eq!(legend(section), ["post:1", "post:2"]);
    // The busiest first, then the quieter ones by name, five in all.
    let chips: Vec<&str> = dom
        .match_indices("<li class=\"chip\" data-board=\"")
        .map(|(i, m)| dom[i + m.len()..].split('"').next().unwrap())
        .collect();
    assert_eq!(chips, ["hot", "a1", "a2", "a3", "a4"]);
    // A counter named in the URL that does not exist says so on its card.
    let card = slice(
        &dom,
        "<div class=\"card counter\" data-counter=\"ghost\">",
        "</details>",
    );
    let error = slice(card, "<p class=\"error\">", "</p>");
    assert!(
        error.starts_with("<p class=\"error\">Could not read it: ")
            && error.ends_with(" (counter_not_found)"),
        "{card}"
    );
    assert_eq!(health(&dom, "store"), "store memory");
    assert_eq!(health(&dom, "memory"), "Redis memory –");
    assert!(
        dom.contains("<a href=\"/rank/metrics\">metrics</a> · <a href=\"/rank/openapi.json\">openapi.json</a>"),
        "{dom}"
    );
}

/// A service with 200 boards (195 windowed, 5 trending), 6 counters, the user's own stats
/// kind `Latency`, and events on the boards the tests pick.
struct Busy {
    app: TestApp,
    /// The prefix of every name (a shared `REDIS_URL` holds other tests' boards too).
    p: String,
}

impl Busy {
    async fn start() -> Busy {
        let app = spawn_page_app().await;
        let p = unique("f");
        for i in 0..200 {
            let (name, config) = if i < 195 {
                (
                    format!("{p}-tag-{i:03}"),
                    json!({"slot": "1h", "windows": ["1h", "24h"]}),
                )
            } else {
                (
                    format!("{p}-trend-{}", i - 195),
                    json!({"kind": "trending", "half_life": "1h"}),
                )
            };
            let reply = app.put(&format!("/v1/boards/{name}"), config).await;
            assert_eq!(reply.status.as_u16(), 201, "{name}: {:?}", reply.body);
        }
        for (board, list) in [
            (
                format!("{p}-tag-000"),
                vec![("a", 5, START), ("b", 2, START), ("b", 1, START - 3600)],
            ),
            (format!("{p}-tag-001"), vec![("a", 1, START)]),
            (
                format!("{p}-trend-0"),
                vec![("alice", 3, START), ("bob", 5, START - 3600)],
            ),
        ] {
            let reply = app
                .post(&format!("/v1/boards/{board}/events"), events(&list))
                .await;
            assert_eq!(reply.body["rejected"], json!([]), "{board}");
        }
        for c in 0..6 {
            let path = format!("/v1/counters/{p}-c{c}");
            for (count, at) in [(2, START - 2), (3, START)] {
                let reply = app.post(&path, json!({"count": count + c, "at": at})).await;
                assert_eq!(reply.status, reqwest::StatusCode::OK, "{:?}", reply.body);
            }
        }
        let reply = app
            .post("/v1/stats/%2Fcheckout/Latency", json!({"value": 0.25}))
            .await;
        assert!(reply.status.is_success(), "{:?}", reply.body);
        // The service records its own routes in the background: wait for one.
        let mut recorded = false;
        for _ in 0..100 {
            let slowest = app.get("/v1/stats/slowest?limit=100").await.body;
            if slowest.to_string().contains("/v1/counters/{name}") {
                recorded = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(recorded, "the counter route was never recorded");
        Busy { app, p }
    }

    /// The page's URL (path and query) with three boards picked and `extra` parameters.
    fn page(&self, extra: &str) -> String {
        let p = &self.p;
        format!("/?boards={p}-tag-000,{p}-tag-001,{p}-trend-0&{extra}")
    }
}

#[tokio::test]
async fn with_200_boards_each_refresh_costs_one_request_and_each_panel_shows_its_content() {
    let busy = Busy::start().await;
    let (app, p) = (&busy.app, &busy.p);
    let gate = Gate::open(&app.url, 0);
    let page = busy.page(&format!(
        "every=2&search={p}-tag-01&lookup={p}-tag-000&member=a&precision={p}-c0:5s&test-hide=9"
    ));
    let dom = render(&format!("{}{page}", gate.url)).await;
    let requests = gate.requests();

    // The refreshes the page started, the first as it opens (within a tick of virtual
    // time: a loaded machine may take one to run the page's script), then every 2 s
    // (plus the time a refresh takes) until its test hook hides it at 9 s: after that,
    // nothing.
    let times = refresh_times(&dom);
    assert!(
        (4..=5).contains(&times.len())
            && times[0] <= 0.2
            && times[times.len() - 1] < 9.0
            && times
                .windows(2)
                .all(|w| (1.9..3.0).contains(&(w[1] - w[0]))),
        "{times:?}"
    );
    let refreshes = times.len();
    // One request per refresh, whatever the number of boards; the search and the
    // member lookup once each, when the page opens (user actions otherwise).
    let per_refresh = format!(
        "GET /v1/dashboard?boards={p}-tag-000,{p}-tag-001,{p}-trend-0&top=10&leaders=3&kind=AccessTime"
    );
    let mut expected = vec![
        format!("GET {page}"),
        format!("GET /v1/dashboard/boards?search={p}-tag-01&limit=20"),
        format!("GET /v1/dashboard/member?board={p}-tag-000&member=a"),
    ];
    expected.extend(std::iter::repeat_n(per_refresh, refreshes));
    let mut seen = requests.clone();
    seen.sort();
    expected.sort();
    assert_eq!(seen, expected, "the requests the service received");
    println!(
        "dashboard with 200 boards: {} requests for {refreshes} refreshes (1 per refresh, plus the page, one search and one lookup)",
        requests.len()
    );

    // The health strip.
    assert_eq!(health(&dom, "ready"), "<span class=\"good\">ready</span>");
    assert_eq!(health(&dom, "store"), "store redis");
    let policy =
        app.get("/v1/dashboard?boards=&counters=").await.body["health"]["memory"]["policy"]
            .as_str()
            .unwrap()
            .to_owned();
    let memory = health(&dom, "memory");
    assert!(
        memory.starts_with("Redis memory ") && memory.ends_with(&format!(" · {policy}")),
        "{memory}"
    );
    assert_eq!(
        health(&dom, "lag"),
        format!("worst lag 0 s ({p}-tag-000 1h)")
    );

    // The picker: the three boards picked, the search typed in the URL and its matches.
    let picker = slice(&dom, "<section id=\"picker\"", "</section>");
    assert_eq!(
        all_between(picker, "<li class=\"chip\" data-board=\"", "\">"),
        [
            format!("{p}-tag-000"),
            format!("{p}-tag-001"),
            format!("{p}-trend-0")
        ]
    );
    let found: Vec<String> = (10..20).map(|i| format!("{p}-tag-{i:03}")).collect();
    assert_eq!(
        all_between(picker, "<button type=\"button\" data-board=\"", "\""),
        found
    );
    assert!(
        picker.contains(&format!(
            "<p class=\"hint\">10 of 200 boards match “{p}-tag-01”</p>"
        )),
        "{picker}"
    );

    // The boards: only the picked ones.
    assert_eq!(dom.matches("<section class=\"card panel\"").count(), 3);
    let section = board_section(&dom, &format!("{p}-tag-000"));
    assert_eq!(
        top_rows(section, "1h"),
        rows(&[("1", "a", "5"), ("2", "b", "2")])
    );
    assert_eq!(
        top_rows(section, "1d"),
        rows(&[("1", "a", "5"), ("2", "b", "3")])
    );
    let section = board_section(&dom, &format!("{p}-trend-0"));
    assert_eq!(
        top_rows(section, "trending"),
        rows(&[("1", "alice", "3"), ("2", "bob", "2.5")])
    );

    // The member lookup named in the URL.
    let lookup = slice(&dom, "<section id=\"member\"", "</section>");
    assert_eq!(
        lookup_rows(lookup),
        [
            ["1h", "5", "1 of 2", "50 % below"],
            ["1d", "5", "1 of 2", "50 % below"]
        ]
    );
    assert_eq!(history_row(lookup, START), ["5"]);

    // Counters: one chart per counter (the first 10 by name: all 6), at the precision
    // picked in the URL for the first, the finest for the others.
    let counters = slice(&dom, "<section id=\"counters\"", "</section>");
    assert_eq!(
        all_between(
            counters,
            "<div class=\"card counter\" data-counter=\"",
            "\""
        ),
        (0..6).map(|c| format!("{p}-c{c}")).collect::<Vec<_>>()
    );
    assert_eq!(counters.matches("<canvas").count(), 6, "{counters}");
    let chart = counter_chart(counters, &format!("{p}-c0"));
    assert_eq!(chart, ["5s", "2", "5"]);
    // At 1 s: START - 2, START - 1 (an empty slice, filled in with 0) and START.
    let chart = counter_chart(counters, &format!("{p}-c1"));
    assert_eq!(chart, ["1s", "3", "7"]);
    let card = slice(counters, &format!("data-counter=\"{p}-c1\""), "</details>");
    assert_eq!(history_row(card, START - 2), ["3"]);
    assert_eq!(history_row(card, START - 1), ["0"]);
    assert_eq!(history_row(card, START), ["4"]);

    // Stats: every kind, the user's own included; the dashboard is not in AccessTime.
    let stats = slice(&dom, "<section id=\"stats\"", "</section>");
    let kinds = all_between(stats, "<option value=\"", "\"");
    assert!(
        kinds.contains(&"Latency".to_owned()) && kinds.contains(&"AccessTime".to_owned()),
        "{kinds:?}"
    );
    assert!(
        stats.contains("<tr data-context=\"/v1/counters/{name}\">"),
        "{stats}"
    );
    assert!(
        !stats.contains("data-context=\"/v1/dashboard") && !stats.contains("data-context=\"/\""),
        "the dashboard's own requests are in AccessTime:\n{stats}"
    );
    // AccessTime is a duration: mean and p95 with a unit, the count without.
    let row = slice(stats, "<tr data-context=\"/v1/counters/{name}\">", "</tr>");
    let cells = all_between(row, "<td class=\"score\">", "</td>");
    assert_eq!(cells.len(), 3, "{row}");
    for cell in &cells[..2] {
        let (number, unit) = cell.split_once(' ').unwrap_or_else(|| panic!("{row}"));
        assert!(
            number.parse::<f64>().is_ok() && ["µs", "ms", "s"].contains(&unit),
            "{row}"
        );
    }
    assert!(cells[2].parse::<u64>().unwrap() >= 1, "{row}");
}

#[tokio::test]
async fn a_hidden_tab_makes_no_request_and_refreshes_when_shown_again() {
    let busy = Busy::start().await;
    let gate = Gate::open(&busy.app.url, 0);
    // Refreshes every 2 s; hidden from 1 s to 4 s and from 9 s to the end at 14 s (the
    // page's test hook dispatches `visibilitychange`): none while hidden, one as soon as
    // it is shown, then every 2 s (plus the time a refresh takes, which a loaded machine
    // stretches) until it is hidden again.
    let page = busy.page("every=2&test-hide=1,4,9&tz=local");
    let dom = render_for(&format!("{}{page}", gate.url), 14_000).await;
    // With `tz=local`, the browser's zone (UTC+5:30) throughout.
    assert!(
        dom.contains(" · updated 03:30:00 local time · "),
        "{}",
        slice(&dom, "<header>", "</header>")
    );
    let section = board_section(&dom, &format!("{}-tag-000", busy.p));
    assert_eq!(slot_time(section, START), "2023-11-15 03:30");
    assert!(section.contains("<th>time (local time)</th>"), "{section}");
    let times = refresh_times(&dom);
    assert!(
        (3..=4).contains(&times.len())
            && times[0] <= 0.2
            && (4.0..4.5).contains(&times[1])
            && times[1..]
                .windows(2)
                .all(|w| (2.0..3.0).contains(&(w[1] - w[0])))
            && times[times.len() - 1] < 9.0,
        "{times:?}"
    );
    let refreshes = gate
        .requests()
        .iter()
        .filter(|r| r.starts_with("GET /v1/dashboard?"))
        .count();
    assert_eq!(refreshes, times.len(), "{:#?}", gate.requests());
}

/// When the page started each refresh, in seconds since it opened (its `data-refresh-times`).
fn refresh_times(dom: &str) -> Vec<f64> {
    attr(dom, "<body ", "data-refresh-times")
        .split(',')
        .map(|t| t.parse().unwrap())
        .collect()
}

/// One PNG per panel (`?panel=<name>`) at 1400 px, and the boards at a phone's 390 px,
/// under the target directory; each of these pages is paused (`every=0`): it reads the
/// dashboard once and never again.
#[tokio::test]
async fn each_panel_is_screenshotted_and_a_paused_page_reads_once() {
    let busy = Busy::start().await;
    let p = &busy.p;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let shots = [
        ("health", 1400, 200),
        ("picker", 1400, 360),
        ("boards", 1400, 1750),
        ("member", 1400, 620),
        ("counters", 1400, 1000),
        ("stats", 1400, 480),
        ("boards", 390, 2700),
    ];
    // One Chromium at a time: the machine is shared.
    for (panel, width, height) in shots {
        let gate = Gate::open(&busy.app.url, 0);
        let page = busy.page(&format!(
            "every=0&panel={panel}&lookup={p}-tag-000&member=a&search={p}-tag-00"
        ));
        let url = format!("{}{page}", gate.url);
        let path = dir.join(format!("{panel}-{width}.png"));
        let shot = path.clone();
        tokio::task::spawn_blocking(move || screenshot(&url, width, height, &shot))
            .await
            .unwrap();
        let png = std::fs::read(&path).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{}", path.display());
        let refreshes = gate
            .requests()
            .iter()
            .filter(|r| r.starts_with("GET /v1/dashboard?"))
            .count();
        assert_eq!(refreshes, 1, "{}: {:#?}", path.display(), gate.requests());
    }
    println!("dashboard screenshots: {}", dir.display());
}

/// A batch of `(member, delta, at)` events.
fn events(list: &[(&str, i64, i64)]) -> serde_json::Value {
    let events: Vec<_> = list
        .iter()
        .map(|(member, delta, at)| json!({"member": member, "delta": delta, "at": at}))
        .collect();
    json!({ "events": events })
}

/// Runs headless Chromium on `url` and returns the DOM it ends with.
async fn render(url: &str) -> String {
    render_for(url, VIRTUAL_TIME_MS).await
}

/// As [`render`], after `virtual_ms` of the page's (virtual) time.
async fn render_for(url: &str, virtual_ms: u32) -> String {
    let url = url.to_owned();
    tokio::task::spawn_blocking(move || dump_dom(&url, virtual_ms))
        .await
        .unwrap()
}

/// Runs headless Chromium on `url` for `virtual_ms` of virtual time and returns the DOM
/// it ends with (blocking); asserts the page recorded no error (its `window.onerror` and
/// `unhandledrejection` handlers write them in `data-errors`).
fn dump_dom(url: &str, virtual_ms: u32) -> String {
    let dom = chromium(&[
        format!("--virtual-time-budget={virtual_ms}"),
        "--dump-dom".to_owned(),
        url.to_owned(),
    ]);
    assert!(
        dom.contains("<body data-errors=\"\""),
        "the page recorded errors:\n{}",
        slice(&dom, "<body", ">")
    );
    dom
}

/// Runs headless Chromium on `url` in a `width`×`height` window and writes a PNG of it
/// to `path` (blocking).
fn screenshot(url: &str, width: u32, height: u32, path: &Path) {
    chromium(&[
        format!("--virtual-time-budget={SCREENSHOT_TIME_MS}"),
        format!("--window-size={width},{height}"),
        "--hide-scrollbars".to_owned(),
        format!("--screenshot={}", path.display()),
        url.to_owned(),
    ]);
}

/// The browser's own time zone in every run, UTC+5:30: times the page shows in UTC (its
/// default) cannot be UTC by accident.
const BROWSER_ZONE: &str = "Asia/Kolkata";

/// Runs headless Chromium with `args` and returns its standard output; panics when it
/// fails, takes too long, or logs an uncaught JavaScript error.
fn chromium(args: &[String]) -> String {
    let binary = chromium_binary();
    let profile = std::env::temp_dir().join(unique("rollboard-chromium-"));
    std::fs::create_dir_all(&profile).unwrap();
    // Output goes to files: a pipe nobody reads while we wait would fill up and stall it.
    let stdout = profile.join("stdout");
    let stderr = profile.join("stderr");
    let mut child = Command::new(&binary)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            // Console messages (an uncaught error among them) go to stderr.
            "--enable-logging=stderr",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .env("TZ", BROWSER_ZONE)
        .stdin(Stdio::null())
        .stdout(File::create(&stdout).unwrap())
        .stderr(File::create(&stderr).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", binary.display()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > CHROMIUM_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = std::fs::read_to_string(&stdout).unwrap_or_default();
    let log = std::fs::read_to_string(&stderr).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&profile);
    match status {
        Some(status) if status.success() => {
            assert!(!log.contains("Uncaught"), "a JavaScript error:\n{log}");
            out
        }
        Some(status) => panic!("chromium failed ({status}):\n{log}"),
        None => panic!("chromium did not finish within {CHROMIUM_TIMEOUT:?}:\n{log}"),
    }
}
/// `chromium` on PATH, else `/usr/bin/chromium`; panics when there is neither.
fn chromium_binary() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .map(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("chromium"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain([PathBuf::from("/usr/bin/chromium")])
        .find(|candidate| candidate.is_file())
        .expect(
            "chromium not found (neither on PATH nor /usr/bin/chromium): the dashboard test \
             needs Debian's chromium package: apt-get install -y chromium (scripts/test does)",
        )
}

/// A TCP proxy in front of the service that logs every request it forwards (method and
/// target: the requests the service receives from the page) and holds the page's
/// `hold`-th refresh (`GET /v1/dashboard?…`) until `release` is sent (0: none): the test
/// can change the data between two refreshes of one page. Chromium's virtual time stands
/// still while a fetch is pending, so the page waits too.
struct Gate {
    url: String,
    /// Fires when the held request arrives.
    reached: oneshot::Receiver<()>,
    release: mpsc::Sender<()>,
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<Vec<String>>>,
}

struct Held {
    seen: usize,
    hold: usize,
    /// From this refresh on (1-based; 0: never), the gate answers 503 itself.
    fail_from: usize,
    reached: Option<oneshot::Sender<()>>,
    release: Option<mpsc::Receiver<()>>,
    log: Arc<Mutex<Vec<String>>>,
}

impl Gate {
    fn open(upstream: &str, hold: usize) -> Gate {
        Gate::start(upstream, hold, 0)
    }

    /// A gate that answers the page's `fail_from`-th refresh and the later ones with a 503
    /// of its own, as a service whose store is down would.
    fn failing(upstream: &str, fail_from: usize) -> Gate {
        Gate::start(upstream, 0, fail_from)
    }

    fn start(upstream: &str, hold: usize, fail_from: usize) -> Gate {
        let upstream = upstream.trim_start_matches("http://").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (reached_tx, reached) = oneshot::channel();
        let (release, release_rx) = mpsc::channel();
        let log = Arc::new(Mutex::new(Vec::new()));
        let held = Arc::new(Mutex::new(Held {
            seen: 0,
            hold,
            fail_from,
            reached: Some(reached_tx),
            release: Some(release_rx),
            log: log.clone(),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        thread::spawn(move || {
            for client in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let (Ok(client), Ok(server)) = (client, TcpStream::connect(&upstream)) else {
                    continue;
                };
                let (mut from_server, mut to_client) =
                    (server.try_clone().unwrap(), client.try_clone().unwrap());
                thread::spawn(move || {
                    let _ = io::copy(&mut from_server, &mut to_client);
                    let _ = to_client.shutdown(Shutdown::Write);
                });
                let held = held.clone();
                thread::spawn(move || forward_requests(client, server, &held));
            }
        });
        Gate {
            url,
            reached,
            release,
            stop,
            log,
        }
    }

    /// Every request forwarded so far, as `GET /target`, in arrival order.
    fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.url.trim_start_matches("http://")); // wakes `accept`
    }
}

/// Copies the client's requests to the server, logging each and holding the one the gate
/// waits for. The page only sends GETs, so each request is a head ending in a blank line.
fn forward_requests(mut client: TcpStream, mut server: TcpStream, held: &Mutex<Held>) {
    let mut pending = Vec::new();
    let mut buf = [0; 8192];
    while let Ok(n @ 1..) = client.read(&mut buf) {
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head: Vec<u8> = pending.drain(..end + 4).collect();
            let line = String::from_utf8_lossy(&head);
            let line = line.split(" HTTP/").next().unwrap_or_default().to_owned();
            held.lock().unwrap().log.lock().unwrap().push(line.clone());
            if line.starts_with("GET ") && line.contains("/v1/dashboard?") {
                let wait = {
                    let mut held = held.lock().unwrap();
                    held.seen += 1;
                    if held.fail_from > 0 && held.seen >= held.fail_from {
                        let body = r#"{"error":{"code":"store_unavailable","message":"the store is down"}}"#;
                        let reply = format!(
                            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
                             content-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        drop(held);
                        if client.write_all(reply.as_bytes()).is_err() {
                            return;
                        }
                        continue;
                    }
                    if held.seen == held.hold {
                        let _ = held.reached.take().unwrap().send(());
                        held.release.take()
                    } else {
                        None
                    }
                };
                if let Some(release) = wait {
                    let _ = release.recv();
                }
            }
            if server.write_all(&head).is_err() {
                return;
            }
        }
    }
    let _ = server.shutdown(Shutdown::Write);
}

// ----- reading the dumped DOM ------------------------------------------------------------

/// The text from `start` (included) to the first `end` after it (excluded); panics when
/// either is missing.
fn slice<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text
        .find(start)
        .unwrap_or_else(|| panic!("{start:?} not found in:\n{text}"));
    let len = text[from..]
        .find(end)
        .unwrap_or_else(|| panic!("{end:?} not found after {start:?} in:\n{text}"));
    &text[from..from + len]
}

/// The text of every `start … end` in `text`, in order, with entities decoded.
fn all_between(text: &str, start: &str, end: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(from) = rest.find(start) {
        rest = &rest[from + start.len()..];
        let len = rest.find(end).expect("unterminated element");
        found.push(unescape(&rest[..len]));
        rest = &rest[len..];
    }
    found
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

fn board_section<'a>(dom: &'a str, board: &str) -> &'a str {
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page never finished a refresh:\n{dom}"
    );
    assert!(dom.contains("<h1>rollboard</h1>"), "no title:\n{dom}");
    slice(
        dom,
        &format!("<section class=\"card panel\" data-board=\"{board}\">"),
        "</section>",
    )
}

/// The (rank, member, score) rows of the window's table.
fn top_rows(section: &str, window: &str) -> Vec<[String; 3]> {
    let table = slice(
        section,
        &format!("<table class=\"top\" data-window=\"{window}\">"),
        "</table>",
    );
    let body = slice(table, "<tbody>", "</tbody>");
    all_between(body, "<tr data-member=", "</tr>")
        .iter()
        .map(|row| {
            let cell = |class: &str| {
                let cells = all_between(row, &format!("<td class=\"{class}\">"), "</td>");
                assert_eq!(cells.len(), 1, "one {class} cell in {row}");
                cells[0].clone()
            };
            [cell("rank"), cell("member"), cell("score")]
        })
        .collect()
}

/// The (time, window, member, change, cause) rows of the board's recent changes.
fn change_rows(section: &str) -> Vec<[String; 5]> {
    let table = slice(section, "<table class=\"changes\">", "</table>");
    let body = slice(table, "<tbody>", "</tbody>");
    all_between(body, "<tr data-change=", "</tr>")
        .iter()
        .map(|row| {
            let cell = |class: &str| {
                let cells = all_between(row, &format!("<td class=\"{class}\">"), "</td>");
                assert_eq!(cells.len(), 1, "one {class} cell in {row}");
                cells[0].clone()
            };
            [
                cell("at"),
                cell("window"),
                cell("member"),
                cell("what"),
                cell("cause"),
            ]
        })
        .collect()
}

/// The movement cell of each row of the window's table (`↑3`, `↓1`, `=`, `new`).
fn moves(section: &str, window: &str) -> Vec<String> {
    let table = slice(
        section,
        &format!("<table class=\"top\" data-window=\"{window}\">"),
        "</table>",
    );
    assert!(table.contains("<th class=\"move\">±</th>"), "{table}");
    let body = slice(table, "<tbody>", "</tbody>");
    all_between(body, "<td class=\"move", "</td>")
        .iter()
        .map(|cell| cell[cell.find('>').unwrap() + 1..].to_owned())
        .collect()
}

fn rows(expected: &[(&str, &str, &str)]) -> Vec<[String; 3]> {
    expected
        .iter()
        .map(|(rank, member, score)| [rank.to_string(), member.to_string(), score.to_string()])
        .collect()
}

fn coverage(section: &str, window: &str) -> String {
    let window = slice(
        section,
        &format!("<div class=\"window\" data-window=\"{window}\">"),
        "</table>",
    );
    all_between(window, "<p class=\"coverage\"", "</p>")
        .iter()
        .map(|p| p[p.find('>').unwrap() + 1..].to_owned())
        .next()
        .expect("a coverage line")
}

/// The series the (first) chart's legend names, in order.
fn legend(section: &str) -> Vec<String> {
    let list = slice(section, "<ul class=\"legend\"", "</ul>");
    all_between(list, "<span class=\"name\">", "</span>")
}

/// The time the chart data shows for `slot`.
fn slot_time(section: &str, slot: i64) -> String {
    let row = slice(section, &format!("<tr data-slot=\"{slot}\">"), "</tr>");
    all_between(row, "<td>", "</td>").remove(0)
}

/// The chart data of one slot: each leader's value, in legend order.
fn history_row(section: &str, slot: i64) -> Vec<String> {
    let row = slice(section, &format!("<tr data-slot=\"{slot}\">"), "</tr>");
    all_between(row, "<td class=\"score\">", "</td>")
}

/// The value of attribute `name` in the first tag starting with `tag`.
fn attr(dom: &str, tag: &str, name: &str) -> String {
    let tag = slice(dom, tag, ">");
    let start = format!(" {name}=\"");
    let from = tag
        .find(&start)
        .unwrap_or_else(|| panic!("no {name} in {tag}"))
        + start.len();
    tag[from..from + tag[from..].find('"').unwrap()].to_owned()
}

/// The text (or markup) of the health strip's `field` item.
fn health(dom: &str, field: &str) -> String {
    let strip = slice(dom, "<section id=\"health\"", "</section>");
    all_between(strip, &format!("<li data-field=\"{field}\">"), "</li>")
        .pop()
        .unwrap_or_else(|| panic!("no {field} in the health strip:\n{strip}"))
}

/// The member lookup's rows: window, score, rank, percentile.
fn lookup_rows(lookup: &str) -> Vec<[String; 4]> {
    table_rows(lookup, "lookup")
}

/// The four cells of each row of the member lookup's table of class `class`.
fn table_rows(lookup: &str, class: &str) -> Vec<[String; 4]> {
    let body = slice(
        slice(lookup, &format!("<table class=\"{class}\">"), "</table>"),
        "<tbody>",
        "</tbody>",
    );
    all_between(body, "<tr data-window=", "</tr>")
        .iter()
        .map(|row| {
            let cells: Vec<String> = row
                .split("<td")
                .skip(1)
                .map(|cell| {
                    cell[cell.find('>').unwrap() + 1..cell.find("</td>").unwrap()].to_owned()
                })
                .collect();
            [
                cells[0].clone(),
                cells[1].clone(),
                cells[2].clone(),
                cells[3].clone(),
            ]
        })
        .collect()
}

/// A counter chart's precision, sample count and total.
fn counter_chart(counters: &str, name: &str) -> [String; 3] {
    let card = slice(counters, &format!("data-counter=\"{name}\""), "</details>");
    ["precision", "samples", "total"]
        .map(|field| attr(card, "<div class=\"chart\"", &format!("data-{field}")))
}
