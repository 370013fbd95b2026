//! Pins: members an editor shows at fixed positions of the first page of a board's top
//! (an announcement, say) until a time, each with the rank its counts give; the others
//! keep their ranks. Kept in the board's record under a new version, so every process
//! reloads the board and shows the same pins (docs/design.md, "Pins").

use super::Windowed;
use crate::domain::board::Board;
use crate::domain::{Entry, MAX_PIN_POSITION, MAX_PINS, Member, ModerationAction};
use crate::domain::{ModerationNote, Pin, Timestamp, TopPage};
use crate::error::{Error, Result};
use crate::store::Store;

impl Windowed<'_> {
    /// Pins `member` at `position` (1 to [`MAX_PIN_POSITION`]) of the first page of the
    /// board's top until `until`, replacing its pin if it had one: the pins now held.
    /// At most [`MAX_PINS`] at once ([`Error::InvalidModeration`] beyond, or for a
    /// position out of range or an end not in the future). Kept in the moderation log.
    pub async fn pin(
        self,
        member: &str,
        position: u32,
        until: Timestamp,
        note: &ModerationNote,
    ) -> Result<Vec<Pin>> {
        let member = Member::parse(member)?;
        let now = self.rb.now();
        let invalid = |reason: String| Err(Error::InvalidModeration { reason });
        if !(1..=MAX_PIN_POSITION).contains(&position) {
            return invalid(format!(
                "position {position} is outside 1..={MAX_PIN_POSITION}"
            ));
        }
        let pin = Pin {
            member: member.to_string(),
            position,
            until: until.unix_seconds(),
        };
        if !pin.holds(now) {
            return invalid(format!("until {} is not after now", pin.until));
        }
        let store = &self.rb.inner.store;
        let pinned = &pin;
        let pins = self
            .change_config(|b| async move {
                let mut pins = held(&b, now, |p| p.member != pinned.member);
                if pins.len() >= MAX_PINS {
                    let reason =
                        format!("the board holds {MAX_PINS} pins already: unpin one first");
                    return Err(Error::InvalidModeration { reason });
                }
                pins.push(pinned.clone());
                pins.sort_by_key(|p| p.position);
                Ok(store.set_pins(&b, &pins).await?.pins)
            })
            .await?;
        let boards = Some(vec![self.board.to_owned()]);
        self.rb
            .log_entry(ModerationAction::Pin, &member, boards, 1, note, Some(pin))
            .await?;
        Ok(pins)
    }

    /// Ends `member`'s pin: false when it had none (nothing changes). Kept in the
    /// moderation log.
    pub async fn unpin(self, member: &str, note: &ModerationNote) -> Result<bool> {
        let member = Member::parse(member)?;
        let now = self.rb.now();
        let store = &self.rb.inner.store;
        let name = member.as_str();
        let had = self
            .change_config(|b| async move {
                let pins = held(&b, now, |p| p.member != name);
                let had = b.pins.iter().any(|p| p.member == name && p.holds(now));
                if pins.len() != b.pins.len() {
                    store.set_pins(&b, &pins).await?;
                }
                Ok(had)
            })
            .await?;
        let boards = Some(vec![self.board.to_owned()]);
        let changed = u64::from(had);
        self.rb
            .log_entry(
                ModerationAction::Unpin,
                &member,
                boards,
                changed,
                note,
                None,
            )
            .await?;
        Ok(had)
    }

    /// The pins the board holds now, by position.
    pub async fn pins(self) -> Result<Vec<Pin>> {
        let now = self.rb.now();
        let board = self.rb.board(self.board).await?;
        Ok(held(&board, now, |_| true))
    }
}

/// The board's pins that hold at `now` and that `keep` keeps.
fn held(board: &Board, now: Timestamp, keep: impl Fn(&Pin) -> bool) -> Vec<Pin> {
    let pins = board.pins.iter().filter(|p| p.holds(now) && keep(p));
    pins.cloned().collect()
}

/// `page`, the first page of the board's top, with the pins that hold at `now` shown at
/// their positions (each member once, the page still `limit` long) and the offset of
/// the next page, the pinned members' ranks and scores read from `store` in one step.
pub(super) async fn pinned(
    store: &dyn Store,
    board: &Board,
    window: usize,
    now: Timestamp,
    limit: u64,
    mut page: TopPage,
) -> Result<TopPage> {
    let pins = held(board, now, |_| true);
    let members = pins
        .iter()
        .map(|p| Member::parse(&p.member))
        .collect::<Result<Vec<_>>>()?;
    let standings = store.standings(board.at(window, now), &members).await?;
    // A hidden member is shown nowhere, pinned or not.
    let shown: Vec<(&Pin, Entry)> = pins
        .iter()
        .zip(standings)
        .filter(|(_, s)| !s.as_ref().is_some_and(|s| s.hidden))
        .map(|(pin, standing)| {
            let (score, rank) = standing.map_or((0, None), |s| (s.score, s.rank));
            let entry = Entry {
                rank: rank.unwrap_or(0),
                member: pin.member.clone(),
                score,
                data: None,
                pinned: true,
                movement: None,
            };
            (pin, entry)
        })
        .collect();
    // The ranking's entries that stay, with their positions in it.
    let natural = std::mem::take(&mut page.entries);
    let read = natural.len() as u64;
    let mut entries: Vec<(Option<u64>, Entry)> = natural
        .into_iter()
        .enumerate()
        .filter(|(_, e)| !shown.iter().any(|(p, _)| p.member == e.member))
        .map(|(i, e)| (Some(i as u64), e))
        .collect();
    for (pin, entry) in shown {
        let at = (pin.position as usize - 1).min(entries.len());
        entries.insert(at, (None, entry));
    }
    // The next page starts at the first entry of the ranking this one no longer shows.
    let pushed_off = entries.iter().skip(limit as usize).find_map(|(i, _)| *i);
    page.next_offset = Some(pushed_off.unwrap_or(read));
    entries.truncate(limit as usize);
    page.entries = entries.into_iter().map(|(_, e)| e).collect();
    Ok(page)
}
