//! Rate windows in Redis: one string per key (`rate_{<key>}_<tiers>`, see `board/keys.rs`)
//! holding the packed time ring of [`crate::rates::ring`]. Hits go in batches, those of
//! concurrent callers merged in flight first ([`commit`]): grouped
//! by key (at most [`CELLS_PER_CALL`] counters' worth of one key in one call), the
//! groups of many keys share one call of `rate_hits.lua` (at most [`HITS_PER_CALL`]
//! hits, so that no call holds Redis long; on a Cluster, keys of one hash slot), and the
//! calls go out in one pipeline. Per key, the client sends a [`KeyPlan`] (what each
//! hit adds where, computed from `now`) and its guess of the key's head (see
//! [`heads`]), so that the script's common case is one command per key: a
//! `BITFIELD` whether or not the head moves, a `SET` for a fresh key. A check is one
//! call of `rate_hit.lua`; reads are one `GET`, counted here by the same code as the
//! memory store's.
//!
//! Retry classes: a hit batch or a check adds, so it is [`Retry::Never`] (a lost reply
//! is reported, never re-sent); a read (`GET`), a delete (`UNLINK`) and loading a script
//! (`SCRIPT LOAD`, before re-sending only the calls Redis refused with `NOSCRIPT`, which
//! ran nothing) are [`Retry::Idempotent`].

pub(crate) mod commit;
pub(crate) mod heads;

use std::collections::HashMap;

use async_trait::async_trait;
use redis::cluster_routing::Slot;
use redis::{Cmd, RedisResult};

use super::RedisStore;
use crate::domain::Timestamp;
use crate::error::{Error, Result};
use crate::rates::ring::RateRing;
use crate::rates::{RateKey, RateTiers, RateWindow, Verdict};
use crate::store::rates::{RateHit, RateStore};
use crate::store::redis::conn::errors::store_error;
use crate::store::redis::conn::script_pipeline;
use crate::store::redis::conn::scripts::RATE_HITS_SOURCE;
use crate::store::redis::conn::{RedisConn, Retry};
use heads::RateHeads;

/// The most counters (hits × tiers) one call of `rate_hits.lua` is given, so that its
/// one `BITFIELD` stays far inside what a Lua call can pass (8,000 arguments).
const CELLS_PER_CALL: usize = 1024;

/// The most hits one call of `rate_hits.lua` plays, over all its keys: about 1 ms of
/// Redis time. A call's fixed cost (about 10 µs) is shared by its keys.
const HITS_PER_CALL: usize = 512;

/// A check: one call of `rate_hit.lua` with the window and the limit.
async fn check_call(
    conn: &RedisConn,
    tiers: &RateTiers,
    key: &RateKey,
    now: Timestamp,
    count: u32,
    (window, limit): (&RateWindow, u64),
) -> Result<Vec<i64>> {
    let mut invocation = conn.scripts().rate_hit.key(conn.keys().rate(key, tiers));
    invocation
        .arg(now.unix_millis())
        .arg(now.unix_millis())
        .arg(count)
        .arg(tiers.tiers().len());
    for tier in tiers.tiers() {
        invocation.arg(tier.slot_ms()).arg(tier.slots);
    }
    invocation.arg(window.tier + 1).arg(window.slots).arg(limit);
    let reply: Vec<i64> = conn.invoke(&invocation, Retry::Never).await?;
    match reply.first() {
        Some(-1) => Err(Error::RateOverflow {
            key: key.to_string(),
        }),
        Some(_) => Ok(reply),
        None => Err(Error::store(format!("rate_hit.lua answered {reply:?}"))),
    }
}

/// What `rate_hits.lua` answers per key: empty when every hit counted as [`KeyPlan`]
/// computed, else per hit the tiers that counted it (`-1`: it would overflow); then, one
/// more entry, per key the finest head as stored after (`-1`: not known).
type Reply = Vec<Vec<i64>>;

