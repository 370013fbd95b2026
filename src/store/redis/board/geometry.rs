//! A compact slot's geometry as the client reads it. A compact slot's stage is split
//! into buckets by linear hashing; its geometry, `"<L> <p> <count>"` in the board's
//! `slotgeo_{<board>}` hash (see `docs/compact-slots.md`, "Compact slots"), says how many
//! buckets there are (N = 2^L + p) and which bucket holds a member's hash, as the
//! prelude's `bucket_of` computes it. A drop needs the count, compaction the buckets.

/// The bucket count N = 2^L + p of a geometry `"<L> <p> <count>"`.
pub(crate) fn bucket_count(geometry: &str) -> Option<u64> {
    let mut parts = geometry.split(' ');
    let level: u32 = parts.next()?.parse().ok()?;
    let split: u64 = parts.next()?.parse().ok()?;
    1u64.checked_shl(level)?.checked_add(split)
}

/// A slot's geometry as the client needs it: `(L, p)` of linear hashing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Geometry {
    /// L: the round's base is 2^L buckets.
    pub(crate) level: u32,
    /// p: the buckets below p are split this round.
    pub(crate) split: u64,
}

impl Geometry {
    /// A geometry field's value, `"<L> <p> <count>"`; `None` for one marked `P` (being
    /// converted to plain) or unreadable: the converter's own calls handle those.
    pub(crate) fn parse(text: &str) -> Option<Geometry> {
        let mut parts = text.split(' ');
        let level = parts.next()?.parse().ok().filter(|l| *l < 48)?;
        let split = parts.next()?.parse().ok()?;
        let _count = parts.next()?;
        match parts.next() {
            None => Some(Geometry { level, split }),
            Some(_) => None,
        }
    }

    /// The bucket of hash `h`, as the prelude's `bucket_of`.
    pub(crate) fn bucket_of(&self, h: u32) -> u64 {
        let size = 1u64 << self.level;
        let h = u64::from(h);
        let b = h % size;
        if b < self.split { h % (2 * size) } else { b }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometries_parse_and_name_buckets_as_the_prelude() {
        assert_eq!(
            Geometry::parse("3 2 700"),
            Some(Geometry { level: 3, split: 2 })
        );
        assert_eq!(Geometry::parse("3 2 700 P"), None, "being made plain");
        assert_eq!(Geometry::parse("x"), None);
        let g = Geometry { level: 3, split: 2 };
        // b = h mod 8, and h mod 16 when b < 2.
        assert_eq!(g.bucket_of(9), 9);
        assert_eq!(g.bucket_of(1), 1);
        assert_eq!(g.bucket_of(17), 1);
        assert_eq!(g.bucket_of(18), 2);
        assert_eq!(g.bucket_of(7), 7);
        assert_eq!(Geometry { level: 0, split: 0 }.bucket_of(u32::MAX), 0);
    }

    #[test]
    fn a_geometry_names_its_bucket_count() {
        assert_eq!(bucket_count("0 0 0"), Some(1));
        assert_eq!(bucket_count("6 5 3000"), Some(69));
        assert_eq!(bucket_count("12 0 1"), Some(4096));
        assert_eq!(bucket_count("x 0 0"), None);
        assert_eq!(bucket_count("3"), None);
        assert_eq!(bucket_count("64 0 0"), None);
    }
}
