//! How the Redis store is tuned: its connection ([`RedisOptions`]), how concurrent writes
//! form batches ([`IngestOptions`]) and how a retirement pass runs ([`RetireOptions`]).
//! Redis tuning: the [`Store`](crate::store::Store) trait takes none of it but a
//! retirement pass's options (`Store::retire`, `None`: the store's own); the store holds
//! its own.

use std::path::PathBuf;
use std::time::Duration;

use crate::domain::Layout;

/// Connection settings for [`RedisStore`](crate::RedisStore).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisOptions {
    /// How long to wait for any one reply before reporting the store unavailable (a
    /// read is sent once more after a lost reply, so it can wait twice this).
    pub response_timeout: Duration,
    /// How long one connection attempt may take (TCP, TLS handshake, AUTH).
    pub connection_timeout: Duration,
    /// A PEM file of the CA that signed the server's certificate, for `rediss://` URLs
    /// to a Redis with a private CA; `None` trusts the system's roots. The certificate
    /// is verified either way.
    pub tls_ca: Option<PathBuf>,
    /// How concurrent writes are batched (group commit).
    pub ingest: IngestOptions,
    /// The layout of boards created without one (`BoardConfig::with_layout`); it
    /// decides the layout of each of their slots when the slot is created. Compact by
    /// default: a third of the memory, for a little write throughput (see
    /// `docs/compact-slots.md`, "Compact slots", "Which layout by default").
    pub default_layout: Layout,
    /// How retirement passes run (chunks, time budgets, the swap path, compaction).
    pub retire: RetireOptions,
    /// How many replicas must have a write before it is acknowledged (none by default).
    pub replica_acks: ReplicaAcks,
    /// What every key rollboard writes starts with (none by default), so that it can
    /// share one Redis with an application.
    pub key_prefix: KeyPrefix,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            // Scripts are bounded to a few milliseconds; two seconds only trips when Redis
            // is really stuck or gone, and then a fast error beats a hung request.
            response_timeout: Duration::from_secs(2),
            connection_timeout: Duration::from_secs(2),
            tls_ca: None,
            ingest: IngestOptions::default(),
            default_layout: Layout::Compact,
            retire: RetireOptions::default(),
            replica_acks: ReplicaAcks::default(),
            key_prefix: KeyPrefix::default(),
        }
    }
}

/// Writes acknowledged only once replicas have them (`min_replica_acks`): each write
/// call is followed by `WAIT min timeout` on its connection, and a call fewer than `min`
/// replicas confirmed within `timeout` is answered
/// [`Error::WriteUncertain`](crate::Error::WriteUncertain): applied on the master, but a
/// failover could lose it. `min` 0 (the default) waits for no replica: Redis replicates
/// asynchronously, so a write acknowledged just before its master dies may be lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaAcks {
    /// Replicas that must have each write (0: none).
    pub min: u32,
    /// How long a write waits for them (default 1 s); keep it below the response
    /// timeout, which bounds the write and its wait together.
    pub timeout: Duration,
}

impl Default for ReplicaAcks {
    fn default() -> Self {
        ReplicaAcks {
            min: 0,
            timeout: Duration::from_secs(1),
        }
    }
}

/// How batches form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IngestOptions {
    /// A batch stops growing at this many distinct (slot, member) pairs: it bounds the
    /// work, and so the duration, of one `write.lua` call.
    pub max_batch_members: usize,
    /// A batch also stops growing at this many events.
    pub max_batch_events: usize,
    /// Most batches of one board in flight at once.
    pub max_in_flight: usize,
    /// How long one `write.lua` call may hold Redis, about: the pairs per call adapt to
    /// each board's measured cost so that calls stay near this (never fewer than one
    /// pair per call; `Duration::ZERO`: one pair per call), and a call that has run this
    /// long stops at its next check (see `call_check_every`) and leaves the rest to the
    /// next call. Default 1 ms. While hot reads go on (one went out within the last
    /// 100 ms), calls are sized for and stop at a quarter of it, so that a read waits
    /// for little write work (docs/design.md, "Reads first").
    pub call_budget: Duration,
    /// What the pairs per call are sized for, when not `call_budget` (tests: a long
    /// target with a zero budget makes every call stop after its first check).
    pub call_target: Option<Duration>,
    /// A call reads the server's clock every this many pairs (or events) to know whether
    /// it has run its budget: a clock read costs ~0.6 µs, a pair 1–12 µs. Default 16.
    pub call_check_every: usize,
    /// A board's committer task ends after this long without writes, once its batches
    /// in flight are applied (a dropped board's ends at once), so boards no longer
    /// written cost nothing: a live committer holds about 1 KB (its task, queue and
    /// semaphore), which across many boards is more than the rest of a board's state in
    /// the service. A committer only batches writes that queue while its calls are in
    /// flight, so a short idle loses no batching; starting one again costs a task spawn
    /// (microseconds, against a Redis round trip). Default 250 ms.
    pub committer_idle: Duration,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            max_batch_members: 1000,
            max_batch_events: 20_000,
            max_in_flight: 3,
            call_budget: Duration::from_millis(1),
            call_target: None,
            call_check_every: 16,
            committer_idle: Duration::from_millis(250),
        }
    }
}

