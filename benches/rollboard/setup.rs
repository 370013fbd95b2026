//! What the benchmark runs against: its own `redis-server`, the ceilings measured with
//! `redis-benchmark` on it, and the real service on a free port.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use rollboard::service::{self, ServiceConfig};
use rollboard::{Layout, RedisOptions, RedisStore, Rollboard, Settings, SystemClock};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

/// A `redis-server` of the benchmark's own, killed when dropped; its main thread pinned
/// to CPU 0 when
/// `taskset` exists (see `start_redis`), for the ceiling and for every phase alike.
pub struct Redis {
    pub url: String,
    pub port: u16,
    pub pinned: bool,
    process: std::process::Child,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// While alive, keeps every thread of this process off Redis's CPU (CPU 0), when Redis
/// is pinned: for a phase whose figure is the length of Redis's calls, so that the load
/// this process generates does not preempt Redis on its core (a preempted call shows up
/// as one scheduler tick, ~4 ms, in `SLOWLOG`). Dropping it lets the process use every
/// CPU again.
pub struct OffRedisCpu(bool);

impl Redis {
    pub fn keep_off_its_cpu(&self) -> OffRedisCpu {
        OffRedisCpu(self.pinned && set_own_cpus("1-1023"))
    }
}

impl Drop for OffRedisCpu {
    fn drop(&mut self) {
        if self.0 {
            set_own_cpus("0-1023");
        }
    }
}

fn set_own_cpus(list: &str) -> bool {
    Command::new("taskset")
        .args(["-a", "-p", "-c", list, &std::process::id().to_string()])
        .output()
        .is_ok_and(|out| out.status.success())
}

/// A `redis-server` of the benchmark's own named `name`, not started yet: a free port on
/// 127.0.0.1, a directory of its own (its files and log), no persistence. Its port too.
pub fn redis_server(name: &str) -> (Command, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = std::env::temp_dir().join(format!("rollboard-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut command = Command::new("redis-server");
    command
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(&dir)
        .arg("--logfile")
        .arg(dir.join("redis.log"));
    (command, port)
}

pub fn start_redis() -> Redis {
    let (mut command, port) = redis_server("bench");
    // Redis's main thread runs on CPU 0 at normal priority; this process (service and
    // load, and the redis-benchmark it starts) drops to nice 10 and may use every CPU. So
    // Redis gets its core whenever it is busy, as on a host of its own, and lends it out
    // when idle.
    // Threads inherit the nice value, and no runtime has started yet.
    let pinned = Command::new("taskset").arg("--version").output().is_ok()
        && std::thread::available_parallelism()
            .map(|n| n.get() >= 2)
            .unwrap_or(false);
    let process = command
        .spawn()
        .expect("redis-server (Debian package redis-server) must be installed");
    if pinned {
        let _ = Command::new("renice")
            .args(["-n", "10", "-p", &std::process::id().to_string()])
            .output();
    }
    // Owned from here on: dropping it (on any path) kills and reaps the server.
    let redis = Redis {
        url: format!("redis://127.0.0.1:{port}/"),
        port,
        pinned,
        process,
    };
    let client = redis::Client::open(redis.url.as_str()).unwrap();
    for _ in 0..200 {
        if let Ok(mut c) = client.get_connection()
            && redis::cmd("PING").query::<String>(&mut c).is_ok()
        {
            if pinned {
                // Only the main thread, the one that runs commands, once it is up: the
                // background threads (lazy freeing, closing files) keep every CPU, as on
                // a real host; pinned with them, the thread freeing an UNLINKed zset
                // would preempt the main thread.
                let _ = Command::new("taskset")
                    .args(["-p", "-c", "0", &redis.process.id().to_string()])
                    .output();
            }
            return redis;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("redis-server did not start");
}

/// `redis-benchmark -P 64 -c 50 -r 100000` of HINCRBY and of ZINCRBY, ops/s.
pub struct Ceiling {
    pub hincrby: f64,
    pub zincrby: f64,
}

impl Ceiling {
    /// One event is one HINCRBY and one ZINCRBY: 1 / (1/h + 1/z).
    pub fn combined(&self) -> f64 {
        1.0 / (1.0 / self.hincrby + 1.0 / self.zincrby)
    }
}

/// Measures the ceiling now. The benchmark measures it right before each phase it is the
/// reference of, so that the machine's drift over a run touches both sides of a ratio.
pub fn ceiling(redis: &Redis) -> Ceiling {
    let ceiling = Ceiling {
        hincrby: run_benchmark(redis, &["HINCRBY", "bench:hash", "__rand_int__", "1"]),
        zincrby: run_benchmark(redis, &["ZINCRBY", "bench:zset", "1", "__rand_int__"]),
    };
    unlink(redis, &["bench:hash", "bench:zset"]);
    ceiling
}

/// Deletes redis-benchmark's keys off Redis's main thread (`UNLINK`; a `DEL` of its
/// 100,000-member zset holds Redis for 10–25 ms, inside the phase it is measured for),
/// and waits until they are freed.
fn unlink(redis: &Redis, keys: &[&str]) {
    let client = redis::Client::open(redis.url.as_str()).unwrap();
    let mut c = client.get_connection().unwrap();
    let _: i64 = redis::cmd("UNLINK").arg(keys).query(&mut c).unwrap();
    loop {
        let info: String = redis::cmd("INFO").arg("memory").query(&mut c).unwrap();
        if crate::slowlog::info_field(&info, "lazyfree_pending_objects") == 0 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The `ZINCRBY` ceiling alone, ops/s, for a phase that measures it right before each of
/// its steps.
pub fn zincrby_ceiling(redis: &Redis) -> f64 {
    let zincrby = run_benchmark(redis, &["ZINCRBY", "bench:zset", "1", "__rand_int__"]);
    unlink(redis, &["bench:zset"]);
    zincrby
}

fn run_benchmark(redis: &Redis, command: &[&str]) -> f64 {
    redis_benchmark(
        redis,
        &["-P", "64", "-c", "50", "-r", "100000", "-n", "1000000"],
        command,
    )
}

/// `redis-benchmark` of `command` on `redis` with `options`: the requests per second it
/// reports.
pub fn redis_benchmark(redis: &Redis, options: &[&str], command: &[&str]) -> f64 {
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &redis.port.to_string()])
        .args(options)
        .arg("--csv")
        .args(command)
        .output()
        .expect("redis-benchmark (Debian package redis-tools) must be installed");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .nth(1)
        .and_then(|l| l.split(',').nth(1))
        .and_then(|v| v.trim_matches('"').parse().ok())
        .unwrap_or_else(|| panic!("cannot read redis-benchmark output: {text}"))
}

/// The service (API, group commit, scheduler) on its own two-thread runtime.
pub struct Service {
    pub url: String,
    runtime: Runtime,
    shutdown: Option<oneshot::Sender<()>>,
}

/// The store options of the service and library phases: boards that name no layout get
/// `BENCH_LAYOUT` (`plain` or `compact`; the store's default, compact, when unset).
pub fn store_options() -> RedisOptions {
    let defaults = RedisOptions::default();
    let layout = std::env::var("BENCH_LAYOUT").map_or(defaults.default_layout, |l| {
        l.parse::<Layout>()
            .unwrap_or_else(|e| panic!("BENCH_LAYOUT: {e}"))
    });
    RedisOptions {
        default_layout: layout,
        ..defaults
    }
}

/// A plain connection to `url` that waits up to a minute for a reply: a `SLOWLOG GET` of
/// every call of a phase, or a `FLUSHDB` of 100,000 boards, outlasts the client's
/// default of 500 ms on a slow machine.
pub async fn patient_connection(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection_with_config(
            &redis::AsyncConnectionConfig::new()
                .set_response_timeout(Some(Duration::from_secs(60))),
        )
        .await
        .unwrap()
}

/// A store on `url` with [`store_options`].
pub async fn store(url: &str) -> Arc<RedisStore> {
    Arc::new(
        RedisStore::connect_with(url, store_options())
            .await
            .unwrap(),
    )
}

pub fn start_service(redis: &Redis) -> Service {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("service")
        .enable_all()
        .build()
        .unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let url = runtime.block_on(async {
        let store = store(&redis.url).await;
        let boards = Rollboard::with(store, Arc::new(SystemClock), Settings::default());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let config = ServiceConfig::default();
            service::run(boards, &config, listener, async {
                let _ = rx.await;
            })
            .await
            .unwrap();
        });
        url
    });
    Service {
        url,
        runtime,
        shutdown: Some(tx),
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.runtime
            .block_on(async { tokio::time::sleep(Duration::from_millis(50)).await });
    }
}
