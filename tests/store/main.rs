//! Store tests: one binary, against the memory store and a real `redis-server` that
//! the harness starts on a free port (or `REDIS_URL` when set).

mod conformance;
mod support;