/// One key's part of a call of `rate_hits.lua`, computed from `now` alone: which tiers
/// count each hit, and what the hits add to each counter. Exact when no head moves,
/// which the script checks with `need` and `lim`.
struct KeyPlan {
    /// Per hit, the tiers that count it.
    counted: Vec<usize>,
    /// Per tier: the newest slot the hits reach (at least now's).
    need: Vec<i64>,
    /// Per tier: the oldest slot counted there plus the tier's slots (`i64::MAX`: none).
    lim: Vec<i64>,
    /// (bit offset of a counter, what the hits add to it), in order of first use.
    cells: Vec<(u64, u64)>,
}

/// The shape of the ring as [`KeyPlan`] needs it, computed once per batch: per tier its
/// slot length (ms), slots, the bit offset of its first counter, and now's slot.
struct Shape(Vec<(i64, i64, u64, i64)>);

impl Shape {
    fn new(tiers: &RateTiers, now: Timestamp) -> Self {
        let mut base = 64 * tiers.tiers().len() as u64;
        Shape(
            tiers
                .tiers()
                .iter()
                .map(|tier| {
                    let b = base;
                    base += 32 * u64::from(tier.slots);
                    let g = tier.slot_ms();
                    (g, i64::from(tier.slots), b, now.unix_millis().div_euclid(g))
                })
                .collect(),
        )
    }
}

/// Up to this many counters a key's plan finds its counters by a scan; beyond, by a map.
const SCANNED_CELLS: usize = 16;

impl KeyPlan {
    fn new(shape: &Shape, hits: impl Iterator<Item = (Timestamp, u32)>) -> Self {
        let mut plan = KeyPlan {
            counted: Vec::new(),
            need: shape
                .0
                .iter()
                .map(|&(_, _, _, now_slot)| now_slot)
                .collect(),
            lim: vec![i64::MAX; shape.0.len()],
            cells: Vec::new(),
        };
        // Most keys of a batch have a few hits: their counters are found by a scan.
        let mut cell_of: Option<HashMap<u64, usize>> = None;
        for (at, count) in hits {
            let mut counted = 0;
            for (t, &(g, n, base, now_slot)) in shape.0.iter().enumerate() {
                let slot = at.unix_millis().div_euclid(g);
                if slot <= now_slot - n {
                    continue;
                }
                counted += 1;
                plan.need[t] = plan.need[t].max(slot);
                plan.lim[t] = plan.lim[t].min(slot + n);
                let offset = base + 32 * slot.rem_euclid(n) as u64;
                let found = match &cell_of {
                    Some(map) => map.get(&offset).copied(),
                    None => plan.cells.iter().position(|&(o, _)| o == offset),
                };
                let cell = found.unwrap_or_else(|| {
                    plan.cells.push((offset, 0));
                    let cell = plan.cells.len() - 1;
                    match &mut cell_of {
                        Some(map) => {
                            map.insert(offset, cell);
                        }
                        None if plan.cells.len() > SCANNED_CELLS => {
                            let map = plan.cells.iter().enumerate().map(|(i, &(o, _))| (o, i));
                            cell_of = Some(map.collect());
                        }
                        None => {}
                    }
                    cell
                });
                plan.cells[cell].1 += u64::from(count);
            }
            plan.counted.push(counted);
        }
        plan
    }
}

/// The hits of `hits` grouped into calls: per call, the indexes of one key's hits in
/// order, at most `per_call` of them; calls in the order of their first hit.
fn group_by_key(hits: &[RateHit], per_call: usize) -> Vec<Vec<usize>> {
    let mut calls: Vec<Vec<usize>> = Vec::new();
    let mut open: HashMap<&RateKey, usize> = HashMap::new();
    for (i, hit) in hits.iter().enumerate() {
        match open.get(&hit.key) {
            Some(&c) if calls[c].len() < per_call => calls[c].push(i),
            _ => {
                open.insert(&hit.key, calls.len());
                calls.push(vec![i]);
            }
        }
    }
    calls
}

