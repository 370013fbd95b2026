//! Writes that answer their standing (`return=standing`): the batch's outcome and, for
//! each member with an event applied, its score and rank in the windows asked just
//! before and just after the write, read by the store in the same atomic step as the
//! write (`Store::write_standing`). One store call, outside group commit, so a standing
//! write carries at most [`MAX_STANDING_EVENTS`] events, [`MAX_STANDING_MEMBERS`]
//! distinct members and [`MAX_STANDING_READS`] members times windows asked.
//!
//! Under an idempotency key the first call is applied and answered atomically; a replay
//! (nothing applied) answers the recorded outcome with the standing read at the time of
//! the replay, `score_before` and `rank_before` `None`.
//!
//! [`MAX_STANDING_EVENTS`]: crate::MAX_STANDING_EVENTS
//! [`MAX_STANDING_MEMBERS`]: crate::MAX_STANDING_MEMBERS
//! [`MAX_STANDING_READS`]: crate::MAX_STANDING_READS

use std::collections::HashSet;
use std::sync::Arc;

use super::write::{BatchOutcome, record, slot_writes};
use super::{Rollboard, Windowed};
use crate::domain::any_board::AnyBoard;
use crate::domain::board::Board;
use crate::domain::{BoardName, Event, Fingerprint, IdempotencyKey, Member, Span};
use crate::domain::{WindowStanding, WrittenStanding, check_standing_write, own_values};
use crate::error::{Error, Result};
use crate::store::{Keyed, WriteKey};

/// What a write that answers its standing did.
#[derive(Debug, Clone, PartialEq)]
pub struct StandingOutcome {
    /// The batch's outcome (the first call's, on a replay).
    pub outcome: BatchOutcome,
    /// One per distinct member with an event applied, in order of first appearance in
    /// the batch.
    pub standings: Vec<WrittenStanding>,
    /// Under an idempotency key: applied by an earlier call, nothing applied now (the
    /// standing is then read now, with no `score_before` or `rank_before`).
    pub replayed: bool,
}

impl Windowed<'_> {
    /// Adds `delta` to `member` on `board` at `at` (now when `None`), answering its
    /// standing in every window of the board: its score and rank after the write and
    /// just before it, read atomically with the write. The event's error when rejected.
    pub async fn incr_standing(
        self,
        member: &str,
        delta: i64,
        at: Option<crate::domain::Timestamp>,
    ) -> Result<WrittenStanding> {
        let event = Event {
            at,
            ..Event::new(member, delta)
        };
        let written = self
            .incr_batch_standing(std::slice::from_ref(&event), None)
            .await?;
        written.outcome.first_error()?;
        written
            .standings
            .into_iter()
            .next()
            .ok_or_else(|| Error::store("an applied standing write answered no standing"))
    }

    /// Applies a batch as [`incr_batch`](Self::incr_batch) does, in one store call that
    /// also reads, for each distinct member with an event applied, its score and rank in
    /// `windows` (every window of the board when `None`; in the order given) just before
    /// and just after the write, so no other write comes between. At most 100 events, 20
    /// distinct members and 40 members times windows asked ([`Error::InvalidQuery`]
    /// otherwise, as for a window not of the board or a trending board).
    pub async fn incr_batch_standing(
        self,
        events: &[Event],
        windows: Option<&[Span]>,
    ) -> Result<StandingOutcome> {
        self.standing_write(events, windows, None).await
    }

    /// [`incr_batch_standing`](Self::incr_batch_standing) once for `key` and the write's
    /// `fingerprint` (see [`write_keyed`](Self::write_keyed)): a replay answers the first
    /// call's outcome and the standing read now, without `score_before` or `rank_before`.
    pub async fn write_keyed_standing(
        self,
        events: &[Event],
        windows: Option<&[Span]>,
        key: &IdempotencyKey,
        fingerprint: &Fingerprint,
    ) -> Result<StandingOutcome> {
        self.standing_write(events, windows, Some((key, fingerprint)))
            .await
    }

    async fn standing_write(
        self,
        events: &[Event],
        windows: Option<&[Span]>,
        keyed: Option<(&IdempotencyKey, &Fingerprint)>,
    ) -> Result<StandingOutcome> {
        let name = BoardName::parse(self.board)?;
        let mut board = match self.rb.write_target(&name).await? {
            AnyBoard::Windowed(board) => board,
            AnyBoard::Trending(_) => {
                return Err(Error::InvalidQuery {
                    reason: format!(
                        "board {:?} is a trending board: its scores decay with time, so a rank \
                         read with the write would be stale at once; return=standing is for \
                         windowed boards (read GET /v1/boards/{name}/members/{{member}} instead)",
                        name.as_str()
                    ),
                });
            }
        };
        let asked = asked_windows(&board, windows)?;
        check_standing_write(events, asked.len())?;
        let write_key = keyed.map(|(key, fingerprint)| WriteKey {
            name: key.as_str().to_owned(),
            fingerprint: fingerprint.as_str().to_owned(),
            ttl: self.rb.inner.settings.idempotency_ttl,
        });
        let store = &self.rb.inner.store;
        let mut now = self.rb.now();
        // Once more at most: a replay recorded at another `now` is admitted again at it.
        for _ in 0..2 {
            let (valid, mut outcome) = self.rb.validate(&board, now, events)?;
            let (valid_ref, asked_ref, key_ref) = (&valid, &asked, write_key.as_ref());
            let (written, standings) = self
                .rb
                .retry_changed(&mut board, |b| async move {
                    let written = store.write_standing(
                        b.writing(now, slot_writes(valid_ref)),
                        asked_ref,
                        key_ref,
                    );
                    let (keyed, standings) = self.rb.change(&b.name, written).await?;
                    Ok((keyed, own_values(&b, standings)))
                })
                .await??;
            let (statuses, replayed) = match written {
                Keyed::Applied(statuses) => (statuses, false),
                Keyed::Reused => {
                    let key = keyed.map(|(k, _)| k.to_string()).unwrap_or_default();
                    return Err(Error::IdempotencyKeyReused { key });
                }
                Keyed::Replayed { now: first, .. } if first != now => {
                    now = first;
                    continue;
                }
                Keyed::Replayed { recorded, .. } => {
                    (recorded.statuses(&slot_writes(&valid))?, true)
                }
            };
            let applied: HashSet<&str> = valid
                .iter()
                .zip(&statuses)
                .filter(|(_, s)| {
                    matches!(
                        s,
                        crate::store::WriteStatus::Applied | crate::store::WriteStatus::Counted(_)
                    )
                })
                .map(|((_, w), _)| w.member.as_str())
                .collect();
            record(&board, now, events, &valid, statuses, &mut outcome);
            outcome.rejected.sort_by_key(|r| r.index);
            self.rb
                .keep_event_data(&mut board, events, &outcome)
                .await?;
            let standings = if replayed {
                self.rb
                    .standing_now(&board, &valid_members(&valid, &applied), &asked)
                    .await?
            } else {
                standings
                    .into_iter()
                    .filter(|s| applied.contains(s.member.as_str()))
                    .collect()
            };
            return Ok(StandingOutcome {
                outcome,
                standings,
                replayed,
            });
        }
        Err(Error::store(
            "the record of an idempotency key changed while its write was admitted again",
        ))
    }
}

