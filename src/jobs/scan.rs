//! Finding keys by name with `SCAN` (one-off jobs on a single Redis; no hot path scans).

use crate::Error;
use crate::store::{RedisConn, Retry, glob_escape};

/// What follows `prefix` in every key that starts with it (UTF-8 keys only) and that
/// `keep` keeps, sorted and without duplicates, found with `SCAN` (only the kept ones
/// are held, whatever else the Redis holds).
pub(crate) async fn scan_suffixes(
    conn: &RedisConn,
    prefix: &str,
    keep: impl Fn(&str) -> bool,
) -> Result<Vec<String>, Error> {
    let pattern = format!("{}*", glob_escape(prefix));
    let mut suffixes = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<Vec<u8>>) = conn
            .query(
                redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(1000),
                None,
                Retry::Idempotent,
            )
            .await?;
        suffixes.extend(
            keys.iter()
                .filter_map(|key| key.strip_prefix(prefix.as_bytes()))
                .filter_map(|suffix| String::from_utf8(suffix.to_vec()).ok())
                .filter(|suffix| keep(suffix)),
        );
        if next == 0 {
            break;
        }
        cursor = next;
    }
    // SCAN may return a key twice.
    suffixes.sort_unstable();
    suffixes.dedup();
    Ok(suffixes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_characters_are_escaped() {
        assert_eq!(glob_escape("slot_a*b?[c]\\_"), "slot_a\\*b\\?\\[c\\]\\\\_");
    }
}