/// The calls of a batch: each call a list of key groups from [`group_by_key`], with at
/// most `per_call` hits in all, and (on a Cluster, where `slot_of` gives each key's hash
/// slot) keys of one slot only. A key's groups stay in order (a later group goes in the
/// same call or a later one).
fn pack_calls(
    groups: Vec<Vec<usize>>,
    per_call: usize,
    slot_of: impl Fn(usize) -> Option<Slot>,
) -> Vec<Vec<Vec<usize>>> {
    let mut calls: Vec<Vec<Vec<usize>>> = Vec::new();
    // Per slot (one entry on a single node): its open call and that call's hits.
    let mut open: HashMap<Option<Slot>, (usize, usize)> = HashMap::new();
    for group in groups {
        let slot = slot_of(group[0]);
        let (call, size) = match open.get(&slot) {
            Some(&(call, size)) if size + group.len() <= per_call => (call, size),
            _ => {
                calls.push(Vec::new());
                (calls.len() - 1, 0)
            }
        };
        open.insert(slot, (call, size + group.len()));
        calls[call].push(group);
    }
    calls
}

/// Runs `calls` as [`run_pipelined`] does: in one pipeline on a single node; on a
/// Cluster, where a pipeline may not cross hash slots, in one pipeline per slot
/// (`slots[i]` is call i's), all at once.
async fn run_calls(
    conn: &RedisConn,
    calls: Vec<Cmd>,
    slots: &[Option<Slot>],
) -> Result<Vec<RedisResult<Reply>>> {
    let mut by_slot: HashMap<Option<Slot>, Vec<usize>> = HashMap::new();
    for (i, slot) in slots.iter().enumerate() {
        by_slot.entry(*slot).or_default().push(i);
    }
    if by_slot.len() <= 1 {
        return run_pipelined(conn, &calls).await;
    }
    let groups: Vec<Vec<usize>> = by_slot.into_values().collect();
    let runs = groups.iter().map(|group| {
        let part: Vec<Cmd> = group.iter().map(|&i| calls[i].clone()).collect();
        async move { run_pipelined(conn, &part).await }
    });
    let parts = futures_util::future::try_join_all(runs).await?;
    let mut replies: Vec<Option<RedisResult<Reply>>> = (0..calls.len()).map(|_| None).collect();
    for (group, part) in groups.iter().zip(parts) {
        for (&i, reply) in group.iter().zip(part) {
            replies[i] = Some(reply);
        }
    }
    Ok(replies
        .into_iter()
        .map(|r| r.expect("every call is in one group"))
        .collect())
}

/// Runs `calls` (`EVALSHA`s of `rate_hits.lua`) in one pipeline (see
/// [`script_pipeline`](crate::store::redis::conn::script_pipeline)). Retry class: Never (hits count).
async fn run_pipelined(conn: &RedisConn, calls: &[Cmd]) -> Result<Vec<RedisResult<Reply>>> {
    script_pipeline::run_pipelined(conn, &RATE_HITS_SOURCE, calls, Retry::Never).await
}

