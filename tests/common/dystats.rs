//! The source article's `DyStats` (seed 002), re-implemented command for command with
//! the clock passed in: the legacy system whose keys `import-legacy` and migration 0001
//! read. Same keys, same commands in the same order, same flaws (`KEYS`, nothing atomic,
//! slots kept until `period + interval` past the current hour), on a machine in UTC.

#![allow(dead_code)]

use redis::aio::MultiplexedConnection;

/// One legacy board: `period` and `interval` in hours, as in the article.
pub struct DyStats {
    pub name: String,
    pub period: i64,
    pub interval: i64,
}

/// `datetime(now.year, now.month, now.day, now.hour).timestamp()` in UTC.
fn floor_hour(now: i64) -> i64 {
    now - now.rem_euclid(3600)
}

impl DyStats {
    pub fn new(name: &str, period: i64, interval: i64) -> Self {
        assert!(
            [1, 2, 3, 4, 6, 8, 12].contains(&interval) || (interval >= 24 && interval % 24 == 0)
        );
        assert!(period >= interval && period % interval == 0);
        DyStats {
            name: name.to_owned(),
            period,
            interval,
        }
    }

    /// `incr_stats(target_id, amount)` at `now`.
    pub async fn incr_stats(
        &self,
        conn: &mut MultiplexedConnection,
        target: &str,
        amount: i64,
        now: i64,
    ) {
        let last_slot = self.last_slot(conn, now).await;
        let _: i64 = redis::cmd("HINCRBY")
            .arg(format!("slot_{}_{last_slot}", self.name))
            .arg(target)
            .arg(amount)
            .query_async(conn)
            .await
            .unwrap();
        let _: f64 = redis::cmd("ZINCRBY")
            .arg(format!("stats_{}", self.name))
            .arg(amount)
            .arg(target)
            .query_async(conn)
            .await
            .unwrap();
    }

    /// `remove_all_expired_slots()` at `now`.
    async fn remove_all_expired_slots(&self, conn: &mut MultiplexedConnection, now: i64) {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("slot_{}_*", self.name))
            .query_async(conn)
            .await
            .unwrap();
        for key in keys {
            let ts: i64 = key[6 + self.name.len()..].parse().unwrap();
            if ts < floor_hour(now) - (self.period + self.interval) * 3600 {
                self.remove_expired_slot(conn, ts).await;
            }
        }
    }

    /// `remove_expired_slot(timestamp)`.
    async fn remove_expired_slot(&self, conn: &mut MultiplexedConnection, ts: i64) {
        let key = format!("slot_{}_{ts}", self.name);
        let values: Vec<(String, i64)> = redis::cmd("HGETALL")
            .arg(&key)
            .query_async(conn)
            .await
            .unwrap();
        let deleted: i64 = redis::cmd("DEL").arg(&key).query_async(conn).await.unwrap();
        if deleted > 0 {
            for (member, value) in values {
                let total: f64 = redis::cmd("ZINCRBY")
                    .arg(format!("stats_{}", self.name))
                    .arg(-value)
                    .arg(&member)
                    .query_async(conn)
                    .await
                    .unwrap();
                if total <= 0.0 {
                    let _: i64 = redis::cmd("ZREM")
                        .arg(format!("stats_{}", self.name))
                        .arg(&member)
                        .query_async(conn)
                        .await
                        .unwrap();
                }
            }
        }
    }

    /// The `_last_slot` property at `now`.
    async fn last_slot(&self, conn: &mut MultiplexedConnection, now: i64) -> i64 {
        let key = format!("last_slot_{}", self.name);
        let stored: Option<i64> = redis::cmd("GET").arg(&key).query_async(conn).await.unwrap();
        let mut last_slot = match stored {
            Some(slot) => slot,
            None => {
                // `_set_first_slot()`.
                let first = floor_hour(now);
                let _: () = redis::cmd("SET")
                    .arg(&key)
                    .arg(first)
                    .query_async(conn)
                    .await
                    .unwrap();
                first
            }
        };
        let interval = self.interval * 3600;
        if last_slot + interval <= now {
            self.remove_all_expired_slots(conn, now).await;
        }
        while last_slot + interval <= now {
            last_slot += interval;
            let _: () = redis::cmd("SET")
                .arg(&key)
                .arg(last_slot)
                .query_async(conn)
                .await
                .unwrap();
        }
        last_slot
    }
}
