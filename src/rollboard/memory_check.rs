//! The memory check: reads the store's memory (one `INFO memory` on Redis) and judges
//! it under this instance's settings (what it judges is in `domain/memory_check.rs`).

use super::Rollboard;
use crate::domain::memory_check::{MemoryCheck, MemoryReading};
use crate::error::Result;

impl Rollboard {
    /// Reads the store's memory and judges it under this instance's settings (one
    /// `INFO memory` on Redis).
    pub async fn memory_check(&self) -> Result<MemoryCheck> {
        let reading = match self.store().server() {
            Some(server) => server.memory().await?,
            None => MemoryReading::InProcess,
        };
        let problem = match &reading {
            MemoryReading::Read(limit) => limit.problem(self.settings().accept_eviction),
            MemoryReading::InProcess | MemoryReading::Hidden(_) => None,
        };
        Ok(MemoryCheck { reading, problem })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_memory_store_has_no_limit() {
        let check = Rollboard::memory().memory_check().await.unwrap();
        assert_eq!(check.reading, MemoryReading::InProcess);
        assert_eq!(check.problem, None);
    }
}
