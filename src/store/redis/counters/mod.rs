//! Counters in Redis. Per counter, one record and one hash of samples per precision,
//! all under the counter's `{<name>}` hash tag, so each script call is atomic on one
//! Cluster node; the index of counters is its own key, touched only by its own
//! single-key commands, and only when a counter is first seen or forgotten.
//!
//! A counter's own precisions, when it has some, are one more key under its tag
//! (`counterconf_{<name>}`), checked by the increment script against what the caller
//! assumed.
//!
//! Retry classes: the increment adds, so it is [`Retry::Never`]; everything else sets,
//! deletes or reads (the own precisions: `SET`, `UNLINK`, `GET`), and is
//! [`Retry::Idempotent`].

use std::collections::HashMap;

use async_trait::async_trait;
use redis::Value;

use super::RedisStore;
use crate::domain::counter::{CleanPlan, CounterName, SliceSums};
use crate::domain::{Span, Timestamp};
use crate::error::{Error, Result};
use crate::store::redis::conn::reply;
use crate::store::redis::conn::{RedisConn, Retry};
use crate::store::{CounterCleaned, CounterInfo, CounterStore, Incremented, new_version};

/// Most samples one clean-up call deletes, so no call holds Redis for long.
const CLEAN_BUDGET: usize = 1_000;

/// Index entries read per `HSCAN` call.
const LIST_PAGE: usize = 200;

/// How many times a call that found the record's precisions changed reads them again.
const CHANGED_RETRIES: usize = 3;

fn csv(precisions: &[Span]) -> String {
    let seconds: Vec<String> = precisions.iter().map(|p| p.seconds().to_string()).collect();
    seconds.join(",")
}

fn parse_csv(text: &str) -> Result<Vec<Span>> {
    text.split(',')
        .map(|p| {
            p.parse::<u64>()
                .ok()
                .and_then(|s| Span::from_seconds(s).ok())
                .ok_or_else(|| Error::store(format!("bad counter precisions {text:?}")))
        })
        .collect()
}

/// The record's precisions as stored (the comma-separated text) and parsed.
async fn read_precisions(
    conn: &RedisConn,
    name: &CounterName,
) -> Result<Option<(String, Vec<Span>)>> {
    let text: Option<String> = conn
        .query(
            redis::cmd("HGET")
                .arg(conn.keys().counter_record(name))
                .arg("precisions"),
            None,
            Retry::Idempotent,
        )
        .await?;
    text.map(|t| parse_csv(&t).map(|p| (t, p))).transpose()
}

/// Removes `name` from the index if its entry is generation `generation`.
async fn unindex(conn: &RedisConn, name: &CounterName, generation: &str) -> Result<()> {
    let mut invocation = conn.scripts().counter_unindex.prepare_invoke();
    invocation
        .key(conn.keys().counter_index())
        .arg(name.as_str())
        .arg(generation);
    conn.invoke::<i64>(&invocation, Retry::Idempotent).await?;
    Ok(())
}

/// The generation the index lists for `name`.
async fn indexed_generation(conn: &RedisConn, name: &CounterName) -> Result<Option<String>> {
    conn.query(
        redis::cmd("HGET")
            .arg(conn.keys().counter_index())
            .arg(name.as_str()),
        None,
        Retry::Idempotent,
    )
    .await
}

/// A script's `{status, ..., generation}` reply.
fn status_reply(v: Value, what: &str) -> Result<(String, Vec<Value>)> {
    let mut items = reply::array(v, what)?.into_iter();
    let status = reply::string(&items.next().unwrap_or(Value::Nil), what)?;
    Ok((status, items.collect()))
}

