//! Whether the store's memory can keep every count: Redis's memory limit, what it uses,
//! and its eviction policy, as `INFO memory` reports them.
//!
//! Exact totals need every slot hash and totals set to stay. A Redis whose
//! `maxmemory-policy` evicts keys (`allkeys-lru` is common on a Redis shared with a
//! cache) can silently drop one, so any policy but `noeviction` is a problem unless the
//! operator accepts it ([`Settings::accept_eviction`](crate::Settings)). A Redis at its
//! limit under `noeviction` refuses writes ([`Error::StoreFull`](crate::Error)): nothing
//! is lost, but nothing is counted either. The service reads this at start and
//! periodically (warning loudly), and `/readyz` fails on either problem.
//!
//! The check itself is [`Rollboard::memory_check`](crate::Rollboard::memory_check); this
//! module holds what it reads and judges, which the Redis store produces.
//!
//! `INFO memory` is read rather than `CONFIG GET`: managed services that refuse `CONFIG`
//! still answer `INFO`. Where an ACL refuses it too, the reading is
//! [`MemoryReading::Hidden`] and nothing is judged.

/// What Redis says of its memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryLimit {
    /// `used_memory`: bytes in use.
    pub used_bytes: u64,
    /// `maxmemory`: the limit in bytes; 0 when there is none.
    pub max_bytes: u64,
    /// `maxmemory_policy`: what Redis does at the limit (`noeviction`, `allkeys-lru`, …).
    pub policy: String,
}

/// The store's answer about its memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryReading {
    /// The store lives in this process (the memory store): no limit, nothing evicted.
    InProcess,
    /// The store would not say (an ACL or a managed service refuses `INFO`): why.
    Hidden(String),
    /// What the store said.
    Read(MemoryLimit),
}

/// A memory condition that makes the store unfit to keep exact counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryProblem {
    /// The eviction policy may drop keys, and `accept_eviction` is off.
    Evicting {
        /// The policy.
        policy: String,
    },
    /// Redis is at its limit and refuses writes.
    Full {
        /// Bytes in use.
        used_bytes: u64,
        /// The limit.
        max_bytes: u64,
    },
}

impl MemoryProblem {
    /// A stable snake_case code: `eviction_policy` or `store_full`.
    pub fn code(&self) -> &'static str {
        match self {
            MemoryProblem::Evicting { .. } => "eviction_policy",
            MemoryProblem::Full { .. } => "store_full",
        }
    }
}

impl std::fmt::Display for MemoryProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemoryProblem::Evicting { policy } => write!(
                f,
                "Redis's maxmemory-policy is {policy}: at its memory limit it may evict a slot \
                 hash or a totals set, and totals are no longer exact; set maxmemory-policy \
                 noeviction (or accept_eviction = true to accept it)"
            ),
            MemoryProblem::Full {
                used_bytes,
                max_bytes,
            } => write!(
                f,
                "Redis is full ({used_bytes} of {max_bytes} bytes of maxmemory used): it \
                 refuses writes; free memory or raise maxmemory"
            ),
        }
    }
}

impl MemoryLimit {
    /// The problem this reading shows, if any; an evicting policy is none when
    /// `accept_eviction`.
    pub fn problem(&self, accept_eviction: bool) -> Option<MemoryProblem> {
        if self.policy != "noeviction" && !accept_eviction {
            return Some(MemoryProblem::Evicting {
                policy: self.policy.clone(),
            });
        }
        (self.max_bytes > 0 && self.used_bytes >= self.max_bytes).then_some(MemoryProblem::Full {
            used_bytes: self.used_bytes,
            max_bytes: self.max_bytes,
        })
    }
}

/// A reading of the store's memory and the problem it shows under the settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryCheck {
    /// What the store said.
    pub reading: MemoryReading,
    /// The problem, if any.
    pub problem: Option<MemoryProblem>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(used: u64, max: u64, policy: &str) -> MemoryLimit {
        MemoryLimit {
            used_bytes: used,
            max_bytes: max,
            policy: policy.into(),
        }
    }

    #[test]
    fn only_noeviction_keeps_every_key_unless_eviction_is_accepted() {
        assert_eq!(limit(10, 0, "noeviction").problem(false), None);
        assert_eq!(
            limit(10, 0, "allkeys-lru").problem(false),
            Some(MemoryProblem::Evicting {
                policy: "allkeys-lru".into()
            })
        );
        assert_eq!(limit(10, 0, "allkeys-lru").problem(true), None);
    }

    #[test]
    fn at_the_limit_redis_is_full() {
        assert_eq!(limit(99, 100, "noeviction").problem(false), None);
        assert_eq!(
            limit(100, 100, "noeviction").problem(false),
            Some(MemoryProblem::Full {
                used_bytes: 100,
                max_bytes: 100
            })
        );
        assert_eq!(
            limit(100, 100, "noeviction").problem(false).unwrap().code(),
            "store_full"
        );
    }
}
