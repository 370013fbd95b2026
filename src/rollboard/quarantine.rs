//! Quarantine: a contributor whose likes are kept but count nothing in any ranking, on
//! every board that keeps contributors and every one created later, until released,
//! when what of them is still inside the windows counts again
//! ([`Store::quarantine`](crate::store::Store::quarantine), board by board, each in
//! bounded store calls). The contributor's writes answer as ever (`counted`): nothing
//! tells it apart. The set of quarantined contributors is the moderation store's, which a
//! board created later takes on ([`Rollboard::take_quarantined`]).

use serde::Serialize;

use super::Rollboard;
use crate::domain::any_board::AnyBoard;
use crate::domain::{ChangeCause, Contributor};
use crate::error::Result;

/// What a quarantine or a release did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Quarantined {
    /// The contributor.
    pub by: String,
    /// Whether it is quarantined now.
    pub quarantined: bool,
    /// Whether this call changed that (false: it already was so; the boards are walked
    /// all the same, which finishes one cut short).
    pub changed: bool,
    /// The boards keeping contributors, each walked.
    pub boards: u64,
    /// Window sums (one contributor's to one member in one window) that stopped or
    /// started counting.
    pub sums: u64,
}

impl Rollboard {
    /// Quarantines `by` on every board keeping contributors, and every one created
    /// later: from when it answers, what its events admitted counts in no member's total
    /// (present events and future ones), and its writes answer exactly as before (their
    /// `counted`). Its contributions are kept: [`release`](Self::release) puts back what
    /// is still inside the windows. Board by board, in bounded store calls; one cut short
    /// is finished by running it again. An invalid `by` is [`Error::InvalidContributor`].
    pub async fn quarantine(&self, by: &str) -> Result<Quarantined> {
        self.set_quarantined(by, true).await
    }

    /// Releases `by` from quarantine: what it gave that is still inside the windows
    /// counts again, exactly as if it had never been quarantined.
    pub async fn release(&self, by: &str) -> Result<Quarantined> {
        self.set_quarantined(by, false).await
    }

    /// The contributors quarantined, by name.
    pub async fn quarantined(&self) -> Result<Vec<String>> {
        let found = self.inner.store.moderation().quarantined().await?;
        Ok(found.iter().map(ToString::to_string).collect())
    }

    async fn set_quarantined(&self, by: &str, quarantined: bool) -> Result<Quarantined> {
        let by = Contributor::parse(by)?;
        // The set first: a board created meanwhile takes it on.
        let changed = (self.inner.store.moderation())
            .set_quarantined(&by, quarantined)
            .await?;
        let names = self.boards_keeping_contributors().await?;
        let mut sums = 0;
        for name in &names {
            sums += self.quarantine_on(name.as_str(), &by, quarantined).await?;
        }
        Ok(Quarantined {
            by: by.to_string(),
            quarantined,
            changed,
            boards: names.len() as u64,
            sums,
        })
    }

    /// Quarantines `by` on the board `name` (or releases it): the sums moved; nothing on
    /// a board dropped meanwhile.
    async fn quarantine_on(&self, name: &str, by: &Contributor, quarantined: bool) -> Result<u64> {
        let store = &self.inner.store;
        let cause = match quarantined {
            true => ChangeCause::Quarantine,
            false => ChangeCause::Release,
        };
        self.change_contributions(name, cause, |b, stamp| async move {
            store.quarantine(&b, by, quarantined, stamp).await
        })
        .await
    }

    /// Quarantines the contributors quarantined on every board on `board`, just created
    /// (or found, which settles a create that raced a quarantine), when it keeps
    /// contributors.
    pub(super) async fn take_quarantined(&self, board: &AnyBoard) -> Result<()> {
        let keeps = board
            .windowed()
            .is_some_and(|b| b.config.keeps_contributors());
        if !keeps {
            return Ok(());
        }
        for by in self.inner.store.moderation().quarantined().await? {
            self.quarantine_on(board.name().as_str(), &by, true).await?;
        }
        Ok(())
    }
}
