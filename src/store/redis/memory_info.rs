//! `INFO memory`: Redis's memory use, limit and eviction policy, for the memory check
//! (see `memory_check`). A reply refused by an ACL or a managed service is a
//! [`MemoryReading::Hidden`], not an error: the service carries on without the check.

use super::conn::{RedisConn, Retry};
use crate::error::{Error, Result};
use crate::memory_check::{MemoryLimit, MemoryReading};

/// Reads `INFO memory` (a read: [`Retry::Idempotent`]).
pub(super) async fn read(conn: &RedisConn) -> Result<MemoryReading> {
    let cmd = {
        let mut cmd = redis::cmd("INFO");
        cmd.arg("memory");
        cmd
    };
    match conn.query::<String>(&cmd, None, Retry::Idempotent).await {
        Ok(text) => Ok(parse(&text)),
        // NOPERM from an ACL, or an unknown command on a service that renames it.
        Err(Error::Store(why)) => Ok(MemoryReading::Hidden(why)),
        Err(other) => Err(other),
    }
}

/// The fields of an `INFO memory` reply; hidden when one is missing.
fn parse(text: &str) -> MemoryReading {
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let number = |name: &str| field(name).and_then(|v| v.parse::<u64>().ok());
    match (
        number("used_memory"),
        number("maxmemory"),
        field("maxmemory_policy"),
    ) {
        (Some(used_bytes), Some(max_bytes), Some(policy)) => MemoryReading::Read(MemoryLimit {
            used_bytes,
            max_bytes,
            policy: policy.to_owned(),
        }),
        _ => MemoryReading::Hidden(
            "INFO memory has no used_memory, maxmemory and maxmemory_policy fields".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_three_fields_of_info_memory() {
        let text = "# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\n\
                    maxmemory:2097152\r\nmaxmemory_human:2.00M\r\nmaxmemory_policy:allkeys-lru\r\n";
        assert_eq!(
            parse(text),
            MemoryReading::Read(MemoryLimit {
                used_bytes: 1_048_576,
                max_bytes: 2_097_152,
                policy: "allkeys-lru".into()
            })
        );
        assert!(matches!(parse("# Memory\r\n"), MemoryReading::Hidden(_)));
    }
}
