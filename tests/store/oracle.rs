//! The brute-force oracle, and a checker of the Redis data model's invariants.
//!
//! Oracle: total(member, window) = the sum of the deltas of the accepted events of that
//! member whose slot is inside the window (`slot > slot_start(now) - W`); on a max or
//! min board ([`ValueOracle`]) the max (min) of their values.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use rollboard::{Aggregate, BoardConfig, Ties, Timestamp};

/// Every accepted event, by slot.
#[derive(Debug, Clone)]
pub struct Oracle {
    pub config: BoardConfig,
    events: Vec<(i64, String, i64)>,
}

impl Oracle {
    pub fn new(config: BoardConfig) -> Self {
        Oracle {
            config,
            events: Vec::new(),
        }
    }

    pub fn record(&mut self, slot: i64, member: &str, delta: i64) {
        self.events.push((slot, member.to_owned(), delta));
    }

    /// Drops every event of `member` (it was removed from the board).
    pub fn remove(&mut self, member: &str) {
        self.events.retain(|(_, m, _)| m != member);
    }

    /// Non-zero totals of window `window` at `now`.
    pub fn totals(&self, window: usize, now: Timestamp) -> BTreeMap<String, i64> {
        let cutoff = self.config.cutoff(window, now);
        let mut totals = BTreeMap::new();
        for (slot, member, delta) in &self.events {
            if *slot > cutoff {
                *totals.entry(member.clone()).or_insert(0) += delta;
            }
        }
        totals.retain(|_, v| *v != 0);
        totals
    }

    /// The ranking: the ranked totals (positive ones, or every non-zero one on a
    /// `"rank":"nonzero"` board), highest first, ties by member ascending.
    pub fn ranking(&self, window: usize, now: Timestamp) -> Vec<(String, i64)> {
        let rank = self.config.rank();
        let mut ranking: Vec<(String, i64)> = self
            .totals(window, now)
            .into_iter()
            .filter(|(_, v)| rank.ranks(*v))
            .collect();
        ranking.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        ranking
    }
}

/// The oracle of a max, min or latest board: every accepted event; a member's value in
/// a window is the max (min) of its events whose slots are inside it, or (latest) the
/// value of the newest of them (by time, then value).
#[derive(Debug, Clone)]
pub struct ValueOracle {
    config: BoardConfig,
    /// (slot, member, value, at in unix ms) of each accepted event.
    events: Vec<(i64, String, i64, i64)>,
}

impl ValueOracle {
    pub fn new(config: BoardConfig) -> Self {
        ValueOracle {
            config,
            events: Vec::new(),
        }
    }

    pub fn record(&mut self, slot: i64, member: &str, value: i64, at: i64) {
        self.events.push((slot, member.to_owned(), value, at));
    }

    /// Forgets every event of `member` (removed from the board).
    pub fn remove(&mut self, member: &str) {
        self.events.retain(|e| e.1 != member);
    }

    /// The board's config after windows were added to it.
    pub fn extend(&mut self, wider: BoardConfig) {
        self.config = wider;
    }

    /// The value kept of `events` (value, at): the max, the min, or the newest's.
    fn keep(&self, events: impl Iterator<Item = (i64, i64)>) -> Option<i64> {
        match self.config.aggregate() {
            Aggregate::Min => events.map(|(v, _)| v).min(),
            Aggregate::Latest => events.max_by_key(|(v, at)| (*at, *v)).map(|(v, _)| v),
            _ => events.map(|(v, _)| v).max(),
        }
    }

    /// Each member's value in window `j` at `now`.
    pub fn values(&self, j: usize, now: Timestamp) -> BTreeMap<String, i64> {
        let cutoff = self.config.cutoff(j, now);
        let members: std::collections::BTreeSet<&String> = self
            .events
            .iter()
            .filter(|e| e.0 > cutoff)
            .map(|e| &e.1)
            .collect();
        members
            .into_iter()
            .filter_map(|m| {
                let inside = self.events.iter().filter(|e| e.0 > cutoff && &e.1 == m);
                Some((m.clone(), self.keep(inside.map(|e| (e.2, e.3)))?))
            })
            .collect()
    }

    /// Window `j`'s ranking at `now`: best first (highest; lowest on a min board), ties
    /// by member ascending.
    pub fn ranking(&self, j: usize, now: Timestamp) -> Vec<(String, i64)> {
        let mut ranking: Vec<(String, i64)> = self.values(j, now).into_iter().collect();
        let sign = self.config.aggregate().sign();
        ranking.sort_by(|a, b| (-sign * a.1, &a.0).cmp(&(-sign * b.1, &b.0)));
        ranking
    }

