//! The maintenance commands: `retire`, `recompute`, `relayout`, `reshard`,
//! `clean-counters`, `remove-members` and `trim`.

use std::process::ExitCode;

use std::time::Instant;

use anyhow::bail;
use rollboard::Span;

use crate::args::{
    CleanCountersArgs, RecomputeArgs, RelayoutArgs, RemoveMembersArgs, ReshardArgs, StoreArgs,
    TrimArgs,
};
use crate::progress;

use super::store::open;

pub(super) async fn retire(args: StoreArgs) -> anyhow::Result<ExitCode> {
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

pub(super) async fn clean_counters(args: CleanCountersArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "clean-counters").await?;
    if args.keep == 0 {
        bail!("--keep must be at least 1");
    }
    // Pass 0 visits every precision: a cron run does not know how many came before.
    let plan = rollboard::CleanPlan {
        keep: args.keep,
        pass: 0,
    };
    let report = boards.counters().clean(plan).await?;
    println!(
        "cleaned counters: {} counters, {} samples removed, {} forgotten",
        report.counters, report.removed, report.forgotten
    );
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn recompute(args: RecomputeArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "recompute").await?;
    let window = args.window.as_deref().map(Span::parse).transpose()?;
    let started = Instant::now();
    let spinner = progress::counter("recomputing");
    let report = boards.windowed(&args.board).recompute(window).await;
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

pub(super) async fn relayout(args: RelayoutArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "relayout").await?;
    let options = rollboard::RelayoutOptions {
        now: args.now,
        ..Default::default()
    };
    let report = boards
        .windowed(&args.board)
        .relayout(args.layout, options)
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

pub(super) async fn reshard(args: ReshardArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "reshard").await?;
    let started = Instant::now();
    let report = boards.windowed(&args.board).reshard(args.shards).await?;
    println!(
        "{}: {} shards -> {}; moved {} members ({} slot values) in {:.1}s",
        args.board,
        report.from,
        report.to,
        report.moved_members,
        report.moved_values,
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn remove_members(args: RemoveMembersArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "remove-members").await?;
    let ranged = args.min_score.is_some() || args.max_score.is_some() || args.window.is_some();
    if args.members.is_empty() != ranged {
        bail!("give either members or a range (--min-score, --max-score, --window), not both");
    }
    let removed = if ranged {
        let window = args.window.as_deref().map(Span::parse).transpose()?;
        let bounds = rollboard::ScoreBounds {
            min: args.min_score,
            max: args.max_score,
        };
        let mut removed = 0;
        loop {
            let step = boards
                .windowed(&args.board)
                .remove_by_score(window, bounds)
                .await?;
            removed += step.removed;
            // A step that removed nothing would select the same members again.
            if !step.more || step.removed == 0 {
                break removed;
            }
        }
    } else {
        boards
            .windowed(&args.board)
            .remove_members(&args.members)
            .await?
            .removed
    };
    println!("{}: members removed: {removed}", args.board);
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn trim(args: TrimArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "trim").await?;
    let window = args.window.as_deref().map(Span::parse).transpose()?;
    let mut removed = 0;
    loop {
        let step = boards.windowed(&args.board).trim(window, args.top).await?;
        removed += step.removed;
        if !step.more || step.removed == 0 {
            break;
        }
    }
    println!(
        "{}: kept the top {}; members removed: {removed}",
        args.board, args.top
    );
    Ok(ExitCode::SUCCESS)
}
