//! The standing a write produced (`return=standing`): each member written, its score and
//! rank in the windows asked just before and just after the write, read by the store in
//! the same atomic step as the write (no other write can come between), and the bound on
//! how many members one such write may carry.

use std::collections::HashSet;

use super::event::Event;
use super::span::Span;
use crate::error::{Error, Result};

/// The most events a write that answers its standing may carry: it is one store call.
pub const MAX_STANDING_EVENTS: usize = 1_000;

/// The most distinct members a write that answers its standing may carry: each costs
/// the store two rank reads per window asked inside the write's atomic call.
pub const MAX_STANDING_MEMBERS: usize = 100;

/// A member's score and rank in one window, just before and just after a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowStanding {
    /// The window.
    pub window: Span,
    /// The member's total after the write, whatever its sign (0 when it is back to zero).
    pub score: i64,
    /// Its rank after the write (the board's ties and `rank` rule); `None` when not ranked.
    pub rank: Option<u64>,
    /// Its total just before the write (0 without one); `None` on a replay under an
    /// idempotency key.
    pub score_before: Option<i64>,
    /// Its rank just before the write; `None` when it was not ranked, and on a replay
    /// under an idempotency key (nothing was applied: the standing is read afresh).
    pub rank_before: Option<u64>,
}

/// A member a write applied an event of, with its standing in each window asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenStanding {
    /// The member.
    pub member: String,
    /// One per window asked, in the order asked.
    pub windows: Vec<WindowStanding>,
}

/// Checks that `events` are at most [`MAX_STANDING_EVENTS`] and name at most
/// [`MAX_STANDING_MEMBERS`] distinct members.
pub fn check_standing_members(events: &[Event]) -> Result<()> {
    if events.len() > MAX_STANDING_EVENTS {
        return Err(Error::InvalidQuery {
            reason: format!(
                "a write that returns its standing carries at most {MAX_STANDING_EVENTS} \
                 events, this one has {}: split the batch, or drop return=standing",
                events.len()
            ),
        });
    }
    let distinct: HashSet<&str> = events.iter().map(|e| e.member.as_str()).collect();
    if distinct.len() > MAX_STANDING_MEMBERS {
        return Err(Error::InvalidQuery {
            reason: format!(
                "a write that returns its standing carries at most {MAX_STANDING_MEMBERS} \
                 distinct members, this one has {}: split the batch, or drop return=standing",
                distinct.len()
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(members: usize) -> Vec<Event> {
        (0..members)
            .flat_map(|m| {
                let member = format!("m{m}");
                [
                    Event {
                        member: member.clone(),
                        delta: 1,
                        at: None,
                    },
                    Event {
                        member,
                        delta: 2,
                        at: None,
                    },
                ]
            })
            .collect()
    }

    #[test]
    fn a_standing_write_carries_at_most_100_distinct_members() {
        assert_eq!(check_standing_members(&events(100)), Ok(()));
        assert_eq!(
            check_standing_members(&events(101)),
            Err(Error::InvalidQuery {
                reason: "a write that returns its standing carries at most 100 distinct \
                         members, this one has 101: split the batch, or drop return=standing"
                    .into()
            })
        );
    }
}
