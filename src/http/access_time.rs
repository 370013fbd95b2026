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
//! ([`MatchedPath`]) is known; requests that match no route are not recorded. The
//! record runs after the response is ready, in a task of its own: a slow or unreachable
//! store never fails nor slows a request. Records that cannot be made (too many in
//! flight, store error, longer than a second) are dropped and counted in
//! `rollboard_access_time_dropped_total`, labelled by route template.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request};
use tokio::sync::Semaphore;
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
    let dashboard =
        route == "/" || route.ends_with("/v1/dashboard") || route.contains("/v1/dashboard/");
    if dashboard {
        DASHBOARD_TIME
    } else {
        ACCESS_TIME
    }
}

/// Records in flight at once; beyond that, records are dropped.
const MAX_IN_FLIGHT: usize = 256;

/// How long one record may take before it is dropped.
const RECORD_TIMEOUT: Duration = Duration::from_secs(1);

/// Records each request's duration under its route template (see the module docs).
#[derive(Clone)]
pub struct AccessTimeLayer {
    boards: Rollboard,
    /// Bounds the records in flight, so a stuck store cannot pile up tasks.
    in_flight: Arc<Semaphore>,
}

impl std::fmt::Debug for AccessTimeLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessTimeLayer").finish_non_exhaustive()
    }
}

impl AccessTimeLayer {
    /// Records into the stats of `boards`.
    pub fn new(boards: Rollboard) -> Self {
        AccessTimeLayer {
            boards,
            in_flight: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
        }
    }

    fn record(&self, context: String, seconds: f64) {
        let Ok(permit) = self.in_flight.clone().try_acquire_owned() else {
            dropped(context);
            return;
        };
        let boards = self.boards.clone();
        tokio::spawn(async move {
            let record = boards.record_stat(&context, kind_of(&context), seconds);
            if !matches!(
                tokio::time::timeout(RECORD_TIMEOUT, record).await,
                Ok(Ok(()))
            ) {
                dropped(context);
            }
            drop(permit);
        });
    }
}

/// Counts a record of `route` (a route template: a bounded set of labels) dropped.
fn dropped(route: String) {
    metrics::counter!("rollboard_access_time_dropped_total", "route" => route).increment(1);
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
        let route = request
            .extensions()
            .get::<MatchedPath>()
            .map(|p| p.as_str().to_owned());
        let start = Instant::now();
        let response = self.inner.call(request);
        let layer = self.layer.clone();
        Box::pin(async move {
            let response = response.await;
            if let Some(route) = route {
                layer.record(route, start.elapsed().as_secs_f64());
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
