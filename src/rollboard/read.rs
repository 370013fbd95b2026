//! Reads: a page of the ranking, a member's standing, its neighbours and its history
//! (their answers are in `domain/ranking.rs`). Every read says which slots its totals cover (`from` inclusive,
//! `to` exclusive, unix seconds), so a caller sees when retirement is behind: the totals
//! are exactly the window when `from` equals the window's start.
//!
//! The rankings, standings, ranks and neighbours are read through the read cache
//! ([`Rollboard::reading_within`]): from the store when the handle allows no staleness
//! (the default), and each answer says its age (`age_ms`).

use std::future::Future;
use std::sync::Arc;

use super::{Windowed, window_index};
use crate::domain::PageQuery;
use crate::domain::board::Board;
use crate::domain::{AroundOptions, Order, check_around, check_page, parse_ranks_members};
use crate::domain::{History, Member, Ranks, ScoreRange, Span, Standing, TopPage};
use crate::domain::{own_values, stored_range};
use crate::error::Result;

impl Windowed<'_> {
    /// A page of the ranking of `window` (the board's first window when `None`):
    /// members with a positive total, highest first, ties by member ascending.
    /// `limit` is 1–1000.
    pub async fn top(self, window: Option<Span>, offset: u64, limit: u64) -> Result<TopPage> {
        self.top_in_range(window, ScoreRange::ALL, offset, limit)
            .await
    }

    /// A page of the members of the ranking of `window` whose totals are in `range`
    /// (`ScoreRange::new(Some(10), Some(100))?`), from the `offset`-th of them; their
    /// ranks are their ranks in the whole ranking. `limit` is 1–1000.
    pub async fn top_in_range(
        self,
        window: Option<Span>,
        range: ScoreRange,
        offset: u64,
        limit: u64,
    ) -> Result<TopPage> {
        self.ranking(window, range, Order::Desc, offset, limit)
            .await
    }

    /// The bottom of the ranking of `window`: its lowest ranked members, lowest first,
    /// equal totals in the reverse of the board's tie order, from the `offset`-th from
    /// the bottom. Ranks stay the board's ranks (the bottom member of 1,000 ranked has
    /// rank 1,000 unless it is tied). `limit` is 1–1000.
    pub async fn bottom(self, window: Option<Span>, offset: u64, limit: u64) -> Result<TopPage> {
        self.ranking(window, ScoreRange::ALL, Order::Asc, offset, limit)
            .await
    }

    /// A page of the members of the ranking of `window` whose totals are in `range`,
    /// read in `order` ([`Order::Asc`]: from the bottom, the offset counted from the
    /// lowest); ranks are ranks in the whole ranking. `limit` is 1–1000.
    pub async fn ranking(
        self,
        window: Option<Span>,
        range: ScoreRange,
        order: Order,
        offset: u64,
        limit: u64,
    ) -> Result<TopPage> {
        check_page(offset, limit, self.rb.inner.settings.max_limit)?;
        let now = self.rb.now();
        let store = &self.rb.inner.store;
        // The first page of the top shows the board's pins (pins.rs).
        let front = offset == 0 && order == Order::Desc && range == ScoreRange::ALL;
        self.on_window(window, |b, w| async move {
            let key = || top_key(w, range, order, offset, limit);
            let stored = stored_range(&b, range);
            let fetch = || store.top(b.at(w, now), PageQuery::new(stored, order, offset, limit));
            let (mut page, age_ms) = self
                .rb
                .read_through((&b.name, b.version), key, fetch)
                .await?;
            if front && b.pins.iter().any(|p| p.holds(now)) {
                page = super::pins::pinned(store.as_ref(), &b, w, now, limit, page).await?;
            }
            Ok(TopPage {
                age_ms,
                ..own_values(&b, page)
            })
        })
        .await
    }

    /// The member's total (whatever its sign), rank (as the board ranks ties; `None`
    /// when the total is not positive) and percentile (the share of ranked members
    /// strictly below it) in `window`; `None` when it holds no total there.
    pub async fn score(self, member: &str, window: Option<Span>) -> Result<Option<Standing>> {
        let member = Member::parse(member)?;
        let now = self.rb.now();
        let store = &self.rb.inner.store;
        let member = &member;
        self.on_window(window, |b, w| async move {
            // Concurrent exact reads of the window's members share one store read.
            let key = || format!("standing {w}");
            let at = b.at(w, now);
            let fetch = |members: Vec<Member>| async move { store.standings(at, &members).await };
            let board = (&b.name, b.version);
            let read = self.rb.read_batched(board, key, member.clone(), fetch);
            let (standing, age_ms) = read.await?;
            Ok(own_values(&b, standing).map(|s| Standing { age_ms, ..s }))
        })
        .await
    }

    /// The total and rank (as the board ranks ties) of each of `members` (1 to 1000; a user's
    /// friends) in `window`, in the order asked, read at one instant: one entry per
    /// member asked (duplicates too), its total whatever its sign (0 when it holds
    /// none) and `rank` `None` unless the total is positive.
    pub async fn ranks<S: AsRef<str>>(self, members: &[S], window: Option<Span>) -> Result<Ranks> {
        let members = parse_ranks_members(members)?;
        let now = self.rb.now();
        let store = &self.rb.inner.store;
        let members = &members;
        self.on_window(window, |b, w| async move {
            let key = || format!("ranks {w} {members:?}");
            let fetch = || store.ranks(b.at(w, now), members);
            let (ranks, age_ms) = self
                .rb
                .read_through((&b.name, b.version), key, fetch)
                .await?;
            Ok(Ranks {
                age_ms,
                ..own_values(&b, ranks)
            })
        })
        .await
    }

    /// The member with up to `n` (0–100) entries above and below it, shaped by `options`
    /// (`AroundOptions::default()`: as many as there are, highest first): with `fill`, a
    /// full page of `2n + 1` entries (n 0–100) when the ranking holds that many, shifted at
    /// the ends (near the top it starts at rank 1, near the bottom it ends at the last
    /// ranked member), fewer only when fewer are ranked; in `options.order`. `None` when
    /// the member has no positive total in `window`.
    pub async fn around(
        self,
        member: &str,
        window: Option<Span>,
        n: u64,
        options: AroundOptions,
    ) -> Result<Option<TopPage>> {
        check_around(n)?;
        let member = Member::parse(member)?;
        let now = self.rb.now();
        let store = &self.rb.inner.store;
        let member = &member;
        self.on_window(window, |b, w| async move {
            // Concurrent exact reads around the window's members share one store read.
            let key = || format!("around {w} {n} {options:?}");
            let at = b.at(w, now);
            let fetch =
                |members: Vec<Member>| async move { store.arounds(at, &members, n, options).await };
            let board = (&b.name, b.version);
            let read = self.rb.read_batched(board, key, member.clone(), fetch);
            let (page, age_ms) = read.await?;
            Ok(own_values(&b, page).map(|p| TopPage { age_ms, ..p }))
        })
        .await
    }

    /// The member's non-zero values per slot over the board's largest window.
    pub async fn history(self, member: &str) -> Result<History> {
        let member = Member::parse(member)?;
        let now = self.rb.now();
        let store = &self.rb.inner.store;
        let member = &member;
        self.on_board(|b| async move { Ok(own_values(&b, store.history(&b, now, member).await?)) })
            .await
    }
}

impl Windowed<'_> {
    /// Runs `op` on the board and the index of `window` in it (the first window when
    /// `None`).
    pub(super) async fn on_window<T, F, Fut>(self, window: Option<Span>, op: F) -> Result<T>
    where
        F: Fn(Arc<Board>, usize) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let op = &op;
        self.on_board(|b| async move {
            let w = window_index(&b, window)?;
            op(b, w).await
        })
        .await
    }
}

/// A page's name in the read cache, `top <window> <range> <order> <offset> <limit>`,
/// written without `fmt`, whose `format!` of it cost a cached top-10 read ~3% of its
/// instructions.
fn top_key(w: usize, range: ScoreRange, order: Order, offset: u64, limit: u64) -> String {
    let (mut a, mut b, mut c) = (
        itoa::Buffer::new(),
        itoa::Buffer::new(),
        itoa::Buffer::new(),
    );
    let order = match order {
        Order::Desc => " desc ",
        Order::Asc => " asc ",
    };
    let (w, offset, limit) = (a.format(w), b.format(offset), c.format(limit));
    ["top ", w, " ", &range.key(), order, offset, " ", limit].concat()
}
