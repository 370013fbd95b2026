//! The peer phase: rollboard beside the Node service a forum team would otherwise write
//! (`benches/peer/server.js`: redis-rank's `LeaderboardMatrix` behind fastify, one
//! worker per core), on the same Redis and the same routes. Both boards are filled with
//! the same 100,000 members (skewed totals); then, in alternating rounds of
//! `wrk -t2 -c64` (each run `BENCH_SECONDS` long, at least 6 s), each route on each
//! service: exact top-10 reads of the 24 h window, single likes to uniformly random
//! members, a random member's score and rank, and the page around a random member. Each
//! figure is the median of the rounds, beside the peer's and beside
//! `ZREVRANGE key 0 9 WITHSCORES` on the board's 24 h totals (`redis-benchmark -c 64`),
//! measured in the same run; and the CPU each of our top-10 reads and likes costs the
//! service (its threads' `/proc` times) and Redis (`INFO cpu`, main thread). Skipped,
//! saying why, without `node`, `npm` or `wrk`; installs the peer's locked dependencies
//! (`npm ci`) when they are missing.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rollboard::{BoardConfig, Event, Rollboard};

use crate::report::{Row, rate, thousands};
use crate::setup::Redis;

const BOARD: &str = "bench-peer";
const MEMBERS: usize = 100_000;
const ROUNDS: usize = 3;
const PEER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/peer");

/// One route timed on both services: its path (`{m}` a random member), the method and
/// body (`{m}` too), and the target ratio against the peer.
struct Route {
    name: &'static str,
    method: &'static str,
    path: &'static str,
    body: &'static str,
    target: f64,
}

const ROUTES: [Route; 4] = [
    Route {
        name: "exact top-10 reads (24h)",
        method: "GET",
        path: "/v1/boards/bench-peer/top?window=24h&limit=10",
        body: "",
        target: 1.5,
    },
    Route {
        name: "single likes",
        method: "POST",
        path: "/v1/boards/bench-peer/events",
        body: r#"{"member":"post:{m}"}"#,
        target: 2.5,
    },
    Route {
        name: "member score and rank (24h)",
        method: "GET",
        path: "/v1/boards/bench-peer/members/post:{m}?window=24h",
        body: "",
        target: 1.5,
    },
    Route {
        name: "around a member, n=5 (24h)",
        method: "GET",
        path: "/v1/boards/bench-peer/members/post:{m}/around?n=5&window=24h",
        body: "",
        target: 1.5,
    },
];

/// Runs the phase against the service at `url`: each `wrk` run lasts `phase`, at least
/// 6 s.
pub async fn peer(redis: &Redis, url: &str, phase: Duration) -> Vec<Row> {
    let phase = phase.max(Duration::from_secs(6));
    if let Some(missing) = ["node", "npm", "wrk"].into_iter().find(|t| !on_path(t)) {
        eprintln!("  skipped: `{missing}` is not installed");
        return Vec::new();
    }
    let peer = PeerService::start(redis);
    eprintln!("  writing {} members to both …", thousands(MEMBERS as f64));
    fill(redis, &peer.url).await;

    eprintln!("  ZREVRANGE ceiling …");
    let key = format!("stats_{{{BOARD}}}_86400");
    let requests = (80_000 * phase.as_secs().max(1)).to_string();
    let ceiling = crate::setup::redis_benchmark(
        redis,
        &["-c", "64", "-P", "1", "-n", &requests],
        &["ZREVRANGE", &key, "0", "9", "WITHSCORES"],
    );

    let mut ours = vec![Vec::new(); ROUTES.len()];
    let mut theirs = vec![Vec::new(); ROUTES.len()];
    // CPU µs per request of ours: the service's, Redis's main thread's.
    let mut costs = vec![(Vec::new(), Vec::new()); ROUTES.len()];
    for round in 0..ROUNDS {
        eprintln!("  round {} of {ROUNDS} …", round + 1);
        for (r, route) in ROUTES.iter().enumerate() {
            // Alternate which service goes first, round by round.
            let mut mine = || {
                let before = cpu(redis);
                let (rps, requests) = wrk(url, route, phase);
                let after = cpu(redis);
                costs[r].0.push((after.0 - before.0) / requests * 1e6);
                costs[r].1.push((after.1 - before.1) / requests * 1e6);
                rps
            };
            let (mine, peers) = if round % 2 == 0 {
                (mine(), wrk(&peer.url, route, phase).0)
            } else {
                let peers = wrk(&peer.url, route, phase).0;
                (mine(), peers)
            };
            ours[r].push(mine);
            theirs[r].push(peers);
        }
    }

    let mut rows = Vec::new();
    for (r, route) in ROUTES.iter().enumerate() {
        let (mine, peers) = (median(&mut ours[r]), median(&mut theirs[r]));
        let ratio = mine / peers;
        rows.push(Row {
            figure: format!(
                "{}, 100k-member board, wrk -c64, vs the Node peer",
                route.name
            ),
            measured: rate(mine, "req/s"),
            reference: format!("Node peer {}", rate(peers, "req/s")),
            ratio: Some(ratio),
            target: Some((format!("≥ {}x", route.target), ratio >= route.target)),
        });
    }
    for (r, redis_target) in [(0, Some(10.0)), (1, None)] {
        let service = median(&mut costs[r].0);
        let at_redis = median(&mut costs[r].1);
        rows.push(Row {
            figure: format!("{}: CPU per request, service (Redis)", ROUTES[r].name),
            measured: format!("{service:.1} µs ({at_redis:.1} µs)"),
            reference: "/proc, INFO cpu".into(),
            ratio: None,
            target: Some((
                match redis_target {
                    Some(t) => format!("≤ 20 µs (≤ {t} µs)"),
                    None => "≤ 20 µs".into(),
                },
                service <= 20.0 && redis_target.is_none_or(|t| at_redis <= t),
            )),
        });
    }
    let top = median(&mut ours[0]);
    let ratio = top / ceiling;
    rows.push(Row {
        figure: "exact top-10 reads (24h), wrk -c64, vs ZREVRANGE".into(),
        measured: rate(top, "req/s"),
        reference: format!("ZREVRANGE 0 9 WITHSCORES {}", rate(ceiling, "/s")),
        ratio: Some(ratio),
        target: Some(("≥ 0.5x".into(), ratio >= 0.5)),
    });
    rows
}

