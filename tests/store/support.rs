//! Test harness: a real `redis-server` on a free port per test (or `REDIS_URL` when set),
//! a manual clock, and helpers to build `Rollboard`s on either store.

use std::sync::Arc;

pub use crate::test_redis::TestRedis;
use rollboard::{
    BoardConfig, Clock, ManualClock, MemoryStore, Rollboard, Settings, Store, Timestamp,
};

/// 2023-11-14T22:00:00Z: a whole hour, so hour slots start here.
pub const START: i64 = 1_700_000_000 - 1_700_000_000 % 3600;

/// A Rollboard on some store, with the clock that drives it.
pub struct Harness {
    pub boards: Rollboard,
    pub clock: ManualClock,
    /// The Redis underneath, when the store is Redis.
    pub redis: Option<TestRedis>,
    /// Whether the store is the memory store (no slot layouts).
    pub in_memory: bool,
}

impl Harness {
    pub async fn memory() -> Harness {
        let clock = clock();
        Harness {
            boards: with_clock(Arc::new(MemoryStore::new()), &clock),
            clock,
            redis: None,
            in_memory: true,
        }
    }

    pub async fn redis() -> Harness {
        Self::on(TestRedis::start().await).await
    }

    /// As [`redis`](Self::redis), with boards that name no layout kept plain.
    pub async fn redis_plain() -> Harness {
        Self::on_redis(TestRedis::start().await, rollboard::Layout::Plain).await
    }

    /// As [`redis`](Self::redis), with boards that name no layout kept compact (the
    /// store's default, named).
    pub async fn redis_compact() -> Harness {
        Self::on_redis(TestRedis::start().await, rollboard::Layout::Compact).await
    }

    /// As [`redis_compact`](Self::redis_compact), on a server of this test's own whose
    /// listpacks hold at most 4 entries (read by the store at connect): the retirer
    /// converts each closed slot of 4 members or more into buckets of 2.
    pub async fn redis_bucketed() -> Harness {
        let redis = TestRedis::spawn().await;
        redis.config_set("hash-max-listpack-entries", "4").await;
        Self::on_redis(redis, rollboard::Layout::Compact).await
    }

    /// As [`redis`](Self::redis), on a server of this test's own (whose server-wide
    /// figures, such as `INFO commandstats`, only this test moves).
    pub async fn on_own_redis() -> Harness {
        Self::on(TestRedis::spawn().await).await
    }

    async fn on(redis: TestRedis) -> Harness {
        let clock = clock();
        Harness {
            boards: with_clock(redis.store().await, &clock),
            clock,
            redis: Some(redis),
            in_memory: false,
        }
    }

    /// A Rollboard on `redis` whose boards that name no layout take `layout` (its
    /// replies waited for as long as [`TestRedis::store`]'s).
    async fn on_redis(redis: TestRedis, layout: rollboard::Layout) -> Harness {
        let options = rollboard::RedisOptions {
            default_layout: layout,
            ..crate::test_redis::test_options()
        };
        Self::on_redis_with(redis, options).await
    }

    /// A Rollboard with `options` on `redis`.
    async fn on_redis_with(redis: TestRedis, options: rollboard::RedisOptions) -> Harness {
        let clock = clock();
        Harness {
            boards: with_clock(redis.store_with(options).await, &clock),
            clock,
            redis: Some(redis),
            in_memory: false,
        }
    }

    /// A Rollboard on the Redis Cluster this test binary shares (three masters, started
    /// on first use).
    pub async fn cluster() -> Harness {
        Self::on_cluster(crate::test_redis::test_options()).await
    }

    /// As [`redis`](Self::redis), under a key prefix of this test's own, so that what
    /// spans boards (the members hidden on every board, the moderation log) is this
    /// test's alone even on a shared server (`REDIS_URL`).
    pub async fn redis_isolated() -> Harness {
        Self::on_redis_with(TestRedis::start().await, isolated_options()).await
    }

    /// As [`cluster`](Self::cluster), under a key prefix of this test's own.
    pub async fn cluster_isolated() -> Harness {
        Self::on_cluster(isolated_options()).await
    }

    /// A Rollboard with `options` on the shared cluster.
    async fn on_cluster(options: rollboard::RedisOptions) -> Harness {
        let cluster = crate::test_cluster::TestCluster::shared();
        let clock = clock();
        let store = rollboard::RedisStore::connect_cluster_with(&cluster.urls, options)
            .await
            .expect("connect to the test cluster");
        Harness {
            boards: with_clock(Arc::new(store), &clock),
            clock,
            redis: None,
            in_memory: false,
        }
    }

    /// Creates a board with a unique name and returns the name.
    pub async fn board(&self, slot: &str, windows: &[&str]) -> String {
        let name = unique("b");
        self.boards
            .create(&name, BoardConfig::parse(slot, windows).unwrap())
            .await
            .unwrap();
        name
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Marks the board's record `dropping`, as a drop that stopped right after its first
    /// step leaves it (Redis only).
    pub async fn mark_dropping(&self, board: &str) {
        let mut raw = self.redis.as_ref().unwrap().raw().await;
        let record = format!("board_{{{board}}}");
        let _: () = redis::pipe()
            .atomic()
            .cmd("HDEL")
            .arg(&record)
            .arg("quiet")
            .cmd("HSET")
            .arg(&record)
            .arg("dropping")
            .arg(1)
            .query_async(&mut raw)
            .await
            .unwrap();
    }

    /// Moves the clock to `START + seconds`.
    pub fn at(&self, seconds: i64) {
        self.clock.set(ts(START + seconds));
    }
}

/// The test options with a key prefix of their own.
fn isolated_options() -> rollboard::RedisOptions {
    let prefix = format!("{}:", unique("t"));
    rollboard::RedisOptions {
        key_prefix: rollboard::KeyPrefix::parse(&prefix).unwrap(),
        ..crate::test_redis::test_options()
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

pub use crate::test_redis::unique;

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

/// `(rank, member, score)` of a page's entries.
pub fn triples(entries: &[rollboard::Entry]) -> Vec<(u64, String, i64)> {
    entries
        .iter()
        .map(|e| (e.rank, e.member.clone(), e.score))
        .collect()
}

/// The names of the boards `boards` lists.
pub async fn board_names(boards: &Rollboard) -> Vec<String> {
    boards
        .boards()
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.name.to_string())
        .collect()
}
