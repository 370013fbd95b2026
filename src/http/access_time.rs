//! [`AccessTimeLayer`]: a tower layer that records how long every request took, in
//! seconds, as a stats value of kind `AccessTime` in the context of its route template
//! (`/v1/counters/{name}`, never the raw path, which would make one context per
//! counter). The source's `access_time` context manager, for any axum app.
//!
//! The dashboard's own requests (the page at `/` and every route under `/v1/dashboard`)
//! are recorded under the kind `DashboardTime` instead ([`kind_of`]): an open dashboard
//! polls, and would otherwise fill the service's slowest routes with its own reads.
//!
//! Add it with [`Router::route_layer`](axum::Router::route_layer), so the route template
//! ([`MatchedPath`]) is known; requests that match no route are not recorded. Every
//! request is recorded, none sampled, but not one by one: the value is held in the
//! process and written with the others of its route within a second, one batch per
//! route (see `Rollboard`'s stats buffer), so a request costs a lock and a push, never a
//! store call, and a slow or unreachable store never fails nor slows a request. Stats
//! reads of the same process write what is held first. Values that cannot be written
//! (store error, a flush longer than two seconds, too many held) are dropped and counted
//! in `rollboard_access_time_dropped_total`, labelled by route template.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use tower::{Layer, Service};

use crate::Rollboard;

/// The stats kind of access times (the source's `AccessTime`).
pub const ACCESS_TIME: &str = "AccessTime";

/// The stats kind of the dashboard's own requests (the page and `/v1/dashboard…`).
pub const DASHBOARD_TIME: &str = "DashboardTime";

/// The kind a request to `route` (a route template, possibly under a mount prefix) is
/// recorded under: [`DASHBOARD_TIME`] for the dashboard page at `/` and the routes under
/// `/v1/dashboard`, [`ACCESS_TIME`] for every other.
pub fn kind_of(route: &str) -> &'static str {
    // Compared at each `/`: `str::contains` sets up a searcher on every request.
    let under = |i: usize| {
        let rest = &route.as_bytes()[i..];
        rest == b"/v1/dashboard" || rest.starts_with(b"/v1/dashboard/")
    };
    let dashboard = route == "/"
        || route
            .bytes()
            .enumerate()
            .any(|(i, b)| b == b'/' && under(i));
    if dashboard {
        DASHBOARD_TIME
    } else {
        ACCESS_TIME
    }
}

/// Records each request's duration under its route template (see the module docs).
#[derive(Clone)]
pub struct AccessTimeLayer {
    boards: Rollboard,
}

impl std::fmt::Debug for AccessTimeLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessTimeLayer").finish_non_exhaustive()
    }
}

impl AccessTimeLayer {
    /// Records into the stats of `boards`.
    pub fn new(boards: Rollboard) -> Self {
        AccessTimeLayer { boards }
    }
}

impl<S> Layer<S> for AccessTimeLayer {
    type Service = AccessTime<S>;

    fn layer(&self, inner: S) -> Self::Service {
        AccessTime {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`AccessTimeLayer`] wraps around a route.
#[derive(Clone, Debug)]
pub struct AccessTime<S> {
    inner: S,
    layer: AccessTimeLayer,
}

impl<S> Service<Request> for AccessTime<S>
where
    S: Service<Request> + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let route = request.extensions().get::<MatchedPath>().cloned();
        let start = Instant::now();
        let response = self.inner.call(request);
        let boards = self.layer.boards.clone();
        Box::pin(async move {
            let response = response.await;
            if let Some(route) = route {
                let route = route.as_str();
                let seconds = start.elapsed().as_secs_f64();
                boards.record_stat_deferred(route, kind_of(route), seconds);
            }
            response
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_and_the_dashboard_routes_are_dashboard_time() {
        for route in [
            "/",
            "/v1/dashboard",
            "/v1/dashboard/boards",
            "/v1/dashboard/member",
            "/rank/v1/dashboard",
            "/rank/v1/dashboard/member",
        ] {
            assert_eq!(kind_of(route), DASHBOARD_TIME, "{route}");
        }
        for route in [
            "/v1/boards",
            "/v1/boards/{board}/top",
            "/v1/dashboards",
            "/v1/dashboard-x",
            "/healthz",
        ] {
            assert_eq!(kind_of(route), ACCESS_TIME, "{route}");
        }
    }
}
