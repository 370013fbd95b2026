//! Trending boards on the front door: validate names, members, deltas and times, read
//! the time from the clock, and call the store's [`TrendingStore`](crate::store::TrendingStore).
//! A trending board comes from the board cache (loaded once) and the call is tried once
//! more when the board changed underneath.

use super::idempotent::KeyedOutcome;
use super::write::{BatchOutcome, Rejected};
use super::{Rollboard, Trending};
use crate::domain::PageQuery;
use crate::domain::any_board::AnyBoard;
use crate::domain::trending::check_age;
use crate::domain::{AroundOptions, AroundQuery, Order};
use crate::domain::{
    BoardName, Event, Member, Timestamp, TrendCounts, TrendMaintenance, TrendOptions, TrendPage,
    TrendRange, TrendRanks, TrendStanding, TrendWrite, TrendingBoard, TrendingConfig, check_around,
    check_delta, check_page, not_in_future, parse_ranks_members,
};
use crate::domain::{Contributor, Fingerprint, IdempotencyKey};
use crate::error::{Error, Result};
use crate::store::{TrendKeyed, WriteKey};

impl Trending<'_> {
    /// The trending board `name`: [`Error::BoardNotFound`] when there is none,
    /// [`Error::BoardKind`] when it is a windowed board.
    pub async fn board(self) -> Result<TrendingBoard> {
        Ok(TrendingBoard::clone(&*self.cached().await?))
    }

    /// The trending board with how many members it holds and ranks now, its landmark
    /// and whether a rescale is under way.
    pub async fn describe(self) -> Result<(TrendingBoard, TrendCounts)> {
        let mut board = self.cached().await?;
        let store = self.rb.store().trending();
        let counts = self
            .rb
            .retry_trending(&mut board, |b| async move { store.trend_counts(&b).await })
            .await?;
        Ok((TrendingBoard::clone(&board), counts))
    }

    /// Adds `delta` to `member` on trending board `board`, at `at` (now when `None`): an
    /// event older than the board's max age is [`Error::TooOld`], one further in the
    /// future than the allowed skew [`Error::InFuture`].
    pub async fn incr(self, member: &str, delta: i64, at: Option<Timestamp>) -> Result<()> {
        let event = Event {
            at,
            ..Event::new(member, delta)
        };
        self.incr_batch(std::slice::from_ref(&event))
            .await?
            .first_error()
    }

    /// Applies a batch of events to a trending board: each bad event is rejected on its
    /// own (with its index), the rest are handed to the store together, which applies
    /// them in order in calls bounded in time (see `docs/design.md`, "Trending boards").
    /// A store failure is [`Error::StoreUnavailable`], whose message says how many events
    /// were applied when it came part-way; under an idempotency key
    /// ([`write_keyed`](Self::write_keyed)) a retry applies exactly the rest.
    pub async fn incr_batch(self, events: &[Event]) -> Result<BatchOutcome> {
        let name = BoardName::parse(self.board)?;
        self.rb.settings().admission().check_batch(events.len())?;
        let now = self.rb.now();
        let mut board = self.rb.cached_trending(&name).await?;
        let (writes, outcome) = self.rb.trend_admit(&board.config, events, now);
        let store = self.rb.store().trending();
        let writes = &writes;
        self.rb
            .retry_trending(&mut board, |b| async move {
                self.rb
                    .change(&b.name, store.trend_write(b.at(now), writes, None))
                    .await
            })
            .await?;
        Ok(outcome)
    }

    /// Applies a batch of events to a trending board once under `key` (an HTTP
    /// `Idempotency-Key`) and the request's `fingerprint`: a retry with the same key and
    /// fingerprint within the key's time to live applies nothing and is answered as the
    /// first call was (its events admitted again at that call's `now`); the key with
    /// another fingerprint is [`Error::IdempotencyKeyReused`].
    pub async fn write_keyed(
        self,
        events: &[Event],
        key: &IdempotencyKey,
        fingerprint: &Fingerprint,
    ) -> Result<KeyedOutcome> {
        let name = BoardName::parse(self.board)?;
        self.rb.settings().admission().check_batch(events.len())?;
        let mut now = self.rb.now();
        let mut board = self.rb.cached_trending(&name).await?;
        let write_key = WriteKey {
            name: key.as_str().to_owned(),
            fingerprint: fingerprint.as_str().to_owned(),
            ttl: self.rb.settings().idempotency_ttl,
        };
        let store = self.rb.store().trending();
        // Once more at most: a write recorded at another `now` is admitted again at it, and
        // sent again so that the store completes any call it is missing (a retry after a
        // failure half-way) and answers the calls it finds from their records.
        for _ in 0..2 {
            let (writes, outcome) = self.rb.trend_admit(&board.config, events, now);
            let (writes_ref, key_ref) = (&writes, &write_key);
            let keyed = self
                .rb
                .retry_trending(&mut board, |b| async move {
                    let written = store.trend_write(b.at(now), writes_ref, Some(key_ref));
                    self.rb.change(&b.name, written).await
                })
                .await?;
            return match keyed {
                TrendKeyed::Applied => Ok(KeyedOutcome {
                    outcome,
                    replayed: false,
                }),
                TrendKeyed::Replayed { now: first } if first != now => {
                    now = first;
                    continue;
                }
                TrendKeyed::Replayed { .. } => Ok(KeyedOutcome {
                    outcome,
                    replayed: true,
                }),
                TrendKeyed::Reused => Err(Error::IdempotencyKeyReused {
                    key: key.to_string(),
                }),
            };
        }
        Err(Error::store(format!(
            "the record of idempotency key {key:?} changed while its write was admitted again"
        )))
    }

    /// A page of trending board `board` now: members with a positive score, highest
    /// first, ties by member ascending, from the `offset`-th.
    pub async fn top(self, offset: u64, limit: u64) -> Result<TrendPage> {
        self.top_in_range(TrendRange::ALL, offset, limit).await
    }

    /// A page of the members of trending board `board` whose score now is in `range`,
    /// from the `offset`-th of them; ranks are ranks in the whole ranking.
    pub async fn top_in_range(
        self,
        range: TrendRange,
        offset: u64,
        limit: u64,
    ) -> Result<TrendPage> {
        self.ranking(range, Order::Desc, offset, limit).await
    }

    /// A page of the members of trending board `board` whose score now is in `range`,
    /// read in `order` ([`Order::Asc`]: lowest first, the offset counted from the
    /// lowest); ranks are ranks in the whole ranking.
    pub async fn ranking(
        self,
        range: TrendRange,
        order: Order,
        offset: u64,
        limit: u64,
    ) -> Result<TrendPage> {
        check_page(offset, limit, self.rb.settings().max_limit)?;
        let now = self.rb.now();
        let mut board = self.cached().await?;
        let store = self.rb.store().trending();
        self.rb
            .retry_trending(&mut board, |b| async move {
                let key = || format!("trend-top {range:?} {order:?} {offset} {limit}");
                let fetch =
                    || store.trend_top(b.at(now), PageQuery::new(range, order, offset, limit));
                let (page, age_ms) = self
                    .rb
                    .read_through((&b.name, b.version), key, fetch)
                    .await?;
                Ok(TrendPage { age_ms, ..page })
            })
            .await
    }

    /// The member's score now whatever its sign, rank (`None` unless positive) and
    /// percentile; `None` when it holds no score.
    pub async fn score(self, member: &str) -> Result<Option<TrendStanding>> {
        let member = Member::parse(member)?;
        let now = self.rb.now();
        let mut board = self.cached().await?;
        let store = self.rb.store().trending();
        let member = &member;
        self.rb
            .retry_trending(&mut board, |b| async move {
                let key = || format!("trend-standing {member}");
                let fetch = || store.trend_standing(b.at(now), member);
                let (standing, age_ms) = self
                    .rb
                    .read_through((&b.name, b.version), key, fetch)
                    .await?;
                Ok(standing.map(|s| TrendStanding { age_ms, ..s }))
            })
            .await
    }

    /// The score and rank of each of `members` now (in order, duplicates kept; 1 to
    /// 1,000 members), read in one step.
    pub async fn ranks<S: AsRef<str>>(self, members: &[S]) -> Result<TrendRanks> {
        let members = parse_ranks_members(members)?;
        let now = self.rb.now();
        let mut board = self.cached().await?;
        let store = self.rb.store().trending();
        let members = &members;
        self.rb
            .retry_trending(&mut board, |b| async move {
                let key = || format!("trend-ranks {members:?}");
                let fetch = || store.trend_ranks(b.at(now), members);
                let (ranks, age_ms) = self
                    .rb
                    .read_through((&b.name, b.version), key, fetch)
                    .await?;
                Ok(TrendRanks { age_ms, ..ranks })
            })
            .await
    }

    /// The member with up to `n` (0–100) ranked entries above and below it, shaped by
    /// `options` (see [`Windowed::around`](super::Windowed::around)); `None` without a
    /// positive score.
    pub async fn around(
        self,
        member: &str,
        n: u64,
        options: AroundOptions,
    ) -> Result<Option<TrendPage>> {
        check_around(n)?;
        let member = Member::parse(member)?;
        let now = self.rb.now();
        let mut board = self.cached().await?;
        let store = self.rb.store().trending();
        let query = AroundQuery {
            member: &member,
            n,
            options,
        };
        self.rb
            .retry_trending(&mut board, |b| async move {
                let key = || format!("trend-around {n} {options:?} {}", query.member);
                let fetch = || store.trend_around(b.at(now), query);
                let (page, age_ms) = self
                    .rb
                    .read_through((&b.name, b.version), key, fetch)
                    .await?;
                Ok(page.map(|p| TrendPage { age_ms, ..p }))
            })
            .await
    }

    /// One maintenance pass of trending board `board` now: rescale when due, then prune
    /// members below the floor (the service's scheduler runs it for every trending
    /// board; see [`maintain_trending`](crate::Rollboard::maintain_trending)).
    pub async fn maintain(self, options: TrendOptions) -> Result<TrendMaintenance> {
        let now = self.rb.now();
        let board = self.cached().await?;
        let pass = self
            .rb
            .store()
            .trending()
            .trend_maintain(board.at(now), options);
        self.rb.change(&board.name, pass).await
    }
}

