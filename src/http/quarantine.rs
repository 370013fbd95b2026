//! `POST /v1/contributors/{by}/quarantine` and `…/release`: a contributor's likes kept
//! but counting nothing in any ranking, on every board keeping contributors and every
//! one created later, until released. Admin only. Thin: parse, call
//! [`Rollboard::quarantine`](crate::Rollboard::quarantine) or
//! [`Rollboard::release`](crate::Rollboard::release), answer.

use axum::extract::State;

use super::AppState;
use super::auth::AdminAccess;
use super::contributors::BY_PARAM;
use super::error::{ApiResult, ErrorBody};
use super::extract::ApiPath;
use super::json::Json;
use crate::Quarantined;

/// Quarantines the contributor (an event's `by`) on every board keeping contributors
/// (`per_contributor_member`, `per_contributor`) and every one created later: from when
/// it answers, what its events admitted counts in no member's total, the events written
/// before and after alike, while its writes answer exactly as before (their `counted`);
/// its contributions are kept for a release. Board by board in bounded steps; running it
/// again finishes one cut short.
#[utoipa::path(
    post, path = "/v1/contributors/{by}/quarantine", tag = "contributors", operation_id = "contributorsQuarantine",
    params(("by" = String, Path, description = BY_PARAM, min_length = 1, max_length = 128)),
    responses(
        (status = 200, description = "Quarantined (`changed` false: it already was)", body = Quarantined,
         example = json!({"by": "user:7", "quarantined": true, "changed": true, "boards": 3, "sums": 82})),
        (status = 403, description = "`forbidden`: the token may read or write but not administer", body = ErrorBody),
        (status = 422, description = "`invalid_contributor`", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn quarantine(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(by): ApiPath<String>,
) -> ApiResult<Json<Quarantined>> {
    Ok(Json(state.boards.quarantine(&by).await?))
}

/// Releases the contributor from quarantine: what it gave that is still inside the
/// windows counts again, exactly as if it had never been quarantined.
#[utoipa::path(
    post, path = "/v1/contributors/{by}/release", tag = "contributors", operation_id = "contributorsRelease",
    params(("by" = String, Path, description = BY_PARAM, min_length = 1, max_length = 128)),
    responses(
        (status = 200, description = "Released (`changed` false: it was not quarantined)", body = Quarantined,
         example = json!({"by": "user:7", "quarantined": false, "changed": true, "boards": 3, "sums": 80})),
        (status = 403, description = "`forbidden`: the token may read or write but not administer", body = ErrorBody),
        (status = 422, description = "`invalid_contributor`", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn release(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(by): ApiPath<String>,
) -> ApiResult<Json<Quarantined>> {
    Ok(Json(state.boards.release(&by).await?))
}