/// Sends the batch `hits` seen at `now` as calls of `rate_hits.lua` (see the module
/// docs), each key with the guess of its head from `heads`, which the replies correct;
/// per hit, what [`RateStore::rate_hits`] answers. Concurrent batches reach it merged
/// ([`commit`]).
pub(crate) async fn send_hits(
    conn: &RedisConn,
    heads: &RateHeads,
    tiers: &RateTiers,
    now: Timestamp,
    hits: &[RateHit],
) -> Result<Vec<Result<usize>>> {
    let per_key = (CELLS_PER_CALL / tiers.tiers().len()).max(1);
    let cluster = conn.is_cluster();
    let slot_of = |i: usize| cluster.then(|| Slot::for_key(conn.keys().rate(&hits[i].key, tiers)));
    let calls = pack_calls(group_by_key(hits, per_key), HITS_PER_CALL, slot_of);
    let script = &conn.scripts().rate_hits;
    let shape = Shape::new(tiers, now);
    let plans: Vec<Vec<KeyPlan>> = calls
        .iter()
        .map(|call| {
            call.iter()
                .map(|group| {
                    let hits = group.iter().map(|&i| (hits[i].at, hits[i].count));
                    KeyPlan::new(&shape, hits)
                })
                .collect()
        })
        .collect();
    // Per call, per key: its Redis key and that key's id among the guesses.
    let names: Vec<Vec<(String, u64)>> = calls
        .iter()
        .map(|call| {
            call.iter()
                .map(|group| {
                    let name = conn.keys().rate(&hits[group[0]].key, tiers);
                    let id = heads::id(&name);
                    (name, id)
                })
                .collect()
        })
        .collect();
    // In the order the script plays them (a key's later group guesses what its earlier
    // one leaves).
    let mut guesses = heads
        .guess(names.iter().zip(&plans).flat_map(|(names, plans)| {
            names
                .iter()
                .zip(plans)
                .map(|(&(_, id), plan)| (id, (!plan.cells.is_empty()).then(|| plan.need[0])))
        }))
        .into_iter();
    let guesses: Vec<Vec<i64>> = calls
        .iter()
        .map(|call| guesses.by_ref().take(call.len()).collect())
        .collect();
    let invocations: Vec<Cmd> = calls
        .iter()
        .zip(&plans)
        .zip(names.iter().zip(&guesses))
        .map(|((call, plans), (names, guesses))| {
            let mut cmd = redis::cmd("EVALSHA");
            cmd.arg(script.get_hash()).arg(call.len());
            for (name, _) in names {
                cmd.arg(name);
            }
            cmd.arg(now.unix_millis()).arg(tiers.tiers().len());
            for tier in tiers.tiers() {
                cmd.arg(tier.slot_ms()).arg(tier.slots);
            }
            for ((group, plan), guess) in call.iter().zip(plans).zip(guesses) {
                cmd.arg(group.len())
                    .arg(plan.cells.len())
                    .arg(*guess)
                    .arg(&plan.need)
                    .arg(&plan.lim);
                for &(offset, add) in &plan.cells {
                    cmd.arg(offset).arg(add);
                }
                for &i in group {
                    cmd.arg(hits[i].at.unix_millis()).arg(hits[i].count);
                }
            }
            cmd
        })
        .collect();
    let slots: Vec<Option<Slot>> = calls.iter().map(|call| slot_of(call[0][0])).collect();
    let replies = run_calls(conn, invocations, &slots).await?;
    let mut statuses: Vec<Option<Result<usize>>> = (0..hits.len()).map(|_| None).collect();
    for (((call, plans), reply), (names, guesses)) in calls
        .iter()
        .zip(&plans)
        .zip(replies)
        .zip(names.iter().zip(&guesses))
    {
        let reply = match reply {
            Ok(mut per_key)
                if per_key.len() == call.len() + 1
                    && per_key[call.len()].len() == call.len()
                    && per_key
                        .iter()
                        .zip(call)
                        .all(|(r, group)| r.is_empty() || r.len() == group.len()) =>
            {
                let after = per_key.pop().expect("the heads");
                let sent = names.iter().zip(guesses).zip(after);
                heads.answered(sent.map(|((&(_, id), &guess), head)| (id, guess, head)));
                Ok(per_key)
            }
            Ok(per_key) => Err(Error::store(format!(
                "rate_hits.lua answered {per_key:?} for {} keys",
                call.len(),
            ))),
            Err(e) => Err(store_error(e, None)),
        };
        if reply.is_err() {
            heads.forget(names.iter().map(|&(_, id)| id));
        }
        for (k, (group, plan)) in call.iter().zip(plans).enumerate() {
            for (h, &i) in group.iter().enumerate() {
                statuses[i] = Some(match &reply {
                    Ok(per_key) if per_key[k].is_empty() => Ok(plan.counted[h]),
                    Ok(per_key) if per_key[k][h] >= 0 => Ok(per_key[k][h] as usize),
                    Ok(_) => Err(Error::RateOverflow {
                        key: hits[i].key.to_string(),
                    }),
                    Err(e) => Err(e.clone()),
                });
            }
        }
    }
    Ok(statuses
        .into_iter()
        .map(|s| s.unwrap_or_else(|| Err(Error::store("no status for a hit"))))
        .collect())
}

