//! CORS from the [`Live`](super::live::Live) origins, applied by the [edge](super::edge):
//! off (no CORS headers at all, not even `Vary`) while the list is empty; otherwise
//! tower-http's [`CorsLayer`] around the route, answering `*` when the list has it,
//! else the origins in the list. A reload turns it on, off, or changes the origins from
//! the next request on.

use axum::http::{HeaderName, HeaderValue, Method, header, request::Parts};
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::live::Reload;

/// The two CORS layers a request may pass through.
pub(super) struct Cors {
    /// For a list with `*`.
    any: CorsLayer,
    /// For a list of origins, read from the live options.
    listed: CorsLayer,
}

impl Cors {
    pub(super) fn new(live: Reload) -> Self {
        let listed = AllowOrigin::predicate(move |origin: &HeaderValue, _: &Parts| {
            let live = live.load();
            live.cors_origins
                .iter()
                .any(|o| o.as_bytes() == origin.as_bytes())
        });
        let layer = CorsLayer::new()
            .allow_methods([
                Method::GET,
                Method::POST,
                Method::PUT,
                Method::DELETE,
                Method::OPTIONS,
            ])
            .allow_headers([
                header::CONTENT_TYPE,
                header::AUTHORIZATION,
                HeaderName::from_static("idempotency-key"),
            ]);
        Cors {
            any: layer.clone().allow_origin(AllowOrigin::any()),
            listed: layer.allow_origin(listed),
        }
    }

    /// The layer for `origins`: none while there are none.
    pub(super) fn layer(&self, origins: &[String]) -> Option<&CorsLayer> {
        if origins.is_empty() {
            None
        } else if origins.iter().any(|o| o == "*") {
            Some(&self.any)
        } else {
            Some(&self.listed)
        }
    }
}
