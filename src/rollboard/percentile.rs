//! Reads by share of the ranking: the top P percent of a window's ranked members, and the
//! score at a percentile (the lowest total that beats a share Q of them). Both count the
//! ranked members first (as `describe` does), then read the ranking: two reads, so a
//! write between them can move the answer by what that write changed.
//!
//! The score at a percentile is the threshold of the member read's `percentile` (the
//! share of ranked members strictly below a member's total): with the ranked totals
//! sorted ascending `a_1 ≤ … ≤ a_R` and `k` the least count with `k / R ≥ Q`, it is
//! `a_k + 1` (the lowest integer total above `k` of them), or `a_1` when `k` is 0 (Q = 0).
//! So a ranked member's percentile is at least Q exactly when its total is at least the
//! score at Q.

use serde::Serialize;

use super::Windowed;
use crate::domain::PageQuery;
use crate::domain::own_values;
use crate::domain::{Order, ScoreRange, Span, TopPage};
use crate::error::{Error, Result};

/// The score at a percentile of a window's ranking.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct ScoreAt {
    /// The percentile asked, in [0, 1].
    pub percentile: f64,
    /// The lowest total whose holder's percentile (the share of ranked members strictly
    /// below it) is at least `percentile`: the lowest ranked total at 0, one more than
    /// the highest at 1.
    pub score: i64,
    /// Ranked members counted.
    pub ranked: u64,
    /// How many of them are strictly below `score`.
    pub below: u64,
    /// The window.
    pub window: Span,
}

impl Windowed<'_> {
    /// The top `percent` percent (0 < P ≤ 100) of the ranked members of `window`:
    /// `ceil(P / 100 × ranked)` entries, of which this page answers those from `offset`,
    /// at most `limit` (1 to the configured maximum); in `order` ([`Order::Asc`]: the
    /// bottom P percent, lowest first).
    pub async fn top_percent(
        self,
        window: Option<Span>,
        percent: f64,
        order: Order,
        offset: u64,
        limit: u64,
    ) -> Result<TopPage> {
        if !(percent > 0.0 && percent <= 100.0) {
            return Err(Error::InvalidQuery {
                reason: format!("percent must be above 0 and at most 100, got {percent}"),
            });
        }
        crate::domain::check_page(offset, limit, self.rb.inner.settings.max_limit)?;
        let now = self.rb.now();
        let store = &self.rb.inner.store;
        let page = self
            .on_window(window, |b, w| async move {
                let key = || format!("percent {w} {percent} {order:?} {offset} {limit}");
                let b = &b;
                let fetch = || async move {
                    let ranked = store.describe_board(b, now).await?.windows[w].ranked;
                    let share = percent_count(percent, ranked);
                    let limit = limit.min(share.saturating_sub(offset));
                    let page = PageQuery::new(ScoreRange::ALL, order, offset, limit.max(1));
                    let page = store.top(b.at(w, now), page);
                    let mut page = own_values(b, page.await?);
                    page.entries.truncate(limit as usize);
                    Ok(page)
                };
                let (page, age_ms) = self
                    .rb
                    .read_through((&b.name, b.version), key, fetch)
                    .await?;
                Ok(TopPage { age_ms, ..page })
            })
            .await;
        windowed_only(page, "percent")
    }

    /// The lowest total in `window` that beats a share `percentile` (0 to 1) of its
    /// ranked members (see the module's header); [`Error::RankingEmpty`] when none is
    /// ranked.
    pub async fn score_at(self, window: Option<Span>, percentile: f64) -> Result<ScoreAt> {
        if !(0.0..=1.0).contains(&percentile) {
            return Err(Error::InvalidQuery {
                reason: format!("percentile must be between 0 and 1, got {percentile}"),
            });
        }
        let now = self.rb.now();
        let store = &self.rb.inner.store;
        let at = self
            .on_window(window, |b, w| async move {
                let span = b.config.windows()[w];
                // The ranking may shrink between the count and the read: count again then.
                for _ in 0..3 {
                    let ranked = store.describe_board(&b, now).await?.windows[w].ranked;
                    if ranked == 0 {
                        break;
                    }
                    let below = below_count(percentile, ranked);
                    let offset = below.saturating_sub(1);
                    let page = PageQuery::new(ScoreRange::ALL, Order::Asc, offset, 1);
                    let page = store.top(b.at(w, now), page);
                    let page = own_values(&b, page.await?);
                    if let Some(entry) = page.entries.first() {
                        let score = if below == 0 {
                            entry.score
                        } else {
                            entry.score + 1
                        };
                        return Ok(ScoreAt {
                            percentile,
                            score,
                            ranked,
                            below,
                            window: span,
                        });
                    }
                }
                Err(Error::RankingEmpty {
                    board: b.name.to_string(),
                    window: span.to_string(),
                })
            })
            .await;
        windowed_only(at, "score_at")
    }
}

/// A trending board's scores change with time and its ranking is not counted: a read by
/// share of the ranking refuses it as a bad query (422), naming what to use instead.
fn windowed_only<T>(result: Result<T>, what: &str) -> Result<T> {
    match result {
        Err(Error::BoardKind { board, kind }) => Err(Error::InvalidQuery {
            reason: format!(
                "{what} reads a windowed board's ranking and board {board:?} is a {kind} \
                 board: read its top page instead"
            ),
        }),
        other => other,
    }
}

/// `ceil(percent / 100 × ranked)`, computed as `percent × ranked / 100` so whole
/// percentages of whole counts are exact (30 % of 10 is 3, not 4).
pub(crate) fn percent_count(percent: f64, ranked: u64) -> u64 {
    let exact = percent * ranked as f64 / 100.0;
    (exact.ceil() as u64).min(ranked)
}

/// The least `k` with `k / ranked ≥ percentile`, compared as the member read computes a
/// percentile (`below / ranked` in f64), so the two agree to the last bit.
pub(crate) fn below_count(percentile: f64, ranked: u64) -> u64 {
    let mut k = ((percentile * ranked as f64).ceil() as u64).min(ranked);
    while k > 0 && (k - 1) as f64 / ranked as f64 >= percentile {
        k -= 1;
    }
    while k < ranked && (k as f64) / (ranked as f64) < percentile {
        k += 1;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_counts_round_up_and_stay_exact_on_whole_percentages() {
        assert_eq!(percent_count(100.0, 7), 7);
        assert_eq!(percent_count(30.0, 10), 3);
        assert_eq!(percent_count(0.001, 10), 1);
        assert_eq!(percent_count(50.0, 0), 0);
        assert_eq!(percent_count(33.3, 3), 1);
        assert_eq!(percent_count(34.0, 3), 2);
    }

    #[test]
    fn below_counts_are_the_least_share_at_least_the_percentile() {
        assert_eq!(below_count(0.0, 5), 0);
        assert_eq!(below_count(0.3, 10), 3);
        assert_eq!(below_count(0.31, 10), 4);
        assert_eq!(below_count(1.0, 4), 4);
        assert_eq!(below_count(0.999_999, 4), 4);
        assert_eq!(below_count(0.25, 4), 1);
    }
}
