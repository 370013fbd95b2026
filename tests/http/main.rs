//! Service tests: every route against a real listener on a free port and a real Redis.

mod support;
#[path = "../common/redis.rs"]
mod test_redis;