/// How a retirement pass of the Redis store runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetireOptions {
    /// Most slot fields one script call subtracts.
    pub chunk_size: usize,
    /// How long one script call may work: it stops before a step (about 50 fields) that
    /// would likely overrun it, so Redis never blocks for long, whatever the machine.
    pub chunk_budget: std::time::Duration,
    /// Stop after this many chunk calls (the pass reports `complete: false`). `None` runs
    /// to the end. A later pass resumes exactly where this one stopped.
    pub max_chunks: Option<usize>,
    /// Compact, after retiring a compact board, the slot that just closed (written plain
    /// while it was open: `docs/compact-slots.md`, "Compact slots"), in calls of `chunk_budget`.
    /// `false` retires only (the benchmark times retirement alone).
    pub compact: bool,
    /// Window 1 of a board whose first window is one slot long retires the slot that
    /// closed by a swap (Redis store, `retire_swap.lua`: its totals rebuilt from the
    /// newer slots, the closed slot's stage moved by `RENAME`) when the rebuild reads at
    /// most this many fields (the newer slots' first stage plus the closed slot's
    /// second); otherwise, and with 0, chunk by chunk.
    pub swap_fields: usize,
}

impl Default for RetireOptions {
    fn default() -> Self {
        RetireOptions {
            chunk_size: 1000,
            chunk_budget: std::time::Duration::from_micros(1500),
            max_chunks: None,
            compact: true,
            swap_fields: 600,
        }
    }
}

/// What every key rollboard writes starts with (`key_prefix`, such as `app1:`), so that
/// it can share one Redis, or one Redis Cluster, with an application's own keys. It may
/// not hold `{` or `}`: each board's keys carry the board's own hash tag, which keeps a
/// board on one Cluster node, and a brace in the prefix would take its place. Empty (the
/// default) adds nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct KeyPrefix(String);

impl KeyPrefix {
    /// The longest prefix, in bytes: it is in every key name.
    pub const MAX_LEN: usize = 64;

    /// `text` as a prefix: at most [`KeyPrefix::MAX_LEN`] printable ASCII characters
    /// other than a space, `{` and `}`.
    pub fn parse(text: &str) -> Result<KeyPrefix, InvalidKeyPrefix> {
        let invalid = |reason: String| {
            Err(InvalidKeyPrefix {
                prefix: text.to_owned(),
                reason,
            })
        };
        if text.len() > Self::MAX_LEN {
            return invalid(format!(
                "at most {} bytes, got {}",
                Self::MAX_LEN,
                text.len()
            ));
        }
        if text.contains(['{', '}']) {
            return invalid(
                "leave out `{` and `}`: each board's keys carry the board's own hash tag".into(),
            );
        }
        if let Some(c) = text.chars().find(|c| !c.is_ascii_graphic()) {
            return invalid(format!("{c:?} is not printable ASCII without spaces"));
        }
        Ok(KeyPrefix(text.to_owned()))
    }

    /// The prefix ("" when none).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A key prefix that [`KeyPrefix::parse`] refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid key_prefix {prefix:?}: {reason} (such as \"app1:\")")]
pub struct InvalidKeyPrefix {
    /// The prefix given.
    pub prefix: String,
    /// What is wrong with it.
    pub reason: String,
}

impl std::str::FromStr for KeyPrefix {
    type Err = InvalidKeyPrefix;

    fn from_str(text: &str) -> Result<KeyPrefix, InvalidKeyPrefix> {
        KeyPrefix::parse(text)
    }
}

impl TryFrom<String> for KeyPrefix {
    type Error = InvalidKeyPrefix;

    fn try_from(text: String) -> Result<KeyPrefix, InvalidKeyPrefix> {
        KeyPrefix::parse(&text)
    }
}

impl std::fmt::Display for KeyPrefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
