//! `rollboard`: the service and the batch jobs, as one binary. A thin shell over the
//! library: parse the command line, call `rollboard`, print, exit non-zero on failure
//! with a one-line message.

use std::process::ExitCode;

use clap::Parser;

mod args;
mod commands;
mod progress;

use args::{Cli, Command};

/// `serve`'s log filter when RUST_LOG is unset.
pub const SERVE_LOG_FILTER: &str = "info,tokio_cron_scheduler=warn";

fn main() -> ExitCode {
    let cli = Cli::parse();
    // `serve` installs its logs once its config (which may ask for JSON) is read.
    if !matches!(cli.command, Command::Serve(_)) {
        rollboard::service::init_logging(rollboard::service::LogFormat::Text, "warn");
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
