//! Batch jobs against a real Redis: import, export, recompute, legacy import, migrations.

mod import_export;
#[path = "../store/oracle.rs"]
#[allow(dead_code)]
mod oracle;
mod recompute;
mod support;
#[path = "../common/redis.rs"]
mod test_redis;
