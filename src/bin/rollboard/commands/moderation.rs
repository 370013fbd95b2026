//! `hide` and `show`: a member hidden from the rankings (or shown again) on some boards
//! or on every board, through the library's moderation, which logs it.

use std::process::ExitCode;

use rollboard::ModerationNote;

use super::store::open;
use crate::args::ModerateArgs;

pub(super) async fn moderate(args: ModerateArgs, hidden: bool) -> anyhow::Result<ExitCode> {
    let verb = if hidden { "hide" } else { "show" };
    let boards = open(&args.store, verb).await?;
    let note = ModerationNote::new(args.reason, args.actor)?;
    let only = (!args.boards.is_empty()).then_some(args.boards.as_slice());
    let done = if hidden {
        boards.hide_member(&args.member, only, &note).await?
    } else {
        boards.show_member(&args.member, only, &note).await?
    };
    let done_verb = if hidden { "hid" } else { "showed" };
    let scope = if done.every_board {
        " (every board, boards created later too)"
    } else {
        ""
    };
    println!(
        "{done_verb} {} on {} boards{scope}: {} changed, {} already so",
        done.member,
        done.boards,
        done.changed,
        done.boards - done.changed
    );
    for skipped in &done.skipped {
        println!("skipped {}: {}", skipped.board, skipped.message);
    }
    Ok(ExitCode::SUCCESS)
}
