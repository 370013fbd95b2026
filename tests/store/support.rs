//! Test harness: a real `redis-server` on a free port per test (or `REDIS_URL` when set),
//! a manual clock, and helpers to build `Rollboard`s on either store.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redis_test::server::RedisServer;
use rollboard::{
    BoardConfig, Clock, ManualClock, MemoryStore, RedisStore, Rollboard, Settings, Store, Timestamp,
};

/// 2023-11-14T22:00:00Z: a whole hour, so hour slots start here.
pub const START: i64 = 1_700_000_000 - 1_700_000_000 % 3600;

/// A Redis to test against: spawned for this test, or the one in `REDIS_URL`.
pub struct TestRedis {
    pub url: String,
    /// Kills the spawned server when the test ends.
    _server: Option<RedisServer>,
}

impl TestRedis {
    pub async fn start() -> TestRedis {
        if let Ok(url) = std::env::var("REDIS_URL") {
            return TestRedis { url, _server: None };
        }
        let server = RedisServer::new();
        let url = match server.client_addr() {
            redis::ConnectionAddr::Tcp(host, port) => format!("redis://{host}:{port}/"),
            other => panic!("unexpected test server address {other:?}"),
        };
        let redis = TestRedis {
            url,
            _server: Some(server),
        };
        redis.wait_ready().await;
        redis
    }

    /// redis-test does not wait for the server to listen: retry the first connection.
    async fn wait_ready(&self) {
        let client = redis::Client::open(self.url.as_str()).unwrap();
        for _ in 0..200 {
            if let Ok(mut conn) = client.get_multiplexed_async_connection().await
                && redis::cmd("PING")
                    .query_async::<String>(&mut conn)
                    .await
                    .is_ok()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("redis-server at {} did not start within 5 s", self.url);
    }

    pub async fn store(&self) -> Arc<RedisStore> {
        Arc::new(
            RedisStore::connect(&self.url)
                .await
                .expect("connect to test redis"),
        )
    }

    /// A raw connection, to look at keys the way an operator would.
    pub async fn raw(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }
}

/// A Rollboard on some store, with the clock that drives it.
pub struct Harness {
    pub boards: Rollboard,
    pub clock: ManualClock,
    /// The Redis underneath, when the store is Redis.
    pub redis: Option<TestRedis>,
}

impl Harness {
    pub async fn memory() -> Harness {
        let clock = clock();
        Harness {
            boards: with_clock(Arc::new(MemoryStore::new()), &clock),
            clock,
            redis: None,
        }
    }

    pub async fn redis() -> Harness {
        let redis = TestRedis::start().await;
        let clock = clock();
        Harness {
            boards: with_clock(redis.store().await, &clock),
            clock,
            redis: Some(redis),
        }
    }

    /// Creates a board with a unique name and returns the name.
    pub async fn board(&self, slot: &str, windows: &[&str]) -> String {
        let name = unique("b");
        self.boards
            .create_board(&name, BoardConfig::parse(slot, windows).unwrap())
            .await
            .unwrap();
        name
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Moves the clock to `START + seconds`.
    pub fn at(&self, seconds: i64) {
        self.clock.set(ts(START + seconds));
    }
}

pub fn clock() -> ManualClock {
    ManualClock::new(ts(START))
}

pub fn with_clock(store: Arc<dyn Store>, clock: &ManualClock) -> Rollboard {
    Rollboard::with(store, Arc::new(clock.clone()), Settings::default())
}

pub fn ts(seconds: i64) -> Timestamp {
    Timestamp::from_unix_seconds(seconds).unwrap()
}

/// A name no other test (or earlier run against the same `REDIS_URL`) uses.
pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{prefix}{}-{n}-{nanos}", std::process::id())
}

/// The ranking of a page as `(member, score)` pairs, for compact assertions.
pub fn ranking(page: &rollboard::TopPage) -> Vec<(String, i64)> {
    page.entries
        .iter()
        .map(|e| (e.member.clone(), e.score))
        .collect()
}

/// `(member, score)` pairs from literals.
pub fn pairs(items: &[(&str, i64)]) -> Vec<(String, i64)> {
    items.iter().map(|(m, s)| (m.to_string(), *s)).collect()
}
