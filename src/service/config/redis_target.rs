//! Which Redis the service uses: the URL or the cluster seeds, from the environment or
//! the file, checked against each other and against the store chosen.

use super::{ConfigError, StoreKind};

/// The Redis URL and cluster seeds to use, after the checks that catch an empty value
/// (which would otherwise fall back to the memory store without a word) and a store
/// chosen against the URLs set.
pub(super) fn redis_target(
    store: Option<StoreKind>,
    env_url: Option<String>,
    file_url: Option<String>,
    env_cluster: Option<Vec<String>>,
    file_cluster: Option<Vec<String>>,
) -> Result<(Option<String>, Vec<String>), ConfigError> {
    let memory = store == Some(StoreKind::Memory);
    let blank = |u: &String| u.trim().is_empty();
    let empty = |what: &str, example: &str| {
        ConfigError(format!(
            "{what} is set but empty: set it to {example} or unset it to use the in-process \
             memory store"
        ))
    };
    if env_url.as_ref().is_some_and(blank) && !memory {
        return Err(empty("REDIS_URL", "redis://host:port/"));
    }
    if file_url.as_ref().is_some_and(blank) && !memory {
        return Err(empty(
            "redis_url in the config file",
            "\"redis://host:port/\"",
        ));
    }
    if env_cluster.as_ref().is_some_and(|c| c.iter().all(blank)) && !memory {
        return Err(empty(
            "REDIS_CLUSTER_URLS",
            "redis://host:port,redis://host:port",
        ));
    }
    if file_cluster.as_ref().is_some_and(|c| c.iter().all(blank)) && !memory {
        return Err(empty(
            "redis_cluster in the config file",
            "[\"redis://host:port\", …]",
        ));
    }
    let url = |u: Option<String>| u.map(|u| u.trim().to_owned()).filter(|u| !u.is_empty());
    let redis_url = url(env_url).or(url(file_url));
    let redis_cluster: Vec<String> = env_cluster
        .filter(|c| !c.iter().all(blank))
        .or(file_cluster)
        .unwrap_or_default()
        .into_iter()
        .map(|u| u.trim().to_owned())
        .filter(|u| !u.is_empty())
        .collect();
    if redis_url.is_some() && !redis_cluster.is_empty() {
        return Err(ConfigError(
            "both a Redis URL (REDIS_URL, redis_url) and Redis Cluster seed nodes \
             (REDIS_CLUSTER_URLS, redis_cluster) are set: set only one"
                .into(),
        ));
    }
    for url in redis_url.iter().chain(&redis_cluster) {
        crate::store::check_url(url).map_err(ConfigError)?;
    }
    let any = redis_url.is_some() || !redis_cluster.is_empty();
    match store {
        Some(StoreKind::Memory) if any => Err(ConfigError(
            "the memory store is chosen (--store, ROLLBOARD_STORE, store) but a Redis URL is \
             set too (REDIS_URL, REDIS_CLUSTER_URLS, redis_url, redis_cluster): unset one"
                .into(),
        )),
        Some(StoreKind::Redis) if !any => Err(ConfigError(
            "the Redis store is chosen (--store, ROLLBOARD_STORE, store) but no Redis URL is \
             set: set REDIS_URL (redis_url) or REDIS_CLUSTER_URLS (redis_cluster)"
                .into(),
        )),
        _ => Ok((redis_url, redis_cluster)),
    }
}
