//! What the router reads on every request and a reload may change while it serves:
//! the tokens, the access log, the CORS origins and the staleness bound ([`Live`]), swapped in whole by
//! [`Reload::apply`] (`rollboard serve` does on `SIGHUP`). A request reads one version
//! from start to end; the requests after a swap read the new one.

use std::sync::Arc;

use arc_swap::ArcSwap;

use super::Tokens;
use crate::Staleness;

/// The options a reload may change.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Live {
    /// Bearer tokens (none: open).
    pub tokens: Tokens,
    /// Log one INFO line per request on target `rollboard::access`.
    pub access_log: bool,
    /// Origins answered with CORS headers, `*` for any (none: CORS off).
    pub cors_origins: Vec<String>,
    /// How old a read's answer may be when the request does not say
    /// (`max_staleness_ms`).
    pub max_staleness: Staleness,
}

/// The router's current [`Live`] options, shared by every request and by whoever
/// reloads them.
#[derive(Clone, Debug)]
pub struct Reload(Arc<ArcSwap<Live>>);

impl Reload {
    pub(super) fn new(live: Live) -> Self {
        Reload(Arc::new(ArcSwap::from_pointee(live)))
    }

    /// Replaces the options: requests that start from now on use `live`.
    pub fn apply(&self, live: Live) {
        self.0.store(Arc::new(live));
    }

    /// The options in force now.
    pub fn current(&self) -> Arc<Live> {
        self.0.load_full()
    }

    /// The options in force now, without touching the shared count (for one request).
    pub(super) fn load(&self) -> arc_swap::Guard<Arc<Live>> {
        self.0.load()
    }
}
