//! Batch jobs against a real Redis: import, export, recompute, legacy import, migrations.

mod compact;
#[path = "../common/dystats.rs"]
mod dystats;
mod faults;
mod import_export;
mod legacy;
mod migrate;
#[path = "../store/oracle.rs"]
#[allow(dead_code)]
mod oracle;
#[path = "../common/proxy.rs"]
mod proxy;
mod recompute;
mod support;
#[path = "../common/redis.rs"]
mod test_redis;
