//! The operations every board answers, whatever its kind: what the HTTP routes and an
//! embedding backend that wants "a board" call. Each loads the board once (from the
//! cache), decides by its kind, and calls the windowed or the trending operation
//! underneath; those stay public for callers who know their board's kind.
//!
//! A trending board has no windows: a window asked of it is [`Error::InvalidQuery`].
//! Score bounds are numbers ([`ScoreBounds`]); a windowed board reads them as the
//! integer totals between them.

use super::idempotent::KeyedOutcome;
use super::write::BatchOutcome;
use super::{Rollboard, Trending, Windowed};
use std::future::Future;
use std::sync::Arc;

use crate::domain::any_board::{
    AnyBoard, BoardPage, BoardState, MemberRanks, MemberStanding, TrendingStatus,
};
use crate::domain::board::Board;
use crate::domain::{AroundOptions, Order, TrendingBoard};
use crate::domain::{BoardName, Event, Fingerprint, IdempotencyKey, ScoreBounds, Span};
use crate::error::{Error, Result};

impl Rollboard {
    /// The board of either kind: [`Error::BoardNotFound`] when there is none.
    pub async fn any_board(&self, name: &str) -> Result<AnyBoard> {
        self.cached_any(&BoardName::parse(name)?).await
    }

    /// Applies one event to the board: `Ok` when it was applied, its error otherwise.
    pub async fn write_event(&self, board: &str, event: &Event) -> Result<()> {
        self.write_events(board, std::slice::from_ref(event))
            .await?
            .first_error()
    }

    /// Applies a batch of events to the board: each bad event is rejected on its own (with
    /// its index), the rest are applied (see [`incr_batch`](crate::Windowed::incr_batch)
    /// and [`Trending::incr_batch`](crate::Trending::incr_batch)). Those applied to a
    /// trending board count in `rollboard_trending_events_total`.
    pub async fn write_events(&self, board: &str, events: &[Event]) -> Result<BatchOutcome> {
        self.writing_by_kind(board, |found| async move {
            match &found {
                AnyBoard::Windowed(b) => self.windowed_on(board, b).incr_batch(events).await,
                AnyBoard::Trending(t) => {
                    let written = self.trending_on(board, t).incr_batch(events).await?;
                    count_trending(written.accepted);
                    Ok(written)
                }
            }
        })
        .await
    }

    /// Applies a batch of events to the board once under `key` and the request's
    /// `fingerprint` (see [`write_keyed`](crate::Windowed::write_keyed) and
    /// [`Trending::write_keyed`](crate::Trending::write_keyed)); counted as
    /// [`write_events`](Self::write_events) counts, unless replayed.
    pub async fn write_events_keyed(
        &self,
        board: &str,
        events: &[Event],
        key: &IdempotencyKey,
        fingerprint: &Fingerprint,
    ) -> Result<KeyedOutcome> {
        self.writing_by_kind(board, |found| async move {
            match &found {
                AnyBoard::Windowed(b) => {
                    self.windowed_on(board, b)
                        .write_keyed(events, key, fingerprint)
                        .await
                }
                AnyBoard::Trending(t) => {
                    let written = self
                        .trending_on(board, t)
                        .write_keyed(events, key, fingerprint)
                        .await?;
                    // A replay applied nothing.
                    if !written.replayed {
                        count_trending(written.outcome.accepted);
                    }
                    Ok(written)
                }
            }
        })
        .await
    }

    /// A page of the ranking: of `window` on a windowed board (its first window when
    /// `None`), of the scores now on a trending board; the members whose score is within
    /// `bounds`, highest first, ties by member ascending, from the `offset`-th of them
    /// (their ranks are their ranks in the whole ranking). `limit` is 1 to the
    /// configured `max_limit`.
    pub async fn page(
        &self,
        board: &str,
        window: Option<Span>,
        bounds: ScoreBounds,
        offset: u64,
        limit: u64,
    ) -> Result<BoardPage> {
        self.ordered_page(board, window, bounds, Order::Desc, offset, limit)
            .await
    }

