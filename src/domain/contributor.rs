//! Contributors: who gave an event (its `by`), the per-member cap and the budget a board
//! may set on what one contributor's events count, and where a contributor stands on a
//! board.
//!
//! With `per_contributor: B`, the part of each event a contributor's budget admits is
//! fixed when it is written ([`admitted`]). With `per_contributor_member: N`, a window's
//! total for a member is the sum over contributors of what was admitted of their deltas
//! to it inside the window, each contributor's sum clamped to ±N ([`counted`]), plus the
//! events without a contributor in full.

use std::fmt;

use serde::Serialize;

use super::error::Error;
use crate::domain::Span;

/// Who gave an event: a user id, 1 to [`MAX_BYTES`](Self::MAX_BYTES) bytes of UTF-8
/// without control characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Contributor(String);

impl Contributor {
    /// The longest contributor, in bytes.
    pub const MAX_BYTES: usize = 128;

    /// Checks `by`.
    pub fn parse(by: &str) -> Result<Self, Error> {
        let reason = if by.is_empty() || by.len() > Self::MAX_BYTES {
            Some(format!(
                "\"by\" must be 1 to {} bytes of UTF-8, got {} bytes",
                Self::MAX_BYTES,
                by.len()
            ))
        } else {
            by.chars()
                .find(|c| c.is_control())
                .map(|c| format!("\"by\" contains the control character {c:?}"))
        };
        match reason {
            Some(reason) => Err(Error::InvalidContributor { reason }),
            None => Ok(Contributor(by.to_owned())),
        }
    }

    /// The contributor as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Contributor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a contributor's deltas to one member inside a window, summing to `sum`, count
/// there under the per-member cap `cap` (none: in full): `sum` clamped to ±`cap`.
pub fn counted(cap: Option<i64>, sum: i64) -> i64 {
    cap.map_or(sum, |cap| sum.clamp(-cap, cap))
}

/// The part of an event of `delta` a contributor's budget `budget` admits (none: all of
/// it), fixed when it is written: a like (`delta > 0`) takes what is left of the budget
/// after `used`, what the contributor's admitted likes use inside the largest window;
/// an unlike takes back at most `given`, the sum of what their admitted events gave the
/// member there. What is not admitted is refused, and stays refused.
pub fn admitted(budget: Option<i64>, used: i64, given: i64, delta: i64) -> i64 {
    match budget {
        None => delta,
        Some(budget) if delta > 0 => delta.min((budget - used).max(0)),
        Some(_) => delta.max(-given.max(0)),
    }
}

/// One member a contributor gave to inside a window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Contribution {
    /// The member.
    pub member: String,
    /// The sum of the contributor's deltas to it inside the window.
    pub contributed: i64,
    /// What of that counts in the member's total there: the part the board's
    /// `per_contributor` budget admitted (all of it without a budget), clamped to its
    /// `per_contributor_member` (as it is without the cap).
    pub counted: i64,
}

/// What a contributor gave inside one window of a board: each member, highest
/// `contributed` first (ties by member).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct WindowContributions {
    /// The window.
    #[cfg_attr(feature = "server", schema(value_type = String, example = "24h"))]
    pub window: Span,
    /// The sum of `contributed` over the members.
    pub contributed: i64,
    /// The sum of `counted` over the members.
    pub counted: i64,
    /// The members.
    pub members: Vec<Contribution>,
}

impl WindowContributions {
    /// The contributions to `members` (each with its sums) inside `window` under the
    /// per-member cap `cap`, sorted, with their sums; members the contributor gave nothing
    /// inside the window are left out.
    pub fn of(window: Span, cap: Option<i64>, members: Vec<(String, Given)>) -> Self {
        let (members, contributed, counted) = ranked(cap, members);
        let members = members.into_iter();
        WindowContributions {
            window,
            contributed,
            counted,
            members: members
                .map(|(member, contributed, counted)| Contribution {
                    member,
                    contributed,
                    counted,
                })
                .collect(),
        }
    }
}

/// A contributor's sums to a member inside a window, as kept apart.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Given {
    /// Of the parts its budget admitted (all of it without a budget): counts, clamped to
    /// the per-member cap.
    pub admitted: i64,
    /// Of the parts its budget refused: counts nothing.
    pub refused: i64,
    /// Of the parts admitted while it is quarantined: counts nothing.
    pub held: i64,
}

/// Each of `given` (a name and its sums) that gave something, as (name, contributed,
/// counted under the per-member cap `cap`), highest `contributed` first (ties by name),
/// and the sums of both over all of them.
fn ranked(cap: Option<i64>, given: Vec<(String, Given)>) -> (Vec<(String, i64, i64)>, i64, i64) {
    let mut rows: Vec<(String, i64, i64)> = given
        .into_iter()
        .filter(|(_, g)| *g != Given::default())
        .map(|(name, g)| {
            (
                name,
                g.admitted + g.refused + g.held,
                counted(cap, g.admitted),
            )
        })
        .collect();
    rows.sort_by(|a, b| (b.1, &a.0).cmp(&(a.1, &b.0)));
    let (contributed, counted) = rows.iter().fold((0, 0), |(d, c), r| (d + r.1, c + r.2));
    (rows, contributed, counted)
}

