//! `hide` and `show`: a member hidden from the rankings (or shown again) on some boards
//! or on every board; `review`: a board's review queue, or a decision on a member;
//! through the library's moderation, which logs what changes; `retract`: a
//! contributor's contributions taken back; `quarantine`: a contributor's counting
//! nowhere, or again.

use std::process::ExitCode;

use rollboard::{Decision, ModerationNote, Span, Timestamp};

use super::store::open;
use crate::args::{ModerateArgs, QuarantineArgs, RetractArgs, ReviewArgs};

pub(super) async fn moderate(args: ModerateArgs, hidden: bool) -> anyhow::Result<ExitCode> {
    let verb = if hidden { "hide" } else { "show" };
    let boards = open(&args.store, verb).await?;
    let note = ModerationNote::new(args.note.reason, args.note.actor)?;
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

pub(super) async fn retract(args: RetractArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "retract").await?;
    let since = args
        .since
        .map(Timestamp::from_unix_seconds_f64)
        .transpose()?;
    let only = (!args.boards.is_empty()).then_some(args.boards.as_slice());
    let done = boards.retract(&args.by, since, only).await?;
    if let Some(error) = &done.error {
        anyhow::bail!(
            "retract: {error} (took back {} contributions before it; run it again to finish)",
            done.contributions
        );
    }
    println!(
        "took back {} contributions ({} events) of {} from {} boards",
        done.contributions, done.events, done.by, done.boards
    );
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn quarantine(args: QuarantineArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "quarantine").await?;
    let done = match args.release {
        true => boards.release(&args.by).await?,
        false => boards.quarantine(&args.by).await?,
    };
    let state = if done.quarantined {
        "quarantined"
    } else {
        "released"
    };
    let already = if done.changed {
        ""
    } else {
        " (it already was)"
    };
    println!(
        "{state} {}{already}: {} boards, {} window sums moved",
        done.by, done.boards, done.sums
    );
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn review(args: ReviewArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "review").await?;
    let board = boards.windowed(&args.board);
    let decision = match (args.allow, args.deny) {
        (Some(member), _) => Some((member, Decision::Allow)),
        (None, Some(member)) => Some((member, Decision::Deny)),
        (None, None) => None,
    };
    let Some((member, decision)) = decision else {
        let window = args.window.as_deref().map(Span::parse).transpose()?;
        let queue = board.review_queue(window).await?;
        for held in &queue.held {
            let value = held.score.map_or("-".to_owned(), |s| s.to_string());
            let rank = held.rank.map_or("-".to_owned(), |r| r.to_string());
            println!("{}\t{value}\t{rank}", held.member);
        }
        return Ok(ExitCode::SUCCESS);
    };
    let note = ModerationNote::new(args.note.reason, args.note.actor)?;
    let changed = board.review(&member, decision, &note).await?;
    let what = if changed { "" } else { " (it was so already)" };
    println!("{}: {member} on {}{what}", decision.as_str(), args.board);
    Ok(ExitCode::SUCCESS)
}