    /// As [`page`](Self::page), read in `order`: [`Order::Asc`] reads the ranking from
    /// the bottom (lowest first, equal scores in the reverse of the board's tie order,
    /// the offset counted from the lowest; ranks stay the board's ranks).
    pub async fn ordered_page(
        &self,
        board: &str,
        window: Option<Span>,
        bounds: ScoreBounds,
        order: Order,
        offset: u64,
        limit: u64,
    ) -> Result<BoardPage> {
        self.by_kind(board, |found| async move {
            Ok(match &found {
                AnyBoard::Windowed(b) => BoardPage::Windowed(
                    self.windowed_on(board, b)
                        .ranking(window, bounds.totals()?, order, offset, limit)
                        .await?,
                ),
                AnyBoard::Trending(t) => {
                    no_window(window)?;
                    BoardPage::Trending(
                        self.trending_on(board, t)
                            .ranking(bounds.scores()?, order, offset, limit)
                            .await?,
                    )
                }
            })
        })
        .await
    }

    /// The member's score whatever its sign, rank (`None` unless positive) and
    /// percentile (in `window` on a windowed board); `None` when it holds no score.
    pub async fn standing(
        &self,
        board: &str,
        member: &str,
        window: Option<Span>,
    ) -> Result<Option<MemberStanding>> {
        self.by_kind(board, |found| async move {
            Ok(match &found {
                AnyBoard::Windowed(b) => self
                    .windowed_on(board, b)
                    .score(member, window)
                    .await?
                    .map(MemberStanding::Windowed),
                AnyBoard::Trending(t) => {
                    no_window(window)?;
                    self.trending_on(board, t)
                        .score(member)
                        .await?
                        .map(MemberStanding::Trending)
                }
            })
        })
        .await
    }

    /// The score and rank of each of `members` (1 to 1,000; in the order asked,
    /// duplicates kept), read at one instant (see [`ranks`](crate::Windowed::ranks)).
    pub async fn member_ranks<S: AsRef<str> + Sync>(
        &self,
        board: &str,
        members: &[S],
        window: Option<Span>,
    ) -> Result<MemberRanks> {
        self.by_kind(board, |found| async move {
            Ok(match &found {
                AnyBoard::Windowed(b) => {
                    MemberRanks::Windowed(self.windowed_on(board, b).ranks(members, window).await?)
                }
                AnyBoard::Trending(t) => {
                    no_window(window)?;
                    MemberRanks::Trending(self.trending_on(board, t).ranks(members).await?)
                }
            })
        })
        .await
    }

    /// The member with up to `n` (0–100) ranked entries above and below it, shaped by
    /// `options` (`AroundOptions::default()`: as many as there are, highest first; with
    /// `fill` a full page of `2n + 1` ranked entries shifted at the ends, fewer only when
    /// fewer are ranked; in `options.order`); `None` when it holds no positive score.
    pub async fn neighbours(
        &self,
        board: &str,
        member: &str,
        window: Option<Span>,
        n: u64,
        options: AroundOptions,
    ) -> Result<Option<BoardPage>> {
        self.by_kind(board, |found| async move {
            Ok(match &found {
                AnyBoard::Windowed(b) => self
                    .windowed_on(board, b)
                    .around(member, window, n, options)
                    .await?
                    .map(BoardPage::Windowed),
                AnyBoard::Trending(t) => {
                    no_window(window)?;
                    self.trending_on(board, t)
                        .around(member, n, options)
                        .await?
                        .map(BoardPage::Trending)
                }
            })
        })
        .await
    }

