//! Store tests: one binary, against the memory store and a real `redis-server` that
//! the harness starts on a free port (or `REDIS_URL` when set).

/// Runs each case (an `async fn(Harness)`) on every store: as `memory::case`,
/// `redis::case` (a real redis-server of its own, whose boards keep compact slots unless
/// they name a layout, the default), `plain::case` (the same with plain slots) and
/// `cluster::case` (the Redis
/// Cluster this binary shares). Defined before the modules that use it.
macro_rules! on_every_store {
    ($($case:ident),* $(,)?) => {
        on_memory_and_redis!($($case),*);
        mod cluster {
            $(#[tokio::test] async fn $case() { super::$case(crate::support::Harness::cluster().await).await })*
        }
    };
}

/// As [`on_every_store!`], each Redis store under a key prefix of the test's own.
macro_rules! on_every_isolated_store {
    ($($case:ident),* $(,)?) => {
        mod memory {
            $(#[tokio::test] async fn $case() { super::$case(crate::support::Harness::memory().await).await })*
        }
        mod redis {
            $(#[tokio::test] async fn $case() { super::$case(crate::support::Harness::redis_isolated().await).await })*
        }
        mod cluster {
            $(#[tokio::test] async fn $case() { super::$case(crate::support::Harness::cluster_isolated().await).await })*
        }
    };
}

/// As [`on_every_store!`], without the shared cluster.
macro_rules! on_memory_and_redis {
    ($($case:ident),* $(,)?) => {
        mod memory {
            $(#[tokio::test] async fn $case() { super::$case(crate::support::Harness::memory().await).await })*
        }
        mod redis {
            $(#[tokio::test] async fn $case() { super::$case(crate::support::Harness::redis().await).await })*
        }
        mod plain {
            $(#[tokio::test] async fn $case() { super::$case(crate::support::Harness::redis_plain().await).await })*
        }
    };
}

mod active_relayout;
mod aggregate_conformance;
mod aggregate_property;
mod aggregates;
mod any_board;
mod bounded_writes;
mod budget_stops;
mod bulk;
mod cluster;
mod cluster_failover;
mod cluster_faults;
mod cluster_kill;
mod cluster_load;
mod cluster_reshard;
mod compact_fixture;
mod compact_reads;
mod compact_retirement;
mod compact_slots;
mod concurrency;
mod conformance;
mod contributors;
mod counters;
mod data_follows_out;
mod dense;
mod durability;
mod faults;
mod hidden;
mod history_under_retirement;
mod idempotency;
mod lean_writes;
mod lifecycle;
mod many_boards;
mod member_data;
mod member_ranks;
mod memory_limits;
mod moderation;
mod movement;
mod multi;
mod nonzero;
mod open_slot;
mod oracle;
mod pace;
mod peer_reads;
mod pins;
mod property;
#[path = "../common/proxy.rs"]
mod proxy;
mod ranges;
mod rates;
mod rates_heads;
mod rates_limiter;
mod rates_property;
mod recompute_long;
mod redis_layout;
mod relayout;
mod replica_acks;
mod resharding;
mod retire_swap;
mod retirer;
mod review;
mod sharded;
mod snapshots;
mod stats;
mod support;
#[path = "../common/tasks.rs"]
mod tasks;
#[path = "../common/cluster.rs"]
mod test_cluster;
#[path = "../common/redis.rs"]
mod test_redis;
mod timeouts;
mod tls_and_acl;
mod top_reads;
mod trending;
mod trending_property;
mod trending_writes;
mod watch;
mod write_standing;
