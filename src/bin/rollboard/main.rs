//! `rollboard`: the service and the batch jobs, as one binary. A thin shell over the
//! library: parse the command line, call `rollboard`, print, exit non-zero on failure
//! with a one-line message.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;

mod args;
mod commands;
mod progress;

use args::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let verbosity = match cli.command {
        Command::Serve(_) => "info,tokio_cron_scheduler=warn",
        _ => "warn",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(verbosity)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
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
