//! A real Redis for tests: a `redis-server` spawned on a free port for the test (killed
//! when dropped), or the server in `REDIS_URL` when that is set. Shared by the test
//! binaries, each of which uses part of it.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use redis_test::server::RedisServer;
use rollboard::RedisStore;

/// How long the stores of [`TestRedis::store`] wait for a reply: a whole suite on a
/// loaded 2-core machine can hold a reply past the product's 2 s (the tests of timeouts
/// set their own).
pub const REPLY_WAIT: Duration = Duration::from_secs(10);

/// The product's Redis options, but for the time a reply may take ([`REPLY_WAIT`]).
pub fn test_options() -> rollboard::RedisOptions {
    rollboard::RedisOptions {
        response_timeout: REPLY_WAIT,
        ..rollboard::RedisOptions::default()
    }
}

/// A Redis to test against: spawned for this test, or the one in `REDIS_URL`.
pub struct TestRedis {
    pub url: String,
    /// On a server from [`TestRedis::spawn_tls`]: its `rediss://` URL (the same server
    /// as `url`, on its TLS port) and the PEM file of the CA that signed its certificate.
    pub tls: Option<(String, std::path::PathBuf)>,
    /// Kills the spawned server when the test ends (or when `kill` is called).
    server: std::sync::Mutex<Option<RedisServer>>,
}

impl TestRedis {
    pub async fn start() -> TestRedis {
        if let Ok(url) = std::env::var("REDIS_URL") {
            return TestRedis {
                url,
                tls: None,
                server: std::sync::Mutex::new(None),
            };
        }
        Self::spawn().await
    }

    /// Always a fresh server of this test's own, even when `REDIS_URL` is set (for tests
    /// that stop the server or change its configuration).
    pub async fn spawn() -> TestRedis {
        Self::spawn_own(|| {
            let server = RedisServer::new();
            let url = match server.client_addr() {
                redis::ConnectionAddr::Tcp(host, port) => format!("redis://{host}:{port}/"),
                other => panic!("unexpected test server address {other:?}"),
            };
            (server, url, None)
        })
        .await
    }

    /// A fresh server of this test's own that also listens with TLS, with a CA and a
    /// certificate for 127.0.0.1 made for it by `openssl` (redis-test's helper). `url`
    /// stays plain (for set-up through `raw`); `tls` has the `rediss://` URL and the CA.
    pub async fn spawn_tls() -> TestRedis {
        Self::spawn_own(|| {
            let plain = redis_test::utils::get_random_available_port();
            let tls_port = redis_test::utils::get_random_available_port();
            let addr = redis::ConnectionAddr::TcpTls {
                host: "127.0.0.1".into(),
                port: tls_port,
                insecure: false,
                tls_params: None,
            };
            let server = RedisServer::new_with_addr_tls_modules_and_spawner(
                addr,
                None,
                None,
                false,
                None,
                &[],
                // The last --port wins over the helper's `--port 0`.
                |cmd| cmd.arg("--port").arg(plain.to_string()).spawn().unwrap(),
            );
            let ca = server.tls_paths.as_ref().unwrap().ca_crt.clone();
            let tls = (format!("rediss://127.0.0.1:{tls_port}/"), ca);
            (server, format!("redis://127.0.0.1:{plain}/"), Some(tls))
        })
        .await
    }

    /// A server made by `make` (with its URL and TLS part), made again on other ports
    /// while it is not this test's own: redis-test picks a port that was free a moment
    /// before, which another test's server or any outgoing connection may take first
    /// (the server then exits, or the URL reaches another test's server).
    async fn spawn_own(
        make: impl Fn() -> (RedisServer, String, Option<(String, std::path::PathBuf)>),
    ) -> TestRedis {
        for _ in 0..5 {
            let (server, url, tls) = make();
            let redis = TestRedis {
                url,
                tls,
                server: std::sync::Mutex::new(Some(server)),
            };
            if redis.wait_ready().await {
                return redis;
            }
        }
        panic!("no redis-server of this test's own started in 5 tries");
    }