/// The Node peer, on a free port of its own, on the benchmark's Redis; its process
/// group (the primary and its workers) is ended when dropped.
struct PeerService {
    url: String,
    process: Child,
}

impl PeerService {
    fn start(redis: &Redis) -> PeerService {
        if !Path::new(PEER).join("node_modules").exists() {
            let installed = Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--silent"])
                .current_dir(PEER)
                .status()
                .expect("npm runs");
            assert!(installed.success(), "npm ci in {PEER} failed");
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let process = std::os::unix::process::CommandExt::process_group(
            Command::new("node")
                .arg("server.js")
                .current_dir(PEER)
                .env("PEER_PORT", port.to_string())
                .env("REDIS_URL", &redis.url)
                .stdout(Stdio::null()),
            0,
        )
        .spawn()
        .expect("node runs");
        let peer = PeerService {
            url: format!("http://127.0.0.1:{port}"),
            process,
        };
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return peer;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the Node peer did not listen on {port} within 10 s");
    }
}

impl Drop for PeerService {
    fn drop(&mut self) {
        let group = format!("-{}", self.process.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        let _ = self.process.wait();
    }
}

/// The same members and totals on both boards: member `post:i` gets
/// `1 + 100,000 / (i + 1)` likes (a few posts hold most of them).
async fn fill(redis: &Redis, peer: &str) {
    let boards = Rollboard::new(crate::setup::store(&redis.url).await);
    boards
        .create(BOARD, BoardConfig::parse("1h", &["1h", "24h"]).unwrap())
        .await
        .unwrap();
    let events: Vec<Event> = (0..MEMBERS)
        .map(|i| Event::new(format!("post:{i}"), 1 + (MEMBERS / (i + 1)) as i64))
        .collect();
    let http = reqwest::Client::new();
    for batch in events.chunks(10_000) {
        boards.windowed(BOARD).incr_batch(batch).await.unwrap();
        let body: Vec<_> = batch
            .iter()
            .map(|e| serde_json::json!({"member": e.member, "delta": e.delta}))
            .collect();
        let answer = http
            .post(format!("{peer}/v1/boards/{BOARD}/events"))
            .json(&serde_json::json!({ "events": body }))
            .send()
            .await
            .unwrap();
        assert!(answer.status().is_success(), "the peer's fill: {answer:?}");
    }
}

/// CPU seconds so far of the service (the threads of this process named `service`,
/// `setup::start_service`) and of Redis's main thread (`INFO cpu`).
fn cpu(redis: &Redis) -> (f64, f64) {
    let mut service = 0.0;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // `tid (name) state …`: utime and stime are the 12th and 13th fields after the
        // name, in ticks of 1/100 s (USER_HZ).
        let Some((head, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        if head.ends_with("(service") {
            let ticks: f64 = rest
                .split(' ')
                .skip(11)
                .take(2)
                .filter_map(|t| t.parse::<f64>().ok())
                .sum();
            service += ticks / 100.0;
        }
    }
    let mut conn = redis::Client::open(redis.url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let info: String = redis::cmd("INFO").arg("cpu").query(&mut conn).unwrap();
    let main_thread: f64 = info
        .lines()
        .filter(|l| l.contains("_main_thread:"))
        .filter_map(|l| l.split(':').nth(1)?.trim().parse::<f64>().ok())
        .sum();
    (service, main_thread)
}

/// `wrk -t2 -c64` on `route` of the service at `url` for `phase`: requests/s and the
/// requests made (every answer a 2xx, or the run fails).
fn wrk(url: &str, route: &Route, phase: Duration) -> (f64, f64) {
    let script = std::env::temp_dir().join(format!("rollboard-peer-{}.lua", std::process::id()));
    let path = route.path.replace("{m}", "' .. m .. '");
    let body = match route.body {
        "" => "nil".to_owned(),
        body => format!("'{}'", body.replace("{m}", "' .. m .. '")),
    };
    let lua = format!(
        "wrk.method = '{}'\nwrk.headers['Content-Type'] = 'application/json'\n\
         request = function()\n  local m = math.random(0, {})\n  \
         return wrk.format(nil, '{path}', nil, {body})\nend\n",
        route.method,
        MEMBERS - 1,
    );
    std::fs::write(&script, lua).unwrap();
    let out = Command::new("wrk")
        .args(["-t2", "-c64", &format!("-d{}s", phase.as_secs().max(1))])
        .arg("-s")
        .arg(&script)
        .arg(url)
        .output()
        .expect("wrk runs");
    let _ = std::fs::remove_file(&script);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "wrk on {url}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !text.contains("Non-2xx"),
        "wrk on {url}{}: {text}",
        route.path
    );
    let rps = text
        .lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok());
    let requests = text
        .lines()
        .find_map(|l| l.trim().split_once(" requests in "))
        .and_then(|(n, _)| n.parse().ok());
    match (rps, requests) {
        (Some(rps), Some(requests)) => (rps, requests),
        _ => panic!("no Requests/sec or requests in wrk's output: {text}"),
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn on_path(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
