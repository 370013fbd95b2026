//! `Rollboard`: the library's front door. It validates every input into domain types,
//! reads the time from its clock, caches board configs, and calls the store.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, RwLock};

use crate::board::{Board, BoardStatus, Created};
use crate::clock::{Clock, SystemClock};
use crate::domain::{BoardConfig, BoardName, Event, Member, Span, Timestamp, check_delta};
use crate::error::{Error, Result};
use crate::read::{History, Standing, TopPage};
use crate::recompute::RecomputeReport;
use crate::retire::{RetireOptions, RetireReport};
use crate::settings::Settings;
use crate::store::{MemoryStore, RedisStore, SlotWrite, Store, WriteStatus};
use crate::write::{BatchOutcome, Rejected, Removed};

/// Rolling-window leaderboards on a [`Store`]. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Rollboard {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    settings: Settings,
    /// Board configs by name. A stale entry is harmless: the store checks the board's
    /// version on every call and the entry is reloaded on `BoardChanged`.
    boards: RwLock<HashMap<BoardName, Arc<Board>>>,
    /// Told of every board created, extended or dropped here, so the retirer picks up a
    /// new board at once instead of at its next re-read of the store.
    board_changes: tokio::sync::watch::Sender<()>,
}

impl std::fmt::Debug for Rollboard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rollboard")
            .field("store", &self.inner.store.kind())
            .field("settings", &self.inner.settings)
            .finish_non_exhaustive()
    }
}

