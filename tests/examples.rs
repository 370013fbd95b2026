//! The shell examples of the README, `docs/api.md` and `docs/howto.md`, run as written
//! against a live service (the real binary at a free port instead of 8080, on a
//! redis-server of the test's own), in the order a reader meets them, in a scratch
//! directory.
//!
//! Every command of a ```sh block runs through `sh`, so `$(date +%s)` and the like
//! work, with `rollboard` on `PATH` and `REDIS_URL` naming the test's Redis (an `export
//! REDIS_URL=…` line stands for that). Not run: `cargo …` (building and serving, which the
//! test does itself), `./scripts/test` and `export` lines. A command followed by a comment that starts `# {` or `# [` (and goes on in
//! lines that start `#` and two spaces) shows its answer: the answer must be exactly that
//! text, where each `…` stands for any text. Comments after that (an illustration of a
//! later answer, say) are not compared. A command without a sample must not answer an
//! error body, and every command must exit 0.

#[path = "common/redis.rs"]
mod test_redis;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use test_redis::TestRedis;

/// One command of a document, and the answer shown after it, if any.
struct Example {
    file: &'static str,
    line: usize,
    command: String,
    sample: Option<String>,
}

/// The commands of the ```sh blocks of `text`, in order, but those [`not_run`].
fn examples(file: &'static str, text: &str) -> Vec<Example> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut in_sh = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with("```") {
            in_sh = !in_sh && line.trim() == "```sh";
            i += 1;
            continue;
        }
        let trimmed = line.trim_start();
        if !in_sh || trimmed.is_empty() || trimmed.starts_with('#') || not_run(trimmed) {
            i += 1;
            continue;
        }
        let start = i;
        let mut command = String::new();
        while i < lines.len() {
            let part = lines[i];
            i += 1;
            match part.strip_suffix('\\') {
                Some(head) => command.push_str(head),
                None => {
                    command.push_str(part);
                    break;
                }
            }
        }
        let mut sample = None;
        if let Some(first) = lines
            .get(i)
            .and_then(|l| l.strip_prefix("# "))
            .filter(|l| l.starts_with('{') || l.starts_with('['))
        {
            let mut text = first.to_owned();
            i += 1;
            while let Some(more) = lines
                .get(i)
                .and_then(|l| l.strip_prefix('#'))
                .filter(|l| l.starts_with("  ") && !l.trim().is_empty())
            {
                text.push_str(more.trim());
                i += 1;
            }
            sample = Some(text);
        }
        found.push(Example {
            file,
            line: start + 1,
            command,
            sample,
        });
    }
    found
}

/// Commands the test does not run: it builds and serves itself, and `export` lines set
/// what it sets.
fn not_run(command: &str) -> bool {
    ["cargo ", "./scripts/test", "export "]
        .iter()
        .any(|skip| command.starts_with(skip))
        || command.contains(" cargo run")
}

/// Whether `answer` is `sample` with each `…` standing for any text.
fn matches(sample: &str, answer: &str) -> bool {
    let parts: Vec<&str> = sample.split('…').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if parts.len() == 1 {
        return answer == sample;
    }
    if !answer.starts_with(first) || !answer[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &answer[first.len()..answer.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// The service, killed when dropped.
struct Service(Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(port: u16, redis_url: &str) -> Service {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rollboard"));
    command
        .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
        .env("REDIS_URL", redis_url)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for var in [
        "REDIS_CLUSTER_URLS",
        "ROLLBOARD_STORE",
        "ROLLBOARD_BIND",
        "ROLLBOARD_WRITE_TOKEN",
        "ROLLBOARD_ADMIN_TOKEN",
        "ROLLBOARD_CONFIG",
    ] {
        command.env_remove(var);
    }
    let service = Service(command.spawn().expect("start rollboard serve"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "rollboard serve did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    service
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn the_shell_examples_of_the_readme_and_the_api_docs_run_as_written() {
    let redis = TestRedis::spawn().await;
    let port = free_port();
    let _service = serve(port, &redis.url);
    let scratch = std::env::temp_dir().join(test_redis::unique("rollboard-examples-"));
    std::fs::create_dir_all(&scratch).unwrap();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_rollboard"))
        .parent()
        .unwrap()
        .to_owned();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut all = examples("README.md", include_str!("../README.md"));
    all.extend(examples("docs/api.md", include_str!("../docs/api.md")));
    all.extend(examples("docs/howto.md", include_str!("../docs/howto.md")));
    assert!(all.len() >= 40, "only {} examples found", all.len());
    let compared = all.iter().filter(|e| e.sample.is_some()).count();
    assert!(compared >= 10, "only {compared} sample answers found");

    let mut failures = Vec::new();
    for example in &all {
        let command = example
            .command
            .replace("localhost:8080", &format!("127.0.0.1:{port}"));
        let output = Command::new("sh")
            .args(["-c", &format!("{command} 2>/dev/null")])
            .current_dir(&scratch)
            .env("PATH", &path)
            .env("REDIS_URL", &redis.url)
            .env_remove("REDIS_CLUSTER_URLS")
            .env_remove("ROLLBOARD_STORE")
            .output()
            .expect("run sh");
        let answer = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        let ok = output.status.success()
            && match &example.sample {
                Some(sample) => matches(sample, &answer),
                None => !answer.starts_with("{\"error\""),
            };
        if !ok {
            failures.push(format!(
                "{}:{}: {}\n  shown:  {}\n  answer: {answer}",
                example.file,
                example.line,
                example.command.trim(),
                example.sample.as_deref().unwrap_or("(no error)"),
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_sample_matches_with_each_ellipsis_standing_for_any_text() {
    assert!(matches(r#"{"a":…,"b":[…]}"#, r#"{"a":17,"b":[1,2]}"#));
    assert!(matches(r#"{"a":1}"#, r#"{"a":1}"#));
    assert!(!matches(r#"{"a":1}"#, r#"{"a":2}"#));
    assert!(!matches(r#"{"a":…,"b":3}"#, r#"{"a":1,"b":4}"#));
    assert!(!matches(r#"{"a":…,"c":…}"#, r#"{"a":1,"b":2}"#));
    let found = examples(
        "x",
        "```sh\ncurl a \\\n  -d b\n# {\"x\":1,\n#   \"y\":…}\ncurl c # 204\ncargo run\nrollboard x\n```\ncurl d\n",
    );
    let got: Vec<(usize, &str, Option<&str>)> = found
        .iter()
        .map(|e| (e.line, e.command.as_str(), e.sample.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            (2, "curl a   -d b", Some("{\"x\":1,\"y\":…}")),
            (6, "curl c # 204", None),
            (8, "rollboard x", None)
        ]
    );
}
