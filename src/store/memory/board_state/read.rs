//! A board's reads in memory: pages, standings, ranks, counts ahead, pages around a
//! member and history, each with the coverage of its window (as `read_ranking.lua` and
//! `history.lua`).

use std::collections::btree_map::Entry as Held;

use super::MemBoard;
use crate::domain::PageQuery;
use crate::domain::{
    Ahead, AheadProbe, AroundQuery, Coverage, Entry, History, MAX_ABS, Member, MemberRank, Order,
    Point, Ranks, ScoreRange, Standing, Timestamp, TopPage, around_positions, coverage,
    page_positions, percentile,
};

impl MemBoard {
    pub(super) fn coverage(&self, window: usize, now: Timestamp) -> (i64, i64) {
        let first_pending = self
            .slots
            .range(self.retired[window] + 1..)
            .next()
            .map(|(s, _)| *s);
        let newest = self.slots.keys().next_back().copied();
        coverage(
            &self.board.config,
            window,
            now,
            first_pending,
            newest,
            self.states[window],
        )
    }

    /// What window `window`'s totals cover at `now`.
    fn covered(&self, window: usize, now: Timestamp) -> Coverage {
        Coverage::of(&self.board.config, window, now, self.coverage(window, now))
    }

    fn page(&self, window: usize, now: Timestamp, entries: Vec<Entry>) -> TopPage {
        TopPage::new(self.board.name.clone(), self.covered(window, now), entries)
    }

    pub fn top(&self, window: usize, now: Timestamp, page: PageQuery<ScoreRange>) -> TopPage {
        let (range, order, offset, limit) = page.parts();
        let totals = &self.totals[window];
        // The members of the range are a run of consecutive ranking positions; the
        // ranking is every ranked total: no need to count the range.
        let (first, run) = if range == ScoreRange::ALL {
            (0, totals.ranked())
        } else {
            (
                totals.count_between(range.max().saturating_add(1), MAX_ABS),
                totals.count_between(range.lowest(totals.rank_rule()), range.max()),
            )
        };
        let (start, count) = page_positions(first, run, order, offset, limit);
        self.page(window, now, in_order(totals.page(start, count), order))
    }

    pub fn standing(&self, window: usize, now: Timestamp, member: &Member) -> Option<Standing> {
        let totals = &self.totals[window];
        if let Some(hidden) = totals.hidden_total(member.as_str()) {
            let standing = Standing::new(
                member.to_string(),
                hidden.unwrap_or(0),
                None,
                0.0,
                self.covered(window, now),
            );
            return Some(Standing {
                hidden: true,
                ..standing
            });
        }
        let score = totals.get(member.as_str())?;
        // A total that is not ranked is answered: no ranked member is below it.
        let rule = totals.rank_rule();
        let (rank, below) = if rule.ranks(score) {
            let rank = totals.rank(member.as_str(), score);
            (Some(rank), totals.count_between(rule.lowest(), score - 1))
        } else {
            (None, 0)
        };
        Some(Standing::new(
            member.to_string(),
            score,
            rank,
            percentile(below, totals.ranked()),
            self.covered(window, now),
        ))
    }

    pub fn ranks(&self, window: usize, now: Timestamp, members: &[Member]) -> Ranks {
        let totals = &self.totals[window];
        let entries = members
            .iter()
            .map(|m| {
                let held = totals.get(m.as_str());
                let score = held.unwrap_or(0);
                MemberRank {
                    member: m.to_string(),
                    score,
                    rank: held
                        .filter(|s| totals.rank_rule().ranks(*s))
                        .map(|s| totals.rank(m.as_str(), s)),
                }
            })
            .collect();
        Ranks::new(self.board.name.clone(), self.covered(window, now), entries)
    }

    pub fn count_ahead(&self, window: usize, now: Timestamp, probes: &[AheadProbe]) -> Ahead {
        let totals = &self.totals[window];
        let counts = probes
            .iter()
            .map(|p| totals.ahead(p.total, p.member.as_ref().map(Member::as_str)))
            .collect();
        Ahead::new(self.covered(window, now), counts)
    }

    pub fn around(&self, window: usize, now: Timestamp, query: AroundQuery) -> Option<TopPage> {
        let AroundQuery { member, n, options } = query;
        let totals = &self.totals[window];
        let score = totals
            .get(member.as_str())
            .filter(|s| totals.rank_rule().ranks(*s))?;
        let position = totals.position(member.as_str(), score);
        let (start, count) = around_positions(position, totals.ranked(), n, options.fill);
        let entries = in_order(totals.page(start, count), options.order);
        Some(self.page(window, now, entries))
    }

    pub fn history(&self, now: Timestamp, member: &Member) -> History {
        let config = &self.board.config;
        let largest = self.windows() - 1;
        let from = config.window_start(largest, now);
        // A max or latest board's point may be 0; a sum board's slot value with its
        // contributions is a point unless they cancel out.
        let mut points = self.contributions.history(from, member.as_str());
        for (slot, values) in self.slots.range(from..) {
            let held = values.get(member.as_str());
            let Some(value) = held.and_then(|v| self.family.point(v)) else {
                continue;
            };
            match points.entry(*slot) {
                Held::Vacant(point) => {
                    point.insert(value);
                }
                Held::Occupied(point) if *point.get() + value == 0 => {
                    point.remove();
                }
                Held::Occupied(mut point) => *point.get_mut() += value,
            }
        }
        let points = points
            .into_iter()
            .map(|(slot, value)| Point { slot, value })
            .collect();
        History {
            member: member.to_string(),
            slot: config.slot(),
            from,
            to: self.coverage(largest, now).1,
            points,
        }
    }
}

/// `entries`, read highest first, in `order`.
fn in_order(mut entries: Vec<Entry>, order: Order) -> Vec<Entry> {
    if order == Order::Asc {
        entries.reverse();
    }
    entries
}