/// One contributor who gave to a member inside a window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct MemberContribution {
    /// The contributor.
    pub by: String,
    /// The sum of their deltas to the member inside the window.
    pub contributed: i64,
    /// What of that counts in the member's total there (as [`Contribution::counted`]).
    pub counted: i64,
}

/// Who gave to one member inside one window of a board: how many contributors in all,
/// the sums over all of them, and the first of them, highest `contributed` first (ties
/// by `by`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct WindowContributors {
    /// The window.
    #[cfg_attr(feature = "server", schema(value_type = String, example = "24h"))]
    pub window: Span,
    /// How many contributors gave to the member inside the window.
    pub contributors: u64,
    /// The sum of `contributed` over all of them.
    pub contributed: i64,
    /// The sum of `counted` over all of them: the member's total there, less its events
    /// without a contributor.
    pub counted: i64,
    /// The first of them, at most the limit asked.
    pub top: Vec<MemberContribution>,
}

impl WindowContributors {
    /// The contributors `given` (each with its sums) to a member inside `window` under
    /// the per-member cap `cap`, the first `limit` of them kept; those who gave nothing
    /// inside the window are left out.
    pub fn of(window: Span, cap: Option<i64>, given: Vec<(String, Given)>, limit: usize) -> Self {
        let (all, contributed, counted) = ranked(cap, given);
        WindowContributors {
            window,
            contributors: all.len() as u64,
            contributed,
            counted,
            top: all
                .into_iter()
                .take(limit)
                .map(|(by, contributed, counted)| MemberContribution {
                    by,
                    contributed,
                    counted,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contributor_is_1_to_128_bytes_without_control_characters() {
        assert_eq!(Contributor::parse("user:7").unwrap().as_str(), "user:7");
        assert!(Contributor::parse(&"é".repeat(64)).is_ok());
        for bad in ["", "a\nb", "tab\t"] {
            assert_eq!(
                Contributor::parse(bad).unwrap_err().code(),
                "invalid_contributor"
            );
        }
        let long = Contributor::parse(&"x".repeat(129)).unwrap_err();
        assert_eq!(
            long.to_string(),
            "invalid contributor: \"by\" must be 1 to 128 bytes of UTF-8, got 129 bytes"
        );
    }

    #[test]
    fn a_sum_counts_clamped_to_the_cap() {
        assert_eq!(counted(Some(1), 3), 1);
        assert_eq!(counted(Some(2), -5), -2);
        assert_eq!(counted(Some(2), 1), 1);
        assert_eq!(counted(None, -5), -5);
    }

    fn given(admitted: i64, refused: i64) -> Given {
        Given {
            admitted,
            refused,
            held: 0,
        }
    }

    #[test]
    fn window_contributions_sort_and_sum() {
        let w = WindowContributions::of(
            Span::from_seconds(3600).unwrap(),
            Some(1),
            vec![
                ("b".into(), given(2, 0)),
                ("a".into(), given(1, 1)),
                ("c".into(), given(0, 0)),
                ("d".into(), given(-1, 0)),
                ("e".into(), given(0, 3)),
                (
                    "f".into(),
                    Given {
                        held: 2,
                        ..given(0, 1)
                    },
                ),
            ],
        );
        let members: Vec<(&str, i64, i64)> = w
            .members
            .iter()
            .map(|c| (c.member.as_str(), c.contributed, c.counted))
            .collect();
        assert_eq!(
            members,
            [
                ("e", 3, 0),
                ("f", 3, 0),
                ("a", 2, 1),
                ("b", 2, 1),
                ("d", -1, -1)
            ]
        );
        assert_eq!((w.contributed, w.counted), (9, 1));
    }

    #[test]
    fn window_contributors_count_all_and_keep_the_first() {
        let w = WindowContributors::of(
            Span::from_seconds(3600).unwrap(),
            Some(1),
            vec![
                ("u2".into(), given(2, 0)),
                ("u1".into(), given(1, 1)),
                ("u3".into(), given(0, 0)),
                ("u4".into(), given(-1, 0)),
            ],
            2,
        );
        let top: Vec<(&str, i64, i64)> = w
            .top
            .iter()
            .map(|c| (c.by.as_str(), c.contributed, c.counted))
            .collect();
        assert_eq!(top, [("u1", 2, 1), ("u2", 2, 1)]);
        assert_eq!((w.contributors, w.contributed, w.counted), (3, 3, 1));
    }

    #[test]
    fn a_budget_admits_likes_while_it_lasts_and_unlikes_up_to_what_was_given() {
        assert_eq!(admitted(Some(3), 1, 0, 5), 2);
        assert_eq!(admitted(Some(3), 3, 0, 1), 0);
        assert_eq!(admitted(Some(3), 4, 0, 1), 0);
        assert_eq!(admitted(Some(3), 3, 2, -5), -2);
        assert_eq!(admitted(Some(3), 3, -1, -1), 0);
        assert_eq!(admitted(Some(3), 0, 0, 0), 0);
        assert_eq!(admitted(None, 9, 0, -4), -4);
    }
}

/// What taking back a contributor's contributions to one board did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Retracted {
    /// Contributions taken back: the contributor's sums to one member in one slot
    /// (several events of a slot to one member are one contribution).
    pub contributions: u64,
    /// The events taken back, as the sum of those contributions' absolute deltas
    /// (admitted and refused parts apart): each like counts 1, except that a like and
    /// its unlike in the same slot cancel out.
    pub events: u64,
}