#[async_trait]
impl RateStore for RedisStore {
    async fn rate_hits(
        &self,
        tiers: &RateTiers,
        now: Timestamp,
        hits: &[RateHit],
    ) -> Result<Vec<Result<usize>>> {
        self.rates.hits(&self.conn, tiers, now, hits).await
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
                redis::cmd("GET").arg(self.conn.keys().rate(key, tiers)),
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
        // A check moves the head without telling the guesses.
        let name = self.conn.keys().rate(key, tiers);
        self.rates.heads().forget(std::iter::once(heads::id(&name)));
        let reply = check_call(&self.conn, tiers, key, now, count, (window, limit)).await?;
        let [allowed, window_count, retry_ms] = reply[..] else {
            return Err(Error::store(format!("rate_hit.lua answered {reply:?}")));
        };
        Ok(crate::rates::ring::CheckOutcome {
            allowed: allowed == 1,
            count: window_count.max(0) as u64,
            retry_after_ms: (retry_ms >= 0).then_some(retry_ms),
        }
        .verdict(limit))
    }

    async fn rate_delete(&self, tiers: &RateTiers, key: &RateKey) -> Result<bool> {
        let name = self.conn.keys().rate(key, tiers);
        self.rates.heads().forget(std::iter::once(heads::id(&name)));
        let removed: i64 = self
            .conn
            .query(
                redis::cmd("UNLINK").arg(self.conn.keys().rate(key, tiers)),
                None,
                Retry::Idempotent,
            )
            .await?;
        Ok(removed > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(ms: i64) -> Timestamp {
        Timestamp::from_unix_millis(ms).unwrap()
    }

    #[test]
    fn a_key_plan_adds_each_hit_to_the_counters_of_the_tiers_that_count_it_from_now() {
        // Layout: 3 heads (192 bits), then 5 + 4 + 3 counters of 32 bits.
        let tiers = RateTiers::parse("5x1s,4x5s,3x1m").unwrap();
        let now = 600_000 + 7_500; // slots 607 (1 s), 121 (5 s), 10 (1 min)
        let hits = [
            (ts(now), 2),           // 607, 121, 10: every tier
            (ts(now - 1_000), 1),   // 606, 121, 10
            (ts(now - 5_000), 4),   // 602 is out of the 1 s tier; 120, 10
            (ts(now - 200_000), 1), // 407, 81, 6: out of every tier
            (ts(now + 3_000), 1),   // 610 (future), 122, 10
        ];
        let plan = KeyPlan::new(&Shape::new(&tiers, ts(now)), hits.into_iter());
        assert_eq!(plan.counted, [3, 3, 2, 0, 3]);
        assert_eq!(plan.need, [610, 122, 10]);
        assert_eq!(plan.lim, [606 + 5, 120 + 4, 10 + 3]);
        let (s, m) = (192, 192 + 5 * 32);
        let h = m + 4 * 32;
        assert_eq!(
            plan.cells,
            [
                // (tier's first counter + 32 × slot mod n, sum of the counts)
                (s + 2 * 32, 2),         // 607 mod 5
                (m + 32, 2 + 1),         // 121 mod 4
                (h + 32, 2 + 1 + 4 + 1), // 10 mod 3
                (s + 32, 1),             // 606 mod 5
                (m, 4),                  // 120 mod 4
                (s, 1),                  // 610 mod 5
                (m + 2 * 32, 1),         // 122 mod 4
            ]
        );
    }

    #[test]
    fn a_key_plan_with_many_counters_finds_each_once_past_the_scan() {
        let tiers = RateTiers::parse("60x1s").unwrap();
        let now = 600_000;
        // 40 distinct seconds, each hit twice, far apart in the order: 40 counters.
        let hits: Vec<(Timestamp, u32)> = (0..80)
            .map(|i| (ts(now - 1_000 * (i % 40)), 1 + (i / 40) as u32))
            .collect();
        let plan = KeyPlan::new(&Shape::new(&tiers, ts(now)), hits.into_iter());
        assert_eq!(plan.cells.len(), 40);
        assert!(plan.cells.iter().all(|&(_, add)| add == 3));
        // Second 600 at position 0 (after the 64-bit head), second 561 at position 21.
        assert_eq!(plan.cells[0], (64, 3));
        assert_eq!(plan.cells[39], (64 + 32 * 21, 3));
        assert_eq!(plan.counted, vec![1; 80]);
    }
}
