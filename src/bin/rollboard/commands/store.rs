//! The store a command runs on: the service config a batch job reads (file, environment,
//! flags), the facade opened on it, and the checks of a job that needs one Redis node.

use std::path::Path;
use std::sync::Arc;

use anyhow::bail;
use rollboard::service::{Overrides, ServiceConfig};
use rollboard::{RedisStore, Rollboard};

use crate::args::{ReadStoreArgs, StoreArgs};

/// Where a command's store and config come from ([`ReadStoreArgs`], or [`StoreArgs`] for
/// a command that writes).
pub(super) trait StoreSource {
    /// The `--config` file.
    fn config(&self) -> Option<&Path>;
    /// The Redis URL and settings of the command line and the environment.
    fn overrides(&self) -> Overrides;
}

impl StoreSource for ReadStoreArgs {
    fn config(&self) -> Option<&Path> {
        self.config.as_deref()
    }

    fn overrides(&self) -> Overrides {
        Overrides {
            redis_url: self.redis_url.clone(),
            redis_cluster: self.redis_cluster.clone(),
            redis_tls_ca: self.connection.redis_tls_ca.clone(),
            redis_connection_timeout: self.connection.redis_connection_timeout,
            redis_response_timeout: self.connection.redis_response_timeout,
            key_prefix: self.connection.key_prefix.clone(),
            ..Overrides::default()
        }
    }
}

impl StoreSource for StoreArgs {
    fn config(&self) -> Option<&Path> {
        self.read.config()
    }

    fn overrides(&self) -> Overrides {
        Overrides {
            min_replica_acks: self.writes.min_replica_acks,
            replica_ack_timeout: self.writes.replica_ack_timeout,
            default_layout: self.writes.default_layout,
            ..self.read.overrides()
        }
    }
}

/// The Redis settings of a batch command: the config file's (`--config`, the one
/// `serve` reads), overridden by the environment and the flags, as for `serve`.
pub(super) fn job_config(store: &impl StoreSource) -> anyhow::Result<ServiceConfig> {
    let overrides = Overrides {
        // A batch job listens nowhere: the file's bind needs no token here.
        insecure: true,
        ..store.overrides()
    };
    Ok(ServiceConfig::load(store.config(), overrides)?)
}

/// The Redis-backed library, for the batch commands.
pub(super) async fn open(store: &impl StoreSource, command: &str) -> anyhow::Result<Rollboard> {
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