impl Rollboard {
    /// Boards on `store`, with the system clock and default settings.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self::with(store, Arc::new(SystemClock), Settings::default())
    }

    /// Boards on `store`, with a given clock and settings.
    pub fn with(store: Arc<dyn Store>, clock: Arc<dyn Clock>, settings: Settings) -> Self {
        Rollboard {
            inner: Arc::new(Inner {
                store,
                clock,
                settings,
                boards: RwLock::new(HashMap::new()),
                board_changes: tokio::sync::watch::Sender::new(()),
            }),
        }
    }

    /// Boards held in this process's memory.
    pub fn memory() -> Self {
        Self::new(Arc::new(MemoryStore::new()))
    }

    /// Boards in the Redis at `url`.
    pub async fn redis(url: &str) -> Result<Self> {
        Ok(Self::new(Arc::new(RedisStore::connect(url).await?)))
    }

    /// The store underneath.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// The current time, from this instance's clock.
    pub fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    /// This instance's clock.
    pub(crate) fn clock(&self) -> &dyn Clock {
        self.inner.clock.as_ref()
    }

    /// A receiver told of every board created, extended or dropped through this instance.
    pub(crate) fn board_changes(&self) -> tokio::sync::watch::Receiver<()> {
        self.inner.board_changes.subscribe()
    }

    // ----- boards -------------------------------------------------------------------

    /// Creates board `name`; returns the existing board when it has the same config, or
    /// adds windows to it when `config` is its config plus larger windows
    /// ([`Created::Extended`]: call [`build_windows`](Self::build_windows) to build their
    /// totals). Any other difference is [`Error::BoardConflict`].
    pub async fn create_board(&self, name: &str, config: BoardConfig) -> Result<Created> {
        let name = BoardName::parse(name)?;
        let created = self
            .inner
            .store
            .create_board(&name, &config, self.now())
            .await?;
        self.remember(Arc::new(created.board().clone()));
        self.inner.board_changes.send_replace(());
        Ok(created)
    }

    /// The board's name, config and identity.
    pub async fn board(&self, name: &str) -> Result<Board> {
        Ok(Board::clone(
            &*self.cached_board(&BoardName::parse(name)?).await?,
        ))
    }

    /// The board's state: members per window, live slots, retirement lag.
    pub async fn describe_board(&self, name: &str) -> Result<BoardStatus> {
        let now = self.now();
        let store = &self.inner.store;
        self.on_board(name, |b| async move { store.describe_board(&b, now).await })
            .await
    }

    /// Every board, by name.
    pub async fn boards(&self) -> Result<Vec<Board>> {
        self.inner.store.list_boards().await
    }

    /// Deletes the board and all its data; [`Error::BoardNotFound`] when there is none.
    pub async fn drop_board(&self, name: &str) -> Result<()> {
        let name = BoardName::parse(name)?;
        let existed = self.inner.store.drop_board(&name).await?;
        self.forget(&name);
        self.inner.board_changes.send_replace(());
        if existed {
            Ok(())
        } else {
            Err(Error::BoardNotFound(name.to_string()))
        }
    }

    // ----- writes -------------------------------------------------------------------

    /// Adds `delta` to `member` on `board`, at `at` (now when `None`).
    pub async fn incr(
        &self,
        board: &str,
        member: &str,
        delta: i64,
        at: Option<Timestamp>,
    ) -> Result<()> {
        let event = Event {
            member: member.to_owned(),
            delta,
            at,
        };
        let outcome = self.incr_batch(board, std::slice::from_ref(&event)).await?;
        match outcome.rejected.into_iter().next() {
            Some(rejected) => Err(rejected.error),
            None => Ok(()),
        }
    }

    /// Applies a batch of events. Each bad event is rejected on its own (with its index)
    /// and the rest are applied. Errors only when nothing could be applied: unknown
    /// board, batch too large, or the store failed before any event landed.
    pub async fn incr_batch(&self, board: &str, events: &[Event]) -> Result<BatchOutcome> {
        let name = BoardName::parse(board)?;
        let mut board = self.cached_board(&name).await?;
        let now = self.now();
        let (valid, mut outcome) = self.validate(&board, now, events)?;

        let per_call = self.inner.settings.events_per_call.max(1);
        for (n, chunk) in valid.chunks(per_call).enumerate() {
            let writes = || {
                chunk
                    .iter()
                    .map(|(_, w)| w.clone())
                    .collect::<Vec<SlotWrite>>()
            };
            let statuses = match self.inner.store.write(&board, now, writes()).await {
                Err(Error::BoardChanged(_)) => {
                    self.forget(&name);
                    board = self.cached_board(&name).await?;
                    self.inner.store.write(&board, now, writes()).await
                }
                other => other,
            };
            match statuses {
                Ok(statuses) => record(&board, now, events, chunk, statuses, &mut outcome),
                Err(error) if n == 0 => return Err(error),
                Err(error) => {
                    // Earlier chunks landed; report the rest as rejected with the cause.
                    for (index, _) in valid[n * per_call..].iter() {
                        outcome.rejected.push(Rejected {
                            index: *index,
                            error: error.clone(),
                        });
                    }
                    break;
                }
            }
        }
        outcome.rejected.sort_by_key(|r| r.index);
        Ok(outcome)
    }

    /// Applies a batch at most once for `token`, in one store call: a job that replays
    /// its batches after a crash (the legacy import) counts each once. `None` when the
    /// token was applied before. The batch should stay within `events_per_call`.
    pub async fn incr_batch_once(
        &self,
        board: &str,
        events: &[Event],
        token: &str,
    ) -> Result<Option<BatchOutcome>> {
        let name = BoardName::parse(board)?;
        let mut board = self.cached_board(&name).await?;
        let now = self.now();
        let (valid, mut outcome) = self.validate(&board, now, events)?;
        let writes = || {
            valid
                .iter()
                .map(|(_, w)| w.clone())
                .collect::<Vec<SlotWrite>>()
        };
        let statuses = match self
            .inner
            .store
            .write_once(&board, now, writes(), token)
            .await
        {
            Err(Error::BoardChanged(_)) => {
                self.forget(&name);
                board = self.cached_board(&name).await?;
                self.inner
                    .store
                    .write_once(&board, now, writes(), token)
                    .await
            }
            other => other,
        }?;
        let Some(statuses) = statuses else {
            return Ok(None);
        };
        record(&board, now, events, &valid, statuses, &mut outcome);
        outcome.rejected.sort_by_key(|r| r.index);
        Ok(Some(outcome))
    }

    /// Checks a batch: the valid events, placed in their slots, and an outcome holding
    /// the rejected ones.
    fn validate(
        &self,
        board: &Board,
        now: Timestamp,
        events: &[Event],
    ) -> Result<(Vec<(usize, SlotWrite)>, BatchOutcome)> {
        let max = self.inner.settings.max_batch;
        if events.len() > max {
            return Err(Error::BatchTooLarge {
                len: events.len(),
                max,
            });
        }
        let mut outcome = BatchOutcome::default();
        let mut valid = Vec::with_capacity(events.len());
        for (index, event) in events.iter().enumerate() {
            match self.prepare(board, now, event) {
                Ok(write) => valid.push((index, write)),
                Err(error) => outcome.rejected.push(Rejected { index, error }),
            }
        }
        Ok((valid, outcome))
    }

    /// Checks one event and places it in its slot.
    fn prepare(&self, board: &Board, now: Timestamp, event: &Event) -> Result<SlotWrite> {
        let member = Member::parse(&event.member)?;
        let delta = check_delta(event.delta)?;
        let at = event.at.unwrap_or(now);
        let skew = self.inner.settings.max_future_skew;
        if at > now.plus_millis(skew.seconds() as i64 * 1000) {
            return Err(Error::InFuture {
                at: at.unix_seconds_f64(),
                now: now.unix_seconds_f64(),
                skew_seconds: skew.seconds(),
            });
        }
        let slot = board.config.slot_start(at);
        if board.config.is_too_late(slot, now) {
            return Err(too_late(&board.config, now, event, slot));
        }
        Ok(SlotWrite {
            slot,
            member,
            delta,
        })
    }

    // ----- reads --------------------------------------------------------------------

    /// A page of the ranking of `window` (the board's first window when `None`):
    /// members with a positive total, highest first, ties by member ascending.
    /// `limit` is 1–1000.
    pub async fn top(
        &self,
        board: &str,
        window: Option<Span>,
        offset: u64,
        limit: u64,
    ) -> Result<TopPage> {
        check_range("limit", limit, 1, self.inner.settings.max_limit)?;
        check_range("offset", offset, 0, MAX_OFFSET)?;
        let now = self.now();
        let store = &self.inner.store;
        self.on_board(board, |b| async move {
            let w = window_index(&b, window)?;
            store.top(&b, w, now, offset, limit).await
        })
        .await
    }

    /// The member's total and competition rank in `window`; `None` when it has no
    /// positive total there.
    pub async fn score(
        &self,
        board: &str,
        member: &str,
        window: Option<Span>,
    ) -> Result<Option<Standing>> {
        let member = Member::parse(member)?;
        let now = self.now();
        let store = &self.inner.store;
        let member = &member;
        self.on_board(board, |b| async move {
            let w = window_index(&b, window)?;
            store.standing(&b, w, now, member).await
        })
        .await
    }

    /// The member with up to `n` (0–100) entries above and below it; `None` when it has
    /// no positive total in `window`.
    pub async fn around(
        &self,
        board: &str,
        member: &str,
        window: Option<Span>,
        n: u64,
    ) -> Result<Option<TopPage>> {
        check_range("n", n, 0, MAX_AROUND)?;
        let member = Member::parse(member)?;
        let now = self.now();
        let store = &self.inner.store;
        let member = &member;
        self.on_board(board, |b| async move {
            let w = window_index(&b, window)?;
            store.around(&b, w, now, member, n).await
        })
        .await
    }

    /// The member's non-zero values per slot over the board's largest window.
    pub async fn history(&self, board: &str, member: &str) -> Result<History> {
        let member = Member::parse(member)?;
        let now = self.now();
        let store = &self.inner.store;
        let member = &member;
        self.on_board(
            board,
            |b| async move { store.history(&b, now, member).await },
        )
        .await
    }

    // ----- maintenance --------------------------------------------------------------

    /// Removes the member from every slot and window of the board (moderation).
    pub async fn remove_member(&self, board: &str, member: &str) -> Result<Removed> {
        let member = Member::parse(member)?;
        let store = &self.inner.store;
        let member = &member;
        self.on_board(
            board,
            |b| async move { store.remove_member(&b, member).await },
        )
        .await
    }

    /// Rebuilds the totals of `window` (every window when `None`) from the live slots:
    /// repairs drift, and builds windows added to the board. Exact while writes go on;
    /// retirement of the board waits meanwhile. [`Error::BoardBusy`] while another
    /// recompute of the board runs.
    pub async fn recompute(&self, board: &str, window: Option<Span>) -> Result<RecomputeReport> {
        let store = &self.inner.store;
        self.on_board(board, |b| async move {
            let windows = match window {
                Some(w) => vec![window_index(&b, Some(w))?],
                None => (0..b.config.windows().len()).collect(),
            };
            let mut report = RecomputeReport::default();
            for w in windows {
                report.absorb(store.recompute(&b, w).await?);
            }
            Ok(report)
        })
        .await
    }

    /// Builds the totals of windows added to the board ([`Created::Extended`]), if any.
    pub async fn build_windows(&self, board: &str) -> Result<RecomputeReport> {
        let store = &self.inner.store;
        self.on_board(board, |b| async move {
            let mut report = RecomputeReport::default();
            for w in store.pending_windows(&b).await? {
                report.absorb(store.recompute(&b, w).await?);
            }
            Ok(report)
        })
        .await
    }

    /// Retires everything overdue on the board now, with the configured options.
    pub async fn retire(&self, board: &str) -> Result<RetireReport> {
        self.retire_with(board, self.inner.settings.retire).await
    }

    /// Retires everything overdue on the board now (or as much as `options` allow).
    pub async fn retire_with(&self, board: &str, options: RetireOptions) -> Result<RetireReport> {
        let now = self.now();
        let store = &self.inner.store;
        self.on_board(
            board,
            |b| async move { store.retire(&b, now, options).await },
        )
        .await
    }

    /// Retires everything overdue on every board. One board's failure does not stop
    /// the others; each board's result is returned.
    pub async fn retire_all(&self) -> Result<Vec<(BoardName, Result<RetireReport>)>> {
        let mut results = Vec::new();
        for board in self.boards().await? {
            let result = self.retire(board.name.as_str()).await;
            results.push((board.name, result));
        }
        Ok(results)
    }

    // ----- board cache --------------------------------------------------------------

    /// Runs `op` on the named board, reloading the board once if the store says it
    /// changed (dropped and re-created elsewhere).
    async fn on_board<T, F, Fut>(&self, name: &str, op: F) -> Result<T>
    where
        F: Fn(Arc<Board>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let name = BoardName::parse(name)?;
        let board = self.cached_board(&name).await?;
        match op(board).await {
            Err(Error::BoardChanged(_)) => {
                self.forget(&name);
                op(self.cached_board(&name).await?).await
            }
            other => other,
        }
    }

    async fn cached_board(&self, name: &BoardName) -> Result<Arc<Board>> {
        let cached = self.read_cache().get(name).cloned();
        if let Some(board) = cached {
            return Ok(board);
        }
        let board = Arc::new(
            self.inner
                .store
                .load_board(name)
                .await?
                .ok_or_else(|| Error::BoardNotFound(name.to_string()))?,
        );
        self.remember(board.clone());
        Ok(board)
    }

    fn read_cache(&self) -> std::sync::RwLockReadGuard<'_, HashMap<BoardName, Arc<Board>>> {
        self.inner.boards.read().unwrap_or_else(|e| e.into_inner())
    }

    fn remember(&self, board: Arc<Board>) {
        let mut cache = self.inner.boards.write().unwrap_or_else(|e| e.into_inner());
        cache.insert(board.name.clone(), board);
    }

    fn forget(&self, name: &BoardName) {
        let mut cache = self.inner.boards.write().unwrap_or_else(|e| e.into_inner());
        cache.remove(name);
    }
}

