//! What each subcommand does, one file per family: the service (`serve.rs`), the
//! maintenance commands (`maintenance.rs`), moderation (`moderation.rs`), the reads
//! (`reads.rs`), the batch jobs (`jobs.rs`), and the store they run on (`store.rs`).

use std::process::ExitCode;

use crate::args::Command;

mod jobs;
mod maintenance;
mod moderation;
mod reads;
mod serve;
mod store;

use jobs::{export, import, import_legacy, migrate};
use maintenance::{clean_counters, recompute, relayout, remove_members, reshard, retire, trim};
use moderation::{moderate, quarantine, retract, review};
use reads::{changes, rate, top};
use serve::serve;

pub async fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Serve(args) => serve(args).await,
        Command::Retire(args) => retire(args).await,
        Command::CleanCounters(args) => clean_counters(args).await,
        Command::Top(args) => top(args).await,
        Command::Changes(args) => changes(args).await,
        Command::Rate(args) => rate(args).await,
        Command::Import(args) => import(args).await,
        Command::Export(args) => export(args).await,
        Command::Recompute(args) => recompute(args).await,
        Command::Relayout(args) => relayout(args).await,
        Command::Reshard(args) => reshard(args).await,
        Command::RemoveMembers(args) => remove_members(args).await,
        Command::Trim(args) => trim(args).await,
        Command::Hide(args) => moderate(args, true).await,
        Command::Show(args) => moderate(args, false).await,
        Command::Retract(args) => retract(args).await,
        Command::Quarantine(args) => quarantine(args).await,
        Command::Review(args) => review(args).await,
        Command::ImportLegacy(args) => import_legacy(args).await,
        Command::Migrate(args) => migrate(args).await,
    }
}
