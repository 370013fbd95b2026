//! The OpenAPI document as the contract: the statuses every route can answer because of
//! the layers it passes through, added to each operation in one place, and the bounds
//! that come from [`Settings`] rather than from constants.
//!
//! Handlers declare what their own logic answers (200, 404 unknown board, 409, 422 …).
//! What a layer answers is added here, from what the operation declares:
//!
//! - every operation: 503 (store unavailable, or the request took longer than the
//!   request timeout);
//! - an operation with parameters: 400 (a path or query parameter that does not parse);
//! - an operation with a body: 400 (not JSON, wrong shape), 413 (over the body limit),
//!   415 (a `Content-Type` that is not JSON);
//! - an operation with a security requirement: 401 (missing or unknown token); every
//!   operation but the two probes has one ([`guard_reads`]: reads list the read token);
//! - an operation only the admin token may call: 403 (a weaker token, when an admin
//!   token is configured); one that writes: 403 (the read token, when a stronger one is).
//!
//! Every one of them carries the [`ErrorBody`](super::error::ErrorBody) schema.
//!
//! An operation without a security requirement gets an empty one (`"security": []`): it
//! is public, and says so. The document served is that of the service's tokens now
//! ([`as_configured`]): without a read token the reads are public, without any token
//! every route is, so that a client generated from it needs no token where the service
//! wants none. The document names one server, the path it is served under (`/`, or the
//! prefix the router is mounted at).

use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::schema::{Discriminator, ObjectBuilder, Schema, Type};
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, ResponseBuilder, ServerBuilder};

use crate::Settings;

/// The security schemes of the tokens (see `BearerAuth` in the parent module).
const ADMIN: &str = "adminToken";
const WRITE: &str = "writeToken";
const READ: &str = "readToken";
const NO_SCOPES: [&str; 0] = [];

/// Gives every operation of `openapi` without a security requirement the read token's:
/// any of the three tokens (needed only when a read token is configured).
pub fn guard_reads(openapi: &mut OpenApi) {
    for item in openapi.paths.paths.values_mut() {
        for operation in operations(item) {
            operation.security.get_or_insert_with(|| {
                [READ, WRITE, ADMIN]
                    .map(|scheme| SecurityRequirement::new(scheme, NO_SCOPES))
                    .into()
            });
        }
    }
}

/// Makes public, in `openapi`, what `tokens` leave open: the reads without a read token,
/// every operation without any token.
pub fn as_configured(openapi: &mut OpenApi, tokens: &super::Tokens) {
    let read = SecurityRequirement::new(READ, NO_SCOPES);
    for item in openapi.paths.paths.values_mut() {
        for operation in operations(item) {
            let security = operation.security.get_or_insert_with(Vec::new);
            if !tokens.any() || (tokens.read.is_none() && security.contains(&read)) {
                security.clear();
                let responses = &mut operation.responses.responses;
                responses.remove("401");
                responses.remove("403");
            }
        }
    }
}

/// Adds the layers' statuses to every operation and the configured bounds to the schemas.
pub fn complete(openapi: &mut OpenApi, settings: &Settings) {
    for item in openapi.paths.paths.values_mut() {
        for operation in operations(item) {
            add_layer_statuses(operation);
            // Public: an explicit empty requirement, not an absent one.
            operation.security.get_or_insert_with(Vec::new);
        }
    }
    set_bounds(openapi, settings);
    set_server(openapi, "");
    declare_kinds(openapi);
}

/// The replies of either kind (`BoardPage`, `MemberStanding`, … serialised with `#[serde(tag
/// = "kind")]`) come out of the derive as a `oneOf` of inline `allOf`s: a kind's schema
/// plus a one-value `kind`. Generators handle that unevenly (openapi-python-client drops
/// the reply), so the `kind` moves into the kind's own schema (which only these replies
/// use) and the `oneOf` becomes two references under a `discriminator` on `kind`.
fn declare_kinds(openapi: &mut OpenApi) {
    let Some(components) = openapi.components.as_mut() else {
        return;
    };
    let mut kinds: Vec<(String, String)> = Vec::new();
    for schema in components.schemas.values_mut() {
        let RefOr::T(Schema::OneOf(one_of)) = schema else {
            continue;
        };
        let variants: Option<Vec<(String, String)>> =
            one_of.items.iter().map(kind_variant).collect();
        let Some(variants) = variants.filter(|v| !v.is_empty()) else {
            continue;
        };
        let mut discriminator = Discriminator::new("kind");
        one_of.items = variants
            .iter()
            .map(|(reference, kind)| {
                discriminator
                    .mapping
                    .insert(kind.clone(), reference.clone());
                RefOr::Ref(Ref::new(reference.clone()))
            })
            .collect();
        one_of.discriminator = Some(discriminator);
        kinds.extend(variants);
    }
    for (reference, kind) in kinds {
        let name = reference.trim_start_matches("#/components/schemas/");
        if let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(name) {
            let property = ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some([kind.as_str()]))
                .description(Some("The board's kind."));
            object.properties.insert("kind".into(), property.into());
            object.required.insert(0, "kind".into());
        }
    }
}

