//! Moderation: hiding a member from every ranking of a board without losing its counts,
//! and showing it again, on one board, on a list of boards or on every board (boards
//! created later too), each call kept in the moderation log (docs/design.md, "Hidden
//! members" and "Moderation log").

use futures_util::StreamExt;

use super::{Rollboard, Windowed};
use crate::domain::{BoardName, LogEntry, Member};
use crate::domain::{HiddenMember, HiddenMembers, Pin, Span};
use crate::domain::{Moderated, ModerationAction, ModerationNote, SkippedBoard, parse_log_id};
use crate::error::{Error, Result};

/// The most boards one hide or show names.
pub const MAX_MODERATED_BOARDS: usize = 1000;
/// The most log entries one read answers.
pub const MAX_LOG_PAGE: usize = 1000;
/// Boards hidden on at once by a call across boards.
const BOARDS_AT_ONCE: usize = 16;

impl Windowed<'_> {
    /// Hides `member` from every ranking of the board, in every window at once, before
    /// it answers: it keeps counting exactly (writes, retirement, removal, recompute),
    /// but no page, rank, `around`, percentile, snapshot or multi-board read lists it,
    /// and the members below it move up a rank. Its own standing still answers its total,
    /// with `hidden` and no rank. True when it was shown until now, false when it was
    /// hidden already (nothing changes). Kept in the moderation log with `note`. A
    /// sharded board hides a member on its shard; while it is resharded, hiding and
    /// showing are [`Error::ReshardRunning`].
    pub async fn hide(self, member: &str, note: &ModerationNote) -> Result<bool> {
        self.set_hidden(member, true, note).await
    }

    /// Shows a hidden `member` again, in every window at once, at the rank its totals
    /// give (exactly what they would be had it never been hidden). True when it was
    /// hidden, false when it was not (nothing changes). A member hidden on every board is
    /// [`Error::HiddenEverywhere`]: show it with [`Rollboard::show_member`].
    pub async fn show(self, member: &str, note: &ModerationNote) -> Result<bool> {
        self.set_hidden(member, false, note).await
    }

    async fn set_hidden(self, member: &str, hidden: bool, note: &ModerationNote) -> Result<bool> {
        let member = Member::parse(member)?;
        let name = BoardName::parse(self.board)?;
        if !hidden {
            self.rb.refuse_if_hidden_everywhere(&member).await?;
        }
        let changed = self.hide_all(std::slice::from_ref(&member), hidden).await?;
        let boards = Some(vec![name.to_string()]);
        let action = ModerationAction::hiding(hidden);
        let log = self
            .rb
            .log_entry(action, &member, boards, changed, note, None);
        log.await?;
        Ok(changed == 1)
    }

    /// Every member the board hides, with its value in `window` (the smallest by
    /// default; `None` when it holds none there), those holding one first in the board's
    /// ranking order: what a moderator reviews.
    pub async fn hidden_members(self, window: Option<Span>) -> Result<HiddenMembers> {
        let now = self.rb.now();
        let store = &self.rb.inner.store;
        self.on_window(window, |b, w| async move {
            let sign = b.config.aggregate().sign();
            let stored = store.hidden_members(b.at(w, now)).await?;
            let members = stored.into_iter().map(|(member, score)| HiddenMember {
                member,
                score: score.map(|s| sign * s),
            });
            Ok(HiddenMembers {
                board: b.name.to_string(),
                window: b.config.windows()[w],
                members: members.collect(),
            })
        })
        .await
    }

    /// Hides (shows) each of `members` on this board; how many changed.
    async fn hide_all(self, members: &[Member], hidden: bool) -> Result<u64> {
        let store = &self.rb.inner.store;
        let now = self.rb.now();
        self.change(|b| async move { store.set_hidden(&b, members, hidden, now).await })
            .await
    }
}

impl Rollboard {
    /// Hides `member` on each of `boards` (1 to [`MAX_MODERATED_BOARDS`], each existing),
    /// or, when `None`, on every board and on every board created later (until shown on
    /// every board), each board as [`Windowed::hide`] does. Boards whose kind cannot hide
    /// members yet are listed in [`Moderated::skipped`]. Kept in the moderation log with
    /// `note`, once.
    pub async fn hide_member(
        &self,
        member: &str,
        boards: Option<&[String]>,
        note: &ModerationNote,
    ) -> Result<Moderated> {
        self.set_member_hidden(member, boards, true, note).await
    }

    /// Shows `member` again on each of `boards`, or, when `None`, on every board (and
    /// boards created later no longer hide it). A member hidden on every board is shown
    /// on every board only: [`Error::HiddenEverywhere`] for a list.
    pub async fn show_member(
        &self,
        member: &str,
        boards: Option<&[String]>,
        note: &ModerationNote,
    ) -> Result<Moderated> {
        self.set_member_hidden(member, boards, false, note).await
    }

    /// The members hidden on every board, in byte order.
    pub async fn hidden_everywhere(&self) -> Result<Vec<String>> {
        let members = self.inner.store.moderation().hidden_everywhere().await?;
        Ok(members.iter().map(|m| m.to_string()).collect())
    }