    /// The member's value per slot over the largest window (its history).
    pub fn history(&self, member: &str, now: Timestamp) -> Vec<(i64, i64)> {
        let cutoff = self.config.cutoff(self.config.windows().len() - 1, now);
        let slots: std::collections::BTreeSet<i64> = self
            .events
            .iter()
            .filter(|e| e.1 == member && e.0 > cutoff)
            .map(|e| e.0)
            .collect();
        slots
            .into_iter()
            .filter_map(|s| {
                let inside = self.events.iter().filter(|e| e.1 == member && e.0 == s);
                Some((s, self.keep(inside.map(|e| (e.2, e.3)))?))
            })
            .collect()
    }
}

/// Reads a board's raw Redis keys and checks the data model's invariants:
/// - every totals set equals the sum, over live slots, of the stages that window counts
///   (stage `k` is counted by windows `k..n`), and holds no zero score;
/// - no stage hash holds a zero value; every slot with a stage hash is in the index;
/// - a compact slot (one with a geometry in `slotgeo_{b}`) keeps each stage as buckets
///   `<stage>:<i>` with i below its bucket count, each member in the bucket its hash
///   names, and no plain stage hash; only indexed slots have a geometry;
/// - nothing is left of a slot that every window has retired (`slot <= cutoff` of the
///   largest window at `now`), once retirement has run at `now`;
/// - on a dense board, each window's tally (total → members holding it) and distinct
///   totals (member = score = total) match its positive totals exactly; on a
///   competition board neither exists.
pub async fn check_redis_invariants(
    conn: &mut redis::aio::MultiplexedConnection,
    board: &str,
    config: &BoardConfig,
    retired_at: Option<Timestamp>,
) {
    let n = config.windows().len();
    let stage_keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("slot_{{{board}}}_*"))
        .query_async(conn)
        .await
        .unwrap();
    let geometries: HashMap<i64, Geometry> = redis::cmd("HGETALL")
        .arg(format!("slotgeo_{{{board}}}"))
        .query_async::<HashMap<i64, String>>(conn)
        .await
        .unwrap()
        .into_iter()
        .map(|(slot, text)| (slot, Geometry::parse(&text)))
        .collect();
    // slot -> stage -> member -> value (a compact slot's buckets summed into their stage,
    // with the plain stage hash an active relayout may leave beside them: "sum both forms")
    let mut stages: BTreeMap<i64, BTreeMap<usize, HashMap<String, i64>>> = BTreeMap::new();
    let mut in_buckets: HashSet<(i64, usize, String)> = HashSet::new();
    let prefix = format!("slot_{{{board}}}_");
    for key in &stage_keys {
        let (rest, bucket) = match key[prefix.len()..].split_once(':') {
            Some((rest, i)) => (rest, Some(i.parse::<u64>().unwrap())),
            None => (&key[prefix.len()..], None),
        };
        let (slot, stage) = match rest.split_once('_') {
            Some((s, k)) => (s.parse::<i64>().unwrap(), k.parse::<usize>().unwrap()),
            None => (rest.parse::<i64>().unwrap(), 0),
        };
        assert!(
            stage < n,
            "stage {stage} of slot {slot} cannot exist with {n} windows"
        );
        let values: HashMap<String, i64> = redis::cmd("HGETALL")
            .arg(key)
            .query_async(conn)
            .await
            .unwrap();
        for (member, v) in &values {
            assert_ne!(*v, 0, "{key} holds a zero value for {member}");
        }
        match (bucket, geometries.get(&slot)) {
            // A plain slot, or the plain part of a slot being converted.
            (None, _) => {}
            (Some(_), None) => panic!("{key}: a bucket of a slot without a geometry"),
            (Some(i), Some(geometry)) => {
                assert!(
                    i < geometry.buckets(),
                    "{key}: bucket past the count of {geometry:?}"
                );
                for member in values.keys() {
                    assert_eq!(geometry.bucket_of(member), i, "{key} holds {member}");
                }
            }
        }
        let merged = stages.entry(slot).or_default().entry(stage).or_default();
        for (member, v) in values {
            if bucket.is_some() {
                assert!(
                    in_buckets.insert((slot, stage, member.clone())),
                    "{member} in two buckets"
                );
            }
            *merged.entry(member).or_default() += v;
        }
    }

    let index: Vec<i64> = redis::cmd("ZRANGE")
        .arg(format!("slots_{{{board}}}"))
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await
        .unwrap();
    for slot in stages.keys() {
        assert!(
            index.contains(slot),
            "slot {slot} has stage hashes but is not indexed"
        );
    }
    for slot in geometries.keys() {
        assert!(
            index.contains(slot),
            "slot {slot} has a geometry but is not indexed"
        );
    }
    if let Some(now) = retired_at {
        let cutoff = config.cutoff(n - 1, now);
        let leftover: Vec<&i64> = index.iter().filter(|s| **s <= cutoff).collect();
        assert!(
            leftover.is_empty(),
            "slots retired by every window remain indexed: {leftover:?}"
        );
        let leftover: Vec<&i64> = stages.keys().filter(|s| **s <= cutoff).collect();
        assert!(
            leftover.is_empty(),
            "slots retired by every window remain: {leftover:?}"
        );
    }

    for j in 0..n {
        let key = if j == 0 {
            format!("stats_{{{board}}}")
        } else {
            format!("stats_{{{board}}}_{}", config.windows()[j].seconds())
        };
        let totals: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(&key)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(conn)
            .await
            .unwrap();
        let totals: BTreeMap<String, i64> =
            totals.into_iter().map(|(m, s)| (m, s as i64)).collect();
        for (member, score) in &totals {
            assert_ne!(*score, 0, "{key} keeps {member} at zero");
        }
        let mut expected: BTreeMap<String, i64> = BTreeMap::new();
        for per_stage in stages.values() {
            for (stage, values) in per_stage {
                if *stage <= j {
                    for (member, v) in values {
                        *expected.entry(member.clone()).or_insert(0) += v;
                    }
                }
            }
        }
        expected.retain(|_, v| *v != 0);
        assert_eq!(
            totals, expected,
            "{key} differs from the sum of the stages it counts"
        );
        let dense = config.ties() == Ties::Dense;
        check_dense(conn, &key, &totals, |total| dense && total > 0).await;
    }
}

