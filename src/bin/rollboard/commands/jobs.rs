//! The batch jobs: `import`, `export`, `import-legacy` and `migrate`.

use std::process::ExitCode;
use std::sync::Arc;

use std::time::Instant;

use anyhow::{Context, bail};
use rollboard::jobs;
use rollboard::jobs::import::{Format, ImportOptions};
use rollboard::jobs::legacy::LegacyImport;
use rollboard::jobs::migrate::{LegacyTarget, MigrateOptions};
use rollboard::{RedisStore, Rollboard, Span};

use crate::args::{ExportArgs, ImportArgs, ImportLegacyArgs, MigrateArgs};
use crate::progress;

use super::store::{job_config, open, single_node_only};

fn format_of(text: &str) -> anyhow::Result<Format> {
    Format::parse(text).ok_or_else(|| anyhow::anyhow!("unknown format {text:?}: use jsonl or csv"))
}

/// The import's format: `--format`, else the file's extension; never the content.
fn import_format(args: &ImportArgs) -> anyhow::Result<Format> {
    if let Some(named) = &args.format {
        return format_of(named);
    }
    if args.file.as_os_str() == "-" {
        anyhow::bail!("reading stdin needs --format csv or --format jsonl");
    }
    Format::of_path(&args.file).ok_or_else(|| {
        anyhow::anyhow!(
            "cannot tell the format of {} from its extension: name it with --format csv or \
             --format jsonl (or name the file .csv or .jsonl)",
            args.file.display()
        )
    })
}

pub(super) async fn import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let format = import_format(&args)?;
    let boards = open(&args.store, "import").await?;
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
        dry_run: args.dry_run,
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
    if args.dry_run {
        println!(
            "dry run: {} events in {} lines would be imported into {} ({} bad lines); nothing was written",
            report.events, report.lines, args.board, report.bad_lines
        );
        return Ok(ExitCode::SUCCESS);
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

pub(super) async fn export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "export").await?;
    let window = args.window.as_deref().map(Span::parse).transpose()?;
    let format = format_of(&args.format)?;
    let out = std::io::BufWriter::new(std::io::stdout().lock());
    let options = jobs::export::ExportOptions {
        window,
        limit: args.limit,
        format,
        csv_safe: args.csv_safe,
        hidden: args.hidden,
    };
    let report = jobs::export::export_with(&boards, &args.board, &options, out).await?;
    if args.hidden {
        eprintln!(
            "exported {} entries and {} hidden members of {}",
            report.entries, report.hidden, args.board
        );
    } else {
        eprintln!("exported {} entries of {}", report.entries, args.board);
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn import_legacy(args: ImportLegacyArgs) -> anyhow::Result<ExitCode> {
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

pub(super) async fn migrate(args: MigrateArgs) -> anyhow::Result<ExitCode> {
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
        move_from: args.move_from_prefix.clone(),
        ..MigrateOptions::default()
    };
    let redis = RedisStore::connect_with(&url, config.redis.clone()).await?;
    let boards = Rollboard::new(Arc::new(redis));
    let started = Instant::now();
    let report = jobs::migrate::migrate(&boards, &url, &options, |m| {
        eprintln!("rollboard: applying migration {:04} {}…", m.id, m.name);
    })
    .await?;
    if let Some(from) = &args.move_from_prefix {
        println!(
            "keys moved from under {:?} to under {:?}: {}",
            from.as_str(),
            config.redis.key_prefix.as_str(),
            report.moved
        );
    }
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
