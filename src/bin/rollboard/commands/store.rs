//! The store a command runs on: the service config a batch job reads (file, environment,
//! flags), the facade opened on it, and the checks of a job that needs one Redis node.

use std::sync::Arc;

use anyhow::bail;
use rollboard::service::{Overrides, ServiceConfig};
use rollboard::{RedisStore, Rollboard};

use crate::args::StoreArgs;

/// The Redis settings of a batch command: the config file's (`--config`, the one
/// `serve` reads), overridden by the environment and the flags, as for `serve`.
pub(super) fn job_config(store: &StoreArgs) -> anyhow::Result<ServiceConfig> {
    let overrides = Overrides {
        // A batch job listens nowhere: the file's bind needs no token here.
        insecure: true,
        ..connection_overrides(store)
    };
    Ok(ServiceConfig::load(store.config.as_deref(), overrides)?)
}

/// The Redis-backed library, for the batch commands.
pub(super) async fn open(store: &StoreArgs, command: &str) -> anyhow::Result<Rollboard> {
    let config = job_config(store)?;
    let redis = if !config.redis_cluster.is_empty() {
        RedisStore::connect_cluster_with(&config.redis_cluster, config.redis).await?
    } else if let Some(url) = &config.redis_url {
        RedisStore::connect_with(url, config.redis).await?
    } else {
        bail!(
            "`rollboard {command}` needs REDIS_URL (or --redis-url, or redis_url in the --config file) or REDIS_CLUSTER_URLS (or --redis-cluster, or redis_cluster): the memory store only lives inside `rollboard serve`"
        );
    };
    Ok(Rollboard::new(Arc::new(redis)))
}

/// Refuses a job that scans Redis's keys when the store is a Redis Cluster.
pub(super) fn single_node_only(cluster: &[String], command: &str) -> anyhow::Result<()> {
    if !cluster.is_empty() {
        bail!(
            "`rollboard {command}` scans Redis's keys and runs on a single Redis only, not on a Redis Cluster: run it against the single Redis that holds the legacy keys before moving to the cluster (see docs/operations.md, \"Running on Redis Cluster\")"
        );
    }
    Ok(())
}

/// The Redis URL and connection settings of the command line and the environment.
pub(super) fn connection_overrides(store: &StoreArgs) -> Overrides {
    Overrides {
        redis_url: store.redis_url.clone(),
        redis_cluster: store.redis_cluster.clone(),
        redis_tls_ca: store.connection.redis_tls_ca.clone(),
        redis_connection_timeout: store.connection.redis_connection_timeout,
        redis_response_timeout: store.connection.redis_response_timeout,
        min_replica_acks: store.connection.min_replica_acks,
        replica_ack_timeout: store.connection.replica_ack_timeout,
        default_layout: store.connection.default_layout,
        key_prefix: store.connection.key_prefix.clone(),
        ..Overrides::default()
    }
}