/// On a max, min or latest board named `name`, each window's tally and distinct values
/// mirror its values, every one of them (dense), or do not exist (competition, position).
pub async fn check_tallies(raw: &mut redis::aio::MultiplexedConnection, name: &str, dense: bool) {
    // Every window holding values, a tally or distinct values (an empty zset is no key).
    let mut windows = BTreeSet::new();
    for prefix in ["stats", "tally", "dense"] {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{prefix}_{{{name}}}*"))
            .query_async(raw)
            .await
            .unwrap();
        windows.extend(keys.iter().map(|k| format!("stats{}", &k[prefix.len()..])));
    }
    for key in windows {
        let values: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(&key)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(raw)
            .await
            .unwrap();
        let values = values.into_iter().map(|(m, v)| (m, v as i64)).collect();
        check_dense(raw, &key, &values, |_| dense).await;
    }
}

/// The tally and distinct totals beside the totals `key` (`stats_…`) mirror its
/// `totals` that are `tallied` (a dense board's ranked ones; none on a competition
/// board: the keys do not exist).
async fn check_dense(
    conn: &mut redis::aio::MultiplexedConnection,
    key: &str,
    totals: &BTreeMap<String, i64>,
    tallied: impl Fn(i64) -> bool,
) {
    let suffix = key.strip_prefix("stats_").unwrap();
    let (tally_key, dense_key) = (format!("tally_{suffix}"), format!("dense_{suffix}"));
    let tally: BTreeMap<i64, i64> = redis::cmd("HGETALL")
        .arg(&tally_key)
        .query_async(conn)
        .await
        .unwrap();
    let distinct: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(&dense_key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(conn)
        .await
        .unwrap();
    let mut expected: BTreeMap<i64, i64> = BTreeMap::new();
    for score in totals.values().filter(|s| tallied(**s)) {
        *expected.entry(*score).or_insert(0) += 1;
    }
    assert_eq!(
        tally, expected,
        "{tally_key} differs from the ranked totals"
    );
    let expected: Vec<(String, f64)> = expected
        .keys()
        .map(|t| (t.to_string(), *t as f64))
        .collect();
    assert_eq!(
        distinct, expected,
        "{dense_key} differs from the distinct totals"
    );
}

/// A compact slot's geometry, `<L> <p> <count>` (linear hashing: N = 2^L + p buckets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub level: u32,
    pub split: u64,
    /// Marked 'P': an active relayout is converting the slot to plain.
    pub to_plain: bool,
}

impl Geometry {
    pub fn parse(text: &str) -> Geometry {
        let (numbers, to_plain) = match text.strip_suffix(" P") {
            Some(rest) => (rest, true),
            None => (text, false),
        };
        let parts: Vec<u64> = numbers.split(' ').map(|p| p.parse().unwrap()).collect();
        assert_eq!(parts.len(), 3, "bad geometry {text:?}");
        Geometry {
            level: parts[0] as u32,
            split: parts[1],
            to_plain,
        }
    }

    pub fn buckets(&self) -> u64 {
        (1 << self.level) + self.split
    }

    /// The bucket of `member`: h = the first 8 hex digits of SHA-1(member); b = h mod 2^L,
    /// or h mod 2^(L+1) when b < p.
    pub fn bucket_of(&self, member: &str) -> u64 {
        let digest = sha1_smol::Sha1::from(member).digest().bytes();
        let h = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) as u64;
        let b = h % (1 << self.level);
        if b < self.split {
            h % (1 << (self.level + 1))
        } else {
            b
        }
    }
}
