//! Changing a sharded board's shard count online: the members whose shard changes move
//! to it, exactly while writes, reads and retirement go on (the store's `reshard`, see
//! `store/sharded/reshard.rs` and `docs/operations.md`, "Resharding").

use super::Windowed;
use crate::domain::{BoardName, ReshardReport, sums_only};
use crate::error::{Error, Result};

impl Windowed<'_> {
    /// Changes `board`'s shard count to `shards` (1 to 32; a sum board whose ties are not
    /// dense): every member whose shard differs under the new count moves there, while
    /// writes, reads and retirement go on; the board's stored config says `shards`
    /// afterwards. A run cut short (an error, a crash) leaves the board exact and is
    /// finished by running it again with the same count; a run to another count, or a
    /// second run at once, is refused ([`Error::ReshardRunning`](crate::Error::ReshardRunning)).
    /// A board that watches its top is not resharded ([`Error::InvalidConfig`]): a
    /// sharded board cannot. Members hidden on
    /// every board while it ran (which skipped the board) are hidden on it as it ends.
    pub async fn reshard(self, shards: u32) -> Result<ReshardReport> {
        let store = &self.rb.inner.store;
        let clock = self.rb.inner.clock.as_ref();
        let report = self
            .change_config(|b| async move {
                sums_only(&b, "reshard")?;
                if shards > 1 && !b.config.watch().is_empty() {
                    return Err(Error::InvalidConfig {
                        reason: format!(
                            "board {:?} watches its top, which a sharded board cannot: PUT \
                             its config without \"watch\" first",
                            b.name.as_str()
                        ),
                    });
                }
                store.reshard(&b, shards, clock).await
            })
            .await?;
        // A hide on every board skips a board while it is resharded (hiding waits for
        // the move): the members hidden on every board meanwhile are taken on now.
        self.rb
            .take_hidden_everywhere(&BoardName::parse(self.board)?)
            .await?;
        Ok(report)
    }
}
