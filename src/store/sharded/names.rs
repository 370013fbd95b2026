//! Where a sharded board keeps its data: the names of its shards, and which shard holds
//! a member.
//!
//! Shard 0 is the board itself (its keys carry `{<board>}`). Shard `i` (1 ≤ i < K) is a
//! board of its own named `<board>#<created>.<i>`, hidden from users (`#` is outside the
//! board-name charset), where `<created>` is the board's creation time in unix
//! milliseconds, hex: it stays when windows are added (the version does not), and it
//! keeps each incarnation's shards apart, so shards a drop cut short left behind are not
//! taken up by a new board of the same name (the board list drops them, see
//! `upkeep.rs`).
//!
//! A Redis Cluster of three masters made by `redis-cli --cluster create` splits the 16,384
//! hash slots into thirds (0–5460, 5461–10922, 10923–16383); each shard's name gets
//! `.<n>` appended for the smallest `n` (none for n = 0) that puts its slot in the third
//! after the previous shard's, so a board of 3 shards has one on each master of such a
//! cluster (and of 6, two).
//!
//! A member's shard is `jump(fnv1a64(member), K)` (Lamping and Veach's jump consistent
//! hash): fixed for a given K, and a change of K would move only the members it must.

use std::hash::Hasher;

use crate::domain::board::Board;
use crate::domain::{BoardName, Member};

/// Redis Cluster's hash slots.
const HASH_SLOTS: u32 = 16_384;

/// The board's shards' names, shard 0 (the board itself) first (while a reshard runs,
/// those of both counts).
pub(super) fn shard_names(board: &Board) -> Vec<BoardName> {
    let mut names = vec![board.name.clone()];
    let third_of = |name: &BoardName| third(hash_slot(name.as_str()));
    let start = third_of(&board.name);
    for i in 1..board.shard_span() {
        let base = format!("{:x}.{i}", board.created_at.unix_millis());
        let wanted = (start + i) % 3;
        let name = (0..)
            .map(|n| match n {
                0 => board.name.shard(&base),
                n => board.name.shard(&format!("{base}.{n}")),
            })
            .find(|name| third_of(name) == wanted)
            .expect("a third of the slots is hit within a few tries");
        names.push(name);
    }
    names
}

/// Which third of the hash slots `slot` is in, as `redis-cli --cluster create` splits them
/// over three masters.
fn third(slot: u32) -> u32 {
    match slot {
        0..=5460 => 0,
        5461..=10922 => 1,
        _ => 2,
    }
}

/// The Redis Cluster hash slot of the keys of board `name` (their hash tag is the name).
fn hash_slot(name: &str) -> u32 {
    u32::from(crc16::State::<crc16::XMODEM>::calculate(name.as_bytes())) % HASH_SLOTS
}

/// The shard (0 to `shards` − 1) that holds `member`.
pub(super) fn shard_of(member: &Member, shards: u32) -> usize {
    let mut hasher = fnv::FnvHasher::default();
    hasher.write(member.as_str().as_bytes());
    jump(hasher.finish(), shards) as usize
}

/// Jump consistent hash: the bucket (0 to `buckets` − 1) of `key`.
fn jump(mut key: u64, buckets: u32) -> u32 {
    let (mut b, mut j) = (-1i64, 0i64);
    while j < i64::from(buckets) {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    b as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{BoardConfig, Timestamp};

    fn board(name: &str, shards: u32) -> Board {
        Board {
            name: BoardName::parse(name).unwrap(),
            config: BoardConfig::parse("1h", &["1h"])
                .unwrap()
                .with_shards(shards)
                .unwrap(),
            version: 1,
            created_at: Timestamp::from_unix_millis(0xfeed).unwrap(),
            incarnation: 1,
            resharding: None,
            pins: Vec::new(),
        }
    }

    #[test]
    fn shards_sit_in_successive_thirds_of_the_slots() {
        // Redis's own example: the slot of "123456789" is CRC16 0x31C3 = 12739.
        assert_eq!(hash_slot("123456789"), 12_739);
        for name in ["hot-posts", "views", "a"] {
            let names = shard_names(&board(name, 6));
            assert_eq!(names[0].as_str(), name);
            let thirds: Vec<u32> = names.iter().map(|n| third(hash_slot(n.as_str()))).collect();
            for (i, third) in thirds.iter().enumerate() {
                assert_eq!(*third, (thirds[0] + i as u32) % 3, "{names:?}");
            }
            assert!(names[1].as_str().starts_with(&format!("{name}#feed.1")));
            assert_eq!(names[1].shard_of(), Some(name));
        }
    }

    #[test]
    fn members_spread_evenly_and_one_more_shard_moves_only_its_share() {
        let members: Vec<Member> = (0..30_000)
            .map(|i| Member::parse(&format!("post:{i}")).unwrap())
            .collect();
        let mut counts = [0u32; 3];
        for m in &members {
            counts[shard_of(m, 3)] += 1;
        }
        for c in counts {
            assert!((9_400..10_600).contains(&c), "{counts:?}");
        }
        let moved = members
            .iter()
            .filter(|m| shard_of(m, 3) != shard_of(m, 4))
            .count();
        // A quarter move to the new shard; none move between the old ones.
        assert!((7_000..8_000).contains(&moved), "{moved}");
        assert!(
            members
                .iter()
                .all(|m| shard_of(m, 4) == 3 || shard_of(m, 4) == shard_of(m, 3))
        );
        assert!(members.iter().all(|m| shard_of(m, 1) == 0));
    }
}
