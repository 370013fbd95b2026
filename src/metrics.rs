//! Prometheus metrics of the service, recorded by the HTTP layer and the scheduler
//! alike: the recorder, events accepted and rejected by reason, store errors,
//! retirement, the clock's skew against the store, and Redis's memory (full, evicting). (Request latency per route is
//! recorded by the HTTP layer's own middleware.)
//!
//! Series are labelled by board only once the board is known to exist, so arbitrary
//! names in requests cannot grow the number of series, and only for the first
//! `metrics_board_series` boards: every other board is counted under `board="(other)"`
//! (see [`BoardSeries`]).

use foldhash::HashMap;
use std::sync::{OnceLock, RwLock};

use metrics::Counter;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

pub use crate::board_series::{BoardSeries, OTHER};
use crate::{BoardName, BoardStatus, Error, RetireReport};

/// The buckets of the latency histogram, in seconds: 50 µs to 10 s.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0,
];

/// Installs the process-wide Prometheus recorder (once) and returns its handle: every
/// family described (`# HELP`), the unlabelled counters (and the known values of a few
/// labels) registered at 0, `rollboard_build_info` set. Call `run_upkeep()` on it
/// periodically (`rollboard serve` does, every 5 s); [`render`] adds the process
/// metrics.
pub fn install_prometheus() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let handle = PrometheusBuilder::new()
                .set_buckets(LATENCY_BUCKETS)
                .expect("static buckets are valid")
                .install_recorder()
                .expect("no other metrics recorder is installed in this process");
            describe();
            register();
            process_collector().describe();
            handle
        })
        .clone()
}

/// The exposition of `handle`, with the process metrics (`process_*`) read now.
pub fn render(handle: &PrometheusHandle) -> String {
    process_collector().collect();
    handle.render()
}

fn process_collector() -> &'static metrics_process::Collector {
    static COLLECTOR: OnceLock<metrics_process::Collector> = OnceLock::new();
    COLLECTOR.get_or_init(metrics_process::Collector::default)
}

/// Every family's `# HELP` text.
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_gauge!(
        "rollboard_build_info",
        "Always 1; the version label is the running build's"
    );
    describe_histogram!(
        "rollboard_http_request_duration_seconds",
        metrics::Unit::Seconds,
        "HTTP request latency by method, route template and status"
    );
    describe_counter!(
        "rollboard_events_accepted_total",
        "Events applied, by board"
    );
    describe_counter!(
        "rollboard_events_rejected_total",
        "Events rejected, by board and reason (error code)"
    );
    describe_counter!(
        "rollboard_trending_events_total",
        "Events applied to trending boards"
    );
    describe_counter!(
        "rollboard_counters_increments_total",
        "Counter increments applied (POST /v1/counters/{name})"
    );
    describe_counter!(
        "rollboard_stats_records_total",
        "Stat values recorded (POST /v1/stats/{context}/{kind})"
    );
    describe_counter!(
        "rollboard_rate_checks_total",
        "Rate checks (POST /v1/rates/{key}/check) by outcome: allowed or denied"
    );
    describe_counter!(
        "rollboard_store_errors_total",
        "Store failures seen by any part of the service, by kind (error code)"
    );
    describe_counter!(
        "rollboard_store_full_total",
        "Requests answered 507 store_full (Redis at its memory limit)"
    );
    describe_counter!(
        "rollboard_snapshot_webhook_total",
        "Snapshot webhook POSTs by outcome: delivered or failed"
    );
    describe_counter!(
        "rollboard_review_webhook_total",
        "Review webhook POSTs (members a review gate held) by outcome: delivered or failed"
    );
    describe_counter!(
        "rollboard_changes_webhook_total",
        "Changes webhook POSTs (changes of watched tops) by outcome: delivered or failed"
    );
    describe_counter!(
        "rollboard_connection_cap_reached_total",
        "Times the HTTP server reached its connection cap (max_connections)"
    );
    describe_counter!(
        "rollboard_access_time_dropped_total",
        "Access-time records dropped while the store was slow or down, by route template"
    );
    describe_counter!(
        "rollboard_retired_fields_total",
        "Slot fields subtracted from totals by retirement, by board"
    );
    describe_counter!(
        "rollboard_members_zeroed_total",
        "Members removed from totals at a total of 0 by retirement, by board"
    );
    describe_counter!(
        "rollboard_compacted_slots_total",
        "Closed slots the retirer converted to the compact layout"
    );
    describe_counter!(
        "rollboard_compacted_fields_total",
        "Values the retirer moved into compact buckets"
    );
    describe_gauge!(
        "rollboard_retirement_lag_seconds",
        metrics::Unit::Seconds,
        "Seconds of expired events still counted in a window's totals, by board and window"
    );
    describe_gauge!(
        "rollboard_redis_memory_used_bytes",
        metrics::Unit::Bytes,
        "Redis used_memory"
    );
    describe_gauge!(
        "rollboard_redis_memory_max_bytes",
        metrics::Unit::Bytes,
        "Redis maxmemory (0: no limit)"
    );
    describe_gauge!(
        "rollboard_redis_evicting",
        "1 while Redis's maxmemory-policy may evict keys and accept_eviction is off"
    );
    describe_gauge!(
        "rollboard_clock_skew_seconds",
        metrics::Unit::Seconds,
        "This process's clock minus the store's, in seconds"
    );
}

