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
        REDIS_URL               Redis to use (redis://host:port/db, rediss://user:password@host:port/\n                          \
        for TLS); without it `serve` uses the embedded in-memory store (set but empty:\n                          \
        an error)\n  \
        ROLLBOARD_STORE         memory or redis: the store `serve` uses, chosen explicitly\n  \
        REDIS_CLUSTER_URLS      Redis Cluster seed nodes instead (redis://host:port,redis://host:port)\n  \
        REDIS_TLS_CA            PEM file of the CA that signed Redis's certificate (private CA)\n  \
        ROLLBOARD_REDIS_CONNECTION_TIMEOUT, ROLLBOARD_REDIS_RESPONSE_TIMEOUT\n                          \
        Redis timeouts (250ms, 2s; default 2s each)\n  \
        ROLLBOARD_MIN_REPLICA_ACKS, ROLLBOARD_REPLICA_ACK_TIMEOUT\n                          \
        replicas that must have each write before it is acknowledged (default 0), and how\n                          \
        long a write waits for them (default 1s)\n  \
        ROLLBOARD_ACCEPT_EVICTION  true: accept a Redis whose maxmemory-policy evicts keys\n  \
        ROLLBOARD_KEY_PREFIX    what every key rollboard writes starts with (app1:), to share a Redis\n  \
        ROLLBOARD_BIND          address for `serve` (default 127.0.0.1:8080)\n  \
        ROLLBOARD_READ_TOKEN    bearer token required to read (off by default: reads open; empty counts as unset)\n  \
        ROLLBOARD_WRITE_TOKEN   bearer token required to post events (empty counts as unset)\n  \
        ROLLBOARD_ADMIN_TOKEN   bearer token required to create and drop boards and remove members\n                          \
        (empty counts as unset)\n  \
        ROLLBOARD_WEBHOOK_SECRET  signs every webhook POST (Rollboard-Signature: sha256=<HMAC of the body>)\n  \
        RUST_LOG                log filter (default: log_level of serve's config file, else info for serve,\n                          \
        warn otherwise)"
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
    /// Clean the counters once, then exit (for cron jobs): delete samples older than the
    /// newest --keep slices of every precision, and forget counters left empty.
    CleanCounters(CleanCountersArgs),
    /// Print a board's top N (a windowed or a trending board).
    Top(TopArgs),
    /// Print the changes of a board's watched tops (who entered, left or moved), oldest
    /// first, one JSON object per line, as `GET /v1/boards/{board}/changes` lists them.
    ///
    /// Run it again with --after the last id printed to get the changes since.
    Changes(ChangesArgs),
    /// Print a rate key's counts over the last 5s, 5m, 5h, 5d, 180d (or --last).
    Rate(RateArgs),
    /// Import timestamped events (JSON lines or CSV) into a board, through the exact
    /// write path, in constant memory.
    ///
    /// JSON lines: {"member":"post:1","delta":1,"at":1700000000,"by":"user:7"}. CSV: a
    /// header line naming the columns (member, and optionally delta, at and by), then
    /// rows of exactly those. The format is --format or the file's extension, never
    /// guessed. delta defaults to 1, at to now; by (who gave the event) is kept by a
    /// board with per_contributor_member or per_contributor, checked and not kept by
    /// others. The whole input is checked first: a malformed line refuses it, naming the
    /// line, with nothing imported (unless --skip-bad). Events
    /// older than the board's largest window are counted as skipped.
    Import(ImportArgs),
    /// Write a board's ranking in rank order (JSON lines or CSV with a header) to stdout.
    Export(ExportArgs),
    /// Rebuild a board's totals from its live slots, exactly, while writes go on.
    ///
    /// Repairs drift (totals edited by hand, or left by a bug) and finishes building
    /// windows added to the board. Every Redis call stays short; retirement of the board
    /// waits until the recompute ends.
    Recompute(RecomputeArgs),
    /// Change the layout of a board's slot data (plain or compact), online and exactly
    /// while writes go on.
    ///
    /// Slots the board creates from now on get the new layout; live slots keep theirs
    /// until they retire (reads, writes, removal and recompute handle both), so the
    /// board is wholly in the new layout once its largest window has passed. Prints how
    /// many live slots still have the old layout.
    Relayout(RelayoutArgs),
    /// Change a sharded board's shard count (1 to 32), online and exactly while writes go
    /// on.
    ///
    /// Every member whose shard differs under the new count moves there; reads stay
    /// exact. A run cut short (an error, Ctrl-C) is finished by running it again with the
    /// same count (after 30 s, when its lease has run out). Prints the members moved.
    Reshard(ReshardArgs),
    /// Remove members from every slot and window of a board: those listed, or those
    /// ranked in one window whose totals there are within --min-score/--max-score.
    ///
    /// Exact while writes go on: each member is removed with the single-member removal;
    /// a member written after the selection is not removed, and a removed member's later
    /// events count again. A range is removed 1,000 members at a time until none is left.
    RemoveMembers(RemoveMembersArgs),
    /// Trim a board to a window's top N: the members ranked in that window below its top
    /// --top (ties at the cut in the board's tie order) are removed from every window,
    /// 1,000 at a time until none is left.
    Trim(TrimArgs),
    /// Hide a member from the rankings, its counts kept: on the --board boards, or on
    /// every board and every board created later.
    ///
    /// It keeps counting exactly; no ranking lists it and the ranks below it close up.
    /// Kept in the moderation log with --reason and --actor. Boards that cannot hide
    /// members yet (sharded, trending) are named and left as they are.
    Hide(ModerateArgs),
    /// Show a hidden member again, at the rank its counts give: on the --board boards, or
    /// on every board (and boards created later no longer hide it).
    Show(ModerateArgs),
    /// Take back a contributor's contributions (a brigade's likes): from every window of
    /// every board keeping contributors, or of the --board boards, as if never written.
    ///
    /// Totals, caps and the budget they used become what they would be without them.
    /// With --since, only those from the slot holding that instant on. In bounded steps
    /// while writes go on; a run cut short (an error, a kill) is finished by running it
    /// again. Prints what it took back.
    Retract(RetractArgs),
    /// Quarantine a contributor: its likes are kept but count in no ranking, on every
    /// board keeping contributors and every one created later, its writes answering as
    /// before; --release puts back what of them is still inside the windows.
    ///
    /// In bounded steps while writes go on; run again, it finishes a run cut short.
    Quarantine(QuarantineArgs),
    /// A board's review queue, or a decision on one of its members.
    ///
    /// Without --allow or --deny: every member the board's review gate holds, one per
    /// line (member, value in --window, the rank it would have there). --allow MEMBER lets
    /// it rank anywhere on the board, now and later; --deny MEMBER hides it there. Kept in
    /// the moderation log with --reason and --actor.
    Review(ReviewArgs),
    /// Import a board kept in the source article's layout (slot_NAME_<ts> hashes,
    /// stats_NAME, last_slot_NAME), slot by slot, with exact totals.
    ///
    /// Stop the legacy writers first. Finds the slots with SCAN; every chunk is applied
    /// at most once, so an import that stopped can simply run again. Legacy slots older
    /// than the board's largest window are skipped and counted. The article keeps up to
    /// period + 2 intervals of slots: windows of 26h reproduce its "24 hours" exactly.
    /// The legacy keys stay unless --delete-legacy.
    ImportLegacy(ImportLegacyArgs),
    /// Apply the numbered migrations in order, once each; record them in Redis.
    ///
    /// Safe to run twice or from two processes at once (a lock in Redis, idempotent
    /// migrations). Migration 0001 imports the legacy boards the config declares
    /// ([[boards]] … legacy = "NAME"); it stops when it finds an undeclared one.
    Migrate(MigrateArgs),
}

