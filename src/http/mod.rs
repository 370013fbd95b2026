//! The HTTP API (axum), JSON under `/v1`, plus `/healthz`, `/readyz`, `/metrics`,
//! `/openapi.json` and the dashboard at `/`.
//!
//! [`router`] is public so a forum can mount it in its own axum app (e.g. under
//! `/rank`). Handlers are thin: they parse the request, call [`Rollboard`] and render the
//! result; every error is `{"error":{"code","message"}}` (see [`error`]).

use std::sync::Arc;

use axum::Router;
use axum::extract::OriginalUri;
use axum::http::Uri;
use axum::routing::get;
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

mod access_log;
mod access_time;
mod answered;
mod auth;
mod boards;
mod body_limit;
mod changes;
mod contract;
mod contributors;
mod cors;
mod counters;
mod dashboard;
mod dashboard_api;
mod edge;
pub mod error;
mod events;
mod extract;
mod json;
mod json_int;
mod latency;
mod live;
mod maintenance;
mod media_type;
mod member_data;
mod moderation;
mod movement;
mod multi;
mod ops;
mod pins;
mod plain_query;
mod quarantine;
mod rankings;
mod ranks;
mod rates;
mod read_json;
mod retract;
mod review;
mod score_at;
mod snapshots;
mod staleness;
mod state;
mod stats;
mod wire;

pub use access_time::{ACCESS_TIME, AccessTime, AccessTimeLayer, DASHBOARD_TIME};
pub use auth::Tokens;
pub use boards::ConfigBody;
pub use live::{Live, Reload};
pub use state::{AppState, HttpOptions};

use crate::Rollboard;
use json::Json;

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
        (name = "moderation", description = "Hide members from the rankings without losing their counts, on one board or on every board, show them again, and read the moderation log"),
        (name = "contributors", description = "What one contributor (an event's `by`) gave on the boards keeping contributors (`per_contributor_member`, `per_contributor`)"),
        (name = "rates", description = "Rate windows: hits per key over the last 5 s … 180 d, and checks against a limit"),
        (name = "counters", description = "Time-series counters at several precisions"),
        (name = "stats", description = "Aggregate statistics per context and the slowest contexts"),
        (name = "ops", description = "Health, readiness and metrics"),
        (name = "dashboard", description = "What the dashboard page reads: one request per refresh, and the board search and member lookup"),
    )
)]
struct ApiDoc;

/// The three bearer schemes. Read routes list all three, write routes `writeToken` and
/// `adminToken`, admin routes only `adminToken`; the rules are [`auth`]'s.
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
            "readToken",
            bearer(
                "The read token (ROLLBOARD_READ_TOKEN), the write token or the admin token: \
                 any one grants reads (every route but /healthz, /readyz, /openapi.json and \
                 the dashboard page). Reads need a token only when a read token is \
                 configured; when only a read token is configured, it grants writes and \
                 administration too.",
            ),
        );
        components.add_security_scheme(
            "writeToken",
            bearer(
                "The write token (ROLLBOARD_WRITE_TOKEN) or the admin token: either one \
                 grants reads and writes (events, hits, checks, counter increments, stat \
                 values). When only an admin token is configured, writes need that one; \
                 when only a read token is, that one. When no token is configured at all, \
                 every route is open and no token is needed.",
            ),
        );
        components.add_security_scheme(
            "adminToken",
            bearer(
                "The admin token (ROLLBOARD_ADMIN_TOKEN) grants reads, writes and \
                 administration (create, change or drop a board, remove a member, \
                 configure or drop a counter). When no admin token is configured, the \
                 strongest token configured administers. A weaker token sent when an admin \
                 token is configured is refused with 403 `forbidden` on an admin route. \
                 When no token is configured at all, every route is open.",
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
    reloadable_router(boards, options).0
}

/// [`router`], and the handle that changes its tokens, access log, CORS origins and
/// staleness bound while it serves.
pub fn reloadable_router(boards: Rollboard, options: HttpOptions) -> (Router, Reload) {
    let live = Reload::new(Live {
        tokens: options.tokens,
        access_log: options.access_log,
        cors_origins: options.cors_origins,
        max_staleness: boards.staleness(),
    });
    let state = AppState::new(state::Shared {
        boards,
        live: live.clone(),
        metrics: options.metrics,
        max_clock_skew: options.max_clock_skew,
    });
    // Every route of the document but the two probes reads or writes: with a read token
    // configured, each needs a token.
    let (guarded, mut openapi) = OpenApiRouter::with_openapi(ApiDoc::openapi())
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
        .routes(routes!(moderation::hide))
        .routes(routes!(moderation::show))
        .routes(routes!(moderation::hide_member))
        .routes(routes!(moderation::show_member))
        .routes(routes!(moderation::board_hidden))
        .routes(routes!(pins::pin, pins::pins))
        .routes(routes!(pins::unpin))
        .routes(routes!(review::queue, review::decide))
        .routes(routes!(changes::changes))
        .routes(routes!(moderation::hidden))
        .routes(routes!(moderation::log))
        .routes(routes!(contributors::contributor))
        .routes(routes!(contributors::member_contributors))
        .routes(routes!(retract::retract, retract::retraction))
        .routes(routes!(quarantine::quarantine))
        .routes(routes!(quarantine::release))
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
        .routes(routes!(ops::metrics))
        .routes(routes!(dashboard_api::dashboard))
        .routes(routes!(dashboard_api::search_boards))
        .routes(routes!(dashboard_api::member))
        .split_for_parts();
    contract::guard_reads(&mut openapi);
    let (open, probes) = OpenApiRouter::new()
        .routes(routes!(ops::healthz))
        .routes(routes!(ops::readyz))
        .split_for_parts();
    openapi.merge(probes);
    contract::complete(&mut openapi, state.boards.settings());
    let openapi = Arc::new(openapi);
    let tokens_now = live.clone();
    let open = open
        .route(
            "/openapi.json",
            get(
                move |OriginalUri(original): OriginalUri, uri: Uri| async move {
                    // Under `nest("/rank", …)` the document is at /rank/openapi.json and its
                    // paths under /rank: the server is the prefix it was read from.
                    let mut document = openapi.as_ref().clone();
                    contract::as_configured(&mut document, &tokens_now.current().tokens);
                    contract::set_server(&mut document, mount_prefix(original.path(), uri.path()));
                    Json(document)
                },
            ),
        )
        .route("/", get(dashboard::page))
        .fallback(ops::not_found);
    let access_times = options.access_times.then(|| state.boards.clone());
    let edge = edge::EdgeLayer::new(
        options.max_body_bytes,
        options.request_timeout,
        access_times,
        live.clone(),
    );
    let router = open
        .method_not_allowed_fallback(ops::method_not_allowed)
        .layer(edge.clone())
        .merge(
            guarded
                .method_not_allowed_fallback(ops::method_not_allowed)
                .layer(edge.reading()),
        );
    (router.with_state(state), live)
}