/// `allOf: [{$ref: X}, {kind: {enum: [k]}}]` as `(X, k)`.
fn kind_variant(item: &RefOr<Schema>) -> Option<(String, String)> {
    let RefOr::T(Schema::AllOf(all_of)) = item else {
        return None;
    };
    let [RefOr::Ref(reference), RefOr::T(Schema::Object(tag))] = all_of.items.as_slice() else {
        return None;
    };
    let RefOr::T(Schema::Object(kind)) = tag.properties.get("kind")? else {
        return None;
    };
    match kind.enum_values.as_deref()? {
        [serde_json::Value::String(k)] if tag.properties.len() == 1 => {
            Some((reference.ref_location.clone(), k.clone()))
        }
        _ => None,
    }
}

/// The one server: `prefix` (the path the router is mounted under; `""` or `/` at the
/// root), relative to wherever the document was read from.
pub fn set_server(openapi: &mut OpenApi, prefix: &str) {
    let (url, description) = match prefix.trim_end_matches('/') {
        "" => (
            "/",
            "This service, at the root of the host the document was read from",
        ),
        prefix => (
            prefix,
            "This service, under the prefix it is mounted at on the host the document was read from",
        ),
    };
    openapi.servers = Some(vec![
        ServerBuilder::new()
            .url(url)
            .description(Some(description))
            .build(),
    ]);
}

fn operations(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        item.get.as_mut(),
        item.put.as_mut(),
        item.post.as_mut(),
        item.delete.as_mut(),
    ]
    .into_iter()
    .flatten()
}

fn add_layer_statuses(operation: &mut Operation) {
    let mut statuses: Vec<(&str, &str)> = vec![(
        "503",
        "`store_unavailable`: the store did not answer; `timeout`: the request took longer than the limit; `write_uncertain` (writes, with `min_replica_acks`): applied on the Redis master but not confirmed by enough replicas in time, retry with the same `Idempotency-Key`",
    )];
    if operation.parameters.as_ref().is_some_and(|p| !p.is_empty()) {
        statuses.push((
            "400",
            "`bad_request`: a path or query parameter does not parse",
        ));
    }
    if operation.request_body.is_some() {
        statuses.extend([
            ("400", "`bad_request`: the body is not JSON or not of the documented shape"),
            ("413", "`body_too_large`: the body is larger than the limit"),
            ("415", "`unsupported_media_type`: the Content-Type is not JSON (`application/json`, `application/…+json`)"),
        ]);
    }
    if operation.security.as_ref().is_some_and(|s| !s.is_empty()) {
        statuses.push((
            "401",
            "`unauthorized`: a token this route needs is configured and the request has none, or an unknown one",
        ));
    }
    let security = operation.security.as_deref().unwrap_or_default();
    let lists = |scheme| security.contains(&SecurityRequirement::new(scheme, NO_SCOPES));
    if lists(ADMIN) && !lists(WRITE) {
        statuses.push((
            "403",
            "`forbidden`: an admin token is configured and the request sent a weaker token",
        ));
    } else if lists(WRITE) && !lists(READ) {
        statuses.push((
            "403",
            "`forbidden`: a write or admin token is configured and the request sent the read token",
        ));
    }
    let responses = &mut operation.responses.responses;
    for (status, description) in statuses {
        responses
            .entry(status.to_owned())
            .or_insert_with(|| error_response(description));
    }
}

/// A response carrying the error body.
pub fn error_response(description: &str) -> RefOr<utoipa::openapi::Response> {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build()
        .into()
}

/// `limit` of `/top` up to `max_limit`; a batch up to `max_batch` events.
fn set_bounds(openapi: &mut OpenApi, settings: &Settings) {
    if let Some(top) = openapi
        .paths
        .paths
        .get_mut("/v1/boards/{board}/top")
        .and_then(|item| item.get.as_mut())
    {
        for parameter in top.parameters.iter_mut().flatten() {
            if let RefOr::T(p) = parameter
                && p.name == "limit"
                && let Some(RefOr::T(Schema::Object(schema))) = p.schema.as_mut()
            {
                schema.maximum = Some(settings.max_limit.into());
            }
        }
    }
    let batch = openapi
        .components
        .as_mut()
        .and_then(|c| c.schemas.get_mut("EventBatch"));
    if let Some(RefOr::T(Schema::Object(batch))) = batch
        && let Some(RefOr::T(Schema::Array(events))) = batch.properties.get_mut("events")
    {
        events.max_items = Some(settings.max_batch);
    }
}