/// `import-legacy` options.
#[derive(Debug, Args)]
pub struct ImportLegacyArgs {
    /// The legacy board's NAME.
    pub name: String,
    /// The board to import into (created when missing).
    #[arg(long)]
    pub board: String,
    /// The board's slot length.
    #[arg(long, default_value = "1h")]
    pub slot: String,
    /// The board's windows, comma-separated (e.g. 1h,24h).
    #[arg(long, value_delimiter = ',', required = true)]
    pub windows: Vec<String>,
    /// The board's alignment offset in seconds [default: that of the legacy slots].
    #[arg(long, allow_hyphen_values = true)]
    pub offset: Option<i64>,
    /// Unlink the legacy keys once every field came across (kept if any was rejected).
    #[arg(long)]
    pub delete_legacy: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `clean-counters` options.
#[derive(Debug, Args)]
pub struct CleanCountersArgs {
    /// Slices of time kept per precision.
    #[arg(long, default_value_t = rollboard::DEFAULT_KEEP)]
    pub keep: u32,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `migrate` options.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// List applied and pending migrations, and change nothing.
    #[arg(long)]
    pub status: bool,
    /// How long to wait for another migrate to finish.
    #[arg(long, default_value = "5m")]
    pub wait: String,
    /// First move rollboard's keys from under this prefix ("" for a deployment that had
    /// none) to under the key prefix; stop every rollboard on this Redis first.
    #[arg(long, value_name = "OLD")]
    pub move_from_prefix: Option<rollboard::KeyPrefix>,
    #[command(flatten)]
    pub store: StoreArgs,
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

/// `hide` and `show` options.
#[derive(Debug, Args)]
pub struct ModerateArgs {
    /// The member.
    pub member: String,
    /// Only these boards (repeat, or comma-separated) [default: every board].
    #[arg(long = "board", value_delimiter = ',')]
    pub boards: Vec<String>,
    #[command(flatten)]
    pub note: NoteArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `retract` options.
#[derive(Debug, Args)]
pub struct RetractArgs {
    /// The contributor, as events name it in `by`.
    pub by: String,
    /// Only the contributions from the slot holding this instant on (unix seconds)
    /// [default: every contribution inside a window].
    #[arg(long)]
    pub since: Option<f64>,
    /// Only these boards (repeat, or comma-separated; at most 20) [default: every board
    /// keeping contributors].
    #[arg(long = "board", value_delimiter = ',')]
    pub boards: Vec<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `quarantine` options.
#[derive(Debug, Args)]
pub struct QuarantineArgs {
    /// The contributor, as events name it in `by`.
    pub by: String,
    /// Release it instead: what it gave counts again.
    #[arg(long)]
    pub release: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Why and by whom, for the moderation log.
#[derive(Debug, Args)]
pub struct NoteArgs {
    /// Why, kept in the moderation log (1 to 1,024 bytes).
    #[arg(long)]
    pub reason: Option<String>,
    /// Who, kept in the moderation log (1 to 128 bytes).
    #[arg(long)]
    pub actor: Option<String>,
}

/// `review` options.
#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// The board.
    pub board: String,
    /// Allow this member.
    #[arg(long, conflicts_with = "deny")]
    pub allow: Option<String>,
    /// Deny this member (it is hidden on the board).
    #[arg(long)]
    pub deny: Option<String>,
    /// The window whose values and ranks the queue shows ("1h", "24h") [default: the
    /// board's first].
    #[arg(long)]
    pub window: Option<String>,
    #[command(flatten)]
    pub note: NoteArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `remove-members` options.
#[derive(Debug, Args)]
pub struct RemoveMembersArgs {
    /// The board.
    pub board: String,
    /// The members to remove (1 to 1,000); leave out to remove by range.
    pub members: Vec<String>,
    /// Remove the members ranked in --window whose total is at least this (inclusive).
    #[arg(long, allow_hyphen_values = true)]
    pub min_score: Option<f64>,
    /// Remove the members ranked in --window whose total is at most this (inclusive).
    #[arg(long, allow_hyphen_values = true)]
    pub max_score: Option<f64>,
    /// The window the range is about (e.g. 24h) [default: the board's first].
    #[arg(long)]
    pub window: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `trim` options.
#[derive(Debug, Args)]
pub struct TrimArgs {
    /// The board.
    pub board: String,
    /// Members to keep: the window's top N.
    #[arg(long)]
    pub top: u64,
    /// The window whose ranking is cut (e.g. 24h) [default: the board's first].
    #[arg(long)]
    pub window: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `relayout` options.
#[derive(Debug, Args)]
pub struct RelayoutArgs {
    /// The board.
    pub board: String,
    /// The new layout: plain or compact.
    #[arg(long, value_name = "LAYOUT")]
    pub layout: rollboard::Layout,
    /// Also convert the live slots now (exact while writes go on), instead of letting
    /// them keep their layout until they retire.
    #[arg(long)]
    pub now: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `reshard` options.
#[derive(Debug, Args)]
pub struct ReshardArgs {
    /// The board.
    pub board: String,
    /// The board's shard count from now on (1 to 32).
    #[arg(long, value_name = "COUNT")]
    pub shards: u32,
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
    /// csv (with a header line: member, and optionally delta, at and by) or jsonl (json
    /// is the same) [default: from the file's extension, .csv or .jsonl/.ndjson/.json;
    /// stdin needs it].
    #[arg(long)]
    pub format: Option<String>,
    /// Import the well-formed lines and list the malformed ones, instead of refusing the
    /// whole input (nothing imported) for its first malformed line.
    #[arg(long)]
    pub skip_bad: bool,
    /// Check the whole input and say how many events it would import; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The run id of an import that stopped: run it again on the same input with its id
    /// (printed when it stopped) and the batches it applied are skipped [default: a new
    /// id, so the same file imported twice counts twice].
    #[arg(long)]
    pub run_id: Option<String>,
    /// CSV members are in the spreadsheet-safe form of `export --csv-safe`: take one
    /// leading ' off each.
    #[arg(long)]
    pub csv_safe: bool,
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
    /// CSV: write members starting with = + - @ (a formula to a spreadsheet), a tab, a
    /// carriage return or ' with a ' in front; `import --csv-safe` takes it off.
    #[arg(long)]
    pub csv_safe: bool,
    /// Also write the board's hidden members that hold a value in the window, after the
    /// ranking, each marked hidden (JSON: "hidden":true and no rank; CSV: a hidden
    /// column).
    #[arg(long)]
    pub hidden: bool,
    #[command(flatten)]
    pub store: ReadStoreArgs,
}

/// Where the store and config come from, for a command that only reads.
#[derive(Debug, Args)]
pub struct ReadStoreArgs {
    /// TOML config file, the one `serve` reads: its Redis settings (redis_url,
    /// redis_cluster, redis_tls_ca, the timeouts; the environment and flags override
    /// them) and, for `migrate`, its boards' legacy names.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Redis URL.
    #[arg(long, env = "REDIS_URL")]
    pub redis_url: Option<String>,
    /// Redis Cluster seed nodes, comma-separated (instead of --redis-url).
    #[arg(
        long,
        env = "REDIS_CLUSTER_URLS",
        value_delimiter = ',',
        value_name = "URLS"
    )]
    pub redis_cluster: Option<Vec<String>>,
    #[command(flatten)]
    pub connection: RedisConnectionArgs,
}

/// Where the store and config come from, for a command that writes: those of a read,
/// and how its writes are acknowledged and laid out.
#[derive(Debug, Args)]
pub struct StoreArgs {
    #[command(flatten)]
    pub read: ReadStoreArgs,
    #[command(flatten)]
    pub writes: WriteArgs,
}

impl std::ops::Deref for StoreArgs {
    type Target = ReadStoreArgs;