impl Rollboard {
    /// Every trending board, by name.
    pub async fn trending_boards(&self) -> Result<Vec<TrendingBoard>> {
        let boards = self.store().list_boards().await?;
        Ok(boards
            .iter()
            .filter_map(AnyBoard::trending)
            .cloned()
            .collect())
    }

    /// The events admitted at `now` as writes, and the batch's outcome.
    fn trend_admit(
        &self,
        config: &TrendingConfig,
        events: &[Event],
        now: Timestamp,
    ) -> (Vec<TrendWrite>, BatchOutcome) {
        let mut outcome = BatchOutcome::default();
        let mut writes = Vec::with_capacity(events.len());
        for (index, event) in events.iter().enumerate() {
            match self.trend_input(config, event, now) {
                Ok(w) => writes.push(w),
                Err(error) => outcome.rejected.push(Rejected { index, error }),
            }
        }
        outcome.accepted = writes.len();
        (writes, outcome)
    }

    /// One maintenance pass of every trending board; a board dropped meanwhile is
    /// skipped. Answers what each pass did, by board name.
    pub async fn maintain_trending(
        &self,
        options: TrendOptions,
    ) -> Result<Vec<(BoardName, TrendMaintenance)>> {
        let mut done = Vec::new();
        for board in self.trending_boards().await? {
            let now = self.now();
            let pass = self
                .store()
                .trending()
                .trend_maintain(board.at(now), options);
            match self.change(&board.name, pass).await {
                Ok(report) => done.push((board.name.clone(), report)),
                Err(Error::BoardChanged(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    /// One event checked against the board's rules: member, delta, contributor (checked,
    /// not kept), not in the future beyond the skew, not older than the max age.
    fn trend_input(
        &self,
        config: &TrendingConfig,
        event: &Event,
        now: Timestamp,
    ) -> Result<TrendWrite> {
        let member = Member::parse(&event.member)?;
        if event.value.is_some() {
            return Err(Error::InvalidValue {
                reason: "a trending board sums deltas: send \"delta\", not \"value\"".into(),
            });
        }
        let delta = check_delta(event.delta)?;
        event.by.as_deref().map(Contributor::parse).transpose()?;
        if event.data.is_some() {
            return Err(Error::InvalidMemberData {
                reason: "a trending board keeps no member data: leave data out (windowed \
                         boards keep it)"
                    .into(),
            });
        }
        let at = not_in_future(event.at, now, self.settings().max_future_skew)?;
        check_age(config, at, now)?;
        Ok(TrendWrite {
            member: member.as_str().to_owned(),
            delta,
            at_ms: at.unix_millis(),
        })
    }
}
