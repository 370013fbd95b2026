//! Service tests: every route against a real listener on a free port and a real Redis.

// First: its macros (`on_memory_and_redis!`) serve the modules below.
#[macro_use]
mod support;
mod aggregates;
mod api;
mod auth;
mod board_series;
mod bulk;
mod changes;
mod clock;
mod cluster;
mod connections;
mod contract;
mod contributors;
mod counters;
mod dashboard;
mod dashboard_api;
mod default_board;
mod dense;
mod idempotency;
mod key_prefix;
mod member_data;
mod moderation;
mod mounted;
mod multi;
mod nonzero;
mod observability;
mod ops;
mod peer_reads;
#[path = "../common/proxy.rs"]
mod proxy;
mod quarantine;
mod ranges;
mod ranks;
mod rates;
mod read_cache;
mod recompute;
mod redis_memory;
mod replica_acks;
mod replicas;
mod retract;
mod scheduler;
mod sharded;
mod shutdown;
mod snapshots;
mod stats;
mod stopped_redis;
#[path = "../common/cluster.rs"]
mod test_cluster;
#[path = "../common/redis.rs"]
mod test_redis;
mod trending;
mod webhook;
mod write_standing;
