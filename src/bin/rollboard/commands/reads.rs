//! The read commands: `top`, `changes` and `rate`.

use std::process::ExitCode;

use rollboard::{BoardPage, Coverage, Order, ScoreBounds, Span, Timestamp};

use crate::args::{ChangesArgs, RateArgs, TopArgs};

use super::store::open;

pub(super) async fn changes(args: ChangesArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "changes").await?;
    let board = boards.windowed(&args.board);
    for change in board
        .changes(args.after.as_deref(), args.limit)
        .await?
        .changes
    {
        println!("{}", serde_json::to_string(&change)?);
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn top(args: TopArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "top").await?;
    let window = args.window.as_deref().map(Span::parse).transpose()?;
    let order = match args.order.as_str() {
        "asc" => Order::Asc,
        _ => Order::Desc,
    };
    let page = boards
        .ordered_page(
            &args.board,
            window,
            ScoreBounds::ALL,
            order,
            args.offset,
            args.limit,
        )
        .await?;
    if args.json {
        // As the HTTP API answers it, `kind` first.
        println!("{}", serde_json::to_string_pretty(&page)?);
        return Ok(ExitCode::SUCCESS);
    }
    let time = |s: i64| {
        Timestamp::from_unix_seconds(s)
            .map(|t| t.to_string())
            .unwrap_or_default()
    };
    let rows: Vec<(u64, &str, String)> = match &page {
        BoardPage::Windowed(page) => {
            let (from, to) = (time(page.from), time(page.to));
            println!(
                "{} · last {} · slots {from} .. {to}",
                page.board, page.window
            );
            let rows = page.entries.iter();
            rows.map(|e| (e.rank, e.member.as_str(), e.score.to_string()))
                .collect()
        }
        BoardPage::Trending(page) => {
            println!("{} · trending · at {}", page.board, time(page.at as i64));
            let rows = page.entries.iter();
            rows.map(|e| (e.rank, e.member.as_str(), e.score.to_string()))
                .collect()
        }
    };
    if rows.is_empty() {
        println!("(no ranked members)");
    }
    let width = rows
        .iter()
        .map(|(_, m, _)| m.chars().count())
        .max()
        .unwrap_or(0);
    for (rank, member, score) in &rows {
        println!("{rank:>5}  {member:<width$}  {score}");
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn rate(args: RateArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "rate").await?;
    let windows: Option<Vec<&str>> = args.last.as_deref().map(|l| {
        l.split(',')
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .collect()
    });
    // Named as on `GET /v1/rates/{key}?coverage=`; anything else is refused the same way.
    let coverage = args
        .coverage
        .as_deref()
        .map_or(Ok(Coverage::Partial), Coverage::parse)?;
    let read = boards
        .rates()
        .counts(&args.key, windows.as_deref(), coverage)
        .await?;
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
