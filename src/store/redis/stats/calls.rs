//! Stats records of many (context, kind)s in as few script calls as will do: records
//! are grouped per (context, kind, hour) (a record joins its (context, kind)'s latest
//! group when the hour is the same and the group stays within [`GROUP_VALUES`] values,
//! so the order of records is kept), the groups packed into calls of `stats_record.lua`
//! within a budget of Redis time ([`CALL_BUDGET_NS`], from the measured cost of a group
//! and of a value), all sent at once. Only a single record larger than a call's budget
//! (one caller's batch, recorded all or nothing) makes a call of its own beyond it.
//!
//! The values travel as one binary argument per group (8 bytes per value, little-endian
//! doubles), which the script decodes with `struct.unpack`: ~0.08 µs of Redis time per
//! value, against ~0.36 µs as one decimal argument each (7,150 values in one group:
//! 0.57 ms against 2.62 ms, measured in one run).
//!
//! On a single node each call also updates the slowest lists of its kinds (their keys
//! are passed to it), so a record is one call. On a Cluster a call holds groups of one
//! hash slot only ([`Slot::for_key`]), and the slowest lists, which live in their kind's
//! slot, are updated afterwards by one call of `stats_slowest.lua` per kind, from what
//! the record calls returned.
//!
//! Retry classes: a record call adds, so it is [`Retry::Never`] (a lost reply is
//! reported to every caller of the call, never re-sent); a slowest-list call sets a
//! mean only if it is newer than the one listed, so it is [`Retry::Idempotent`]. A
//! (context, kind)'s values split over several calls stay exact: each record is in one
//! call only, the calls of a slot run one after the other in the records' order, and
//! the script adds values one by one in that order, as a single call would.

use std::collections::{BTreeMap, HashMap};

use redis::cluster_routing::Slot;

use crate::domain::stats::{StatsContext, StatsKind};
use crate::error::{Error, Result};
use crate::store::redis::conn::{RedisConn, Retry};

/// Redis time of one group in a call of `stats_record.lua` (its `HMGET`, `HSET`,
/// `EXPIRE` and slowest-list entry, the list trimmed): ~12 µs measured on an idle
/// machine (256 groups of one value in 3.0–3.1 ms).
const GROUP_NS: u64 = 12_000;

/// Redis time of one value (decoded from the binary argument and added): ~0.08 µs
/// measured on an idle machine; counted as 0.1.
const VALUE_NS: u64 = 100;

/// Redis time one call may take, as measured on an idle machine: 0.4 ms, so that a
/// call stays within ~1 ms when Redis shares a busy machine (the stats flush under
/// 20,000 requests/s measured 2.4× the idle cost per value).
pub(crate) const CALL_BUDGET_NS: u64 = 400_000;

/// The most values a group holds when it is built of several records: a call of that
/// group alone stays within [`CALL_BUDGET_NS`] (3,880 values).
pub(crate) const GROUP_VALUES: usize = ((CALL_BUDGET_NS - GROUP_NS) / VALUE_NS) as usize;

/// The most contexts one call of `stats_slowest.lua` sets (a Cluster's slowest lists).
const CONTEXTS_PER_LIST_CALL: usize = 256;

/// The Redis time of a call holding `groups` groups and `values` values (see
/// [`GROUP_NS`], [`VALUE_NS`]).
fn call_cost(groups: usize, values: usize) -> u64 {
    groups as u64 * GROUP_NS + values as u64 * VALUE_NS
}

/// Values to record in one (context, kind), owned (see [`crate::store::StatRecord`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Recorded {
    pub context: StatsContext,
    pub kind: StatsKind,
    pub values: Vec<f64>,
    pub buckets: BTreeMap<String, u64>,
    pub hour: i64,
}

/// Records of one (context, kind) and hour, one group of a call.
#[derive(Debug, Clone, PartialEq)]
struct Group<'a> {
    /// The records it holds, by index.
    records: Vec<usize>,
    context: &'a StatsContext,
    kind: &'a StatsKind,
    hour: i64,
    values: Vec<f64>,
    buckets: BTreeMap<String, u64>,
}

