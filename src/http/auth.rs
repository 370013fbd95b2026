//! Bearer-token access: three tokens, each granting what the one below it grants.
//!
//! - When no token is configured, everything is open (the service then binds to loopback
//!   only, unless `--insecure`).
//! - Reads (every route but `/healthz`, `/readyz`, `/openapi.json` and the dashboard page)
//!   need a token only when a read token is configured: then the read, the write or the
//!   admin token. The check is the [edge](super::edge)'s, before routing goes further.
//! - Writes (`POST …/events`, `POST /v1/counters/…`, `POST /v1/stats/…`) need the write
//!   token or the admin token.
//! - Administration (create or drop a board, remove a member, drop a counter) needs the
//!   admin token.
//! - The strongest token configured grants everything: with only a write token, it also
//!   administers; with only a read token, it also writes and administers. So setting any
//!   token protects every change.
//!
//! A missing, malformed or unknown token is 401; a known token without the right is 403.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};

use super::AppState;
use super::error::ApiError;

/// The configured tokens.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Grants reads; when set, reads need a token.
    pub read: Option<String>,
    /// Grants reads and writes.
    pub write: Option<String>,
    /// Grants reads, writes and administration.
    pub admin: Option<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("read", &self.read.as_ref().map(|_| "***"))
            .field("write", &self.write.as_ref().map(|_| "***"))
            .field("admin", &self.admin.as_ref().map(|_| "***"))
            .finish()
    }
}

impl Tokens {
    /// Whether any token is configured.
    pub fn any(&self) -> bool {
        self.read.is_some() || self.write.is_some() || self.admin.is_some()
    }

    /// Whether the request in `headers` may read: always when no read token is configured.
    pub(super) fn may_read(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        match self.read {
            None => Ok(()),
            Some(_) => self.require(headers, Grant::Read),
        }
    }

    /// Whether the request in `headers` has a token granting `needed` (always, when no
    /// token is configured).
    fn require(&self, headers: &HeaderMap, needed: Grant) -> Result<(), ApiError> {
        if !self.any() || self.grant(headers)? >= needed {
            return Ok(());
        }
        let message = match needed {
            Grant::Admin => "this token may not administer boards: it needs the admin token",
            _ => "this token may read but not write: it needs the write or the admin token",
        };
        Err(ApiError::new(StatusCode::FORBIDDEN, "forbidden", message))
    }

    /// What the request's token grants: its own right, or everything when no stronger
    /// token is configured.
    fn grant(&self, headers: &HeaderMap) -> Result<Grant, ApiError> {
        let token = bearer(headers)?;
        // An empty expected token never matches anything.
        let matches = |expected: &Option<String>| {
            expected
                .as_deref()
                .is_some_and(|e| !e.is_empty() && constant_time_eq(e, token))
        };
        let strongest = if self.admin.is_some() {
            Grant::Admin
        } else if self.write.is_some() {
            Grant::Write
        } else {
            Grant::Read
        };
        let right = [
            (&self.admin, Grant::Admin),
            (&self.write, Grant::Write),
            (&self.read, Grant::Read),
        ]
        .into_iter()
        .find_map(|(expected, right)| matches(expected).then_some(right))
        .ok_or_else(|| unauthorized("unknown token"))?;
        Ok(if right == strongest {
            Grant::Admin
        } else {
            right
        })
    }
}

/// What a request's token grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Grant {
    Read,
    Write,
    Admin,
}

fn unauthorized(message: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
}

/// The token the request sends, or why it has none.
fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    let header = headers
        .get(AUTHORIZATION)
        .ok_or_else(|| unauthorized("this route needs Authorization: Bearer <token>"))?;
    header
        .to_str()
        .ok()
        .and_then(bearer_token)
        .ok_or_else(|| unauthorized("the Authorization header must be: Bearer <token>"))
}

/// Whether the request has a token granting `needed`, under the tokens in force now.
fn require(state: &AppState, parts: &Parts, needed: Grant) -> Result<(), ApiError> {
    state.live.load().tokens.require(&parts.headers, needed)
}

/// Whether the request may administer (any token configured asks for the admin token's
/// right), without refusing it when not: what a read shows moderators alone.
#[derive(Debug)]
pub struct Moderator(pub bool);

impl FromRequestParts<AppState> for Moderator {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Ok(Moderator(require(state, parts, Grant::Admin).is_ok()))
    }
}

/// Proof that the request may write events.
#[derive(Debug)]
pub struct WriteAccess;

impl FromRequestParts<AppState> for WriteAccess {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        require(state, parts, Grant::Write).map(|_| WriteAccess)
    }
}

/// Proof that the request may administer boards.
#[derive(Debug)]
pub struct AdminAccess;

impl FromRequestParts<AppState> for AdminAccess {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        require(state, parts, Grant::Admin).map(|_| AdminAccess)
    }
}

/// The token of an `Authorization: Bearer <token>` value: the scheme matched without
/// regard to case (RFC 9110), the token exactly as sent.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim_start_matches(' ');
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Compares without an early exit, so response times do not reveal how much matched.
fn constant_time_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        diff |= (a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0)) as usize;
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheme_is_case_insensitive_and_the_token_exact() {
        for value in ["Bearer t0K", "bearer t0K", "BEARER t0K", "bEaReR   t0K"] {
            assert_eq!(bearer_token(value), Some("t0K"), "{value:?}");
        }
        assert_eq!(bearer_token("Bearer t0K "), Some("t0K "));
        for value in ["Bearer", "Bearer ", "Basic t0K", "Bearert0K", "Bearer\tt0K"] {
            assert_eq!(bearer_token(value), None, "{value:?}");
        }
    }

    #[test]
    fn constant_time_eq_compares_whole_strings() {
        assert!(constant_time_eq("secret", "secret"));
        assert!(!constant_time_eq("secret", "secreT"));
        assert!(!constant_time_eq("secret", "secret2"));
        assert!(!constant_time_eq("", "x"));
    }
}
