//! Bearer-token access for write and admin routes.
//!
//! - When no token is configured, everything is open (the service then binds to loopback
//!   only, unless `--insecure`).
//! - Writes (`POST …/events`, `POST /v1/counters/…`, `POST /v1/stats/…`) need the write
//!   token or the admin token.
//! - Administration (create or drop a board, remove a member, drop a counter) needs the
//!   admin token; when only a write token is configured, administration needs that one,
//!   so setting any token protects every change.
//!
//! A missing, malformed or unknown token is 401; a known token without the right is 403.

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use super::AppState;
use super::error::ApiError;

/// The configured tokens.
#[derive(Clone, Default)]
pub struct Tokens {
    /// Grants writes.
    pub write: Option<String>,
    /// Grants writes and administration.
    pub admin: Option<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("write", &self.write.as_ref().map(|_| "***"))
            .field("admin", &self.admin.as_ref().map(|_| "***"))
            .finish()
    }
}

impl Tokens {
    /// Whether any token is configured.
    pub fn any(&self) -> bool {
        self.write.is_some() || self.admin.is_some()
    }
}

/// What a request's token grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Grant {
    Write,
    Admin,
}

fn grant(tokens: &Tokens, parts: &Parts) -> Result<Grant, ApiError> {
    let unauthorized =
        |message: &str| ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message);
    let header = parts
        .headers
        .get(AUTHORIZATION)
        .ok_or_else(|| unauthorized("this route needs Authorization: Bearer <token>"))?;
    let token = header
        .to_str()
        .ok()
        .and_then(bearer_token)
        .ok_or_else(|| unauthorized("the Authorization header must be: Bearer <token>"))?;
    // An empty expected token never matches anything.
    let matches = |expected: &Option<String>| {
        expected
            .as_deref()
            .is_some_and(|e| !e.is_empty() && constant_time_eq(e, token))
    };
    if matches(&tokens.admin) {
        Ok(Grant::Admin)
    } else if matches(&tokens.write) {
        // Without an admin token, the write token is the strongest credential there is.
        Ok(if tokens.admin.is_none() {
            Grant::Admin
        } else {
            Grant::Write
        })
    } else {
        Err(unauthorized("unknown token"))
    }
}

fn require(state: &AppState, parts: &Parts, needed: Grant) -> Result<(), ApiError> {
    if !state.tokens.any() {
        return Ok(());
    }
    if grant(&state.tokens, parts)? >= needed {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "this token may write events but not administer boards",
        ))
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
