//! Which request bodies are JSON: the `Content-Type` matched as a media type (RFC 9110),
//! the same way on every route.
//!
//! `application/json` in any letter case, with or without parameters
//! (`Application/JSON; charset=utf-8`), and any `application/…+json` structured-syntax
//! suffix (`application/vnd.acme+json`) are JSON; anything else (`application/jsonx`,
//! `text/plain`, no header) is not, and the body is answered 415.

use axum::http::HeaderMap;
use axum::http::header::CONTENT_TYPE;

/// Whether the request's `Content-Type` names JSON: the value nearly every client
/// sends, `application/json`, at once (a like's check cost ~850 instructions without
/// that), any other through [`names_json`].
pub fn is_json(headers: &HeaderMap) -> bool {
    let value = headers.get(CONTENT_TYPE);
    value.is_some_and(|v| v.as_bytes() == b"application/json")
        || value.and_then(|v| v.to_str().ok()).is_some_and(names_json)
}

/// Whether a `Content-Type` value names JSON.
pub fn names_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    let Some((kind, subtype)) = essence.split_once('/') else {
        return false;
    };
    let subtype = subtype.to_ascii_lowercase();
    let suffixed = subtype
        .strip_suffix("+json")
        .is_some_and(|name| !name.is_empty() && name.bytes().all(is_token_byte));
    kind.eq_ignore_ascii_case("application") && (subtype == "json" || suffixed)
}

/// A byte of an RFC 9110 `token` (what a media subtype is made of).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::names_json;

    #[test]
    fn json_in_any_case_with_parameters_and_suffixes() {
        for yes in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/json;charset=UTF-8",
            " application/json ",
            "application/vnd.x+json",
            "application/problem+JSON",
        ] {
            assert!(names_json(yes), "{yes:?}");
        }
    }

    #[test]
    fn anything_else_is_not_json() {
        for no in [
            "application/jsonx",
            "application/json-seq",
            "text/json",
            "text/plain",
            "application/+json",
            "application/x y+json",
            "json",
            "",
            "application/",
        ] {
            assert!(!names_json(no), "{no:?}");
        }
    }
}
