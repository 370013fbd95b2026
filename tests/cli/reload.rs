//! `serve` as systemd sees it (`Type=notify`) and on `SIGHUP`: `READY=1` once `/readyz`
//! answers 200, `WATCHDOG=1` while it runs, `RELOADING=1` then `READY=1` around a reload
//! that applies the file's new tokens, access log, staleness bound and log level without
//! dropping a request (and a file that no longer parses changes nothing), `STOPPING=1` on
//! `SIGTERM`.

use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// The next message systemd would get that starts with `wanted` (30 s at most).
fn next_message(socket: &UnixDatagram, wanted: &str) -> String {
    let mut buffer = [0u8; 4096];
    loop {
        let n = socket
            .recv(&mut buffer)
            .expect("a notification within 30 s");
        let message = String::from_utf8_lossy(&buffer[..n]).into_owned();
        if message.starts_with(wanted) {
            return message;
        }
    }
}

/// The next log line (JSON) whose message satisfies `wanted` (30 s at most).
fn next_line(lines: &mpsc::Receiver<String>, mut wanted: impl FnMut(&str) -> bool) -> Value {
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .expect("the awaited log line");
        let value: Value = serde_json::from_str(&line).unwrap();
        if wanted(value["fields"]["message"].as_str().unwrap_or("")) {
            return value;
        }
    }
}

fn write_config(path: &Path, read: &str, write: &str, access_log: bool, staleness_ms: u64) {
    let text = format!(
        "read_token = \"{read}\"\nwrite_token = \"{write}\"\nadmin_token = \"a-1\"\n\
         log_format = \"json\"\naccess_log = {access_log}\nmax_staleness_ms = {staleness_ms}\n"
    );
    std::fs::write(path, text).unwrap();
}

