//! The review gate of a board in memory (docs/design.md, "Review gate"), the model of
//! Redis's `lua/review.lua`: computed from its definition after every change. Each
//! window's bar is its K-th allowed public member; every unreviewed member that is not
//! hidden and ranks at or over the bar in some window is held (hidden in every window).

use std::collections::HashSet;

use super::MemBoard;
use crate::domain::{Decision, HeldMember, Member, Ties};

/// The allowed members, and those the gate holds (hidden in the totals too).
#[derive(Debug, Default)]
pub(super) struct Review {
    pub allowed: HashSet<String>,
    pub held: HashSet<String>,
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

impl MemBoard {
    /// A moderator's decision on `member` (see `Store::review`).
    pub fn review(&mut self, member: &Member, decision: Decision) -> bool {
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
        self.regate();
        changed
    }

    /// The members the gate holds, with their totals and would-be ranks in `window`.
    pub fn held_members(&self, window: usize) -> Vec<HeldMember> {
        let totals = &self.totals[window];
        let position = self.board.config.ties() == Ties::Position;
        let held = self.review.held.iter().map(|member| {
            let score = totals.held(member);
            let ranked = score.filter(|s| totals.rank_rule().ranks(*s));
            let rank = ranked.map(|s| totals.ahead(s, position.then_some(member.as_str())) + 1);
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
        let position = self.board.config.ties() == Ties::Position;
        let allowed = &self.review.allowed;
        let mut want = HashSet::new();
        for totals in &self.totals {
            let bar = totals
                .ranked_entries()
                .filter(|(_, m)| allowed.contains(*m))
                .nth(k - 1)
                .map(|(total, m)| (total, m.to_owned()));
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
            self.review.held.insert(member);
        }
    }
}
