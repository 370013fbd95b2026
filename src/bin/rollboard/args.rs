//! The command line.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Exact rolling-window leaderboards on Redis.
#[derive(Debug, Parser)]
#[command(
    name = "rollboard",
    version,
    after_help = "Environment:\n  \
        REDIS_URL               Redis to use (redis://host:port/db); without it `serve` uses the\n                          \
        embedded in-memory store\n  \
        ROLLBOARD_BIND          address for `serve` (default 127.0.0.1:8080)\n  \
        ROLLBOARD_WRITE_TOKEN   bearer token required to post events\n  \
        ROLLBOARD_ADMIN_TOKEN   bearer token required to create and drop boards and remove members\n  \
        RUST_LOG                log filter (default: info for serve, warn otherwise)"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP API, the dashboard and the retirement scheduler.
    ///
    /// Uses Redis when REDIS_URL is set, the embedded memory store otherwise. Boards
    /// declared in the config file are created (or checked) at start-up. Stops on
    /// SIGINT/SIGTERM after finishing requests in flight (bounded by shutdown_grace).
    Serve(ServeArgs),
    /// Retire everything overdue on every board once, then exit (for cron jobs).
    Retire(StoreArgs),
    /// Print a board's top N.
    Top(TopArgs),
    /// Import timestamped events (JSON lines or CSV) into a board, through the exact
    /// write path, in constant memory.
    ///
    /// JSON lines: {"member":"post:1","delta":1,"at":1700000000}. CSV: member,delta,at
    /// (header optional). delta defaults to 1, at to now. Events older than the board's
    /// largest window are counted as skipped; a malformed line stops the import with its
    /// line number unless --skip-bad.
    Import(ImportArgs),
    /// Write a board's ranking in rank order (JSON lines or CSV with a header) to stdout.
    Export(ExportArgs),
    /// Rebuild a board's totals from its live slots, exactly, while writes go on.
    ///
    /// Repairs drift (totals edited by hand, or left by a bug) and finishes building
    /// windows added to the board. Every Redis call stays short; retirement of the board
    /// waits until the recompute ends.
    Recompute(RecomputeArgs),
}

/// `recompute` options.
#[derive(Debug, Args)]
pub struct RecomputeArgs {
    /// The board.
    pub board: String,
    /// Only this window (e.g. 24h) [default: every window].
    #[arg(long)]
    pub window: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `import` options.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The board.
    pub board: String,
    /// The file to read, or - for stdin.
    pub file: PathBuf,
    /// json or csv [default: guessed from the first line].
    #[arg(long)]
    pub format: Option<String>,
    /// Count malformed lines and go on instead of stopping at the first.
    #[arg(long)]
    pub skip_bad: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `export` options.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The board.
    pub board: String,
    /// The window (e.g. 24h); the board's first window by default.
    #[arg(long)]
    pub window: Option<String>,
    /// json (one object per line) or csv.
    #[arg(long, default_value = "json")]
    pub format: String,
    /// Most entries to write [default: all].
    #[arg(long)]
    pub limit: Option<u64>,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Where the store and config come from.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// Redis URL.
    #[arg(long, env = "REDIS_URL")]
    pub redis_url: Option<String>,
}

/// `serve` options.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// TOML config file (see docs/operations.md); environment and flags override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long, env = "ROLLBOARD_BIND")]
    pub bind: Option<SocketAddr>,
    /// Redis URL; the embedded memory store when absent.
    #[arg(long, env = "REDIS_URL")]
    pub redis_url: Option<String>,
    /// Allow listening beyond loopback without any token.
    #[arg(long)]
    pub insecure: bool,
}

/// `top` options.
#[derive(Debug, Args)]
pub struct TopArgs {
    /// The board.
    pub board: String,
    /// The window (e.g. 24h); the board's first window by default.
    #[arg(long)]
    pub window: Option<String>,
    /// Entries to print, 1–1000.
    #[arg(long, default_value_t = 10)]
    pub limit: u64,
    /// Entries to skip.
    #[arg(long, default_value_t = 0)]
    pub offset: u64,
    /// Print the page as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}
