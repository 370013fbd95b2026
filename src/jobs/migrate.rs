//! `rollboard migrate`: applies the numbered migrations of `migrations/` in order, each
//! once per Redis, and records each applied one there.
//!
//! - Record: the hash `rollboard:migrations`, field the four-digit id (`0001`), value JSON
//!   `{"name", "applied_at" (RFC 3339, UTC), "summary"}`, written with `HSETNX`.
//! - Lock: `rollboard:migrations:lock`, taken with `SET NX PX` for a lease (30 s),
//!   renewed every third of it while migrations run, released at the end (by
//!   `lua/migrations_lock.lua`, only by its holder). A second `migrate` waits for it (up
//!   to [`MigrateOptions::wait`]) and then finds everything applied.
//! - Correctness does not rest on the lock: every migration is idempotent, so a process
//!   that stalls past its lease and runs one again (or one killed half-way and run again)
//!   changes nothing more.
//!
//! Like the registry of boards, these are global keys, each written by its own command,
//! never in a script with a board's keys.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::prefix_move::MoveError;
use crate::store::{RedisConn, Retry};
use crate::{BoardConfig, Error, KeyPrefix, RedisOptions, Rollboard};

#[path = "../../migrations/mod.rs"]
mod migrations;

/// The hash of applied migrations (under the key prefix, when there is one).
pub const APPLIED_KEY: &str = "rollboard:migrations";
/// The lock held while migrations run (under the key prefix, when there is one).
pub const LOCK_KEY: &str = "rollboard:migrations:lock";

/// A board the source article kept, and the board to import it into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyTarget {
    /// The legacy `NAME` (keys `slot_NAME_<ts>`, `stats_NAME`, `last_slot_NAME`).
    pub legacy: String,
    /// The board to import into.
    pub board: String,
    /// Its config.
    pub config: BoardConfig,
}

/// What a migration may use.
#[derive(Clone)]
pub struct Context {
    /// The boards, on the Redis being migrated.
    pub boards: Rollboard,
    /// That Redis, for keys outside any board.
    pub url: String,
    /// How to connect to it.
    pub redis: RedisOptions,
    /// Legacy boards and their targets, from the config.
    pub legacy: Vec<LegacyTarget>,
}

/// What a migration returns: a one-line summary, or why it failed.
pub type Outcome = Result<String, Box<dyn std::error::Error + Send + Sync>>;

/// One numbered migration.
pub struct Migration {
    /// Its number, from 1, never reused.
    pub id: u32,
    /// A short name.
    pub name: &'static str,
    /// What it does.
    pub about: &'static str,
    run: fn(Context) -> Pin<Box<dyn Future<Output = Outcome> + Send>>,
}

impl Migration {
    /// The id as recorded: four digits.
    pub fn key(&self) -> String {
        format!("{:04}", self.id)
    }
}

/// Every migration, in order.
pub fn all() -> &'static [Migration] {
    migrations::ALL
}

/// The record of an applied migration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// The migration's name.
    pub name: String,
    /// When it was applied.
    #[serde(with = "time::serde::rfc3339")]
    pub applied_at: OffsetDateTime,
    /// What it did.
    pub summary: String,
}

/// A migration and whether it is applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MigrationStatus {
    /// Its number.
    pub id: u32,
    /// Its name.
    pub name: String,
    /// What it does (empty for a migration this version does not know).
    pub about: String,
    /// Its record, once applied.
    pub applied: Option<Applied>,
}

/// How `migrate` runs.
#[derive(Debug, Clone)]
pub struct MigrateOptions {
    /// Legacy boards and their targets (migration 0001).
    pub legacy: Vec<LegacyTarget>,
    /// How long to wait for another `migrate` to finish.
    pub wait: Duration,
    /// The lock's lease, renewed while migrations run.
    pub lease: Duration,
    /// How to connect to the Redis being migrated (TLS CA, timeouts, key prefix).
    pub redis: RedisOptions,
    /// Move rollboard's keys from under this prefix (`""`: a deployment that had none) to
    /// under `redis.key_prefix` first (see `prefix_move.rs`).
    pub move_from: Option<KeyPrefix>,
}

