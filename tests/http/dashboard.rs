//! The dashboard at `/`, rendered by headless Chromium (Debian's `chromium` package):
//! what it shows for a board with a known ranking, that it refreshes by itself, that member
//! names stay text, that it says when there are no boards and that it works under a prefix.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use rollboard::http::{HttpOptions, router};
use rollboard::{BoardConfig, MemoryStore, Rollboard};
use serde_json::json;
use tokio::sync::oneshot;

use crate::support::{START, spawn_app, unique};

/// Chromium runs the page's timers on virtual time (paused while fetches are pending)
/// for this long before it dumps the DOM: several of the page's 2 s refreshes.
const VIRTUAL_TIME_MS: u32 = 10_000;
/// Longest a Chromium run may take in real time.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(90);

#[tokio::test]
async fn the_dashboard_shows_each_window_top_and_the_leaders_history() {
    let app = spawn_app().await;
    let board = app.board("1h", &["1h", "24h"]).await;
    app.at(1800);
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

    let dom = render(&format!("{}/", app.url)).await;
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

    // The chart: a canvas, the first window's three leaders, and their per-slot history
    // zero-filled over the largest window (24 one-hour slots).
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

    // The page refreshes by itself: in one session, events posted after its first
    // render show once it has refreshed. The gate holds the page's second refresh until
    // the events are in.
    let mut gate = Gate::open(&app.url, 2);
    let url = format!("{}/", gate.url);
    let mut browser = tokio::task::spawn_blocking(move || dump_dom(&url));
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
}

#[tokio::test]
async fn member_names_are_shown_as_text_and_their_history_is_found() {
    let app = spawn_app().await;
    let board = app.board("1h", &["1h"]).await;
    let hostile = "<img src=x onerror=alert(1)>&\"q\" /?#%ü";
    let reply = app
        .post(
            &format!("/v1/boards/{board}/events"),
            json!({"events": [{"member": hostile, "delta": 7, "at": START}]}),
        )
        .await;
    assert_eq!(reply.body, json!({"accepted": 1, "rejected": []}));

    let dom = render(&format!("{}/", app.url)).await;
    let section = board_section(&dom, &board);
    assert!(
        !dom.contains("<img"),
        "a member name became markup:\n{section}"
    );
    assert_eq!(top_rows(section, "1h"), rows(&[("1", hostile, "7")]));
    assert_eq!(legend(section), [hostile]);
    assert_eq!(history_row(section, START), ["7"]);
}

#[tokio::test]
async fn a_board_with_snapshots_shows_each_leaders_move_since_the_newest_one() {
    let app = spawn_app().await;
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

    let dom = render(&format!("{}/", app.url)).await;
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
}

#[tokio::test]
async fn a_trending_board_shows_its_top_by_decayed_score_beside_a_windowed_one() {
    let app = spawn_app().await;
    let windowed = app.board("1h", &["1h"]).await;
    let trending = unique("tr");
    let put = app
        .put(
            &format!("/v1/boards/{trending}"),
            json!({"kind": "trending", "half_life": "1h"}),
        )
        .await;
    assert_eq!(put.status.as_u16(), 201, "{:?}", put.body);
    // At START: alice's 3 now, bob's 5 an hour ago (one half-life: 2.5), carol's 1 two
    // hours ago (0.25).
    let reply = app
        .post(
            &format!("/v1/boards/{trending}/events"),
            events(&[
                ("alice", 3, START),
                ("bob", 5, START - 3600),
                ("carol", 1, START - 7200),
            ]),
        )
        .await;
    assert_eq!(reply.body, json!({"accepted": 3, "rejected": []}));
    let reply = app
        .post(
            &format!("/v1/boards/{windowed}/events"),
            events(&[("post:a", 4, START)]),
        )
        .await;
    assert_eq!(reply.body, json!({"accepted": 1, "rejected": []}));

    let dom = render(&format!("{}/", app.url)).await;
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
    // The windowed board beside it renders as before.
    let section = board_section(&dom, &windowed);
    assert_eq!(top_rows(section, "1h"), rows(&[("1", "post:a", "4")]));
}

#[tokio::test]
async fn without_boards_the_dashboard_says_so() {
    let app = spawn_app().await;
    let dom = render(&format!("{}/", app.url)).await;
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page never finished a refresh:\n{dom}"
    );
    assert!(
        dom.contains("<main id=\"boards\"><p class=\"empty\">No boards yet.</p></main>"),
        "{dom}"
    );
}

