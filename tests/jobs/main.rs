//! Batch jobs against a real Redis: import, export, recompute, legacy import, migrations.

mod import_export;
mod support;
#[path = "../common/redis.rs"]
mod test_redis;
