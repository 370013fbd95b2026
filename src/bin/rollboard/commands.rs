//! What each subcommand does.

use std::process::ExitCode;
use std::sync::Arc;

use std::time::Instant;

use anyhow::{Context, bail};
use rollboard::jobs;
use rollboard::jobs::import::{Format, ImportOptions};
use rollboard::jobs::legacy::LegacyImport;
use rollboard::jobs::migrate::{LegacyTarget, MigrateOptions};
use rollboard::service::{self, Overrides, ServiceConfig};
use rollboard::{RedisStore, Rollboard, Span, SystemClock, Timestamp};

use crate::args::{
    CleanCountersArgs, Command, ExportArgs, ImportArgs, ImportLegacyArgs, MigrateArgs, RateArgs,
    RecomputeArgs, RelayoutArgs, ServeArgs, StoreArgs, TopArgs,
};
use crate::progress;

pub async fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Serve(args) => serve(args).await,
        Command::Retire(args) => retire(args).await,
        Command::CleanCounters(args) => clean_counters(args).await,
        Command::Top(args) => top(args).await,
        Command::Rate(args) => rate(args).await,
        Command::Import(args) => import(args).await,
        Command::Export(args) => export(args).await,
        Command::Recompute(args) => recompute(args).await,
        Command::Relayout(args) => relayout(args).await,
        Command::ImportLegacy(args) => import_legacy(args).await,
        Command::Migrate(args) => migrate(args).await,
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    // First: a SIGTERM during start-up then ends the service cleanly once it serves.
    let shutdown = service::shutdown_signal();
    let overrides = Overrides {
        bind: args.bind,
        store: args.store,
        redis_url: args.redis_url,
        redis_cluster: args.redis_cluster,
        redis_tls_ca: args.connection.redis_tls_ca,
        redis_connection_timeout: args.connection.redis_connection_timeout,
        redis_response_timeout: args.connection.redis_response_timeout,
        default_layout: args.connection.default_layout,
        accept_eviction: args.accept_eviction,
        write_token: std::env::var("ROLLBOARD_WRITE_TOKEN").ok(),
        admin_token: std::env::var("ROLLBOARD_ADMIN_TOKEN").ok(),
        insecure: args.insecure,
        max_clock_skew: args.max_clock_skew,
        idempotency_ttl: args.idempotency_ttl,
        metrics_board_series: args.metrics_board_series,
        header_read_timeout: args.header_read_timeout,
        keep_alive_timeout: args.keep_alive_timeout,
        max_connections: args.max_connections,
        snapshot_webhook: args.snapshot_webhook,
        log_format: args.log_format,
        access_log: args.access_log,
        cors_origins: args.cors_origins,
        ..Overrides::default()
    };
    let config = ServiceConfig::load(args.config.as_deref(), overrides)?;
    service::init_logging(config.log_format, crate::SERVE_LOG_FILTER);
    log_start(&args.config, &config);
    let store = service::open_store(&config).await?;
    let boards = Rollboard::with(store, Arc::new(SystemClock), config.settings.clone());
    let listener = tokio::net::TcpListener::bind(config.bind)
        .await
        .with_context(|| format!("cannot listen on {}", config.bind))?;
    service::run(boards, &config, listener, shutdown).await?;
    Ok(ExitCode::SUCCESS)
}

/// The start-up line: version, config file, tokens on or off (never the tokens), boards
/// declared, and the optional features.
fn log_start(file: &Option<std::path::PathBuf>, config: &ServiceConfig) {
    let on_off = |on: bool| if on { "on" } else { "off" };
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        config = %file.as_deref().map_or("none".into(), |p| p.display().to_string()),
        write_token = on_off(config.tokens.write.is_some()),
        admin_token = on_off(config.tokens.admin.is_some()),
        boards_declared = config.boards.len(),
        access_log = on_off(config.access_log),
        cors = on_off(!config.cors_origins.is_empty()),
        "rollboard starting"
    );
}

/// The Redis settings of a batch command: the config file's (`--config`, the one
/// `serve` reads), overridden by the environment and the flags, as for `serve`.
fn job_config(store: &StoreArgs) -> anyhow::Result<ServiceConfig> {
    let overrides = Overrides {
        // A batch job listens nowhere: the file's bind needs no token here.
        insecure: true,
        ..connection_overrides(store)
    };
    Ok(ServiceConfig::load(store.config.as_deref(), overrides)?)
}

