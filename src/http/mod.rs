//! The HTTP API (axum), JSON under `/v1`, plus `/healthz`, `/readyz`, `/metrics`,
//! `/openapi.json` and the dashboard at `/`.
//!
//! [`router`] is public so a forum can mount it in its own axum app (e.g. under
//! `/rank`). Handlers are thin: they parse the request, call [`Rollboard`] and render the
//! result; every error is `{"error":{"code","message"}}` (see [`error`]).

use std::sync::Arc;

use axum::extract::OriginalUri;
use axum::http::Uri;
use axum::routing::get;
use axum::{Json, Router, middleware};
use tower_http::cors::{AllowOrigin, CorsLayer};
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

mod access_log;
mod access_time;
mod auth;
mod boards;
mod body_limit;
mod contract;
mod counters;
mod dashboard;
mod dashboard_api;
mod edge;
pub mod error;
mod events;
mod extract;
mod json_int;
mod latency;
mod maintenance;
mod media_type;
mod member_data;
mod multi;
mod ops;
mod rankings;
mod ranks;
mod rates;
mod score_at;
mod snapshots;
mod staleness;
mod state;
mod stats;
mod wire;

pub use access_time::{ACCESS_TIME, AccessTime, AccessTimeLayer, DASHBOARD_TIME};
pub use auth::Tokens;
pub use state::{AppState, HttpOptions};

use crate::Rollboard;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "rollboard",
        description = "Exact rolling-window leaderboards. Errors are {\"error\":{\"code\",\"message\"}}.",
    ),
    modifiers(&BearerAuth),
    tags(
        (name = "boards", description = "Create, list, describe and drop boards"),
        (name = "events", description = "Record events"),
        (name = "rankings", description = "Read rankings, members and history"),
        (name = "rates", description = "Rate windows: hits per key over the last 5 s … 180 d, and checks against a limit"),
        (name = "counters", description = "Time-series counters at several precisions"),
        (name = "stats", description = "Aggregate statistics per context and the slowest contexts"),
        (name = "ops", description = "Health, readiness and metrics"),
        (name = "dashboard", description = "What the dashboard page reads: one request per refresh, and the board search and member lookup"),
    )
)]
struct ApiDoc;

/// The two bearer schemes. Write routes list both (either token satisfies them), admin
/// routes only `adminToken`; the rules are [`auth`]'s.
struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let bearer = |description: &str| {
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(description))
                    .build(),
            )
        };
        components.add_security_scheme(
            "writeToken",
            bearer(
                "The write token (ROLLBOARD_WRITE_TOKEN) or the admin token: either one \
                 grants writes (events, hits, checks, counter increments, stat values). \
                 When only an admin token is configured, writes need that one. When no \
                 token is configured at all, every route is open and no token is needed.",
            ),
        );
        components.add_security_scheme(
            "adminToken",
            bearer(
                "The admin token (ROLLBOARD_ADMIN_TOKEN) grants writes and administration \
                 (create, change or drop a board, remove a member, configure or drop a \
                 counter). When only a write token is configured, that token administers \
                 too. A write token sent when an admin token is configured is refused \
                 with 403 `forbidden` on an admin route. When no token is configured at \
                 all, every route is open.",
            ),
        );
    }
}

/// The prefix the router is mounted under (`""` at the root): what `original` (the path
/// as the client sent it) has before `path` (the path as this router sees it).
fn mount_prefix<'a>(original: &'a str, path: &str) -> &'a str {
    original.strip_suffix(path).unwrap_or("")
}

/// The whole service as a router: mount it as is, or under a prefix with `nest`.
pub fn router(boards: Rollboard, options: HttpOptions) -> Router {
    let state = AppState {
        boards,
        tokens: Arc::new(options.tokens),
        metrics: options.metrics,
        max_clock_skew: options.max_clock_skew,
    };
    let (routes, openapi) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(boards::list_boards))
        .routes(routes!(
            boards::put_board,
            boards::get_board,
            boards::delete_board
        ))
        .routes(routes!(boards::recompute))
        .routes(routes!(boards::relayout))
        .routes(routes!(boards::reshard))
        .routes(routes!(events::post_events))
        .routes(routes!(multi::post_multi_events))
        .routes(routes!(multi::member_across))
        .routes(routes!(rankings::top))
        .routes(routes!(rankings::member, rankings::remove_member))
        .routes(routes!(rankings::around))
        .routes(routes!(ranks::get_ranks, ranks::post_ranks))
        .routes(routes!(rankings::history))
        .routes(routes!(
            member_data::put_data,
            member_data::get_data,
            member_data::delete_data
        ))
        .routes(routes!(maintenance::remove_members))
        .routes(routes!(maintenance::trim))
        .routes(routes!(score_at::score_at))
        .routes(routes!(snapshots::get_snapshots))
        .routes(routes!(rates::post_hit))
        .routes(routes!(rates::post_hits))
        .routes(routes!(rates::get_counts, rates::delete_key))
        .routes(routes!(rates::post_check))
        .routes(routes!(counters::list_counters))
        .routes(routes!(
            counters::post_count,
            counters::put_config,
            counters::get_samples,
            counters::delete_counter
        ))
        .routes(routes!(stats::slowest))
        .routes(routes!(stats::post_value, stats::get_stats))
        .routes(routes!(ops::healthz))
        .routes(routes!(ops::readyz))
        .routes(routes!(ops::metrics))
        .routes(routes!(dashboard_api::dashboard))
        .routes(routes!(dashboard_api::search_boards))
        .routes(routes!(dashboard_api::member))
        .split_for_parts();
    let mut openapi = openapi;
    contract::complete(&mut openapi, state.boards.settings());
    let openapi = Arc::new(openapi);
    let router = routes
        .route(
            "/openapi.json",
            get(
                move |OriginalUri(original): OriginalUri, uri: Uri| async move {
                    // Under `nest("/rank", …)` the document is at /rank/openapi.json and its
                    // paths under /rank: the server is the prefix it was read from.
                    let mut document = openapi.as_ref().clone();
                    contract::set_server(&mut document, mount_prefix(original.path(), uri.path()));
                    Json(document)
                },
            ),
        )
        .route("/", get(dashboard::page))
        .fallback(ops::not_found)
        .method_not_allowed_fallback(ops::method_not_allowed);
    let router = if options.access_log {
        router.layer(middleware::from_fn(access_log::log))
    } else {
        router
    };
    let access_times = options.access_times.then(|| state.boards.clone());
    let router = router.layer(edge::EdgeLayer::new(
        options.max_body_bytes,
        options.request_timeout,
        access_times,
    ));
    let router = match cors(&options.cors_origins) {
        Some(cors) => router.layer(cors),
        None => router,
    };
    router.with_state(state)
}

/// The CORS layer for `origins` (`*`: any); `None` when there is none.
fn cors(origins: &[String]) -> Option<CorsLayer> {
    use axum::http::{HeaderName, HeaderValue, Method, header};
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
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
            ]),
    )
}
