//! The shell examples of the README and of `docs/api.md`, run as written against a live
//! service (the real binary, on the memory store, at a free port instead of 8080), in
//! the order a reader meets them.
//!
//! Every `curl` command of a ```sh block runs through `sh`, so `$(date +%s)` and the
//! like work. A command followed by a comment that starts `# {` or `# [` (and goes on in
//! lines that start `#` and two spaces) shows its answer: the answer must be exactly that
//! text, where each `…` stands for any text. Comments after that (an illustration of a
//! later answer, say) are not compared. A command without a sample must not answer an
//! error body. Other commands (cargo, the CLI, which needs Redis) are not run here.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One `curl` command of a document, and the answer shown after it, if any.
struct Example {
    file: &'static str,
    line: usize,
    command: String,
    sample: Option<String>,
}

/// The `curl` examples of `text`, in order.
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
        if !in_sh || !line.trim_start().starts_with("curl ") {
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

fn serve(port: u16) -> Service {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rollboard"));
    command
        .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for var in [
        "REDIS_URL",
        "REDIS_CLUSTER_URLS",
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

#[test]
fn the_curl_examples_of_the_readme_and_the_api_docs_run_as_written() {
    let port = free_port();
    let _service = serve(port);
    let mut all = examples("README.md", include_str!("../README.md"));
    all.extend(examples("docs/api.md", include_str!("../docs/api.md")));
    assert!(all.len() >= 30, "only {} curl examples found", all.len());
    let compared = all.iter().filter(|e| e.sample.is_some()).count();
    assert!(compared >= 10, "only {compared} sample answers found");

    let mut failures = Vec::new();
    for example in &all {
        let command = example
            .command
            .replace("localhost:8080", &format!("127.0.0.1:{port}"));
        let output = Command::new("sh")
            .args(["-c", &format!("{command} 2>/dev/null")])
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
        "```sh\ncurl a \\\n  -d b\n# {\"x\":1,\n#   \"y\":…}\ncurl c # 204\n```\ncurl d\n",
    );
    let got: Vec<(usize, &str, Option<&str>)> = found
        .iter()
        .map(|e| (e.line, e.command.as_str(), e.sample.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            (2, "curl a   -d b", Some("{\"x\":1,\"y\":…}")),
            (6, "curl c # 204", None)
        ]
    );
}