impl Default for MigrateOptions {
    fn default() -> Self {
        MigrateOptions {
            legacy: Vec::new(),
            wait: Duration::from_secs(300),
            lease: Duration::from_secs(30),
            redis: RedisOptions::default(),
            move_from: None,
        }
    }
}

/// What `migrate` did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MigrateReport {
    /// The migrations this run applied: id, name, summary.
    pub applied: Vec<(u32, String, String)>,
    /// Migrations applied before.
    pub already: usize,
    /// Keys moved under the key prefix ([`MigrateOptions::move_from`]).
    pub moved: u64,
}

/// Why `migrate` stopped.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// Another `migrate` held the lock for longer than the wait.
    #[error("another `rollboard migrate` is running (waited {waited:?} for its lock, {LOCK_KEY})")]
    Busy {
        /// How long this one waited.
        waited: Duration,
    },
    /// A migration failed; the ones before it stay applied, it and later ones pending.
    #[error("migration {id:04} {name} failed: {message}")]
    Failed {
        /// Its number.
        id: u32,
        /// Its name.
        name: &'static str,
        /// Why.
        message: String,
    },
    /// The keys could not be moved under the key prefix.
    #[error(transparent)]
    Move(#[from] MoveError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] Error),
}

/// Every known migration, and any recorded one this version does not know, by id.
pub async fn status(url: &str, redis: &RedisOptions) -> Result<Vec<MigrationStatus>, Error> {
    let conn = RedisConn::connect(url, redis).await?;
    let mut records = applied(&conn).await?;
    let mut statuses: Vec<MigrationStatus> = all()
        .iter()
        .map(|m| MigrationStatus {
            id: m.id,
            name: m.name.to_owned(),
            about: m.about.to_owned(),
            applied: records.remove(&m.id),
        })
        .collect();
    statuses.extend(records.into_iter().map(|(id, record)| MigrationStatus {
        id,
        name: record.name.clone(),
        about: String::new(),
        applied: Some(record),
    }));
    statuses.sort_by_key(|s| s.id);
    Ok(statuses)
}

/// Applies every pending migration, in order, holding the lock. `starting` is called
/// with each migration before it runs.
pub async fn migrate(
    boards: &Rollboard,
    url: &str,
    options: &MigrateOptions,
    starting: impl Fn(&Migration),
) -> Result<MigrateReport, MigrateError> {
    let conn = RedisConn::connect_to_scan(url, &options.redis, "migrate").await?;
    let lock = Lock::acquire(&conn, options).await?;
    let result = async {
        let moved = match &options.move_from {
            Some(from) => super::prefix_move::move_keys(&conn, from).await?,
            None => 0,
        };
        let report = apply_pending(&conn, boards, url, options, starting).await?;
        Ok(MigrateReport { moved, ..report })
    }
    .await;
    lock.release(&conn).await;
    result
}

async fn apply_pending(
    conn: &RedisConn,
    boards: &Rollboard,
    url: &str,
    options: &MigrateOptions,
    starting: impl Fn(&Migration),
) -> Result<MigrateReport, MigrateError> {
    let done = applied(conn).await?;
    let mut report = MigrateReport::default();
    for migration in all() {
        if done.contains_key(&migration.id) {
            report.already += 1;
            continue;
        }
        starting(migration);
        let context = Context {
            boards: boards.clone(),
            url: url.to_owned(),
            redis: options.redis.clone(),
            legacy: options.legacy.clone(),
        };
        let summary = (migration.run)(context)
            .await
            .map_err(|e| MigrateError::Failed {
                id: migration.id,
                name: migration.name,
                message: e.to_string(),
            })?;
        let record = Applied {
            name: migration.name.to_owned(),
            applied_at: OffsetDateTime::now_utc(),
            summary: summary.clone(),
        };
        let json = serde_json::to_string(&record).expect("a record serialises");
        let _: bool = conn
            .query(
                redis::cmd("HSETNX")
                    .arg(conn.keys().prefixed(APPLIED_KEY))
                    .arg(migration.key())
                    .arg(json),
                None,
                Retry::Idempotent,
            )
            .await?;
        report
            .applied
            .push((migration.id, migration.name.to_owned(), summary));
    }
    Ok(report)
}

