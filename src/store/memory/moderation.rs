//! The memory store's moderation that spans boards: the members hidden on every board
//! and the moderation log, behind one mutex.

use std::collections::BTreeSet;
use std::sync::Mutex;

use async_trait::async_trait;

use super::stream::{Stream, id_text};
use super::{MemoryStore, lock};
use crate::domain::{Contributor, LOG_KEPT, LogEntry, Member};
use crate::error::Result;
use crate::store::ModerationStore;

/// See [`ModerationStore`].
#[derive(Debug, Default)]
pub(super) struct MemModeration(Mutex<State>);

#[derive(Debug, Default)]
struct State {
    everywhere: BTreeSet<Member>,
    quarantined: BTreeSet<Contributor>,
    log: Stream<LogEntry, LOG_KEPT>,
}

/// Puts `item` in `set` (`on`) or takes it out: whether that changed the set.
fn toggle<T: Ord + Clone>(set: &mut BTreeSet<T>, item: &T, on: bool) -> bool {
    if on {
        set.insert(item.clone())
    } else {
        set.remove(item)
    }
}

#[async_trait]
impl ModerationStore for MemoryStore {
    async fn set_hidden_everywhere(&self, member: &Member, hidden: bool) -> Result<bool> {
        Ok(toggle(
            &mut lock(&self.moderation.0).everywhere,
            member,
            hidden,
        ))
    }

    async fn hidden_everywhere(&self) -> Result<Vec<Member>> {
        Ok(lock(&self.moderation.0)
            .everywhere
            .iter()
            .cloned()
            .collect())
    }

    async fn set_quarantined(&self, by: &Contributor, quarantined: bool) -> Result<bool> {
        Ok(toggle(
            &mut lock(&self.moderation.0).quarantined,
            by,
            quarantined,
        ))
    }

    async fn quarantined(&self) -> Result<Vec<Contributor>> {
        Ok(lock(&self.moderation.0)
            .quarantined
            .iter()
            .cloned()
            .collect())
    }

    async fn log_moderation(&self, entry: LogEntry) -> Result<()> {
        let log = &mut lock(&self.moderation.0).log;
        let ms = (entry.at * 1000.0) as u64;
        log.push(ms, |id| LogEntry {
            id: id_text(id),
            ..entry
        });
        Ok(())
    }

    async fn moderation_log(
        &self,
        before: Option<(u64, u64)>,
        limit: usize,
    ) -> Result<Vec<LogEntry>> {
        let log = &lock(&self.moderation.0).log;
        let older = |id: &(u64, u64)| before.is_none_or(|before| *id < before);
        let newest_first = log.iter().rev().filter(|(id, _)| older(id));
        Ok(newest_first.take(limit).map(|(_, e)| e.clone()).collect())
    }
}