/// The Redis-backed library, for the batch commands.
async fn open(store: &StoreArgs, command: &str) -> anyhow::Result<Rollboard> {
    let config = job_config(store)?;
    let redis = if !config.redis_cluster.is_empty() {
        RedisStore::connect_cluster_with(&config.redis_cluster, config.redis).await?
    } else if let Some(url) = &config.redis_url {
        RedisStore::connect_with(url, config.redis).await?
    } else {
        bail!(
            "`rollboard {command}` needs REDIS_URL (or --redis-url, or redis_url in the --config file) or REDIS_CLUSTER_URLS (or --redis-cluster, or redis_cluster): the memory store only lives inside `rollboard serve`"
        );
    };
    Ok(Rollboard::new(Arc::new(redis)))
}

/// Refuses a job that scans Redis's keys when the store is a Redis Cluster.
fn single_node_only(cluster: &[String], command: &str) -> anyhow::Result<()> {
    if !cluster.is_empty() {
        bail!(
            "`rollboard {command}` scans Redis's keys and runs on a single Redis only, not on a Redis Cluster: run it against the single Redis that holds the legacy keys before moving to the cluster (see docs/operations.md, \"Running on Redis Cluster\")"
        );
    }
    Ok(())
}

/// The Redis URL and connection settings of the command line and the environment.
fn connection_overrides(store: &StoreArgs) -> Overrides {
    Overrides {
        redis_url: store.redis_url.clone(),
        redis_cluster: store.redis_cluster.clone(),
        redis_tls_ca: store.connection.redis_tls_ca.clone(),
        redis_connection_timeout: store.connection.redis_connection_timeout,
        redis_response_timeout: store.connection.redis_response_timeout,
        default_layout: store.connection.default_layout,
        ..Overrides::default()
    }
}

async fn retire(args: StoreArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args, "retire").await?;
    let mut failed = 0;
    let mut total = rollboard::RetireReport::default();
    for (board, result) in boards.retire_all().await? {
        match result {
            Ok(r) => {
                total.absorb(r);
                if r.slots_retired > 0 {
                    println!(
                        "{board}: {} slot retirements, {} fields subtracted, {} members reached zero",
                        r.slots_retired, r.fields_subtracted, r.members_zeroed
                    );
                }
                if r.slots_swapped > 0 {
                    println!(
                        "{board}: {} of them by swap (window 1 rebuilt from the newer slots)",
                        r.slots_swapped
                    );
                }
                if r.slots_compacted > 0 {
                    println!(
                        "{board}: {} closed slots compacted, {} values moved into buckets",
                        r.slots_compacted, r.fields_compacted
                    );
                }
            }
            Err(e) => {
                failed += 1;
                eprintln!("rollboard: {board}: {e}");
            }
        }
    }
    println!(
        "retired: {} slot retirements, {} fields subtracted, {} members reached zero{}",
        total.slots_retired,
        total.fields_subtracted,
        total.members_zeroed,
        if failed > 0 {
            format!(", {failed} boards failed")
        } else {
            String::new()
        }
    );
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

async fn rate(args: RateArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "rate").await?;
    let windows: Option<Vec<&str>> = args.last.as_deref().map(|l| {
        l.split(',')
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .collect()
    });
    let read = boards.rate_counts(&args.key, windows.as_deref()).await?;
    if args.json {
        let counts: serde_json::Map<String, serde_json::Value> = read
            .counts
            .iter()
            .map(|(w, c)| (w.to_string(), (*c).into()))
            .collect();
        let body = serde_json::json!({"key": read.key, "at": read.at.unix_seconds_f64(), "counts": counts});
        println!("{}", serde_json::to_string_pretty(&body)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("{} · at {}", read.key, read.at);
    for (window, count) in &read.counts {
        println!("last {:>5}  {count}", window.to_string());
    }
    Ok(ExitCode::SUCCESS)
}

async fn clean_counters(args: CleanCountersArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "clean-counters").await?;
    if args.keep == 0 {
        bail!("--keep must be at least 1");
    }
    // Pass 0 visits every precision: a cron run does not know how many came before.
    let plan = rollboard::CleanPlan {
        keep: args.keep,
        pass: 0,
    };
    let report = boards.clean_counters(plan).await?;
    println!(
        "cleaned counters: {} counters, {} samples removed, {} forgotten",
        report.counters, report.removed, report.forgotten
    );
    Ok(ExitCode::SUCCESS)
}

