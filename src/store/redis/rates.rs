//! Rate windows in Redis: one string per key (`rate_{<key>}_<tiers>`, see `keys.rs`)
//! holding the packed time ring of [`crate::rates::ring`]. Hits and checks are one call
//! of `rate_hit.lua` each; reads are one `GET`, counted here by the same code as the
//! memory store's.
//!
//! Retry classes: a hit or a check adds, so it is [`Retry::Never`] (a lost reply is
//! reported, never re-sent); a read (`GET`) and a delete (`UNLINK`) are
//! [`Retry::Idempotent`].

use async_trait::async_trait;
use futures_util::future::join_all;

use super::conn::{RedisConn, Retry};
use super::{RedisStore, keys};
use crate::domain::Timestamp;
use crate::error::{Error, Result};
use crate::rates::ring::RateRing;
use crate::rates::{RateKey, RateTiers, RateWindow, Verdict};
use crate::store::rates::{RateHit, RateStore};

/// One call of `rate_hit.lua`: a hit, or with `check` (window, limit) a check.
async fn call(
    conn: &RedisConn,
    tiers: &RateTiers,
    key: &RateKey,
    now: Timestamp,
    at: Timestamp,
    count: u32,
    check: Option<(&RateWindow, u64)>,
) -> Result<Vec<i64>> {
    let mut invocation = conn.scripts().rate_hit.key(keys::rate(key, tiers));
    invocation
        .arg(now.unix_millis())
        .arg(at.unix_millis())
        .arg(count)
        .arg(tiers.tiers().len());
    for tier in tiers.tiers() {
        invocation.arg(tier.slot_ms()).arg(tier.slots);
    }
    if let Some((window, limit)) = check {
        invocation.arg(window.tier + 1).arg(window.slots).arg(limit);
    }
    let reply: Vec<i64> = conn.invoke(&invocation, Retry::Never).await?;
    match reply.first() {
        Some(-1) => Err(Error::RateOverflow {
            key: key.to_string(),
        }),
        Some(_) => Ok(reply),
        None => Err(Error::Store(format!("rate_hit.lua answered {reply:?}"))),
    }
}

#[async_trait]
impl RateStore for RedisStore {
    async fn rate_hits(
        &self,
        tiers: &RateTiers,
        now: Timestamp,
        hits: &[RateHit],
    ) -> Result<Vec<Result<usize>>> {
        // The calls go out together on the multiplexed connection (one pipeline).
        let replies = join_all(
            hits.iter()
                .map(|hit| call(&self.conn, tiers, &hit.key, now, hit.at, hit.count, None)),
        )
        .await;
        replies
            .into_iter()
            .map(|reply| match reply {
                Ok(values) => Ok(Ok(values[0].max(0) as usize)),
                Err(e @ Error::RateOverflow { .. }) => Ok(Err(e)),
                Err(e) => Err(e),
            })
            .collect()
    }

    async fn rate_counts(
        &self,
        tiers: &RateTiers,
        key: &RateKey,
        windows: &[RateWindow],
        now: Timestamp,
    ) -> Result<Vec<u64>> {
        let bytes: Option<Vec<u8>> = self
            .conn
            .query(
                redis::cmd("GET").arg(keys::rate(key, tiers)),
                None,
                Retry::Idempotent,
            )
            .await?;
        let ring = RateRing::from_bytes(tiers, &bytes.unwrap_or_default());
        Ok(windows.iter().map(|w| ring.count(tiers, w, now)).collect())
    }

    async fn rate_check(
        &self,
        tiers: &RateTiers,
        key: &RateKey,
        window: &RateWindow,
        now: Timestamp,
        limit: u64,
        count: u32,
    ) -> Result<Verdict> {
        let reply = call(
            &self.conn,
            tiers,
            key,
            now,
            now,
            count,
            Some((window, limit)),
        )
        .await?;
        let [allowed, window_count, retry_ms] = reply[..] else {
            return Err(Error::Store(format!("rate_hit.lua answered {reply:?}")));
        };
        Ok(crate::rates::ring::CheckOutcome {
            allowed: allowed == 1,
            count: window_count.max(0) as u64,
            retry_after_ms: (retry_ms >= 0).then_some(retry_ms),
        }
        .verdict(limit))
    }

    async fn rate_delete(&self, tiers: &RateTiers, key: &RateKey) -> Result<bool> {
        let removed: i64 = self
            .conn
            .query(
                redis::cmd("UNLINK").arg(keys::rate(key, tiers)),
                None,
                Retry::Idempotent,
            )
            .await?;
        Ok(removed > 0)
    }
}
