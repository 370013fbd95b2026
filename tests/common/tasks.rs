//! Counting the tasks alive on the test's runtime, to show that background tasks end.

#![allow(dead_code)]

use std::time::Duration;

/// Tasks alive on this runtime.
pub fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Waits (up to 5 s) for the tasks alive to come back to `count`.
pub async fn settle(count: usize) {
    for _ in 0..500 {
        if alive_tasks() == count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
