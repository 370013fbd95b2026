//! The standing a write produced (`return=standing`): each member written, its score and
//! rank in the windows asked just before and just after the write, read by the store in
//! the same atomic step as the write (no other write can come between), and the bound on
//! how many members one such write may carry.

use std::collections::HashSet;

use serde::Serialize;

use super::event::Event;
use super::span::Span;
use crate::error::{Error, Result};

/// The most events a write that answers its standing may carry: it is one store call
/// with no budget.
pub const MAX_STANDING_EVENTS: usize = 100;

/// The most distinct members a write that answers its standing may carry.
pub const MAX_STANDING_MEMBERS: usize = 20;

/// The most (member, window) standings one write may read: each costs the store two rank
/// reads inside the write's atomic call (about 20 µs on a 100,000-member board), so 20
/// members in two windows, or 13 in three, keep the call within about 1.5 ms.
pub const MAX_STANDING_READS: usize = 40;

/// A member's score and rank in one window, just before and just after a write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct WindowStanding {
    /// The window.
    #[cfg_attr(feature = "server", schema(value_type = String, example = "1h"))]
    pub window: Span,
    /// The member's total after the write, whatever its sign (0 when it is back to zero).
    pub score: i64,
    /// Its rank after the write (the board's ties and `rank` rule); null when not ranked.
    pub rank: Option<u64>,
    /// Its rank just before the write; null when it was not ranked, and on a replay
    /// under an idempotency key (nothing was applied: the standing is read afresh).
    pub rank_before: Option<u64>,
    /// Its total just before the write (0 without one); null on a replay under an
    /// idempotency key.
    pub score_before: Option<i64>,
}

/// A member a write applied an event of, with its standing in each window asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct WrittenStanding {
    /// The member.
    pub member: String,
    /// One per window asked, in the order asked.
    pub windows: Vec<WindowStanding>,
}

/// Checks that `events`, answering their standing in `windows` windows, are within the
/// bounds: [`MAX_STANDING_MEMBERS`] distinct members, [`MAX_STANDING_READS`] members
/// times windows and [`MAX_STANDING_EVENTS`] events.
pub fn check_standing_write(events: &[Event], windows: usize) -> Result<()> {
    let members = events
        .iter()
        .map(|e| e.member.as_str())
        .collect::<HashSet<&str>>()
        .len();
    let refuse = |what: String| {
        Err(Error::InvalidQuery {
            reason: format!(
                "a write that returns its standing {what}: split the batch, or drop \
                 return=standing"
            ),
        })
    };
    if members > MAX_STANDING_MEMBERS {
        return refuse(format!(
            "carries at most {MAX_STANDING_MEMBERS} distinct members, this one has {members}"
        ));
    }
    if members * windows > MAX_STANDING_READS {
        return refuse(format!(
            "reads at most {MAX_STANDING_READS} standings (members x windows), this one \
             asks {members} members x {windows} windows (name fewer with windows=)"
        ));
    }
    if events.len() > MAX_STANDING_EVENTS {
        return refuse(format!(
            "carries at most {MAX_STANDING_EVENTS} events, this one has {}",
            events.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `each` events for each of `members` members.
    fn events(members: usize, each: usize) -> Vec<Event> {
        (0..members)
            .flat_map(|m| (0..each).map(move |_| Event::new(format!("m{m}"), 1)))
            .collect()
    }

    #[test]
    fn a_standing_write_is_bounded_in_members_reads_and_events() {
        assert_eq!(check_standing_write(&events(20, 5), 2), Ok(()));
        let refused = |reason: &str| {
            Err(Error::InvalidQuery {
                reason: format!(
                    "a write that returns its standing {reason}: split the batch, or drop return=standing"
                ),
            })
        };
        assert_eq!(
            check_standing_write(&events(21, 1), 1),
            refused("carries at most 20 distinct members, this one has 21")
        );
        assert_eq!(
            check_standing_write(&events(14, 1), 3),
            refused(
                "reads at most 40 standings (members x windows), this one asks 14 members x 3 windows (name fewer with windows=)"
            )
        );
        assert_eq!(check_standing_write(&events(13, 1), 3), Ok(()));
        assert_eq!(check_standing_write(&events(2, 50), 1), Ok(()));
        assert_eq!(
            check_standing_write(&events(2, 51), 1),
            refused("carries at most 100 events, this one has 102")
        );
    }
}