async fn top(args: TopArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "top").await?;
    let window = args.window.as_deref().map(Span::parse).transpose()?;
    let page = boards
        .top(&args.board, window, args.offset, args.limit)
        .await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&page)?);
        return Ok(ExitCode::SUCCESS);
    }
    let time = |s: i64| {
        Timestamp::from_unix_seconds(s)
            .map(|t| t.to_string())
            .unwrap_or_default()
    };
    println!(
        "{} · last {} · slots {} .. {}",
        page.board,
        page.window,
        time(page.from),
        time(page.to)
    );
    if page.entries.is_empty() {
        println!("(no members with a positive total)");
    }
    let width = page
        .entries
        .iter()
        .map(|e| e.member.chars().count())
        .max()
        .unwrap_or(0);
    for e in &page.entries {
        println!("{:>5}  {:<width$}  {}", e.rank, e.member, e.score);
    }
    Ok(ExitCode::SUCCESS)
}

fn format_of(text: &str) -> anyhow::Result<Format> {
    Format::parse(text).ok_or_else(|| anyhow::anyhow!("unknown format {text:?}: use json or csv"))
}

async fn import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "import").await?;
    let format = args.format.as_deref().map(format_of).transpose()?;
    let input: Box<dyn std::io::Read + Send> = if args.file.as_os_str() == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(
            std::fs::File::open(&args.file)
                .with_context(|| format!("cannot open {}", args.file.display()))?,
        )
    };
    let options = ImportOptions {
        format,
        skip_bad: args.skip_bad,
        run_id: args.run_id.clone(),
        csv_safe: args.csv_safe,
        ..ImportOptions::default()
    };
    let started = Instant::now();
    let bar = progress::counter("imported");
    let report = jobs::import::import(&boards, &args.board, input, options, |r| {
        if let Some(bar) = &bar {
            bar.set_position(r.imported);
        }
    })
    .await;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let report = report?;
    for p in &report.problems {
        eprintln!("rollboard: line {}: {}", p.line, p.message);
    }
    println!(
        "imported {} events into {} ({} too late, skipped; {} rejected; {} bad lines; {} imported before by this run id) from {} lines in {:.1} s, run id {}",
        report.imported,
        args.board,
        report.too_late,
        report.rejected,
        report.bad_lines,
        report.already_imported,
        report.lines,
        started.elapsed().as_secs_f64(),
        report.run_id
    );
    Ok(if report.rejected > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

async fn export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "export").await?;
    let window = args.window.as_deref().map(Span::parse).transpose()?;
    let format = format_of(&args.format)?;
    let out = std::io::BufWriter::new(std::io::stdout().lock());
    let report = jobs::export::export_with(
        &boards,
        &args.board,
        window,
        args.limit,
        format,
        args.csv_safe,
        out,
    )
    .await?;
    eprintln!("exported {} entries of {}", report.entries, args.board);
    Ok(ExitCode::SUCCESS)
}