#[async_trait]
impl CounterStore for RedisStore {
    async fn incr_counter(
        &self,
        name: &CounterName,
        configured: Option<&[Span]>,
        sums: &SliceSums,
    ) -> Result<Incremented> {
        let conn = &self.conn;
        let precisions: Vec<Span> = sums.iter().map(|(p, _)| *p).collect();
        let mut invocation = conn.scripts().counter_incr.prepare_invoke();
        invocation
            .key(conn.keys().counter_record(name))
            .key(conn.keys().counter_config(name));
        for p in &precisions {
            invocation.key(conn.keys().counter_samples(name, *p));
        }
        invocation
            .arg(csv(&precisions))
            .arg(new_version().to_string())
            .arg(configured.map(csv).unwrap_or_default());
        for (_, slices) in sums {
            invocation.arg(slices.len());
            for (slice, sum) in slices {
                invocation.arg(*slice).arg(*sum);
            }
        }
        let reply = reply::array(conn.invoke(&invocation, Retry::Never).await?, "incr")?;
        let generation = reply::opt_string(reply.first().unwrap_or(&Value::Nil), "incr")?;
        let needs_index = reply::int(reply.get(1).unwrap_or(&Value::Nil), "incr")?;
        let Some(generation) = generation else {
            if needs_index == 0 {
                return Ok(Incremented::OutOfRange);
            }
            let own = reply::string(reply.get(2).unwrap_or(&Value::Nil), "incr")?;
            let own = (!own.is_empty()).then(|| parse_csv(&own)).transpose()?;
            return Ok(Incremented::Precisions(own));
        };
        if needs_index == 1 {
            conn.query::<i64>(
                redis::cmd("HSET")
                    .arg(conn.keys().counter_index())
                    .arg(name.as_str())
                    .arg(&generation),
                None,
                Retry::Idempotent,
            )
            .await?;
            let mut marked = conn.scripts().counter_indexed.prepare_invoke();
            marked
                .key(conn.keys().counter_record(name))
                .arg(&generation);
            conn.invoke::<i64>(&marked, Retry::Idempotent).await?;
        }
        Ok(Incremented::Done)
    }

    async fn set_counter_config(
        &self,
        name: &CounterName,
        precisions: Option<&[Span]>,
    ) -> Result<()> {
        let key = self.conn.keys().counter_config(name);
        let cmd = match precisions {
            Some(p) => redis::cmd("SET").arg(key).arg(csv(p)).clone(),
            None => redis::cmd("UNLINK").arg(key).clone(),
        };
        self.conn
            .query::<Value>(&cmd, None, Retry::Idempotent)
            .await?;
        Ok(())
    }

    async fn counter_config(&self, name: &CounterName) -> Result<Option<Vec<Span>>> {
        let text: Option<String> = self
            .conn
            .query(
                redis::cmd("GET").arg(self.conn.keys().counter_config(name)),
                None,
                Retry::Idempotent,
            )
            .await?;
        text.map(|t| parse_csv(&t)).transpose()
    }

