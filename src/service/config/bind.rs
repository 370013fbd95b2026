//! Listen addresses and the store choice as the command line, the environment and the
//! file give them.

use std::net::SocketAddr;

use serde::Deserialize;

/// The store `serve` runs on, when chosen explicitly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    /// The embedded memory store: boards live only as long as the process.
    Memory,
    /// Redis, or a Redis Cluster (`REDIS_URL` or `REDIS_CLUSTER_URLS` must be set).
    Redis,
}

impl std::str::FromStr for StoreKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "memory" => Ok(StoreKind::Memory),
            "redis" => Ok(StoreKind::Redis),
            _ => Err(format!("unknown store {s:?}: use memory or redis")),
        }
    }
}

/// A listen address from the command line or the environment: an IP address and a
/// port. Host names are not resolved (one name can stand for several addresses), so
/// `localhost:8080` is refused with the address to give instead.
pub fn parse_bind(text: &str) -> Result<SocketAddr, String> {
    text.trim().parse().map_err(|_| bind_error(text))
}

fn bind_error(text: &str) -> String {
    let port = text.rsplit_once(':').map_or("8080", |(_, p)| p);
    format!(
        "invalid listen address {text:?}: give an IP address and a port, e.g. \
         127.0.0.1:{port} (host names such as localhost are not resolved)"
    )
}

pub(super) fn deserialize_bind<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<SocketAddr>, D::Error> {
    let text = String::deserialize(d)?;
    parse_bind(&text)
        .map(Some)
        .map_err(serde::de::Error::custom)
}