impl Rollboard {
    /// The standing of `members` in `windows` read now (a replay's), with no before.
    async fn standing_now(
        &self,
        board: &Arc<Board>,
        members: &[Member],
        windows: &[usize],
    ) -> Result<Vec<WrittenStanding>> {
        let now = self.now();
        let mut standings: Vec<WrittenStanding> = members
            .iter()
            .map(|m| WrittenStanding {
                member: m.to_string(),
                windows: Vec::with_capacity(windows.len()),
            })
            .collect();
        if members.is_empty() {
            return Ok(standings);
        }
        for j in windows {
            let ranks = own_values(
                board,
                self.inner.store.ranks(board.at(*j, now), members).await?,
            );
            for (standing, entry) in standings.iter_mut().zip(ranks.entries) {
                standing.windows.push(WindowStanding {
                    window: board.config.windows()[*j],
                    score: entry.score,
                    rank: entry.rank,
                    score_before: None,
                    rank_before: None,
                });
            }
        }
        Ok(standings)
    }
}

/// The distinct members of `valid` that are in `applied`, in order of first appearance.
fn valid_members(
    valid: &[(usize, crate::store::SlotWrite)],
    applied: &HashSet<&str>,
) -> Vec<Member> {
    let mut seen = HashSet::new();
    valid
        .iter()
        .map(|(_, w)| &w.member)
        .filter(|m| applied.contains(m.as_str()) && seen.insert(m.as_str()))
        .cloned()
        .collect()
}

/// The indexes of `windows` among the board's (every window when `None`), each once in
/// the order given: [`Error::InvalidQuery`], naming the board's windows, for one not of
/// the board.
fn asked_windows(board: &Board, windows: Option<&[Span]>) -> Result<Vec<usize>> {
    let all = board.config.windows();
    let Some(windows) = windows else {
        return Ok((0..all.len()).collect());
    };
    let mut asked = Vec::with_capacity(windows.len());
    for w in windows {
        let j = board
            .config
            .window_index(*w)
            .ok_or_else(|| Error::InvalidQuery {
                reason: format!(
                    "board {:?} has no window {w}: its windows are {}",
                    board.name.as_str(),
                    all.iter()
                        .map(Span::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })?;
        if !asked.contains(&j) {
            asked.push(j);
        }
    }
    if asked.is_empty() {
        return Err(Error::InvalidQuery {
            reason:
                "windows is empty: name one or more of the board's windows, or leave it out for all"
                    .into(),
        });
    }
    Ok(asked)
}
