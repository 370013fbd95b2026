//! Stats in Redis: per (context, kind) two hashes (the newest hour and the one before)
//! under the context's own hash tag; per kind the slowest list and its metadata under
//! the kind's tag. Records go through group commit ([`commit`]): concurrent
//! records of many contexts share one script call, which on a single node also updates
//! the slowest lists; on a Cluster the lists, on other nodes, take one more call per
//! kind ([`calls`]).
//!
//! The kinds recorded are listed in `stat_kinds` (a key of its own: its own slot on a
//! Cluster): beside a record, not in its script, one `ZADD` per kind, process and hour
//! ([`KindRegistry`]), sent at the same time as the record, so no record waits one more
//! round trip for it.
//!
//! Retry classes: a record call adds, so it is [`Retry::Never`]; a list update sets a
//! mean only if it is newer, the kind registration sets a member, and the reads read:
//! [`Retry::Idempotent`].

pub(crate) mod calls;
pub(crate) mod commit;

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::RedisStore;
use crate::domain::stats::{Moments, SlowEntry, StatsContext, StatsKind, StoredStats};
use crate::error::{Error, Result};
use crate::store::redis::conn::Retry;
use crate::store::redis::conn::reply::parse_integer;
use crate::store::{StatRecord, StatsStore};
use calls::Recorded;

/// An hour's hash as moments, `None` when it is empty.
fn moments_of(fields: HashMap<String, String>) -> Result<Option<(i64, Moments)>> {
    if fields.is_empty() {
        return Ok(None);
    }
    let bad = || Error::store(format!("unexpected stats hash {fields:?}"));
    let num = |name: &str| -> Result<f64> {
        fields
            .get(name)
            .and_then(|v| v.parse::<f64>().ok())
            .ok_or_else(bad)
    };
    let hour = fields
        .get("hour")
        .and_then(|h| parse_integer(h))
        .ok_or_else(bad)?;
    let mut moments = Moments {
        count: num("count")? as u64,
        sum: num("sum")?,
        min: num("min")?,
        max: num("max")?,
        mean: num("mean")?,
        m2: num("m2")?,
        buckets: Default::default(),
    };
    for (field, value) in &fields {
        if field == "z" || field.starts_with('p') || field.starts_with('n') {
            let count = value.parse::<u64>().map_err(|_| bad())?;
            moments.buckets.insert(field.clone(), count);
        }
    }
    Ok(Some((hour, moments)))
}

/// The kinds this process registered in `stat_kinds`, each with the hour it was
/// registered in: a kind is registered again at most once an hour (so that a key lost or
/// flushed comes back), and a failed registration is retried by the next record.
#[derive(Debug, Default)]
pub(crate) struct KindRegistry(Mutex<HashMap<StatsKind, i64>>);

impl KindRegistry {
    /// Whether a record of `kind` in `hour` should register it; if so it counts as
    /// registered until [`failed`](Self::failed) says otherwise (concurrent records do
    /// not register it twice).
    fn claim(&self, kind: &StatsKind, hour: i64) -> bool {
        let mut kinds = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match kinds.get(kind) {
            Some(&registered) if registered >= hour => false,
            _ => {
                kinds.insert(kind.clone(), hour);
                true
            }
        }
    }

    /// The registration of `kind` failed: the next record tries again.
    fn failed(&self, kind: &StatsKind) {
        let mut kinds = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kinds.remove(kind);
    }
}

#[async_trait]
impl StatsStore for RedisStore {
    async fn record_stat(&self, r: StatRecord<'_>) -> Result<()> {
        let record = Recorded {
            context: r.context.clone(),
            kind: r.kind.clone(),
            values: r.values.to_vec(),
            buckets: r.buckets.clone(),
            hour: r.hour,
        };
        if !self.stats.kinds.claim(r.kind, r.hour) {
            return self.stats.record(&self.conn, record).await;
        }
        let mut zadd = redis::cmd("ZADD");
        zadd.arg(self.conn.keys().stat_kinds())
            .arg("GT")
            .arg(r.hour)
            .arg(r.kind.as_str());
        let register = self.conn.query::<i64>(&zadd, None, Retry::Idempotent);
        let (recorded, registered) =
            futures_util::future::join(self.stats.record(&self.conn, record), register).await;
        if registered.is_err() {
            // The record stands on its own; the listing catches up at the next one.
            self.stats.kinds.failed(r.kind);
        }
        recorded
    }

    async fn read_stats(&self, context: &StatsContext, kind: &StatsKind) -> Result<StoredStats> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGETALL")
            .arg(self.conn.keys().stat_newest(context, kind))
            .cmd("HGETALL")
            .arg(self.conn.keys().stat_before(context, kind));
        let (newest, before): (HashMap<String, String>, HashMap<String, String>) =
            self.conn.query_pipe(&pipe, None, Retry::Idempotent).await?;
        Ok(StoredStats {
            newest: moments_of(newest)?,
            before: moments_of(before)?,
        })
    }

    async fn slowest(&self, kind: &StatsKind, limit: usize) -> Result<Vec<SlowEntry>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let top: Vec<(String, f64)> = self
            .conn
            .query(
                redis::cmd("ZRANGE")
                    .arg(self.conn.keys().slowest(kind))
                    .arg(0)
                    .arg(limit - 1)
                    .arg("REV")
                    .arg("WITHSCORES"),
                None,
                Retry::Idempotent,
            )
            .await?;
        if top.is_empty() {
            return Ok(Vec::new());
        }
        let mut hmget = redis::cmd("HMGET");
        hmget.arg(self.conn.keys().slowest_meta(kind));
        for (context, _) in &top {
            hmget.arg(context);
        }
        let meta: Vec<Option<String>> = self.conn.query(&hmget, None, Retry::Idempotent).await?;
        Ok(top
            .into_iter()
            .zip(meta)
            .map(|((context, mean), meta)| SlowEntry {
                context,
                mean,
                count: meta
                    .and_then(|m| m.split_once(':').and_then(|(_, c)| c.parse().ok()))
                    .unwrap_or(0),
            })
            .collect())
    }

    async fn stat_kinds(&self) -> Result<Vec<StatsKind>> {
        let kinds: Vec<String> = self
            .conn
            .query(
                redis::cmd("ZRANGE")
                    .arg(self.conn.keys().stat_kinds())
                    .arg(0)
                    .arg(-1),
                None,
                Retry::Idempotent,
            )
            .await?;
        let mut kinds = kinds
            .iter()
            .map(|k| {
                StatsKind::parse(k)
                    .map_err(|_| Error::store(format!("bad kind {k:?} in stat_kinds")))
            })
            .collect::<Result<Vec<_>>>()?;
        kinds.sort();
        Ok(kinds)
    }
}
