//! A sharded board's rankings, merged exactly from its shards.
//!
//! Every shard ranks its own members in the board's order (total, then member ascending),
//! so the board's ranking is the merge of the shards' and a member's place in it is the sum
//! over the shards of the members ahead of it
//! ([`ShardMoves::count_ahead`](crate::store::ShardMoves::count_ahead), one call per
//! shard):
//!
//! - a member's rank: 1 + the members ahead of its total (competition) or of its total
//!   and name (position), in every shard; its percentile from the same counts;
//! - the ranks of a list: the members' totals from their shards, then one count call
//!   per shard for all of them;
//! - a page at ranking positions `start ..`: near the top (ending within
//!   [`MERGED_DEPTH`]) each shard's first `start + count` merged; deeper, where position
//!   `start` falls in each shard is found first ([`InWindow::cut`]: pivots from the
//!   shards, each placed by its count in every shard, narrowing each shard's range), so
//!   no shard is asked for more than the page;
//! - around a member: its position, then the page around it.
//!
//! Each read is exact when the board does not change meanwhile; under writes its calls
//! see the shards at slightly different moments (as separate reads of one board would).

use futures_util::future::try_join_all;

use super::view::Sharded;
use crate::domain::PageQuery;
use crate::domain::board::Board;
use crate::domain::{Ahead, AheadProbe, AroundQuery, Coverage, Entry, Member, MemberRank};
use crate::domain::{Order, Ranks, ScoreRange, Standing, Ties, Timestamp, TopPage};
use crate::domain::{around_positions, page_positions, percentile};
use crate::error::Result;

/// Pages that end within this many positions of the top are merged from every shard's
/// top in one round trip; deeper ones find where they start in each shard first.
const MERGED_DEPTH: u64 = 1_000;

/// A probe below every total: every ranked member is ahead of it.
const BOTTOM: AheadProbe = AheadProbe {
    total: i64::MIN,
    member: None,
};

/// A sharded board's reads of one window, at one time.
pub(super) struct InWindow<'a> {
    sharded: &'a Sharded<'a>,
    window: usize,
    now: Timestamp,
}

impl<'a> Sharded<'a> {
    /// Reads of window `window` at `now`.
    pub(super) fn in_window(&'a self, window: usize, now: Timestamp) -> InWindow<'a> {
        InWindow {
            sharded: self,
            window,
            now,
        }
    }
}

impl InWindow<'_> {
    fn shards(&self) -> &[Board] {
        self.sharded.shards()
    }

    /// Each shard's counts for `probes`, and the slots they cover together.
    async fn ahead_each(&self, probes: &[AheadProbe]) -> Result<(Coverage, Vec<Vec<u64>>)> {
        let store = self.sharded.moves()?;
        let answers = self
            .sharded
            .each(|_, b| store.count_ahead(b.at(self.window, self.now), probes))
            .await?;
        let coverage = joined(answers.iter().map(Ahead::coverage));
        Ok((coverage, answers.into_iter().map(|a| a.counts).collect()))
    }

    /// The counts for `probes` over the whole board: the shards' summed.
    pub(super) async fn ahead(&self, probes: &[AheadProbe]) -> Result<Ahead> {
        let (coverage, each) = self.ahead_each(probes).await?;
        let counts = (0..probes.len())
            .map(|p| each.iter().map(|counts| counts[p]).sum())
            .collect();
        Ok(Ahead::new(coverage, counts))
    }

    pub(super) async fn top(&self, page: PageQuery<ScoreRange>) -> Result<TopPage> {
        let (range, order, offset, limit) = page.parts();
        // A page near the top: the shards' tops merged, however many are ranked (one
        // round trip).
        if range == ScoreRange::ALL && order == Order::Desc && offset + limit <= MERGED_DEPTH {
            let (coverage, entries) = self.run(offset, limit, None).await?;
            return Ok(self.page(coverage, entries, order));
        }
        // The members asked for are a run of ranking positions: after those above the
        // range's highest total, up to the last at or above its lowest.
        let rule = self.sharded.board().config.rank();
        let probes = if range == ScoreRange::ALL {
            vec![BOTTOM]
        } else {
            vec![above(range.max()), above(range.lowest(rule) - 1)]
        };
        let ahead = self.ahead(&probes).await?;
        let (first, run) = match ahead.counts[..] {
            [all] => (0, all),
            [first, through] => (first, through.saturating_sub(first)),
            _ => unreachable!("one count per probe"),
        };
        let (start, count) = page_positions(first, run, order, offset, limit);
        let (coverage, entries) = self.run(start, count, Some(ahead.coverage())).await?;
        Ok(self.page(coverage, entries, order))
    }