    /// The board's state: a windowed board's members per window, live slots and
    /// retirement lag; a trending board's members, ranked members and landmark.
    pub async fn board_state(&self, board: &str) -> Result<BoardState> {
        self.by_kind(board, |found| async move {
            Ok(match &found {
                AnyBoard::Windowed(_) => BoardState::Windowed(self.describe_board(board).await?),
                AnyBoard::Trending(t) => {
                    let (board, counts) = self.trending_on(board, t).describe().await?;
                    BoardState::Trending(TrendingStatus::new(&board, counts))
                }
            })
        })
        .await
    }

    /// The end of `board`'s ranking a read starts from for the order of values `asked`
    /// (as the `order` of the HTTP reads: `desc` highest first, `asc` lowest first; none:
    /// from rank 1): the same order, but on a min board, whose rank 1 is its lowest
    /// value, the reverse ([`Order::Desc`] names the top of a ranking).
    pub async fn ranking_end(&self, board: &str, asked: Option<Order>) -> Result<Order> {
        let Some(asked) = asked else {
            return Ok(Order::Desc);
        };
        Ok(match self.cached_any(&BoardName::parse(board)?).await? {
            AnyBoard::Windowed(b) => crate::domain::ranking_end(&b, asked),
            AnyBoard::Trending(_) => asked,
        })
    }

    /// Runs `op` on the board as cached (one load when it is not), which `op` hands to
    /// the operation underneath (`windowed_on`, `trending_on`): a request looks its board
    /// up once. A cached board may be stale: dropped and re-created as the other kind
    /// elsewhere. The operation underneath then finds the board changed, reloads it and
    /// refuses it ([`Error::BoardKind`]); `op` runs once more on the board now cached.
    async fn by_kind<T, F, Fut>(&self, board: &str, op: F) -> Result<T>
    where
        F: Fn(AnyBoard) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        self.on_kind(board, false, op).await
    }

    /// [`by_kind`](Self::by_kind) for a write: an unknown board is created with the
    /// default config, when one is set (see `default_board.rs`).
    async fn writing_by_kind<T, F, Fut>(&self, board: &str, op: F) -> Result<T>
    where
        F: Fn(AnyBoard) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        self.on_kind(board, true, op).await
    }

    /// `op` on the board found (the write's board, created when missing, if `writing`);
    /// when it says the board is of the other kind and the cache was stale, once more on
    /// the board now.
    async fn on_kind<T, F, Fut>(&self, board: &str, writing: bool, op: F) -> Result<T>
    where
        F: Fn(AnyBoard) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let name = BoardName::parse(board)?;
        let found = if writing {
            self.write_target(&name).await?
        } else {
            self.cached_any(&name).await?
        };
        let kind = found.kind();
        match op(found).await {
            Err(error @ Error::BoardKind { .. }) => {
                let now = self.cached_any(&name).await?;
                if now.kind() == kind {
                    // Not a stale entry: the operation itself refused the kind.
                    return Err(error);
                }
                op(now).await
            }
            other => other,
        }
    }

    /// The windowed board `board`'s operations on the board `found`.
    fn windowed_on<'a>(&'a self, board: &'a str, found: &'a Arc<Board>) -> Windowed<'a> {
        Windowed {
            found: Some(found),
            ..self.windowed(board)
        }
    }

    /// The trending board `board`'s operations on the board `found`.
    fn trending_on<'a>(&'a self, board: &'a str, found: &'a Arc<TrendingBoard>) -> Trending<'a> {
        Trending {
            found: Some(found),
            ..self.trending(board)
        }
    }
}

/// Counts `n` events applied to a trending board in the service's metrics
/// (`rollboard_trending_events_total`); a library built without them counts nothing.
fn count_trending(n: usize) {
    #[cfg(feature = "server")]
    crate::metrics::trending_events(n);
    #[cfg(not(feature = "server"))]
    let _ = n;
}

/// A trending board has no windows: a window asked of it is refused.
fn no_window(window: Option<Span>) -> Result<()> {
    match window {
        Some(_) => Err(Error::InvalidQuery {
            reason: "a trending board has no windows: leave out window".into(),
        }),
        None => Ok(()),
    }
}
