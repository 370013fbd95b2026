//! The review gate of a board in memory (docs/design.md, "Review gate"), the model of
//! Redis's `lua/review.lua`: computed from its definition after every change. Each
//! window's bar is its K-th allowed public member; every unreviewed member that is not
//! hidden and ranks at or over the bar in some window is held (hidden in every window).

use std::collections::HashSet;

use super::MemBoard;
use crate::domain::GateBar;
use crate::domain::{Decision, HeldEvent, HeldMember, Member, Ties, Timestamp, parse_log_id};
use crate::store::memory::stream::{Id, Stream, advance, id_text};

/// How many held events a board keeps (as Redis's `board_{b}:held`, at least).
const HELD_KEPT: usize = 10_000;

/// The allowed members, those the gate holds (hidden in the totals too), and the stream
/// of the members it held, with the review webhook's cursor.
#[derive(Debug, Default)]
pub(super) struct Review {
    pub allowed: HashSet<String>,
    pub held: HashSet<String>,
    /// The held members, oldest first.
    log: Stream<String, HELD_KEPT>,
    /// The newest delivered event's id.
    cursor: Option<Id>,
    /// The time of the board's last write or retirement: a hold's time (the memory store
    /// keeps no clock of its own).
    now_ms: u64,
    /// On a shard of a sharded board, per window the bar across the shards last
    /// published to it, and that publication's number.
    published: (u64, Vec<Option<GateBar>>),
    /// On shard 0 of a sharded board, the last number taken by a publication.
    epoch: u64,
}

impl Review {
    /// Notes the time of a write or retirement.
    pub fn seen(&mut self, now: Timestamp) {
        self.now_ms = self.now_ms.max(now.unix_millis().max(0) as u64);
    }

    /// The time of the board's last write or retirement, unix ms.
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// Appends the hold of `member`.
    fn log(&mut self, member: &str) {
        self.log.push(self.now_ms, |_| member.to_owned());
    }
}

/// Whether `member`, holding `total`, ranks at or over `bar` (none: every ranked member
/// does); `position`: equal totals rank by member.
fn over_bar(bar: Option<&(i64, String)>, total: i64, member: &str, position: bool) -> bool {
    match bar {
        None => true,
        Some((bar_total, bar_member)) => {
            total > *bar_total
                || (total == *bar_total && (!position || member <= bar_member.as_str()))
        }
    }
}

/// The higher of a window's own bar `bar` and the bar across the shards `published`
/// (none: the lowest).
fn higher(
    bar: Option<(i64, String)>,
    published: Option<&GateBar>,
    position: bool,
) -> Option<(i64, String)> {
    let Some(published) = published else {
        return bar;
    };
    let published = (
        published.total,
        published.member.clone().unwrap_or_default(),
    );
    match &bar {
        Some((total, member)) if over_bar(Some(&published), *total, member, position) => bar,
        _ => Some(published),
    }
}

impl MemBoard {
    /// A moderator's decision on `member` (see `Store::review`).
    pub fn review(&mut self, member: &Member, decision: Decision, now: Timestamp) -> bool {
        let member = member.as_str();
        let changed = match decision {
            Decision::Allow => {
                let added = self.review.allowed.insert(member.to_owned());
                let held = self.review.held.remove(member);
                if held {
                    self.move_hidden(member, false);
                }
                added || held
            }
            Decision::Deny => {
                let removed = self.review.allowed.remove(member);
                // Held: it stays out of the ranking, now hidden by a moderator.
                let held = self.review.held.remove(member);
                let hid = !held && self.move_hidden(member, true);
                removed || held || hid
            }
        };
        let cause = match decision {
            Decision::Allow => crate::domain::ChangeCause::Show,
            Decision::Deny => crate::domain::ChangeCause::Hide,
        };
        self.changed(cause, Some(now.unix_millis()));
        changed
    }

    /// Up to `limit` held events after `after` (from the oldest kept when `None`).
    pub fn held_events(&self, after: Option<&str>, limit: usize) -> Vec<HeldEvent> {
        let after = after.and_then(|id| parse_log_id(id).ok());
        let events = self.review.log.iter();
        let events = events.filter(|(id, _)| after.is_none_or(|a| *id > a));
        let events = events.take(limit).map(|(id, member)| HeldEvent {
            board: self.board.name.to_string(),
            id: id_text(*id),
            member: member.clone(),
            held_ms: id.0 as i64,
        });
        events.collect()
    }

    /// The review webhook's cursor, first moved up to `delivered` when given.
    pub fn held_cursor(&mut self, delivered: Option<&str>) -> Option<String> {
        advance(&mut self.review.cursor, delivered)
    }

    /// The members the gate holds, with their totals and would-be ranks in `window`.
    pub fn held_members(&self, window: usize) -> Vec<HeldMember> {
        let totals = &self.totals[window];
        let ties = self.board.config.ties();
        let position = ties == Ties::Position;
        let held = self.review.held.iter().map(|member| {
            let score = totals.held(member);
            let ranked = score.filter(|s| totals.rank_rule().ranks(*s));
            let rank = ranked.map(|s| match ties {
                // Not in the ranking: its rank is 1 + the distinct public totals above.
                Ties::Dense => totals.rank(member, s),
                _ => totals.ahead(s, position.then_some(member.as_str())) + 1,
            });
            HeldMember {
                member: member.clone(),
                score,
                rank,
            }
        });
        crate::store::ranked_held(held.collect())
    }