    pub(super) async fn around(&self, query: AroundQuery<'_>) -> Result<Option<TopPage>> {
        let AroundQuery { member, n, options } = query;
        let Some(standing) = self.own_standing(member).await? else {
            return Ok(None);
        };
        if standing.rank.is_none() {
            return Ok(None);
        }
        let probes = [at(standing.score, member), BOTTOM];
        let ahead = self.ahead(&probes).await?;
        let ranked = ahead.counts[1];
        // The member's position, inside the ranking even if it changed meanwhile.
        let position = ahead.counts[0].min(ranked.saturating_sub(1));
        let (start, count) = around_positions(position, ranked, n, options.fill);
        let coverage = ahead.coverage().join(standing.coverage());
        let (coverage, entries) = self.run(start, count, Some(coverage)).await?;
        Ok(Some(self.page(coverage, entries, options.order)))
    }

    pub(super) async fn standing(&self, member: &Member) -> Result<Option<Standing>> {
        let Some(standing) = self.own_standing(member).await? else {
            return Ok(None);
        };
        if standing.rank.is_none() {
            // Not ranked: no rank, and no ranked member is below it, on any shard.
            return Ok(Some(standing));
        }
        let score = standing.score;
        let probes = [self.rank_probe(score, member), above(score - 1), BOTTOM];
        let ahead = self.ahead(&probes).await?;
        let [before, at_or_above, ranked] = ahead.counts[..] else {
            unreachable!("one count per probe")
        };
        Ok(Some(Standing::new(
            member.to_string(),
            score,
            Some(before + 1),
            percentile(ranked.saturating_sub(at_or_above), ranked),
            standing.coverage().join(ahead.coverage()),
        )))
    }

    pub(super) async fn ranks(&self, members: &[Member]) -> Result<Ranks> {
        // The totals, from each member's shard (one call per shard).
        let homes = self.sharded.homes(members.iter()).await?;
        let by_shard = self.sharded.group(homes);
        let answers = self
            .sharded
            .each(|i, b| {
                let asked: Vec<Member> = by_shard.part(i, members);
                async move {
                    if asked.is_empty() {
                        return Ok(None);
                    }
                    let ranks = self
                        .sharded
                        .store
                        .ranks(b.at(self.window, self.now), &asked)
                        .await?;
                    Ok(Some(ranks))
                }
            })
            .await?;
        let mut coverage = joined(answers.iter().flatten().map(Ranks::coverage));
        let read = answers
            .into_iter()
            .map(|a| a.map_or_else(Vec::new, |r| r.entries))
            .collect();
        let mut entries: Vec<MemberRank> = by_shard.ungroup(read);
        // Then the ranks of the ranked ones, from the counts of every shard.
        let ranked: Vec<usize> = (0..entries.len())
            .filter(|k| entries[*k].rank.is_some())
            .collect();
        if !ranked.is_empty() {
            let probes: Vec<AheadProbe> = ranked
                .iter()
                .map(|k| self.rank_probe(entries[*k].score, &members[*k]))
                .collect();
            let ahead = self.ahead(&probes).await?;
            coverage = coverage.join(ahead.coverage());
            for (k, before) in ranked.iter().zip(ahead.counts) {
                entries[*k].rank = Some(before + 1);
            }
        }
        Ok(Ranks::new(
            self.sharded.board().name.clone(),
            coverage,
            entries,
        ))
    }

    /// The member's standing in its own shard (its total, whether it is ranked).
    async fn own_standing(&self, member: &Member) -> Result<Option<Standing>> {
        let shard = self.sharded.home(member).await?;
        let result = self
            .sharded
            .store
            .standings(
                shard.at(self.window, self.now),
                std::slice::from_ref(member),
            )
            .await
            .map(|mut standings| standings.pop().flatten());
        self.sharded.lift(result)
    }

    /// The probe whose count is the members ranked before `member`, holding `total`:
    /// those above the total, and on a board of positions, those tied before it.
    pub(super) fn rank_probe(&self, total: i64, member: &Member) -> AheadProbe {
        match self.sharded.board().config.ties() {
            Ties::Position => at(total, member),
            Ties::Competition | Ties::Dense => above(total),
        }
    }