/// The service, killed if the test ends before it stops it.
struct Serve(std::process::Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn serve_tells_systemd_its_state_and_reloads_tokens_on_sighup_dropping_no_request() {
    let dir = tempfile::tempdir().unwrap();
    let socket_path = dir.path().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let config = dir.path().join("rollboard.toml");
    write_config(&config, "r-1", "w-1", false, 0);
    let mut child = Serve(
        Command::new(env!("CARGO_BIN_EXE_rollboard"))
            .args(["serve", "--bind", "127.0.0.1:0", "--config"])
            .arg(&config)
            .env("NOTIFY_SOCKET", &socket_path)
            .env("WATCHDOG_USEC", "200000")
            .env_remove("WATCHDOG_PID")
            .env_remove("REDIS_URL")
            .env_remove("REDIS_CLUSTER_URLS")
            .env_remove("RUST_LOG")
            .env_remove("ROLLBOARD_READ_TOKEN")
            .env_remove("ROLLBOARD_WRITE_TOKEN")
            .env_remove("ROLLBOARD_ADMIN_TOKEN")
            .env_remove("ROLLBOARD_ACCESS_LOG")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = child.0.id();
    let stderr = child.0.stderr.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let listening = next_line(&lines, |m| m.starts_with("listening on http://"));
    let message = listening["fields"]["message"].as_str().unwrap();
    let url = message["listening on ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .to_owned();

    // Ready: /readyz answers 200 by then, and the watchdog is fed.
    assert_eq!(next_message(&socket, "READY=1"), "READY=1\nSTATUS=ready\n");
    let client = reqwest::Client::new();
    let ready = client.get(format!("{url}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    assert_eq!(next_message(&socket, "WATCHDOG=1"), "WATCHDOG=1\n");

    let request = |method: reqwest::Method, path: &str, token: &str, body: Option<Value>| {
        let mut request = client
            .request(method, format!("{url}{path}"))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        async move { request.send().await.unwrap().status().as_u16() }
    };
    let config_body = json!({"slot": "1h", "windows": ["1h"]});
    assert_eq!(
        request(
            reqwest::Method::PUT,
            "/v1/boards/b",
            "a-1",
            Some(config_body)
        )
        .await,
        201
    );
    let event = || Some(json!({"member": "m"}));
    assert_eq!(
        request(reqwest::Method::POST, "/v1/boards/b/events", "w-1", event()).await,
        200
    );
    assert_eq!(
        request(reqwest::Method::GET, "/v1/boards/b/top", "r-1", None).await,
        200
    );
    // The age of a top read's answer: always 0 while max_staleness_ms is 0.
    let age = |token: &'static str| {
        let top = client
            .get(format!("{url}/v1/boards/b/top"))
            .bearer_auth(token)
            .send();
        async move {
            top.await.unwrap().json::<Value>().await.unwrap()["age_ms"]
                .as_u64()
                .unwrap()
        }
    };
    age("r-1").await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(age("r-1").await, 0);

    // Reads with the token a reload keeps, all through the reload: none may fail.
    let reading = Arc::new(AtomicBool::new(true));
    let reader = {
        let (client, url, reading) = (client.clone(), url.clone(), reading.clone());
        tokio::spawn(async move {
            let mut statuses = Vec::new();
            while reading.load(Ordering::Relaxed) {
                let reply = client
                    .get(format!("{url}/v1/boards/b/top"))
                    .bearer_auth("a-1")
                    .send()
                    .await;
                statuses.push(
                    reply
                        .map(|r| r.status().as_u16())
                        .map_err(|e| e.to_string()),
                );
            }
            statuses
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    write_config(&config, "r-2", "w-2", true, 60_000);
    signal(pid, "HUP");
    let reloading = next_message(&socket, "RELOADING=1");
    assert!(
        reloading.starts_with("RELOADING=1\nMONOTONIC_USEC="),
        "{reloading}"
    );
    assert_eq!(next_message(&socket, "READY=1"), "READY=1\n");
    let reloaded = next_line(&lines, |m| m.starts_with("reloaded:"));
    assert_eq!(reloaded["fields"]["access_log"], true);
    tokio::time::sleep(Duration::from_millis(100)).await;
    reading.store(false, Ordering::Relaxed);
    let statuses = reader.await.unwrap();
    assert!(statuses.len() > 10, "only {} reads", statuses.len());
    assert!(statuses.iter().all(|s| s == &Ok(200)), "{statuses:?}");

    // The new tokens count, the old ones no longer; the access log is on.
    assert_eq!(
        request(reqwest::Method::GET, "/v1/boards/b/top", "r-1", None).await,
        401
    );
    assert_eq!(
        request(reqwest::Method::GET, "/v1/boards/b/top", "r-2", None).await,
        200
    );
    let access = next_line(&lines, |m| m == "request");
    assert_eq!(access["fields"]["route"], "/v1/boards/{board}/top");
    // max_staleness_ms is a minute now: a read 50 ms after another is the cached answer.
    age("r-2").await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(age("r-2").await >= 50);
    assert_eq!(
        request(reqwest::Method::POST, "/v1/boards/b/events", "w-1", event()).await,
        401
    );
    assert_eq!(
        request(reqwest::Method::POST, "/v1/boards/b/events", "w-2", event()).await,
        200
    );

    // A file that no longer parses: nothing changes, and a WARN line says so.
    let good = std::fs::read_to_string(&config).unwrap();
    let refuse = || {
        std::fs::write(&config, "read_token = \n").unwrap();
        signal(pid, "HUP");
        assert_eq!(next_message(&socket, "READY=1"), "READY=1\n");
        let mut seen = Vec::new();
        let refused = next_line(&lines, |m| {
            seen.push(m.to_owned());
            m.starts_with("reload refused")
        });
        assert_eq!(refused["level"], "WARN");
        seen
    };
    refuse();

    // log_level "warn": no INFO line after it (no access line, no `reloaded:`) until
    // the WARN of the next refused reload.
    std::fs::write(&config, format!("{good}log_level = \"warn\"\n")).unwrap();
    signal(pid, "HUP");
    assert_eq!(next_message(&socket, "READY=1"), "READY=1\n");
    let top = request(reqwest::Method::GET, "/v1/boards/b/top", "r-2", None).await;
    assert_eq!(top, 200);
    let seen = refuse();
    assert_eq!(seen.len(), 1, "INFO lines at log_level warn: {seen:?}");
    // The refused reloads left the tokens as they were.
    let top = request(reqwest::Method::GET, "/v1/boards/b/top", "r-2", None).await;
    assert_eq!(top, 200);

    // A default board: before the reload, an event to an unknown board is refused;
    // after it, the event creates the board.
    let fresh = "/v1/boards/fresh/events";
    assert_eq!(
        request(reqwest::Method::POST, fresh, "w-2", event()).await,
        404
    );
    let default = "[default_board]\nslot = \"1h\"\nwindows = [\"1h\"]\n";
    std::fs::write(&config, format!("{good}{default}")).unwrap();
    signal(pid, "HUP");
    assert_eq!(next_message(&socket, "READY=1"), "READY=1\n");
    assert_eq!(
        request(reqwest::Method::POST, fresh, "w-2", event()).await,
        200
    );
    let board = request(reqwest::Method::GET, "/v1/boards/fresh", "r-2", None).await;
    assert_eq!(board, 200);

    signal(pid, "TERM");
    assert_eq!(next_message(&socket, "STOPPING=1"), "STOPPING=1\n");
    assert!(child.0.wait().unwrap().success());
}
