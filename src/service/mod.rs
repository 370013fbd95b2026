//! The service around the library: configuration, the retirement scheduler, and
//! running the HTTP server with graceful shutdown.

pub mod allocator;
mod clock_check;
mod config;
mod connections;
mod declared;
mod error;
mod feeds;
pub mod heap_trim;
mod idle;
mod logging;
mod memory_watch;
mod reload;
mod scheduler;
mod serve;
mod systemd;
mod timeout;
mod webhook;

pub use config::{
    BoardEntry, ConfigError, ConfigFile, ConfigLayer, Overrides, ServiceConfig, StoreKind,
    parse_bind,
};
pub use connections::{ConnectionLimits, serve_connections};
pub use error::ServiceError;
pub use feeds::idempotency_key;
pub use logging::{LogFormat, LogHandle, init_logging};
pub use reload::{LoadConfig, Reloader};
pub use scheduler::{Scheduler, SchedulerError};
pub use serve::{open_store, run, run_reloading, shutdown_signal};
pub use timeout::Timeout;
pub use webhook::WebhookOptions;