/// The recorded migrations, by id.
async fn applied(conn: &RedisConn) -> Result<std::collections::BTreeMap<u32, Applied>, Error> {
    let raw: Vec<(String, String)> = conn
        .query(
            redis::cmd("HGETALL").arg(conn.keys().prefixed(APPLIED_KEY)),
            None,
            Retry::Idempotent,
        )
        .await?;
    raw.into_iter()
        .map(|(id, json)| {
            let bad = |what: String| Error::store(format!("{APPLIED_KEY} field {id:?}: {what}"));
            let number = id.parse::<u32>().map_err(|e| bad(e.to_string()))?;
            let record = serde_json::from_str(&json).map_err(|e| bad(e.to_string()))?;
            Ok((number, record))
        })
        .collect()
}

/// The migrations lock, renewed in the background while held.
struct Lock {
    token: String,
    renewer: tokio::task::JoinHandle<()>,
    lost: Arc<AtomicBool>,
}

fn lock_script() -> redis::Script {
    redis::Script::new(include_str!("lua/migrations_lock.lua"))
}

impl Lock {
    /// Takes the lock, waiting up to `options.wait` for a holder to release it.
    async fn acquire(conn: &RedisConn, options: &MigrateOptions) -> Result<Lock, MigrateError> {
        let token = format!(
            "{}:{}",
            std::process::id(),
            OffsetDateTime::now_utc().unix_timestamp_nanos()
        );
        let lease = options.lease.as_millis().max(1) as u64;
        let started = Instant::now();
        loop {
            let taken: Option<String> = conn
                .query(
                    redis::cmd("SET")
                        .arg(conn.keys().prefixed(LOCK_KEY))
                        .arg(&token)
                        .arg("NX")
                        .arg("PX")
                        .arg(lease),
                    None,
                    Retry::Never,
                )
                .await?;
            if taken.is_some() {
                break;
            }
            if started.elapsed() >= options.wait {
                return Err(MigrateError::Busy {
                    waited: started.elapsed(),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let lost = Arc::new(AtomicBool::new(false));
        let renewer = {
            let (conn, token, lost) = (conn.clone(), token.clone(), lost.clone());
            tokio::spawn(async move {
                let script = lock_script();
                loop {
                    tokio::time::sleep(Duration::from_millis(lease / 3)).await;
                    let mut refresh = script.key(conn.keys().prefixed(LOCK_KEY));
                    refresh.arg("refresh").arg(&token).arg(lease);
                    let held: Result<i64, _> = conn.invoke(&refresh, Retry::Idempotent).await;
                    if held.is_ok_and(|held| held == 0) {
                        lost.store(true, Ordering::SeqCst);
                        tracing::warn!(
                            "the migrations lock expired while held; migrations are idempotent, so this is safe"
                        );
                        return;
                    }
                }
            })
        };
        Ok(Lock {
            token,
            renewer,
            lost,
        })
    }

    /// Stops renewing and releases the lock if still held. A failure here only delays
    /// the next `migrate` until the lease ends.
    async fn release(self, conn: &RedisConn) {
        self.renewer.abort();
        if !self.lost.load(Ordering::SeqCst) {
            let script = lock_script();
            let mut release = script.key(conn.keys().prefixed(LOCK_KEY));
            release.arg("release").arg(&self.token);
            let _: Result<i64, _> = conn.invoke(&release, Retry::Idempotent).await;
        }
    }
}
