//! Telling systemd what the service does (`Type=notify`, see `deploy/rollboard.service`):
//! `READY=1` once `/readyz` answers ready, `RELOADING=1` and then `READY=1` around a
//! reload, `STOPPING=1` when shutdown starts, and `WATCHDOG=1` every half `WatchdogSec`
//! while the runtime runs. Outside systemd (no `NOTIFY_SOCKET`) each is nothing.

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use sd_notify::NotifyState;
use tokio::task::JoinHandle;
use tower::ServiceExt;

/// How often readiness is asked again while the service is not ready yet.
const READY_EVERY: Duration = Duration::from_millis(250);

/// Whether systemd listens (`NOTIFY_SOCKET` is set).
fn listening() -> bool {
    std::env::var_os("NOTIFY_SOCKET").is_some()
}

/// Sends `states` to systemd; a failure is logged (the service runs on regardless).
pub(super) fn notify(states: &[NotifyState]) {
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!(error = %e, "cannot notify systemd");
    }
}

/// Says `READY=1` once the router's own `/readyz` answers 200, asking every
/// [`READY_EVERY`]; nothing when systemd does not listen.
pub(super) fn ready_when_ready(app: Router) -> Option<JoinHandle<()>> {
    listening().then(|| {
        tokio::spawn(async move {
            loop {
                let probe = Request::get("/readyz")
                    .body(Body::empty())
                    .expect("a request");
                if let Ok(answer) = app.clone().oneshot(probe).await
                    && answer.status() == StatusCode::OK
                {
                    break;
                }
                tokio::time::sleep(READY_EVERY).await;
            }
            notify(&[NotifyState::Ready, NotifyState::Status("ready")]);
            tracing::info!("told systemd: ready");
        })
    })
}

/// Says `WATCHDOG=1` every half of the watchdog interval systemd asks for, while the
/// runtime runs; nothing without `WatchdogSec`.
pub(super) fn watchdog() -> Option<JoinHandle<()>> {
    let every = sd_notify::watchdog_enabled()? / 2;
    Some(tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            notify(&[NotifyState::Watchdog]);
        }
    }))
}

/// `RELOADING=1` with the monotonic time systemd wants beside it.
pub(super) fn reloading() {
    match NotifyState::monotonic_usec_now() {
        Ok(now) => notify(&[NotifyState::Reloading, now]),
        Err(e) => tracing::warn!(error = %e, "cannot read the monotonic clock"),
    }
}
