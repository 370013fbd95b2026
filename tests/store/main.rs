//! Store tests: one binary, against the memory store and a real `redis-server` that
//! the harness starts on a free port (or `REDIS_URL` when set).

mod cluster;
mod cluster_failover;
mod cluster_faults;
mod cluster_load;
mod cluster_reshard;
mod concurrency;
mod conformance;
mod counters;
mod dense;
mod durability;
mod faults;
mod history_under_retirement;
mod idempotency;
mod lifecycle;
mod member_ranks;
mod memory_limits;
mod oracle;
mod property;
#[path = "../common/proxy.rs"]
mod proxy;
mod ranges;
mod rates;
mod rates_property;
mod redis_layout;
mod retirer;
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