/// Adds the store's statuses of `written` (events by index) to `outcome`.
fn record(
    board: &Board,
    now: Timestamp,
    events: &[Event],
    written: &[(usize, SlotWrite)],
    statuses: Vec<WriteStatus>,
    outcome: &mut BatchOutcome,
) {
    for ((index, write), status) in written.iter().zip(statuses) {
        match status {
            WriteStatus::Applied => outcome.accepted += 1,
            WriteStatus::TooLate => outcome.rejected.push(Rejected {
                index: *index,
                error: too_late(&board.config, now, &events[*index], write.slot),
            }),
            WriteStatus::OutOfRange => outcome.rejected.push(Rejected {
                index: *index,
                error: Error::OutOfRange {
                    member: write.member.to_string(),
                },
            }),
        }
    }
}

/// Largest `offset` accepted by `top`.
const MAX_OFFSET: u64 = 1_000_000_000;
/// Largest `n` accepted by `around`.
const MAX_AROUND: u64 = 100;

fn check_range(what: &str, value: u64, min: u64, max: u64) -> Result<()> {
    if value < min || value > max {
        return Err(Error::InvalidQuery {
            reason: format!("{what} must be between {min} and {max}, got {value}"),
        });
    }
    Ok(())
}

fn window_index(board: &Board, window: Option<Span>) -> Result<usize> {
    match window {
        None => Ok(0),
        Some(w) => board
            .config
            .window_index(w)
            .ok_or_else(|| Error::WindowNotFound {
                board: board.name.to_string(),
                window: w,
            }),
    }
}

fn too_late(config: &BoardConfig, now: Timestamp, event: &Event, slot: i64) -> Error {
    Error::TooLate {
        at: event.at.unwrap_or(now).unix_seconds_f64(),
        slot,
        oldest_open: config.window_start(config.windows().len() - 1, now),
    }
}
