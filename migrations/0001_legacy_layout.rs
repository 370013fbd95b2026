//! 0001 legacy_layout: imports the boards kept in the source article's layout.
//!
//! Legacy boards are found by their `last_slot_<NAME>` keys (the article sets one at a
//! board's first write) with `SCAN`. Each is imported into the board whose config entry
//! names it (`legacy = "NAME"` in a `[[boards]]` entry) by the legacy import
//! (`src/jobs/legacy.rs`): exact, idempotent chunk by chunk, legacy keys left in place.
//! A legacy board found but not declared stops the migration: its slot length and
//! windows are the operator's choice, not something to guess. With no legacy board there
//! is nothing to do.

use super::super::{Context, Outcome};
use crate::jobs::legacy::{LegacyImport, find_legacy_boards, import_legacy};

pub(super) async fn run(context: Context) -> Outcome {
    let found = find_legacy_boards(&context.url, &context.redis).await?;
    let undeclared: Vec<&str> = found
        .iter()
        .filter(|name| !context.legacy.iter().any(|t| &t.legacy == *name))
        .map(String::as_str)
        .collect();
    if !undeclared.is_empty() {
        return Err(format!(
            "legacy boards with no target: {}; declare each in the config file as \
             [[boards]] name = \"…\", slot = \"1h\", windows = [\"24h\"], legacy = \"NAME\"",
            undeclared.join(", ")
        )
        .into());
    }
    if context.legacy.is_empty() {
        return Ok("no legacy boards found".into());
    }
    let mut done = Vec::new();
    for target in &context.legacy {
        let config = &target.config;
        let mut job = LegacyImport::new(
            &target.legacy,
            &target.board,
            config.slot(),
            config.windows().to_vec(),
        );
        job.offset = Some(config.offset());
        job.redis = context.redis.clone();
        let report = import_legacy(&context.boards, &context.url, &job, |_| {}).await?;
        if report.rejected > 0 {
            return Err(format!(
                "{} -> {}: {} fields rejected ({}); fix or remove them, then run migrate again",
                target.legacy,
                target.board,
                report.rejected,
                report.problems.join("; ")
            )
            .into());
        }
        done.push(format!(
            "{} -> {}: {} of {} fields imported ({} before, {} older than the largest window skipped)",
            target.legacy,
            target.board,
            report.imported + report.already_imported,
            report.fields,
            report.already_imported,
            report.too_late
        ));
    }
    Ok(done.join("; "))
}
