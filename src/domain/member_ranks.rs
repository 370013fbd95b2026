//! Ranks for a list of members (a user's friends): what the read answers and the bound
//! on how many members one read may ask for. Pure; no I/O.

use serde::Serialize;

use super::coverage::covered;
use super::error::Error;
use super::{BoardName, Coverage, Member, Span};

/// Most members one ranks read may ask for.
pub const MAX_RANKS_MEMBERS: usize = 1_000;

/// One asked-for member: its total, whatever its sign, and rank (as the board ranks ties);
/// `rank` `None` (`null`) when the total is not positive, `score` 0 when the member holds
/// no total in the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct MemberRank {
    /// The member, as asked.
    pub member: String,
    /// Its total in the window, negative ones too; 0 when it holds none.
    pub score: i64,
    /// Its rank (competition; dense or position on a board created so); `null` when its
    /// total is not positive.
    #[cfg_attr(feature = "server", schema(required = true))]
    pub rank: Option<u64>,
}

/// The ranks of a list of members in one window, read at one instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Ranks {
    /// The board.
    pub board: BoardName,
    /// The window ranked.
    pub window: Span,
    /// Oldest slot the totals include (unix seconds, inclusive).
    pub from: i64,
    /// End of the newest slot the totals include (unix seconds, exclusive).
    pub to: i64,
    /// Retirement is behind: the totals still include slots that have left the window,
    /// until the next retirement pass subtracts them (as `behind` of a top page).
    pub behind: bool,
    /// How long ago the oldest slot still included left the window, ms (0 when not
    /// behind).
    pub lag_ms: u64,
    /// How old the answer is, in milliseconds: 0 when read from the store now; when the
    /// read allowed it (`max_staleness_ms` above 0), the age of this process's cached
    /// answer, never above the read's bound.
    pub age_ms: u64,
    /// One entry per member asked, in the order asked; a member asked twice is answered
    /// twice.
    pub entries: Vec<MemberRank>,
}

impl Ranks {
    /// The ranks `entries` of `board`, in totals covering `coverage`.
    pub(crate) fn new(board: BoardName, coverage: Coverage, entries: Vec<MemberRank>) -> Ranks {
        covered!(coverage => Ranks { board, age_ms: 0, entries })
    }
}

/// Parses the members of a ranks read: 1 to [`MAX_RANKS_MEMBERS`] valid members, kept
/// in order with their duplicates.
pub fn parse_ranks_members<S: AsRef<str>>(members: &[S]) -> Result<Vec<Member>, Error> {
    if members.is_empty() || members.len() > MAX_RANKS_MEMBERS {
        return Err(Error::InvalidQuery {
            reason: format!(
                "members must list 1 to {MAX_RANKS_MEMBERS} members, got {}",
                members.len()
            ),
        });
    }
    members.iter().map(|m| Member::parse(m.as_ref())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_to_a_thousand_members_are_kept_in_order_with_duplicates() {
        let parsed = parse_ranks_members(&["b", "a", "b"]).unwrap();
        let names: Vec<&str> = parsed.iter().map(Member::as_str).collect();
        assert_eq!(names, ["b", "a", "b"]);
        let thousand = vec!["m"; MAX_RANKS_MEMBERS];
        assert_eq!(parse_ranks_members(&thousand).unwrap().len(), 1_000);
    }

    #[test]
    fn no_member_or_too_many_is_an_invalid_query() {
        let none: [&str; 0] = [];
        let too_many = vec!["m"; MAX_RANKS_MEMBERS + 1];
        for (list, got) in [(&none[..], 0), (&too_many[..], 1_001)] {
            match parse_ranks_members(list) {
                Err(Error::InvalidQuery { reason }) => assert_eq!(
                    reason,
                    format!("members must list 1 to 1000 members, got {got}")
                ),
                other => panic!("expected an invalid query, got {other:?}"),
            }
        }
    }

    #[test]
    fn an_empty_member_is_invalid() {
        assert_eq!(
            parse_ranks_members(&["a", ""]).unwrap_err().code(),
            "invalid_member"
        );
    }
}
