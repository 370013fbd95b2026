//! `INFO memory`: Redis's memory use, limit and eviction policy, for the memory check
//! (see `memory_check`); on Redis Cluster, of the fullest master. A reply refused by an ACL or a managed service is a
//! [`MemoryReading::Hidden`], not an error: the service carries on without the check.

use crate::domain::memory_check::{MemoryLimit, MemoryReading};
use crate::error::{Error, Result};
use crate::store::redis::conn::{RedisConn, Retry};

/// Reads `INFO memory` (a read: [`Retry::Idempotent`]).
pub(crate) async fn read(conn: &RedisConn) -> Result<MemoryReading> {
    let cmd = {
        let mut cmd = redis::cmd("INFO");
        cmd.arg("memory");
        cmd
    };
    match conn
        .query::<redis::Value>(&cmd, None, Retry::Idempotent)
        .await
    {
        Ok(reply) => Ok(reading(reply)),
        // NOPERM from an ACL, or an unknown command on a service that renames it.
        Err(Error::Store(why)) => Ok(MemoryReading::Hidden(why)),
        Err(other) => Err(other),
    }
}

/// The reading of an `INFO memory` reply: one node's text, or on Redis Cluster one text
/// per master, of which the fullest counts (a board that lives there fails first).
fn reading(reply: redis::Value) -> MemoryReading {
    let texts: Vec<String> = match reply {
        redis::Value::Map(nodes) => nodes
            .into_iter()
            .filter_map(|(_, text)| redis::from_redis_value(text).ok())
            .collect(),
        other => redis::from_redis_value(other).into_iter().collect(),
    };
    let mut fullest: Option<MemoryLimit> = None;
    for text in &texts {
        match parse(text) {
            MemoryReading::Read(limit) => {
                if fullest.as_ref().is_none_or(|f| share(&limit) > share(f)) {
                    fullest = Some(limit);
                }
            }
            hidden => return hidden,
        }
    }
    fullest.map_or_else(
        || MemoryReading::Hidden("INFO memory gave no reply to read".into()),
        MemoryReading::Read,
    )
}

/// How full a node is (0 without a limit), for comparing nodes.
fn share(limit: &MemoryLimit) -> f64 {
    if limit.max_bytes == 0 {
        0.0
    } else {
        limit.used_bytes as f64 / limit.max_bytes as f64
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
