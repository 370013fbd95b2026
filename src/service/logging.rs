//! Logs: the format (`text` or `json`, one object a line), the filter (`RUST_LOG`, else
//! `log_level`), and the subscriber `rollboard` installs, whose filter and format a
//! reload can change ([`LogHandle`]).

use std::io::IsTerminal;

use serde::Deserialize;
use tracing_subscriber::layer::{Layered, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry, reload};

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines (coloured on a terminal).
    #[default]
    Text,
    /// One JSON object a line: `timestamp`, `level`, `target`, `fields` (`message` and
    /// the event's fields).
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!("invalid log format {other:?}: text or json")),
        }
    }
}

/// The fmt layer of either format, boxed so that a reload can swap one for the other.
type Lines = Box<dyn Layer<Layered<reload::Layer<EnvFilter, Registry>, Registry>> + Send + Sync>;

/// Changes the installed subscriber's filter and format (on a reload).
#[derive(Clone)]
pub struct LogHandle {
    filter: reload::Handle<EnvFilter, Registry>,
    lines: reload::Handle<Lines, Layered<reload::Layer<EnvFilter, Registry>, Registry>>,
    default_filter: String,
}

impl LogHandle {
    /// Filters by `RUST_LOG`, else `level` (`EnvFilter` directives), else the default
    /// filter; writes lines in `format`. A `level` that does not parse is an error and
    /// changes nothing.
    pub fn set(&self, format: LogFormat, level: Option<&str>) -> Result<(), String> {
        let filter = filter(level, &self.default_filter)?;
        self.filter.reload(filter).map_err(|e| e.to_string())?;
        self.lines.reload(lines(format)).map_err(|e| e.to_string())
    }
}

/// `RUST_LOG` when set, else `level`, else `default_filter`.
fn filter(level: Option<&str>, default_filter: &str) -> Result<EnvFilter, String> {
    if let Ok(filter) = EnvFilter::try_from_default_env() {
        return Ok(filter);
    }
    let directives = level.unwrap_or(default_filter);
    EnvFilter::try_new(directives).map_err(|e| format!("log_level {directives:?}: {e}"))
}

fn lines(format: LogFormat) -> Lines {
    let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    match format {
        LogFormat::Text => lines.with_ansi(std::io::stderr().is_terminal()).boxed(),
        LogFormat::Json => lines.json().with_ansi(false).boxed(),
    }
}

/// Installs the process's subscriber: lines on stderr in `format`, filtered by `RUST_LOG`,
/// else `level`, else `default_filter` (a `level` that does not parse falls back to it).
/// Returns the handle that changes both, or `None` when a subscriber was installed
/// already.
pub fn init_logging(
    format: LogFormat,
    level: Option<&str>,
    default_filter: &str,
) -> Option<LogHandle> {
    let filter = filter(level, default_filter).unwrap_or_else(|_| EnvFilter::new(default_filter));
    let (filter, filter_handle) = reload::Layer::new(filter);
    let (lines, lines_handle) = reload::Layer::new(lines(format));
    tracing_subscriber::registry()
        .with(filter)
        .with(lines)
        .try_init()
        .ok()?;
    Some(LogHandle {
        filter: filter_handle,
        lines: lines_handle,
        default_filter: default_filter.to_owned(),
    })
}