async fn recompute(args: RecomputeArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "recompute").await?;
    let window = args.window.as_deref().map(Span::parse).transpose()?;
    let started = Instant::now();
    let spinner = progress::counter("recomputing");
    let report = boards.recompute(&args.board, window).await;
    if let Some(s) = &spinner {
        s.finish_and_clear();
    }
    let report = report?;
    let windows: Vec<String> = report.windows.iter().map(|w| w.to_string()).collect();
    println!(
        "recomputed {} (windows {}): {} slot values scanned, {} members refolded, {} calls in {:.1} s",
        args.board,
        windows.join(", "),
        report.fields_scanned,
        report.members_folded,
        report.calls,
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

async fn relayout(args: RelayoutArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "relayout").await?;
    let options = rollboard::RelayoutOptions {
        now: args.now,
        ..Default::default()
    };
    let report = boards
        .relayout_with(&args.board, args.layout, options)
        .await?;
    if args.now {
        println!(
            "{}: new slots are {}; converted {} of {} live slots now ({} values moved)",
            args.board,
            report.layout.as_str(),
            report.converted_slots,
            report.live_slots,
            report.moved_values
        );
    } else {
        println!(
            "{}: new slots are {}; {} of {} live slots keep the old layout until they retire",
            args.board,
            report.layout.as_str(),
            report.old_layout_slots,
            report.live_slots
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn import_legacy(args: ImportLegacyArgs) -> anyhow::Result<ExitCode> {
    let config = job_config(&args.store)?;
    single_node_only(&config.redis_cluster, "import-legacy")?;
    let boards = open(&args.store, "import-legacy").await?;
    let url = config.redis_url.as_deref().unwrap_or_default();
    let windows = args
        .windows
        .iter()
        .map(|w| Span::parse(w))
        .collect::<Result<Vec<_>, _>>()?;
    let mut job = LegacyImport::new(&args.name, &args.board, Span::parse(&args.slot)?, windows);
    job.offset = args.offset;
    job.delete_legacy = args.delete_legacy;
    job.redis = config.redis.clone();
    let started = Instant::now();
    let bar = progress::counter("legacy fields read");
    let report = jobs::legacy::import_legacy(&boards, url, &job, |r| {
        if let Some(bar) = &bar {
            bar.set_position(r.fields);
        }
    })
    .await;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let report = report?;
    for p in &report.problems {
        eprintln!("rollboard: rejected: {p}");
    }
    let deleted = if report.deleted_keys > 0 {
        format!("; {} legacy keys deleted", report.deleted_keys)
    } else if args.delete_legacy {
        "; legacy keys kept because fields were rejected".into()
    } else {
        String::new()
    };
    println!(
        "imported legacy {} into {}: {} slots, {} fields: {} imported, {} imported before, {} too late ({} slots), skipped, {} rejected, {} zero{deleted} in {:.1} s",
        args.name,
        args.board,
        report.slots,
        report.fields,
        report.imported,
        report.already_imported,
        report.too_late,
        report.slots_too_late,
        report.rejected,
        report.empty,
        started.elapsed().as_secs_f64()
    );
    Ok(if report.rejected > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

async fn migrate(args: MigrateArgs) -> anyhow::Result<ExitCode> {
    let config = job_config(&args.store)?;
    single_node_only(&config.redis_cluster, "migrate")?;
    let Some(url) = config.redis_url.clone() else {
        bail!("`rollboard migrate` needs REDIS_URL (or --redis-url, or redis_url in the config)");
    };
    if args.status {
        for s in jobs::migrate::status(&url, &config.redis).await? {
            match &s.applied {
                Some(a) => println!(
                    "{:04} {:<16} applied {}: {}",
                    s.id,
                    s.name,
                    a.applied_at
                        .format(&time::format_description::well_known::Rfc3339)?,
                    a.summary
                ),
                None => println!("{:04} {:<16} pending: {}", s.id, s.name, s.about),
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let legacy = config
        .legacy
        .iter()
        .map(|(board, legacy)| {
            let (_, board_config) = config
                .boards
                .iter()
                .find(|(name, _)| name == board)
                .expect("a legacy target is a declared board");
            LegacyTarget {
                legacy: legacy.clone(),
                board: board.clone(),
                config: board_config.clone(),
            }
        })
        .collect();
    let options = MigrateOptions {
        legacy,
        wait: std::time::Duration::from_secs(Span::parse(&args.wait)?.seconds()),
        redis: config.redis.clone(),
        ..MigrateOptions::default()
    };
    let redis = RedisStore::connect_with(&url, config.redis.clone()).await?;
    let boards = Rollboard::new(Arc::new(redis));
    let started = Instant::now();
    let report = jobs::migrate::migrate(&boards, &url, &options, |m| {
        eprintln!("rollboard: applying migration {:04} {}…", m.id, m.name);
    })
    .await?;
    for (id, name, summary) in &report.applied {
        println!("{id:04} {name}: {summary}");
    }
    println!(
        "migrations: {} applied now, {} already applied, in {:.1} s",
        report.applied.len(),
        report.already,
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}