    /// Applies the gate (nothing on a board without one): holds every member it should
    /// hold and lets go every other.
    pub(super) fn regate(&mut self) {
        let Some(policy) = self.board.config.review() else {
            if !self.review.held.is_empty() {
                for member in std::mem::take(&mut self.review.held) {
                    self.move_hidden(&member, false);
                }
            }
            return;
        };
        let k = policy.above_rank() as usize;
        let ties = self.board.config.ties();
        let position = ties == Ties::Position;
        let allowed = &self.review.allowed;
        let mut want = HashSet::new();
        for (j, totals) in self.totals.iter().enumerate() {
            // The K-th allowed public member's total (dense: the K-th distinct one), or
            // the bar across the shards when higher.
            let mut entries = totals
                .ranked_entries()
                .filter(|(_, m)| allowed.contains(*m));
            let bar = match ties {
                Ties::Dense => {
                    let mut totals: Vec<(i64, &str)> = entries.collect();
                    totals.dedup_by_key(|(total, _)| *total);
                    totals.into_iter().nth(k - 1)
                }
                _ => entries.nth(k - 1),
            };
            let bar = bar.map(|(total, m)| (total, m.to_owned()));
            let bar = higher(
                bar,
                self.review.published.1.get(j).and_then(Option::as_ref),
                position,
            );
            let public = totals.ranked_entries();
            let held = self
                .review
                .held
                .iter()
                .filter_map(|m| Some((totals.held(m)?, m.as_str())));
            for (total, member) in public.chain(held) {
                if totals.rank_rule().ranks(total)
                    && !allowed.contains(member)
                    && over_bar(bar.as_ref(), total, member, position)
                {
                    want.insert(member.to_owned());
                }
            }
        }
        let go: Vec<String> = self.review.held.difference(&want).cloned().collect();
        let hold: Vec<String> = want.difference(&self.review.held).cloned().collect();
        for member in go {
            self.review.held.remove(&member);
            self.move_hidden(&member, false);
        }
        for member in hold {
            self.move_hidden(&member, true);
            self.review.log(&member);
            self.review.held.insert(member);
        }
    }

    /// The next number of the gate across the shards (see `ShardMoves::gate_epoch`).
    pub fn gate_epoch(&mut self) -> u64 {
        self.review.epoch += 1;
        self.review.epoch
    }

    /// The board's part in a gate across shards (see `ShardMoves::gate_top`).
    pub fn gate_top(&self, k: usize) -> Vec<Vec<(i64, String)>> {
        let allowed = &self.review.allowed;
        let windows = self.totals.iter().map(|totals| {
            let mut top: Vec<(i64, String)> = Vec::new();
            let entries = totals
                .ranked_entries()
                .filter(|(_, m)| allowed.contains(*m));
            for (total, member) in entries {
                if top.len() >= k && top[k - 1].0 > total {
                    break;
                }
                top.push((total, member.to_owned()));
            }
            top
        });
        windows.collect()
    }

    /// Takes the bars across the shards numbered `epoch` (see
    /// `ShardMoves::publish_bars`) and applies the gate.
    pub fn publish_bars(&mut self, epoch: u64, bars: &[Option<GateBar>]) {
        if epoch >= self.review.published.0 {
            self.review.published = (epoch, bars.to_vec());
            self.regate();
        }
    }

    /// The members the gate allowed.
    pub fn allowed(&self) -> Vec<String> {
        self.review.allowed.iter().cloned().collect()
    }

    /// Puts `members` among the allowed ones, or takes them out (no gate applied).
    pub fn set_allowed(&mut self, members: &[Member], allowed: bool) {
        for member in members.iter().map(|m| m.as_str().to_owned()) {
            match allowed {
                true => self.review.allowed.insert(member),
                false => self.review.allowed.remove(&member),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::any_board::NewBoard;
    use crate::domain::{BoardConfig, BoardName, ReviewPolicy};
    use crate::store::Store;
    use crate::store::memory::MemoryStore;

    fn bar(total: i64) -> Option<GateBar> {
        Some(GateBar {
            total,
            member: None,
        })
    }

    /// A shard keeps the bars of the highest-numbered publication it took (the model of
    /// `gate_publish.lua`): one numbered lower, arriving later, changes nothing.
    #[tokio::test]
    async fn a_shard_keeps_the_bars_of_the_highest_number() {
        let config = BoardConfig::parse("1h", &["1h"])
            .unwrap()
            .with_review(Some(ReviewPolicy::new(1).unwrap()));
        let name = BoardName::parse("numbered").unwrap();
        let now = Timestamp::from_unix_seconds(1_700_000_000).unwrap();
        let store = MemoryStore::new();
        let config = NewBoard::Windowed(config);
        let created = store.create_board(&name, &config, now).await.unwrap();
        let board = created.board().windowed().unwrap().clone();
        let mut shard = MemBoard::new(board, now);
        shard.publish_bars(5, &[bar(100)]);
        shard.publish_bars(3, &[None]);
        assert_eq!(shard.review.published, (5, vec![bar(100)]));
        shard.publish_bars(5, &[bar(7)]);
        assert_eq!(shard.review.published, (5, vec![bar(7)]));
        assert_eq!((shard.gate_epoch(), shard.gate_epoch()), (1, 2));
    }
}