/// The groups of `records`, in order: a record joins the latest group of its (context,
/// kind) when their hours are equal and the group stays within [`GROUP_VALUES`]
/// values, else starts a group.
fn group<'a>(records: &[&'a Recorded]) -> Vec<Group<'a>> {
    let mut groups: Vec<Group<'a>> = Vec::new();
    let mut latest: HashMap<(&'a StatsContext, &'a StatsKind), usize> = HashMap::new();
    for (i, &r) in records.iter().enumerate() {
        let at = match latest.get(&(&r.context, &r.kind)) {
            Some(&g)
                if groups[g].hour == r.hour
                    && groups[g].values.len() + r.values.len() <= GROUP_VALUES =>
            {
                g
            }
            _ => {
                latest.insert((&r.context, &r.kind), groups.len());
                groups.push(Group {
                    records: Vec::new(),
                    context: &r.context,
                    kind: &r.kind,
                    hour: r.hour,
                    values: Vec::new(),
                    buckets: BTreeMap::new(),
                });
                groups.len() - 1
            }
        };
        let g = &mut groups[at];
        g.records.push(i);
        g.values.extend_from_slice(&r.values);
        for (bucket, count) in &r.buckets {
            *g.buckets.entry(bucket.clone()).or_default() += count;
        }
    }
    groups
}

/// The calls: per call the indexes of its groups, in order. A call holds groups of one
/// slot (`slot_of`, `None` on a single node) within [`CALL_BUDGET_NS`] of Redis time
/// ([`call_cost`]), unless it is one group that alone costs more. A (context, kind) lives
/// in one slot, so its later groups go in the same call or a later one of that slot
/// (and [`record_many`] runs a slot's calls in order).
fn pack(groups: &[Group<'_>], slot_of: impl Fn(&Group<'_>) -> Option<Slot>) -> Vec<Vec<usize>> {
    let mut calls: Vec<Vec<usize>> = Vec::new();
    // Per slot: its open call and that call's values.
    let mut open: HashMap<Option<Slot>, (usize, usize)> = HashMap::new();
    for (g, group) in groups.iter().enumerate() {
        let slot = slot_of(group);
        let n = group.values.len();
        let (call, values) = match open.get(&slot) {
            Some(&(call, values))
                if call_cost(calls[call].len() + 1, values + n) <= CALL_BUDGET_NS =>
            {
                (call, values)
            }
            _ => {
                calls.push(Vec::new());
                (calls.len() - 1, 0)
            }
        };
        open.insert(slot, (call, values + n));
        calls[call].push(g);
    }
    calls
}

/// What a record call answers per group: the newest hour, its count and its mean.
type Newest = (i64, u64, String);

/// Records `records` (see the module docs); per record, `Ok` once its values and its
/// kind's slowest list are in Redis, or the error of the call that held it (every
/// record of a failed call gets that call's error).
pub(crate) async fn record_many(conn: &RedisConn, records: &[&Recorded]) -> Vec<Result<()>> {
    let groups = group(records);
    let cluster = conn.is_cluster();
    let slot_of =
        |g: &Group<'_>| cluster.then(|| Slot::for_key(conn.keys().stat_newest(g.context, g.kind)));
    let calls = pack(&groups, slot_of);
    // Calls of one slot run one after the other, so that a (context, kind)'s groups
    // split over two calls land in order; slots (and a single node's one run) at once.
    let mut by_slot: HashMap<Option<Slot>, Vec<usize>> = HashMap::new();
    for (c, call) in calls.iter().enumerate() {
        by_slot
            .entry(slot_of(&groups[call[0]]))
            .or_default()
            .push(c);
    }
    let runs = by_slot.into_values().map(|order| {
        let (groups, calls) = (&groups, &calls);
        async move {
            let mut replies = Vec::with_capacity(order.len());
            for c in order {
                replies.push((c, record_call(conn, groups, &calls[c], !cluster).await));
            }
            replies
        }
    });
    let mut replies: Vec<Option<Result<Vec<Newest>>>> = (0..calls.len()).map(|_| None).collect();
    for (c, reply) in futures_util::future::join_all(runs)
        .await
        .into_iter()
        .flatten()
    {
        replies[c] = Some(reply);
    }
    let replies: Vec<Result<Vec<Newest>>> = replies
        .into_iter()
        .map(|r| r.expect("every call ran"))
        .collect();

    let mut results: Vec<Result<()>> = (0..records.len()).map(|_| Ok(())).collect();
    for (call, reply) in calls.iter().zip(&replies) {
        if let Err(e) = reply {
            for &g in call {
                for &r in &groups[g].records {
                    results[r] = Err(e.clone());
                }
            }
        }
    }
    if cluster {
        for (kind, error) in update_slowest(conn, &groups, &calls, &replies).await {
            // The records of that kind whose values were recorded (the others hold
            // their record call's error already).
            for (call, reply) in calls.iter().zip(&replies) {
                for &g in call
                    .iter()
                    .filter(|&&g| reply.is_ok() && groups[g].kind == kind)
                {
                    for &r in &groups[g].records {
                        results[r] = Err(error.clone());
                    }
                }
            }
        }
    }
    results
}

