//! The Redis timeouts are settings: a response timeout from the config file bounds how
//! long a call waits when Redis does not answer (a read: twice, for its one retry).

use std::time::{Duration, Instant};

use rollboard::service::{ConfigFile, Overrides, ServiceConfig, open_store};

use crate::proxy::{Fault, FaultProxy};
use crate::support::TestRedis;

/// Longer than any bound below: a reply held this long never arrives in time.
const HOLD: Fault = Fault::Hold(Duration::from_secs(10));

#[tokio::test]
async fn the_configured_response_timeout_bounds_a_read_and_its_one_retry() {
    let redis = TestRedis::start().await;
    let proxy = FaultProxy::start(&redis.url).await;
    let file: ConfigFile = toml::from_str(&format!(
        "redis_url = \"{}\"\nredis_response_timeout = \"300ms\"",
        proxy.url()
    ))
    .unwrap();
    let config = ServiceConfig::resolve(file, Overrides::default()).unwrap();
    assert_eq!(config.redis.response_timeout, Duration::from_millis(300));
    let store = open_store(&config).await.unwrap();

    proxy.arm(HOLD, 2, |r| r.command() == "TIME");
    let started = Instant::now();
    let error = store.server().unwrap().server_time().await.unwrap_err();
    let waited = started.elapsed();
    assert_eq!(error.code(), "store_unavailable");
    // Two waits of 300 ms (the read is sent once more after the lost reply), far below
    // the 2 s default (which would take 4 s).
    assert!(
        waited >= Duration::from_millis(600) && waited < Duration::from_millis(2500),
        "waited {waited:?}"
    );
}