    /// The entries at ranking positions `start .. start + count` (fewer where the
    /// ranking ends), in ranking order and ranked as the board ranks, with the slots
    /// they cover joined to `coverage` (when the caller read any).
    async fn run(
        &self,
        start: u64,
        count: u64,
        coverage: Option<Coverage>,
    ) -> Result<(Coverage, Vec<Entry>)> {
        if let (0, Some(coverage)) = (count, coverage) {
            return Ok((coverage, Vec::new()));
        }
        let (cut, skip) = if start + count <= MERGED_DEPTH {
            (vec![0; self.shards().len()], start)
        } else {
            (self.cut(start).await?, 0)
        };
        let pages = self
            .sharded
            .each(|i, b| {
                let page = PageQuery::top(cut[i], skip + count);
                self.sharded.store.top(b.at(self.window, self.now), page)
            })
            .await?;
        let coverage = joined(pages.iter().map(TopPage::coverage).chain(coverage));
        let mut merged: Vec<Entry> = pages.into_iter().flat_map(|p| p.entries).collect();
        merged.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.member.cmp(&b.member)));
        let mut entries = merged.split_off((skip as usize).min(merged.len()));
        entries.truncate(count as usize);
        // The first entry's competition rank: 1 + the members above its total, counted
        // in the merged prefix when it was read, else on every shard.
        let first_rank = match entries.first() {
            Some(first) if start > 0 && skip == start => {
                1 + merged.partition_point(|e| e.score > first.score) as u64
            }
            Some(first) if start > 0 => 1 + self.ahead(&[above(first.score)]).await?.counts[0],
            _ => 1,
        };
        let ties = self.sharded.board().config.ties();
        let mut previous: Option<(i64, u64)> = None;
        for (i, entry) in entries.iter_mut().enumerate() {
            let position = start + i as u64 + 1;
            entry.rank = match (ties, previous) {
                (Ties::Position, _) => position,
                (_, None) => first_rank,
                (_, Some((score, rank))) if score == entry.score => rank,
                (_, Some(_)) => position,
            };
            previous = Some((entry.score, entry.rank));
        }
        Ok((coverage, entries))
    }

    /// How many of each shard's ranked members come before ranking position `start`.
    ///
    /// Each shard's count lies in a range, at first 0 to `start`. Each round takes from
    /// every shard whose range is open the member at a position inside it (the first
    /// round where an even spread would put the cut, the next ones the middle), counts
    /// the members ahead of it in every shard, and so knows whether it comes before the
    /// cut: if so every shard's count is at least its count ahead of it (its own
    /// shard's, one more), if not at most. Each round at least halves every open range;
    /// the counts are found when the ranges' lower ends (or upper ends) add up to
    /// `start`. A position past a shard's last member finds none there: its count is
    /// below it. Two round trips a round.
    async fn cut(&self, start: u64) -> Result<Vec<u64>> {
        let k = self.shards().len();
        let mut lo = vec![0u64; k];
        let mut hi = vec![start; k];
        for round in 0.. {
            let (low, high) = (lo.iter().sum::<u64>(), hi.iter().sum::<u64>());
            if low >= start {
                return Ok(lo);
            }
            if high <= start {
                return Ok(hi);
            }
            let pivots: Vec<(usize, u64)> = (0..k)
                .filter(|j| lo[*j] < hi[*j])
                .map(|j| {
                    let width = hi[j] - lo[j];
                    let at = if round == 0 {
                        // Where an even spread over the open ranges puts the cut.
                        lo[j] + (width * (start - low) / (high - low)).min(width - 1)
                    } else {
                        lo[j] + width / 2
                    };
                    (j, at)
                })
                .collect();
            let found = try_join_all(pivots.iter().map(|(j, at)| {
                let shard = self.shards()[*j].at(self.window, self.now);
                self.sharded.store.top(shard, PageQuery::top(*at, 1))
            }))
            .await;
            let found = self.sharded.lift(found)?;
            let mut probes = Vec::with_capacity(pivots.len());
            let mut placed = Vec::with_capacity(pivots.len());
            for ((j, at), page) in pivots.iter().zip(found) {
                match page.entries.first() {
                    Some(e) => {
                        probes.push(at_entry(e)?);
                        placed.push((*j, *at));
                    }
                    // Past the shard's last member: its count is below this position.
                    None => hi[*j] = (*at).max(lo[*j]),
                }
            }
            let (_, counts) = self.ahead_each(&probes).await?;
            for (p, (j, at)) in placed.into_iter().enumerate() {
                // The pivot's own shard holds `at` members ahead of it.
                let ahead = |i: usize| if i == j { at } else { counts[i][p] };
                let position: u64 = (0..k).map(ahead).sum();
                for i in 0..k {
                    if position < start {
                        let bound = ahead(i) + u64::from(i == j);
                        lo[i] = lo[i].max(bound).min(hi[i]);
                    } else {
                        hi[i] = hi[i].min(ahead(i)).max(lo[i]);
                    }
                }
            }
        }
        unreachable!("the loop returns")
    }

    /// A page of the board from `entries` in ranking order, in `order`.
    fn page(&self, coverage: Coverage, mut entries: Vec<Entry>, order: Order) -> TopPage {
        if order == Order::Asc {
            entries.reverse();
        }
        TopPage::new(self.sharded.board().name.clone(), coverage, entries)
    }
}

/// A probe whose count is the members with a total above `total`.
fn above(total: i64) -> AheadProbe {
    AheadProbe {
        total,
        member: None,
    }
}

/// A probe whose count is the members ranked before `member` holding `total`.
fn at(total: i64, member: &Member) -> AheadProbe {
    AheadProbe {
        total,
        member: Some(member.clone()),
    }
}

/// The probe of a page's entry.
fn at_entry(entry: &Entry) -> Result<AheadProbe> {
    Ok(at(entry.score, &Member::parse(&entry.member)?))
}

/// The coverage of totals made of all of `coverages` (at least one).
fn joined(coverages: impl Iterator<Item = Coverage>) -> Coverage {
    coverages
        .reduce(Coverage::join)
        .expect("a sharded board has shards")
}
