//! Moderation that spans boards, in Redis: the members hidden on every board in one set
//! (`rollboard:hidden`), the contributors quarantined in another (`rollboard:quarantined`)
//! and the moderation log in one stream (`rollboard:moderation`,
//! each entry's JSON in its field `e`, trimmed to about the newest
//! [`LOG_KEPT`](crate::domain::LOG_KEPT) entries). Both are global keys, each touched only
//! by its own single-key commands, so they run unchanged on a Cluster. A log entry's id
//! is the stream's (Redis's time): an entry whose reply is lost is not sent again
//! ([`Retry::Never`]).

use async_trait::async_trait;

use super::RedisStore;
use super::conn::Retry;
use crate::domain::{Contributor, LOG_KEPT, LogEntry, Member};
use crate::error::{Error, Result};
use crate::store::ModerationStore;

#[async_trait]
impl ModerationStore for RedisStore {
    async fn set_hidden_everywhere(&self, member: &Member, hidden: bool) -> Result<bool> {
        let key = self.conn.keys().hidden_everywhere();
        let changed = self
            .conn
            .set_change(&key, None, &[member.as_str()], hidden)
            .await?;
        Ok(changed == 1)
    }

    async fn hidden_everywhere(&self) -> Result<Vec<Member>> {
        let key = self.conn.keys().hidden_everywhere();
        let found = self.conn.set_members(&key, None).await?;
        found.iter().map(|m| Member::parse(m)).collect()
    }

    async fn set_quarantined(&self, by: &Contributor, quarantined: bool) -> Result<bool> {
        let key = self.conn.keys().quarantined();
        let changed = self
            .conn
            .set_change(&key, None, &[by.as_str()], quarantined)
            .await?;
        Ok(changed == 1)
    }

    async fn quarantined(&self) -> Result<Vec<Contributor>> {
        let key = self.conn.keys().quarantined();
        let found = self.conn.set_members(&key, None).await?;
        found.iter().map(|by| Contributor::parse(by)).collect()
    }

    async fn log_moderation(&self, entry: LogEntry) -> Result<()> {
        let json = serde_json::to_string(&entry).map_err(|e| Error::store(e.to_string()))?;
        let mut cmd = redis::cmd("XADD");
        cmd.arg(self.conn.keys().moderation_log())
            .arg("MAXLEN")
            .arg("~")
            .arg(LOG_KEPT)
            .arg("*")
            .arg("e")
            .arg(json);
        let _id: String = self.conn.query(&cmd, None, Retry::Never).await?;
        Ok(())
    }

    async fn moderation_log(
        &self,
        before: Option<(u64, u64)>,
        limit: usize,
    ) -> Result<Vec<LogEntry>> {
        let end = before.map_or("+".to_owned(), |(ms, n)| format!("({ms}-{n}"));
        let mut cmd = redis::cmd("XREVRANGE");
        cmd.arg(self.conn.keys().moderation_log())
            .arg(end)
            .arg("-")
            .arg("COUNT")
            .arg(limit);
        let entries: Vec<(String, Vec<String>)> =
            self.conn.query(&cmd, None, Retry::Idempotent).await?;
        entries
            .into_iter()
            .map(|(id, fields)| {
                let json = fields.get(1).map_or("", String::as_str);
                let entry: LogEntry = serde_json::from_str(json)
                    .map_err(|e| Error::store(format!("moderation log entry {id}: {e}")))?;
                Ok(LogEntry { id, ..entry })
            })
            .collect()
    }
}
