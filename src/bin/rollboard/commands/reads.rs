//! The read commands: `top` and `rate`.

use std::process::ExitCode;

use rollboard::{Coverage, Order, ScoreRange, Span, Timestamp};

use crate::args::{RateArgs, TopArgs};

use super::store::open;

pub(super) async fn top(args: TopArgs) -> anyhow::Result<ExitCode> {
    let boards = open(&args.store, "top").await?;
    let window = args.window.as_deref().map(Span::parse).transpose()?;
    let order = match args.order.as_str() {
        "asc" => Order::Asc,
        _ => Order::Desc,
    };
    let page = boards
        .ranking(
            &args.board,
            window,
            ScoreRange::ALL,
            order,
            args.offset,
            args.limit,
        )
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
        println!("(no ranked members)");
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
        .rate_counts_with(&args.key, windows.as_deref(), coverage)
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