    /// Up to `limit` (1 to [`MAX_LOG_PAGE`]) entries of the moderation log, newest
    /// first, all older than the entry `before` when given (the last id of the page
    /// before).
    pub async fn moderation_log(
        &self,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Vec<LogEntry>> {
        if !(1..=MAX_LOG_PAGE).contains(&limit) {
            let reason = format!("limit {limit} is outside 1..={MAX_LOG_PAGE}");
            return Err(Error::InvalidQuery { reason });
        }
        let before = before.map(parse_log_id).transpose()?;
        let log = self.inner.store.moderation();
        log.moderation_log(before, limit).await
    }

    async fn set_member_hidden(
        &self,
        member: &str,
        boards: Option<&[String]>,
        hidden: bool,
        note: &ModerationNote,
    ) -> Result<Moderated> {
        let member = Member::parse(member)?;
        let names: Vec<BoardName> = match boards {
            Some(names) => {
                if !(1..=MAX_MODERATED_BOARDS).contains(&names.len()) {
                    let reason = format!(
                        "boards lists {} boards: name 1 to {MAX_MODERATED_BOARDS}, or leave it out for every board",
                        names.len()
                    );
                    return Err(Error::InvalidModeration { reason });
                }
                if !hidden {
                    self.refuse_if_hidden_everywhere(&member).await?;
                }
                let mut found = Vec::with_capacity(names.len());
                for name in names {
                    let board = self.cached_any(&BoardName::parse(name)?).await?;
                    found.push(board.name().clone());
                }
                found
            }
            None => {
                let moderation = self.inner.store.moderation();
                moderation.set_hidden_everywhere(&member, hidden).await?;
                let boards = self.inner.store.list_boards().await?;
                boards.iter().map(|b| b.name().clone()).collect()
            }
        };
        let members = std::slice::from_ref(&member);
        let outcomes: Vec<_> = futures_util::stream::iter(names.clone())
            .map(|name| async move { self.hide_on(&name, members, hidden).await })
            .buffered(BOARDS_AT_ONCE)
            .collect()
            .await;
        let mut report = Moderated {
            member: member.to_string(),
            hidden,
            every_board: boards.is_none(),
            boards: 0,
            changed: 0,
            skipped: Vec::new(),
        };
        for (board, outcome) in names.iter().zip(outcomes) {
            match outcome {
                Ok(changed) => {
                    report.boards += 1;
                    report.changed += changed;
                }
                Err(e) if not_yet(&e) => report.skipped.push(SkippedBoard {
                    board: board.to_string(),
                    code: e.code().to_owned(),
                    message: e.to_string(),
                }),
                // Dropped since it was listed: nothing to hide.
                Err(Error::BoardNotFound(_)) if boards.is_none() => {}
                Err(e) => return Err(e),
            }
        }
        let boards = boards.map(<[String]>::to_vec);
        let action = ModerationAction::hiding(hidden);
        let log = self.log_entry(action, &member, boards, report.changed, note, None);
        log.await?;
        Ok(report)
    }

    /// Hides (shows) `members` on the board `name`, of either kind; how many changed.
    async fn hide_on(&self, name: &BoardName, members: &[Member], hidden: bool) -> Result<u64> {
        self.windowed(name.as_str()).hide_all(members, hidden).await
    }

    /// Hides the members hidden on every board on the board `name`, just created (or
    /// found, which settles a create that raced a hide or show on every board) or just
    /// resharded; boards whose kind cannot hide members yet are left as they are.
    pub(super) async fn take_hidden_everywhere(&self, name: &BoardName) -> Result<()> {
        let members = self.inner.store.moderation().hidden_everywhere().await?;
        if members.is_empty() {
            return Ok(());
        }
        match self.hide_on(name, &members, true).await {
            Err(e) if !not_yet(&e) => Err(e),
            _ => Ok(()),
        }
    }

    async fn refuse_if_hidden_everywhere(&self, member: &Member) -> Result<()> {
        let everywhere = self.inner.store.moderation().hidden_everywhere().await?;
        if everywhere.contains(member) {
            return Err(Error::HiddenEverywhere {
                member: member.to_string(),
            });
        }
        Ok(())
    }

    /// Appends `action` on `member` to the moderation log.
    pub(super) async fn log_entry(
        &self,
        action: ModerationAction,
        member: &Member,
        boards: Option<Vec<String>>,
        changed: u64,
        note: &ModerationNote,
        pin: Option<Pin>,
    ) -> Result<()> {
        let entry = LogEntry {
            id: String::new(),
            at: self.now().unix_seconds_f64(),
            action,
            member: member.to_string(),
            boards,
            changed,
            reason: note.reason.clone(),
            actor: note.actor.clone(),
            pin,
        };
        self.inner.store.moderation().log_moderation(entry).await?;
        Ok(())
    }
}

/// A board that cannot hide members (now): a trending board, a board being resharded.
fn not_yet(e: &Error) -> bool {
    matches!(e, Error::ReshardRunning { .. } | Error::BoardKind { .. })
}
