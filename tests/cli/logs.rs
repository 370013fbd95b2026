//! `serve`'s logs: JSON lines with the start-up, access and stop lines.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// The next JSON line of `lines` whose message satisfies `wanted` (30 s at most).
fn next_line(lines: &mpsc::Receiver<String>, wanted: impl Fn(&Value) -> bool) -> Value {
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .expect("the awaited log line");
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("a log line that is not JSON ({e}): {line}"));
        if wanted(&value) {
            return value;
        }
    }
}

fn message(v: &Value) -> &str {
    v["fields"]["message"].as_str().unwrap_or("")
}

#[tokio::test]
async fn serve_logs_json_lines_with_start_access_and_stop() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rollboard"))
        .args(["serve", "--bind", "127.0.0.1:0", "--log-format", "json"])
        .env("ROLLBOARD_ACCESS_LOG", "true")
        .env("ROLLBOARD_WRITE_TOKEN", "secret-write-token")
        .env_remove("REDIS_URL")
        .env_remove("REDIS_CLUSTER_URLS")
        .env_remove("RUST_LOG")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, lines) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });

    let start = next_line(&lines, |v| message(v) == "rollboard starting");
    assert_eq!(start["level"], "INFO");
    let fields = &start["fields"];
    assert_eq!(fields["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(fields["config"], "none");
    assert_eq!(fields["write_token"], "on");
    assert_eq!(fields["admin_token"], "off");
    assert_eq!(fields["boards_declared"], 0);
    assert_eq!(fields["default_board"], "off");
    assert!(!start.to_string().contains("secret-write-token"));

    let listening = next_line(&lines, |v| message(v).starts_with("listening on http://"));
    let address = message(&listening)["listening on ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .to_owned();
    let reply = reqwest::get(format!("{address}/v1/boards/no-such-board/top"))
        .await
        .unwrap();
    assert_eq!(reply.status(), reqwest::StatusCode::NOT_FOUND);

    let access = next_line(&lines, |v| v["target"] == "rollboard::access");
    assert_eq!(access["level"], "INFO");
    let fields = &access["fields"];
    assert_eq!(fields["method"], "GET");
    assert_eq!(fields["route"], "/v1/boards/{board}/top");
    assert_eq!(fields["status"], 404);
    assert!(fields["duration_ms"].as_f64().unwrap() >= 0.0, "{access}");

    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    next_line(&lines, |v| message(v) == "stopped");
    assert!(child.wait().unwrap().success());
    drop(lines);
    reader.join().unwrap();
}