/// Registers at 0 the series an alert needs before anything happened: the unlabelled
/// counters and the known values of small labels. Sets `rollboard_build_info`.
fn register() {
    metrics::gauge!("rollboard_build_info", "version" => env!("CARGO_PKG_VERSION")).set(1.0);
    for name in [
        "rollboard_store_full_total",
        "rollboard_connection_cap_reached_total",
        "rollboard_compacted_slots_total",
        "rollboard_compacted_fields_total",
        "rollboard_trending_events_total",
        "rollboard_counters_increments_total",
        "rollboard_stats_records_total",
    ] {
        metrics::counter!(name).increment(0);
    }
    for kind in ["store_unavailable", "store_full", "store_error"] {
        metrics::counter!("rollboard_store_errors_total", "kind" => kind).increment(0);
    }
    for outcome in ["delivered", "failed"] {
        metrics::counter!("rollboard_snapshot_webhook_total", "outcome" => outcome).increment(0);
        metrics::counter!("rollboard_review_webhook_total", "outcome" => outcome).increment(0);
        metrics::counter!("rollboard_changes_webhook_total", "outcome" => outcome).increment(0);
    }
    for outcome in ["allowed", "denied"] {
        metrics::counter!("rollboard_rate_checks_total", "outcome" => outcome).increment(0);
    }
}

/// Counts events applied to a trending board.
pub fn trending_events(n: usize) {
    if n > 0 {
        metrics::counter!("rollboard_trending_events_total").increment(n as u64);
    }
}

/// Counts an increment applied to a counter (any counter: no label).
pub fn counter_increment() {
    metrics::counter!("rollboard_counters_increments_total").increment(1);
}

/// Counts a stat value recorded (any context and kind: no label).
pub fn stats_record() {
    metrics::counter!("rollboard_stats_records_total").increment(1);
}

/// Counts a rate check by its verdict.
pub fn rate_check(allowed: bool) {
    let outcome = if allowed { "allowed" } else { "denied" };
    metrics::counter!("rollboard_rate_checks_total", "outcome" => outcome).increment(1);
}

/// Counts events applied to `board`. Each label's counter is made once (as `latency.rs`
/// makes its histograms): a like then costs a map lookup, not a key built and hashed.
pub fn events_accepted(series: &BoardSeries, board: &str, n: usize) {
    static COUNTERS: OnceLock<RwLock<HashMap<String, Counter>>> = OnceLock::new();
    if n == 0 {
        return;
    }
    let counters = COUNTERS.get_or_init(Default::default);
    let label = series.label_of(board);
    let cached = counters
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(label)
        .cloned();
    let counter = cached.unwrap_or_else(|| {
        let counter =
            metrics::counter!("rollboard_events_accepted_total", "board" => label.to_owned());
        let mut counters = counters.write().unwrap_or_else(|e| e.into_inner());
        counters.insert(label.to_owned(), counter.clone());
        counter
    });
    counter.increment(n as u64);
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

/// Counts review webhook POSTs by outcome (`delivered`, `failed`).
pub fn review_webhook(outcome: &'static str) {
    metrics::counter!("rollboard_review_webhook_total", "outcome" => outcome).increment(1);
}

/// Counts changes webhook POSTs by outcome (`delivered`, `failed`).
pub fn changes_webhook(outcome: &'static str) {
    metrics::counter!("rollboard_changes_webhook_total", "outcome" => outcome).increment(1);
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
