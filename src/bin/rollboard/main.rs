//! `rollboard`: the service and the batch jobs, as one binary. A thin shell over the
//! library: parse the command line, call `rollboard`, print, exit non-zero on failure
//! with a one-line message.

use std::process::ExitCode;

use clap::Parser;

mod args;
mod commands;
mod progress;

use args::{Cli, Command};

#[global_allocator]
static ALLOCATOR: rollboard::service::allocator::Mimalloc = rollboard::service::allocator::Mimalloc;

/// `serve`'s log filter when RUST_LOG is unset.
pub const SERVE_LOG_FILTER: &str = "info,tokio_cron_scheduler=warn";

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // `--help` and `--version` print to stdout and succeed.
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            eprintln!("rollboard: {}", one_line(&e.render().to_string()));
            return ExitCode::from(2);
        }
    };
    // `serve` installs its logs once its config (which may ask for JSON) is read.
    if !matches!(cli.command, Command::Serve(_)) {
        rollboard::service::init_logging(rollboard::service::LogFormat::Text, None, "warn");
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("rollboard: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(commands::run(cli.command)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rollboard: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A usage error of clap's on one line, as every other error: its message (a list below
/// it joined on), then its usage line, e.g. `the following required arguments were not
/// provided: <BOARD>; usage: rollboard top [OPTIONS] <BOARD>`.
fn one_line(rendered: &str) -> String {
    let mut lines = rendered.lines();
    let first = lines.next().unwrap_or_default();
    let mut message = first.strip_prefix("error: ").unwrap_or(first).to_owned();
    let listed: Vec<&str> = lines
        .by_ref()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    if !listed.is_empty() {
        message = format!("{} {}", message, listed.join(", "));
    }
    match rendered.lines().find_map(|l| l.strip_prefix("Usage: ")) {
        Some(usage) => format!("{message}; usage: {usage}"),
        None => message,
    }
}