    async fn counter_samples(
        &self,
        name: &CounterName,
        precision: Span,
    ) -> Result<Option<Vec<(i64, i64)>>> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGET")
            .arg(self.conn.keys().counter_record(name))
            .arg("precisions")
            .cmd("HGETALL")
            .arg(self.conn.keys().counter_samples(name, precision));
        let (precisions, samples): (Option<String>, HashMap<i64, i64>) =
            self.conn.query_pipe(&pipe, None, Retry::Idempotent).await?;
        match precisions {
            Some(text) if parse_csv(&text)?.contains(&precision) => {
                Ok(Some(samples.into_iter().collect()))
            }
            _ => Ok(None),
        }
    }

    async fn counter_precisions(&self, name: &CounterName) -> Result<Option<Vec<Span>>> {
        Ok(read_precisions(&self.conn, name).await?.map(|(_, p)| p))
    }

    async fn list_counters(&self) -> Result<Vec<CounterInfo>> {
        let mut names = Vec::new();
        let mut cursor = 0u64;
        loop {
            let (next, page): (u64, Vec<String>) = self
                .conn
                .query(
                    redis::cmd("HSCAN")
                        .arg(self.conn.keys().counter_index())
                        .arg(cursor)
                        .arg("COUNT")
                        .arg(LIST_PAGE),
                    None,
                    Retry::Idempotent,
                )
                .await?;
            // The page is field, value, field, value...
            names.extend(
                page.into_iter()
                    .step_by(2)
                    .filter_map(|n| CounterName::parse(&n).ok()),
            );
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        names.sort();
        names.dedup();
        let mut counters = Vec::with_capacity(names.len());
        for chunk in names.chunks(LIST_PAGE) {
            // One HGET per counter, sent together (each counter record has its own hash
            // tag, so on Redis Cluster they are on different nodes: not one pipeline).
            let commands: Vec<redis::Cmd> = chunk
                .iter()
                .map(|name| {
                    let mut cmd = redis::cmd("HGET");
                    cmd.arg(self.conn.keys().counter_record(name))
                        .arg("precisions");
                    cmd
                })
                .collect();
            let found: Vec<Option<String>> = futures_util::future::try_join_all(
                commands
                    .iter()
                    .map(|cmd| self.conn.query(cmd, None, Retry::Idempotent)),
            )
            .await?;
            for (name, text) in chunk.iter().zip(found) {
                if let Some(text) = text {
                    counters.push(CounterInfo {
                        name: name.clone(),
                        precisions: parse_csv(&text)?,
                    });
                }
            }
        }
        Ok(counters)
    }

    async fn drop_counter(&self, name: &CounterName) -> Result<bool> {
        let conn = &self.conn;
        self.set_counter_config(name, None).await?;
        for _ in 0..CHANGED_RETRIES {
            let Some((text, precisions)) = read_precisions(conn, name).await? else {
                if let Some(generation) = indexed_generation(conn, name).await? {
                    unindex(conn, name, &generation).await?;
                }
                return Ok(false);
            };
            let mut invocation = conn.scripts().counter_drop.prepare_invoke();
            invocation.key(conn.keys().counter_record(name));
            for p in &precisions {
                invocation.key(conn.keys().counter_samples(name, *p));
            }
            invocation.arg(&text);
            let (status, rest) =
                status_reply(conn.invoke(&invocation, Retry::Idempotent).await?, "drop")?;
            match status.as_str() {
                "gone" => return Ok(false),
                "dropped" => {
                    let generation = reply::string(&rest[0], "drop")?;
                    unindex(conn, name, &generation).await?;
                    return Ok(true);
                }
                _ => continue,
            }
        }
        Err(Error::store(format!(
            "counter {name:?} kept changing its precisions"
        )))
    }

    async fn clean_counter(
        &self,
        name: &CounterName,
        now: Timestamp,
        plan: CleanPlan,
    ) -> Result<CounterCleaned> {
        let conn = &self.conn;
        let mut cleaned = CounterCleaned::default();
        let mut changed = 0;
        loop {
            let Some((text, precisions)) = read_precisions(conn, name).await? else {
                // Forgotten by a clean-up that died before unlisting it: finish that.
                if let Some(generation) = indexed_generation(conn, name).await? {
                    unindex(conn, name, &generation).await?;
                }
                return Ok(cleaned);
            };
            let mut invocation = conn.scripts().counter_clean.prepare_invoke();
            invocation.key(conn.keys().counter_record(name));
            for p in &precisions {
                invocation.key(conn.keys().counter_samples(name, *p));
            }
            invocation.arg(&text).arg(CLEAN_BUDGET);
            for p in &precisions {
                if plan.visits(*p) {
                    invocation.arg(plan.cutoff(*p, now));
                } else {
                    invocation.arg("-");
                }
            }
            let (status, rest) =
                status_reply(conn.invoke(&invocation, Retry::Idempotent).await?, "clean")?;
            let removed = rest.first().map(|v| reply::int(v, "clean")).transpose()?;
            cleaned.removed += removed.unwrap_or(0).max(0) as u64;
            match status.as_str() {
                "more" => continue,
                "changed" if changed < CHANGED_RETRIES => changed += 1,
                "forgotten" => {
                    let generation = reply::string(&rest[1], "clean")?;
                    unindex(conn, name, &generation).await?;
                    cleaned.forgotten = true;
                    return Ok(cleaned);
                }
                "kept" | "gone" => return Ok(cleaned),
                other => {
                    return Err(Error::store(format!(
                        "counter clean-up of {name:?} answered {other:?}"
                    )));
                }
            }
        }
    }
}