    /// redis-test does not wait for the server to listen: retry the first connection, for
    /// up to 20 s (a loaded machine starting many servers at once, TLS ones slowest).
    /// False when the spawned server exited or another process answers on its port.
    async fn wait_ready(&self) -> bool {
        let client = redis::Client::open(self.url.as_str()).unwrap();
        for _ in 0..800 {
            // The spawned server's pid (none from `REDIS_URL`); it exits when its port
            // was taken.
            let pid = match self.server.lock().unwrap().as_mut() {
                Some(s) => match s.process.try_wait().unwrap() {
                    Some(_) => return false,
                    None => Some(s.process.id()),
                },
                None => None,
            };
            if let Ok(mut conn) = client.get_multiplexed_async_connection().await
                && let Ok(info) = redis::cmd("INFO")
                    .arg("server")
                    .query_async::<String>(&mut conn)
                    .await
            {
                let answering = info
                    .lines()
                    .find_map(|l| l.strip_prefix("process_id:"))
                    .and_then(|p| p.trim().parse::<u32>().ok());
                return pid.is_none() || answering == pid;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("redis-server at {} did not start within 20 s", self.url);
    }

    /// A store on this server with the product's settings, but for its replies, which
    /// may wait [`REPLY_WAIT`].
    pub async fn store(&self) -> Arc<RedisStore> {
        Arc::new(self.store_owned().await)
    }

    /// A store on this server with `options`.
    #[allow(dead_code)] // not every test binary uses it
    pub async fn store_with(&self, options: rollboard::RedisOptions) -> Arc<RedisStore> {
        Arc::new(
            RedisStore::connect_with(&self.url, options)
                .await
                .expect("connect to test redis"),
        )
    }

    /// A store on this server whose boards that name no layout keep plain slots (one
    /// hash per stage; the store's default is compact).
    #[allow(dead_code)] // not every test binary uses it
    pub async fn store_plain(&self) -> Arc<RedisStore> {
        let options = rollboard::RedisOptions {
            default_layout: rollboard::Layout::Plain,
            ..rollboard::RedisOptions::default()
        };
        self.store_with(options).await
    }

    /// The store itself (not shared), for a Rollboard with settings of the test's own;
    /// as [`store`](Self::store).
    pub async fn store_owned(&self) -> RedisStore {
        RedisStore::connect_with(&self.url, test_options())
            .await
            .expect("connect to test redis")
    }

    /// On a server of this test's own, keeps every hash in the hashtable encoding (no
    /// listpack), so HSCAN chunks of even small hashes really interleave with writers.
    pub async fn use_hashtables(&self) {
        self.config_set("hash-max-listpack-entries", "0").await;
    }

    /// `CONFIG SET name value` on this server, which must be the test's own
    /// ([`spawn`](Self::spawn)): a setting is server-wide, and a server from `REDIS_URL`
    /// is shared with other tests.
    pub async fn config_set(&self, name: &str, value: &str) {
        assert!(
            self.owned(),
            "CONFIG SET {name} on a shared server: spawn one of the test's own"
        );
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg(name)
            .arg(value)
            .query_async(&mut self.raw().await)
            .await
            .unwrap();
    }

    /// `used_memory` from `INFO memory`, in bytes.
    pub async fn used_memory(&self) -> u64 {
        let info: String = redis::cmd("INFO")
            .arg("memory")
            .query_async(&mut self.raw().await)
            .await
            .unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// A raw connection, to look at keys the way an operator would. Its replies may wait
    /// 10 s (the crate's default is 500 ms, which a test's big read on a loaded 2-core
    /// machine can exceed).
    pub async fn raw(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url.as_str())
            .unwrap()
            .get_multiplexed_async_connection_with_config(
                &redis::AsyncConnectionConfig::new().set_response_timeout(Some(REPLY_WAIT)),
            )
            .await
            .unwrap()
    }
}

impl TestRedis {
    /// Kills the spawned server (to test a store outage).
    pub fn kill(&self) {
        if let Some(server) = self.server.lock().unwrap().as_mut() {
            server.stop();
        }
    }

    /// Whether this test owns the server (it was spawned, not taken from `REDIS_URL`).
    pub fn owned(&self) -> bool {
        self.server.lock().unwrap().is_some()
    }
}

/// A name no other test (or earlier run against the same `REDIS_URL`) uses.
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{prefix}{}-{n}-{nanos}", std::process::id())
}
