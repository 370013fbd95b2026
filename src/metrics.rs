//! Prometheus metrics of the service, recorded by the HTTP layer and the scheduler
//! alike: the recorder, events accepted and rejected by reason, store errors,
//! retirement, the clock's skew against the store, and Redis's memory (full, evicting). (Request latency per route is
//! recorded by the HTTP layer's own middleware.)
//!
//! Series are labelled by board only once the board is known to exist, so arbitrary
//! names in requests cannot grow the number of series, and only for the first
//! `metrics_board_series` boards: every other board is counted under `board="(other)"`
//! (see [`BoardSeries`]).

use std::sync::OnceLock;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

pub use crate::board_series::{BoardSeries, OTHER};
use crate::{BoardName, BoardStatus, Error, RetireReport};

/// Installs the process-wide Prometheus recorder (once) and returns its handle.
/// Call `run_upkeep()` on it periodically (`rollboard serve` does, every 5 s).
pub fn install_prometheus() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            PrometheusBuilder::new()
                .set_buckets(&[
                    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
                ])
                .expect("static buckets are valid")
                .install_recorder()
                .expect("no other metrics recorder is installed in this process")
        })
        .clone()
}

/// Counts events applied to `board`.
pub fn events_accepted(series: &BoardSeries, board: &str, n: usize) {
    if n > 0 {
        metrics::counter!("rollboard_events_accepted_total", "board" => series.label(board))
            .increment(n as u64);
    }
}

/// Counts an event rejected on `board`, by reason.
pub fn event_rejected(series: &BoardSeries, board: &str, error: &Error) {
    if matches!(
        error,
        Error::BoardNotFound(_) | Error::InvalidBoardName { .. }
    ) {
        return;
    }
    metrics::counter!(
        "rollboard_events_rejected_total",
        "board" => series.label(board),
        "reason" => error.code(),
    )
    .increment(1);
}

/// Counts a store failure seen by any part of the service.
pub fn store_error(code: &'static str) {
    metrics::counter!("rollboard_store_errors_total", "kind" => code).increment(1);
}

/// Counts a request refused because Redis is full (`store_full`). The scheduler's own
/// refusals count in `rollboard_store_errors_total{kind="store_full"}`.
pub fn store_full() {
    metrics::counter!("rollboard_store_full_total").increment(1);
}

/// Counts snapshot webhook POSTs by outcome (`delivered`, `failed`).
pub fn snapshot_webhook(outcome: &'static str) {
    metrics::counter!("rollboard_snapshot_webhook_total", "outcome" => outcome).increment(1);
}

/// Counts the times the HTTP server reached its connection cap (`max_connections`).
pub fn connection_cap_reached() {
    metrics::counter!("rollboard_connection_cap_reached_total").increment(1);
}

/// Counts what a retirement pass over `board` did.
pub fn retired(series: &BoardSeries, board: &BoardName, report: &RetireReport) {
    let board = series.label(board.as_str());
    metrics::counter!("rollboard_retired_fields_total", "board" => board.clone())
        .increment(report.fields_subtracted);
    metrics::counter!("rollboard_members_zeroed_total", "board" => board)
        .increment(report.members_zeroed);
    // Not by board: few boards compact a slot at a boundary, and a series each is costly.
    if report.slots_compacted > 0 {
        metrics::counter!("rollboard_compacted_slots_total").increment(report.slots_compacted);
        metrics::counter!("rollboard_compacted_fields_total").increment(report.fields_compacted);
    }
}

/// Records how far each window's totals lag behind the window.
pub fn retirement_lag(series: &BoardSeries, status: &BoardStatus) {
    for w in &status.windows {
        lag(
            series,
            &status.name,
            &w.window.to_string(),
            w.lag_seconds as f64,
        );
    }
}

/// Records that no window of `board` lags (a complete retirement pass just ended).
pub fn caught_up(series: &BoardSeries, board: &BoardName, windows: &[crate::Span]) {
    for w in windows {
        lag(series, board, &w.to_string(), 0.0);
    }
}

/// Records that `board` was dropped: it no longer counts in the lag of `(other)`.
pub fn dropped(series: &BoardSeries, board: &BoardName) {
    for (window, largest) in series.forget_lag(board) {
        lag_gauge(OTHER.to_owned(), window, largest);
    }
}

/// Records that `board` lags `seconds` in `window`.
fn lag(series: &BoardSeries, board: &BoardName, window: &str, seconds: f64) {
    let label = series.label(board.as_str());
    let value = series.lag(&label, board, window, seconds);
    lag_gauge(label, window.to_owned(), value);
}

fn lag_gauge(board: String, window: String, seconds: f64) {
    metrics::gauge!(
        "rollboard_retirement_lag_seconds",
        "board" => board,
        "window" => window,
    )
    .set(seconds);
}

/// Records Redis's memory: bytes used, the limit (0: none), and whether its eviction
/// policy may drop keys (1, or 0 when it is `noeviction` or `accept_eviction`).
pub fn redis_memory(limit: &crate::MemoryLimit, accept_eviction: bool) {
    metrics::gauge!("rollboard_redis_memory_used_bytes").set(limit.used_bytes as f64);
    metrics::gauge!("rollboard_redis_memory_max_bytes").set(limit.max_bytes as f64);
    let evicting = limit.policy != "noeviction" && !accept_eviction;
    metrics::gauge!("rollboard_redis_evicting").set(if evicting { 1.0 } else { 0.0 });
}

/// Records this process's clock minus the store's, in seconds.
pub fn clock_skew(seconds: f64) {
    metrics::gauge!("rollboard_clock_skew_seconds").set(seconds);
}