    fn deref(&self) -> &ReadStoreArgs {
        &self.read
    }
}

/// How to connect to Redis: a private TLS CA, the timeouts and the key prefix.
#[derive(Debug, Args, Default)]
pub struct RedisConnectionArgs {
    /// PEM file of the CA that signed Redis's certificate (rediss:// only).
    #[arg(long, env = "REDIS_TLS_CA", value_name = "FILE")]
    pub redis_tls_ca: Option<PathBuf>,
    /// How long one connection attempt to Redis may take (250ms, 2s) [default: 2s].
    #[arg(long, env = "ROLLBOARD_REDIS_CONNECTION_TIMEOUT")]
    pub redis_connection_timeout: Option<rollboard::service::Timeout>,
    /// How long to wait for any one reply of Redis (250ms, 2s) [default: 2s].
    #[arg(long, env = "ROLLBOARD_REDIS_RESPONSE_TIMEOUT")]
    pub redis_response_timeout: Option<rollboard::service::Timeout>,
    /// What every key rollboard writes starts with, to share a Redis with an application
    /// (such as app1:; no braces) [default: none].
    #[arg(long, env = "ROLLBOARD_KEY_PREFIX", value_name = "PREFIX")]
    pub key_prefix: Option<rollboard::KeyPrefix>,
}

/// How a command's writes are acknowledged, and the layout of the boards it creates.
#[derive(Debug, Args, Default)]
pub struct WriteArgs {
    /// Replicas that must have a write before it is acknowledged (WAIT after each write;
    /// fewer in time: 503 write_uncertain) [default: 0].
    #[arg(long, env = "ROLLBOARD_MIN_REPLICA_ACKS", value_name = "N")]
    pub min_replica_acks: Option<u32>,
    /// How long a write waits for those replicas (250ms, 1s) [default: 1s].
    #[arg(long, env = "ROLLBOARD_REPLICA_ACK_TIMEOUT")]
    pub replica_ack_timeout: Option<rollboard::service::Timeout>,
    /// Layout of the slots of boards created without one: plain or compact [default:
    /// compact] (see docs/compact-slots.md, "Compact slots").
    #[arg(long, env = "ROLLBOARD_DEFAULT_LAYOUT", value_name = "LAYOUT")]
    pub default_layout: Option<rollboard::Layout>,
}

/// `serve` options.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// TOML config file (see docs/operations.md); environment and flags override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on: an IP address and a port [default: 127.0.0.1:8080].
    #[arg(long, env = "ROLLBOARD_BIND", value_parser = rollboard::service::parse_bind)]
    pub bind: Option<SocketAddr>,
    /// The store: memory or redis [default: redis when a Redis URL is set, else memory].
    #[arg(long, env = "ROLLBOARD_STORE", value_name = "STORE")]
    pub store: Option<rollboard::service::StoreKind>,
    /// Redis URL; the embedded memory store when absent (an empty one is an error).
    #[arg(long, env = "REDIS_URL")]
    pub redis_url: Option<String>,
    /// Redis Cluster seed nodes, comma-separated (instead of --redis-url).
    #[arg(
        long,
        env = "REDIS_CLUSTER_URLS",
        value_delimiter = ',',
        value_name = "URLS"
    )]
    pub redis_cluster: Option<Vec<String>>,
    #[command(flatten)]
    pub connection: RedisConnectionArgs,
    #[command(flatten)]
    pub writes: WriteArgs,
    /// Accept a Redis whose maxmemory-policy may evict keys (true or false)
    /// [default: false].
    #[arg(long, env = "ROLLBOARD_ACCEPT_EVICTION")]
    pub accept_eviction: Option<bool>,
    /// Allow listening beyond loopback without any token.
    #[arg(long)]
    pub insecure: bool,
    /// How far this process's clock may be from the store's before /readyz fails
    /// [default: 5s].
    #[arg(long, env = "ROLLBOARD_MAX_CLOCK_SKEW")]
    pub max_clock_skew: Option<rollboard::Span>,
    /// How long a write under an Idempotency-Key is remembered [default: 24h].
    #[arg(long, env = "ROLLBOARD_IDEMPOTENCY_TTL")]
    pub idempotency_ttl: Option<rollboard::Span>,
    /// Most boards with Prometheus series of their own; every other board is counted
    /// under board="(other)" [default: 1000; 0: none].
    #[arg(long, env = "ROLLBOARD_METRICS_BOARD_SERIES")]
    pub metrics_board_series: Option<usize>,
    /// How old, in milliseconds, the answer of a top, member, ranks or around read may
    /// be when the request does not say (its max_staleness_ms=): 0 reads Redis every
    /// time, up to 60000 lets reads be answered from this process's cache [default: 0].
    #[arg(long, env = "ROLLBOARD_MAX_STALENESS_MS")]
    pub max_staleness_ms: Option<u64>,
    /// How long a client may take to send a request head [default: 10s].
    #[arg(long, env = "ROLLBOARD_HEADER_READ_TIMEOUT")]
    pub header_read_timeout: Option<rollboard::Span>,
    /// How long an idle connection waits for its next request [default: 5s].
    #[arg(long, env = "ROLLBOARD_KEEP_ALIVE_TIMEOUT")]
    pub keep_alive_timeout: Option<rollboard::Span>,
    /// Most connections served at once [default: 1024].
    #[arg(long, env = "ROLLBOARD_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// An http:// or https:// URL that receives every period snapshot (POST, JSON, with
    /// an Idempotency-Key header), at least once.
    #[arg(long, env = "ROLLBOARD_SNAPSHOT_WEBHOOK")]
    pub snapshot_webhook: Option<String>,
    /// An http:// or https:// URL that receives every member a board's review gate holds
    /// (POST, JSON, with an Idempotency-Key header), at least once.
    #[arg(long, env = "ROLLBOARD_REVIEW_WEBHOOK")]
    pub review_webhook: Option<String>,
    /// An http:// or https:// URL that receives every change of a board's watched tops
    /// (POST, JSON, with an Idempotency-Key header), at least once.
    #[arg(long, env = "ROLLBOARD_CHANGES_WEBHOOK_URL")]
    pub changes_webhook: Option<String>,
    /// PEM file of a private CA that signed https:// webhook receivers' certificates
    /// [default: none, the system's roots only].
    #[arg(long, env = "ROLLBOARD_WEBHOOK_CA", value_name = "FILE")]
    pub webhook_ca: Option<PathBuf>,
    /// Log lines as text or json (one object a line) [default: text].
    #[arg(long, env = "ROLLBOARD_LOG_FORMAT", value_name = "FORMAT")]
    pub log_format: Option<rollboard::service::LogFormat>,
    /// Log one line per request (method, route, status, duration) on target
    /// rollboard::access (true or false) [default: false].
    #[arg(long, env = "ROLLBOARD_ACCESS_LOG", num_args = 0..=1, default_missing_value = "true")]
    pub access_log: Option<bool>,
    /// Origins answered with CORS headers, comma-separated ("*": any) [default: none,
    /// CORS off].
    #[arg(
        long,
        env = "ROLLBOARD_CORS_ORIGINS",
        value_delimiter = ',',
        value_name = "ORIGINS"
    )]
    pub cors_origins: Option<Vec<String>>,
    /// The config a write's unknown board is created with: the JSON of a PUT
    /// /v1/boards/{board} body, such as {"slot":"1h","windows":["1h","24h"]} [default:
    /// none, such a write is refused].
    #[arg(long, env = "ROLLBOARD_DEFAULT_BOARD", value_name = "JSON", value_parser = board_json)]
    pub default_board: Option<Box<rollboard::http::ConfigBody>>,
}

/// A board config as the JSON of a `PUT /v1/boards/{board}` body (boxed: it is large).
fn board_json(text: &str) -> Result<Box<rollboard::http::ConfigBody>, String> {
    serde_json::from_str(text).map_err(|e| format!("not a board config ({e})"))
}

/// `rate` options.
#[derive(Debug, Args)]
pub struct RateArgs {
    /// The rate key (a user id, an IP, …).
    pub key: String,
    /// Windows, comma-separated (e.g. 5s,1m) [default: 5s,5m,5h,5d,180d].
    #[arg(long)]
    pub last: Option<String>,
    /// Which slots each window counts: partial (the current slot and the W/L - 1 before
    /// it, at least W - L of the past) or full (the current slot and the W/L before it,
    /// at least W) [default: partial].
    #[arg(long, value_name = "partial|full")]
    pub coverage: Option<String>,
    /// Print the counts as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: ReadStoreArgs,
}

/// `changes` options.
#[derive(Debug, Args)]
pub struct ChangesArgs {
    /// The board.
    pub board: String,
    /// The id of the last change seen (`<ms>-<n>`); from the oldest kept by default.
    #[arg(long)]
    pub after: Option<String>,
    /// Changes to print, 1–1000.
    #[arg(long, default_value_t = 100)]
    pub limit: usize,
    #[command(flatten)]
    pub store: ReadStoreArgs,
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
    /// Entries to skip (from the bottom with `--order asc`).
    #[arg(long, default_value_t = 0)]
    pub offset: u64,
    /// `desc`: highest first; `asc`: the bottom of the ranking, lowest first (ranks stay
    /// the board's).
    #[arg(long, default_value = "desc", value_parser = ["desc", "asc"])]
    pub order: String,
    /// Print the page as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: ReadStoreArgs,
}