/// One call of `stats_record.lua` with `call`'s groups, and with `lists` their kinds'
/// slowest lists (a single node). [`Retry::Never`]: it adds.
async fn record_call(
    conn: &RedisConn,
    groups: &[Group<'_>],
    call: &[usize],
    lists: bool,
) -> Result<Vec<Newest>> {
    let mut kinds: Vec<&StatsKind> = Vec::new();
    let mut kind_of = Vec::with_capacity(call.len());
    for &g in call {
        let kind = groups[g].kind;
        let k = match kinds.iter().position(|k| *k == kind) {
            Some(k) => k,
            None => {
                kinds.push(kind);
                kinds.len() - 1
            }
        };
        kind_of.push(if lists { k + 1 } else { 0 });
    }
    let mut invocation = conn.scripts().stats_record.prepare_invoke();
    for &g in call {
        let group = &groups[g];
        invocation
            .key(conn.keys().stat_newest(group.context, group.kind))
            .key(conn.keys().stat_before(group.context, group.kind));
    }
    if lists {
        for kind in &kinds {
            invocation
                .key(conn.keys().slowest(kind))
                .key(conn.keys().slowest_meta(kind));
        }
    }
    invocation
        .arg(call.len())
        .arg(if lists { kinds.len() } else { 0 })
        .arg(crate::domain::stats::SLOWEST_KEPT);
    for (&g, kind) in call.iter().zip(kind_of) {
        let group = &groups[g];
        invocation
            .arg(group.hour)
            .arg(kind)
            .arg(group.values.len())
            .arg(group.buckets.len())
            .arg(group.context.as_str());
        let mut blob = Vec::with_capacity(8 * group.values.len());
        for value in &group.values {
            blob.extend_from_slice(&value.to_le_bytes());
        }
        invocation.arg(blob);
        for (bucket, count) in &group.buckets {
            invocation.arg(bucket).arg(*count);
        }
    }
    let reply: Vec<Newest> = conn.invoke(&invocation, Retry::Never).await?;
    if reply.len() != call.len() {
        return Err(Error::store(format!(
            "stats_record.lua answered {} groups for {}",
            reply.len(),
            call.len()
        )));
    }
    Ok(reply)
}

/// On a Cluster: per kind, one call of `stats_slowest.lua` (per [`CONTEXTS_PER_LIST_CALL`]
/// contexts) with the newest mean of each context the successful record calls
/// recorded. [`Retry::Idempotent`]: it sets a mean only when it is newer. Answers the
/// kinds whose update failed, with the error.
async fn update_slowest<'a>(
    conn: &RedisConn,
    groups: &[Group<'a>],
    calls: &[Vec<usize>],
    replies: &[Result<Vec<Newest>>],
) -> Vec<(&'a StatsKind, Error)> {
    // Per kind, per context: the newest (hour, count, mean) recorded.
    let mut kinds: BTreeMap<&StatsKind, BTreeMap<&StatsContext, &Newest>> = BTreeMap::new();
    for (call, reply) in calls.iter().zip(replies) {
        let Ok(reply) = reply else { continue };
        for (&g, newest) in call.iter().zip(reply) {
            let contexts = kinds.entry(groups[g].kind).or_default();
            let slot = contexts.entry(groups[g].context).or_insert(newest);
            if (newest.0, newest.1) > (slot.0, slot.1) {
                *slot = newest;
            }
        }
    }
    let kept = crate::domain::stats::SLOWEST_KEPT;
    let runs = kinds.into_iter().map(|(kind, contexts)| async move {
        let contexts: Vec<_> = contexts.into_iter().collect();
        for chunk in contexts.chunks(CONTEXTS_PER_LIST_CALL) {
            let mut invocation = conn.scripts().stats_slowest.prepare_invoke();
            invocation
                .key(conn.keys().slowest(kind))
                .key(conn.keys().slowest_meta(kind))
                .arg(kept);
            for (context, (hour, count, mean)) in chunk {
                invocation
                    .arg(context.as_str())
                    .arg(*hour)
                    .arg(*count)
                    .arg(mean.as_str());
            }
            if let Err(e) = conn.invoke::<i64>(&invocation, Retry::Idempotent).await {
                return Some((kind, e));
            }
        }
        None
    });
    futures_util::future::join_all(runs)
        .await
        .into_iter()
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(context: &str, kind: &str, hour: i64, values: &[f64]) -> Recorded {
        Recorded {
            context: StatsContext::parse(context).unwrap(),
            kind: StatsKind::parse(kind).unwrap(),
            values: values.to_vec(),
            buckets: values
                .iter()
                .map(|v| (crate::domain::stats::bucket_of(*v), 1))
                .collect(),
            hour,
        }
    }

    #[test]
    fn records_join_their_context_s_latest_group_of_the_same_hour_only() {
        let records = [
            recorded("/a", "T", 0, &[1.0]),
            recorded("/b", "T", 0, &[2.0]),
            recorded("/a", "T", 0, &[3.0]),
            recorded("/a", "U", 0, &[4.0]),
            recorded("/a", "T", 3600, &[5.0]),
            recorded("/a", "T", 0, &[6.0]),
        ];
        let refs: Vec<&Recorded> = records.iter().collect();
        let groups = group(&refs);
        type Seen<'a> = (&'a str, &'a str, i64, Vec<usize>, Vec<f64>);
        let got: Vec<Seen<'_>> = groups
            .iter()
            .map(|g| {
                (
                    g.context.as_str(),
                    g.kind.as_str(),
                    g.hour,
                    g.records.clone(),
                    g.values.clone(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("/a", "T", 0, vec![0, 2], vec![1.0, 3.0]),
                ("/b", "T", 0, vec![1], vec![2.0]),
                ("/a", "U", 0, vec![3], vec![4.0]),
                ("/a", "T", 3600, vec![4], vec![5.0]),
                ("/a", "T", 0, vec![5], vec![6.0]),
            ]
        );
        assert_eq!(groups[0].buckets.values().sum::<u64>(), 2);
    }

    #[test]
    fn a_context_s_records_split_into_groups_within_the_budget_at_record_boundaries() {
        let records: Vec<Recorded> = (0..10)
            .map(|i| recorded("/a", "T", 0, &vec![i as f64; 1000]))
            .chain([recorded("/a", "T", 0, &vec![1.0; GROUP_VALUES + 1])])
            .collect();
        let refs: Vec<&Recorded> = records.iter().collect();
        let groups = group(&refs);
        let got: Vec<(Vec<usize>, usize)> = groups
            .iter()
            .map(|g| (g.records.clone(), g.values.len()))
            .collect();
        assert_eq!(GROUP_VALUES, 3880);
        assert_eq!(
            got,
            [
                (vec![0, 1, 2], 3000),
                (vec![3, 4, 5], 3000),
                (vec![6, 7, 8], 3000),
                (vec![9], 1000),
                // One caller's batch is never split, even beyond the budget.
                (vec![10], GROUP_VALUES + 1),
            ]
        );
        // The values keep the records' order.
        assert_eq!(groups[1].values[0], 3.0);
        assert_eq!(groups[1].values[2999], 5.0);
        // Each group is a call of its own: two would exceed the budget.
        let calls = pack(&groups, |_| None);
        assert_eq!(calls, [vec![0], vec![1], vec![2], vec![3], vec![4]]);
    }

    #[test]
    fn calls_hold_one_slot_and_stay_within_their_bounds() {
        // Groups of one value each: 33 fit the budget.
        let per_call = (CALL_BUDGET_NS / (GROUP_NS + VALUE_NS)) as usize;
        assert_eq!(per_call, 33);
        let records: Vec<Recorded> = (0..per_call + 3)
            .map(|i| recorded(&format!("/c/{i}"), "T", 0, &[1.0]))
            .chain([recorded("/big", "T", 0, &vec![1.0; GROUP_VALUES + 1])])
            .collect();
        let refs: Vec<&Recorded> = records.iter().collect();
        let groups = group(&refs);
        // A single node: one slot.
        let calls = pack(&groups, |_| None);
        let sizes: Vec<usize> = calls.iter().map(Vec::len).collect();
        assert_eq!(sizes, [per_call, 3, 1]);
        // Two slots (by the context's parity): calls never mix them.
        let slot_of =
            |g: &Group<'_>| Some(Slot::for_key(format!("{}", g.context.as_str().len() % 2)));
        for call in pack(&groups, slot_of) {
            let first = slot_of(&groups[call[0]]);
            assert!(call.iter().all(|&g| slot_of(&groups[g]) == first));
            let values: usize = call.iter().map(|&g| groups[g].values.len()).sum();
            assert!(
                call.len() == 1 || call_cost(call.len(), values) <= CALL_BUDGET_NS,
                "{values}"
            );
        }
    }
}