#[tokio::test]
async fn under_a_prefix_the_dashboard_reads_the_api_next_to_it() {
    let boards = Rollboard::new(Arc::new(MemoryStore::new()));
    let app = axum::Router::new().nest("/rank", router(boards.clone(), HttpOptions::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let config = BoardConfig::parse("1h", &["1h"]).unwrap();
    boards.create_board("hot", config).await.unwrap();
    boards.incr("hot", "post:1", 2, None).await.unwrap();

    let dom = render(&format!("{url}/rank")).await;
    let section = board_section(&dom, "hot");
    assert_eq!(top_rows(section, "1h"), rows(&[("1", "post:1", "2")]));
    assert_eq!(legend(section), ["post:1"]);
}

#[tokio::test]
async fn the_dashboard_charts_each_counter_precision_and_lists_the_slowest_routes() {
    let app = spawn_app().await;
    let c = unique("hits");
    let path = format!("/v1/counters/{c}");
    for (count, at) in [(2, START - 2), (3, START)] {
        let reply = app.post(&path, json!({"count": count, "at": at})).await;
        assert_eq!(reply.status, reqwest::StatusCode::OK);
    }
    // The service records its own routes in the background: wait for this one.
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

    let dom = render(&format!("{}/", app.url)).await;
    assert!(
        dom.contains("data-extras=\"1\""),
        "no counters refresh:\n{dom}"
    );
    let counter = slice(
        &dom,
        &format!("<div class=\"counter\" data-counter=\"{c}\">"),
        "</h3>",
    );
    assert!(counter.contains(&format!("<h3>{c}")), "{counter}");
    for (precision, samples) in [("1s", 3), ("5s", 2), ("1m", 2), ("1h", 2), ("1d", 1)] {
        let chart = slice(
            &dom[dom.find(&format!("data-counter=\"{c}\"")).unwrap()..],
            &format!("data-precision=\"{precision}\""),
            ">",
        );
        assert!(
            chart.contains(&format!("data-samples=\"{samples}\""))
                && chart.contains("data-total=\"5\""),
            "{precision}: {chart}"
        );
    }
    let stats = slice(&dom, "<section id=\"stats\"", "</section>");
    assert!(
        stats.contains("<tr data-context=\"/v1/counters/{name}\">"),
        "slowest routes:\n{stats}"
    );
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
    let url = url.to_owned();
    tokio::task::spawn_blocking(move || dump_dom(&url))
        .await
        .unwrap()
}

/// Runs headless Chromium on `url` and returns the DOM it ends with (blocking).
fn dump_dom(url: &str) -> String {
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
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--virtual-time-budget={VIRTUAL_TIME_MS}"))
        .arg("--dump-dom")
        .arg(url)
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
    let dom = std::fs::read_to_string(&stdout).unwrap_or_default();
    let log = std::fs::read_to_string(&stderr).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&profile);
    match status {
        Some(status) if status.success() => dom,
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

/// A TCP proxy in front of the service that holds the page's `hold`-th request for the
/// board list (`GET /v1/boards`, which starts each refresh) until `release` is sent:
/// the test can change the data between two refreshes of one page. Chromium's virtual
/// time stands still while a fetch is pending, so the page waits too.
struct Gate {
    url: String,
    /// Fires when the held request arrives.
    reached: oneshot::Receiver<()>,
    release: mpsc::Sender<()>,
    stop: Arc<AtomicBool>,
}

struct Held {
    seen: usize,
    hold: usize,
    reached: Option<oneshot::Sender<()>>,
    release: Option<mpsc::Receiver<()>>,
}

impl Gate {
    fn open(upstream: &str, hold: usize) -> Gate {
        let upstream = upstream.trim_start_matches("http://").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (reached_tx, reached) = oneshot::channel();
        let (release, release_rx) = mpsc::channel();
        let held = Arc::new(Mutex::new(Held {
            seen: 0,
            hold,
            reached: Some(reached_tx),
            release: Some(release_rx),
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
        }
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.url.trim_start_matches("http://")); // wakes `accept`
    }
}

/// Copies the client's requests to the server, holding the one the gate waits for. The
/// page only sends GETs, so each request is a head ending in a blank line.
fn forward_requests(mut client: TcpStream, mut server: TcpStream, held: &Mutex<Held>) {
    let mut pending = Vec::new();
    let mut buf = [0; 8192];
    while let Ok(n @ 1..) = client.read(&mut buf) {
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head: Vec<u8> = pending.drain(..end + 4).collect();
            if head.starts_with(b"GET /v1/boards HTTP/") {
                let wait = {
                    let mut held = held.lock().unwrap();
                    held.seen += 1;
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
        &format!("<section class=\"board\" data-board=\"{board}\">"),
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

/// The members the chart's legend names, in order.
fn legend(section: &str) -> Vec<String> {
    let list = slice(section, "<ul class=\"legend\"", "</ul>");
    all_between(list, "</span>", "</li>")
}

/// The chart data of one slot: each leader's value, in legend order.
fn history_row(section: &str, slot: i64) -> Vec<String> {
    let row = slice(section, &format!("<tr data-slot=\"{slot}\">"), "</tr>");
    all_between(row, "<td class=\"score\">", "</td>")
}
