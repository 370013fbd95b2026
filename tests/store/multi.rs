//! One event to several boards and one member across boards, through the library on
//! every store: exact totals on each board, an idempotency key applied once per board
//! (a retry fills in the board that failed), each board's error on its own, and bad
//! lists refused before any board is written.

use rollboard::{
    BoardStanding, BoardWrite, BoardsEvent, Error, Event, IdempotencyKey, KeyedOutcome, Span,
    TrendingConfig, TrendingStanding, WindowScore, WindowedStanding,
};

use crate::support::{Harness, START, ranking, ts, unique};

on_every_store!(
    one_event_and_one_batch_land_once_on_every_board_of_either_kind,
    a_keyed_write_is_applied_once_per_board_and_a_retry_fills_the_board_that_failed,
    each_board_answers_its_own_error_and_the_others_are_written,
    bad_lists_of_boards_and_bad_events_are_refused_before_any_board_is_written,
    a_member_is_read_in_every_window_of_every_board_at_once,
);

/// The top of `board`'s window `window` as (member, total) pairs.
async fn totals(h: &Harness, board: &str, window: &str) -> Vec<(String, i64)> {
    let window = Span::parse(window).unwrap();
    ranking(
        &h.boards
            .windowed(board)
            .top(Some(window), 0, 100)
            .await
            .unwrap(),
    )
}

fn pairs(items: &[(&str, i64)]) -> Vec<(String, i64)> {
    items.iter().map(|(m, s)| (m.to_string(), *s)).collect()
}

/// What a board did: (accepted, rejected as (index, code), replayed), or its error code.
type Outcome<'a> = Result<(usize, Vec<(usize, &'a str)>, bool), &'a str>;

/// Each board's name and [`Outcome`].
fn outcomes(writes: &[BoardWrite]) -> Vec<(String, Outcome<'_>)> {
    writes
        .iter()
        .map(|w| {
            let result = match &w.result {
                Ok(KeyedOutcome { outcome, replayed }) => Ok((
                    outcome.accepted,
                    outcome
                        .rejected
                        .iter()
                        .map(|r| (r.index, r.error.code()))
                        .collect(),
                    *replayed,
                )),
                Err(e) => Err(e.code()),
            };
            (w.board.clone(), result)
        })
        .collect()
}

async fn trending(h: &Harness) -> String {
    let name = unique("t");
    h.boards
        .create(&name, TrendingConfig::parse("6h").unwrap())
        .await
        .unwrap();
    name
}

async fn one_event_and_one_batch_land_once_on_every_board_of_either_kind(h: Harness) {
    let hot = h.board("1h", &["1h", "24h"]).await;
    let rust = h.board("1h", &["24h"]).await;
    let trend = trending(&h).await;
    let boards = [hot.as_str(), rust.as_str(), trend.as_str()];
    let like = Event::new("post:42", 1);
    let written = h
        .boards
        .write_event_to_boards(&boards, &like, None)
        .await
        .unwrap();
    let ok = |n: usize| Ok((n, vec![], false));
    assert_eq!(
        outcomes(&written),
        [
            (hot.clone(), ok(1)),
            (rust.clone(), ok(1)),
            (trend.clone(), ok(1))
        ]
    );
    let batch = [
        Event::new("post:7", 3),
        Event::new("post:42", -1),
        Event::new("post:9", 0),
        Event::new("post:42", 2),
    ];
    let written = h
        .boards
        .write_events_to_boards(&boards, &batch, None)
        .await
        .unwrap();
    let three = Ok((3, vec![(2, "invalid_delta")], false));
    assert_eq!(
        outcomes(&written),
        [
            (hot.clone(), three.clone()),
            (rust.clone(), three.clone()),
            (trend.clone(), three)
        ]
    );
    let expected = pairs(&[("post:7", 3), ("post:42", 2)]);
    assert_eq!(totals(&h, &hot, "1h").await, expected);
    assert_eq!(totals(&h, &hot, "24h").await, expected);
    assert_eq!(totals(&h, &rust, "24h").await, expected);
    let post42 = h
        .boards
        .trending(&trend)
        .score("post:42")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((post42.score, post42.rank), (2.0, Some(2)));
    // Each event to the boards it names: the post on two, its author on a third.
    let authors = h.board("1h", &["24h"]).await;
    let on = |boards: &[&str], member: &str, delta: i64| BoardsEvent {
        boards: boards.iter().map(|b| b.to_string()).collect(),
        event: Event::new(member, delta),
    };
    let batch = [
        on(&[&hot, &rust], "post:7", 1),
        on(&[&authors], "user:ann", 0),
        on(&[&authors, &hot], "user:ann", 2),
    ];
    let written = h.boards.write_to_boards(&batch, None).await.unwrap();
    assert_eq!(
        outcomes(&written),
        [
            (hot.clone(), Ok((2, vec![], false))),
            (rust.clone(), Ok((1, vec![], false))),
            (authors.clone(), Ok((1, vec![(1, "invalid_delta")], false)))
        ]
    );
    assert_eq!(
        totals(&h, &hot, "24h").await,
        pairs(&[("post:7", 4), ("post:42", 2), ("user:ann", 2)])
    );
    assert_eq!(
        totals(&h, &rust, "24h").await,
        pairs(&[("post:7", 4), ("post:42", 2)])
    );
    assert_eq!(totals(&h, &authors, "24h").await, pairs(&[("user:ann", 2)]));
}

async fn a_keyed_write_is_applied_once_per_board_and_a_retry_fills_the_board_that_failed(
    h: Harness,
) {
    let hot = h.board("1h", &["1h"]).await;
    let later = unique("b");
    let boards = [hot.as_str(), later.as_str()];
    let key = IdempotencyKey::parse("like-42").unwrap();
    let batch = [Event::new("post:42", 1), Event::new("post:7", 2)];
    let first = h
        .boards
        .write_events_to_boards(&boards, &batch, Some(&key))
        .await
        .unwrap();
    assert_eq!(
        outcomes(&first),
        [
            (hot.clone(), Ok((2, vec![], false))),
            (later.clone(), Err("board_not_found"))
        ]
    );
    h.boards
        .create(
            &later,
            rollboard::BoardConfig::parse("1h", &["1h"]).unwrap(),
        )
        .await
        .unwrap();
    h.at(60);
    let retry = h
        .boards
        .write_events_to_boards(&boards, &batch, Some(&key))
        .await
        .unwrap();
    assert_eq!(
        outcomes(&retry),
        [
            (hot.clone(), Ok((2, vec![], true))),
            (later.clone(), Ok((2, vec![], false)))
        ]
    );
    let again = h
        .boards
        .write_events_to_boards(&boards, &batch, Some(&key))
        .await
        .unwrap();
    assert_eq!(
        outcomes(&again),
        [
            (hot.clone(), Ok((2, vec![], true))),
            (later.clone(), Ok((2, vec![], true)))
        ]
    );
    let expected = pairs(&[("post:7", 2), ("post:42", 1)]);
    assert_eq!(totals(&h, &hot, "1h").await, expected);
    assert_eq!(totals(&h, &later, "1h").await, expected);
    // The same key with other events is each board's own refusal.
    let other = h
        .boards
        .write_events_to_boards(&boards, &[Event::new("post:1", 1)], Some(&key))
        .await
        .unwrap();
    assert_eq!(
        outcomes(&other),
        [
            (hot.clone(), Err("idempotency_key_reused")),
            (later.clone(), Err("idempotency_key_reused"))
        ]
    );
    assert_eq!(totals(&h, &hot, "1h").await, expected);
}

async fn each_board_answers_its_own_error_and_the_others_are_written(h: Harness) {
    let hour = h.board("1h", &["1h"]).await;
    let day = h.board("1h", &["24h"]).await;
    let missing = unique("b");
    h.at(3 * 3600);
    // Two hours old: too late for the last hour, inside the last day.
    let old = Event {
        member: "post:1".into(),
        delta: 5,
        value: None,
        at: Some(ts(START + 3600)),
        data: None,
        by: None,
    };
    let boards = [hour.as_str(), missing.as_str(), day.as_str()];
    let written = h
        .boards
        .write_event_to_boards(&boards, &old, None)
        .await
        .unwrap();
    assert_eq!(
        outcomes(&written),
        [
            (hour.clone(), Ok((0, vec![(0, "too_late")], false))),
            (missing.clone(), Err("board_not_found")),
            (day.clone(), Ok((1, vec![], false)))
        ]
    );
    assert_eq!(totals(&h, &hour, "1h").await, pairs(&[]));
    assert_eq!(totals(&h, &day, "24h").await, pairs(&[("post:1", 5)]));
}

async fn bad_lists_of_boards_and_bad_events_are_refused_before_any_board_is_written(h: Harness) {
    let a = h.board("1h", &["1h"]).await;
    let like = Event::new("post:1", 1);
    let refusal = |r: rollboard::Result<Vec<BoardWrite>>| match r {
        Err(e) => (e.code(), e.to_string()),
        Ok(w) => panic!("accepted: {w:?}"),
    };
    let none: [&str; 0] = [];
    let b = &h.boards;
    assert_eq!(
        refusal(b.write_event_to_boards(&none, &like, None).await).0,
        "invalid_query"
    );
    let many: Vec<String> = (0..21).map(|i| format!("{a}-{i}")).collect();
    let (code, message) = refusal(b.write_event_to_boards(&many, &like, None).await);
    assert_eq!(code, "invalid_query");
    assert!(message.contains("name at most 20"), "{message}");
    let (code, message) = refusal(b.write_event_to_boards(&[&a, &a], &like, None).await);
    assert_eq!(code, "invalid_query");
    assert!(message.contains("named twice"), "{message}");
    assert_eq!(
        refusal(
            b.write_event_to_boards(&[&a, "bad name"], &like, None)
                .await
        )
        .0,
        "invalid_board_name"
    );
    assert_eq!(
        refusal(
            b.write_event_to_boards(&[&a], &Event::new("", 1), None)
                .await
        )
        .0,
        "invalid_member"
    );
    assert_eq!(
        refusal(
            b.write_event_to_boards(&[&a], &Event::new("m", 0), None)
                .await
        )
        .0,
        "invalid_delta"
    );
    assert!(matches!(
        b.member_across("post:1", &[&a, &a], None).await,
        Err(Error::InvalidQuery { .. })
    ));
    assert!(matches!(
        b.member_across("", &[&a], None).await,
        Err(Error::InvalidMember { .. })
    ));
    assert_eq!(totals(&h, &a, "1h").await, pairs(&[]));
}

fn window(w: &str, score: i64, rank: Option<u64>, percentile: f64) -> WindowScore {
    WindowScore {
        window: Span::parse(w).unwrap(),
        score,
        rank,
        percentile,
        behind: false,
        hidden: false,
    }
}

async fn a_member_is_read_in_every_window_of_every_board_at_once(h: Harness) {
    let hot = h.board("1h", &["1h", "24h"]).await;
    let hour = h.board("1h", &["1h"]).await;
    let trend = trending(&h).await;
    let missing = unique("b");
    // Two hours ago on hot (in the day only), and now.
    h.at(2 * 3600);
    let boards = [hot.as_str(), hour.as_str(), trend.as_str()];
    for (member, delta) in [("a", 5), ("b", 3), ("c", -2)] {
        h.boards
            .write_event_to_boards(&boards, &Event::new(member, delta), None)
            .await
            .unwrap();
    }
    let old = Event {
        member: "b".into(),
        delta: 4,
        value: None,
        at: Some(ts(START)),
        data: None,
        by: None,
    };
    h.boards.write_event(&hot, &old).await.unwrap();
    let asked = [
        hot.as_str(),
        missing.as_str(),
        hour.as_str(),
        trend.as_str(),
    ];
    let b = h.boards.member_across("b", &asked, None).await.unwrap();
    assert_eq!(b.member, "b");
    let names: Vec<&str> = b.boards.iter().map(|r| r.board.as_str()).collect();
    assert_eq!(names, asked);
    assert_eq!(
        b.boards[0].result,
        Ok(BoardStanding::Windowed(WindowedStanding {
            board: hot.clone(),
            // The old event left the hour: retirement (not run here) is behind in it.
            windows: vec![
                WindowScore {
                    behind: true,
                    ..window("1h", 3, Some(2), 0.0)
                },
                window("24h", 7, Some(1), 0.5),
            ],
        }))
    );
    assert_eq!(
        b.boards[1].result.as_ref().unwrap_err().code(),
        "board_not_found"
    );
    assert_eq!(
        b.boards[2].result,
        Ok(BoardStanding::Windowed(WindowedStanding {
            board: hour.clone(),
            windows: vec![window("1h", 3, Some(2), 0.0)],
        }))
    );
    assert_eq!(
        b.boards[3].result,
        Ok(BoardStanding::Trending(TrendingStanding {
            board: trend.clone(),
            score: 3.0,
            rank: Some(2),
            percentile: 0.0,
        }))
    );
    // One window asked: a board without it answers window_not_found; a member with a
    // negative total has no rank; one with none answers 0.
    let day = Span::parse("24h").unwrap();
    let c = h
        .boards
        .member_across("c", &[&hot, &hour], Some(day))
        .await
        .unwrap();
    assert_eq!(
        c.boards[0].result,
        Ok(BoardStanding::Windowed(WindowedStanding {
            board: hot.clone(),
            windows: vec![window("24h", -2, None, 0.0)],
        }))
    );
    assert_eq!(
        c.boards[1].result.as_ref().unwrap_err().code(),
        "window_not_found"
    );
    let z = h.boards.member_across("z", &[&hour], None).await.unwrap();
    assert_eq!(
        z.boards[0].result,
        Ok(BoardStanding::Windowed(WindowedStanding {
            board: hour.clone(),
            windows: vec![window("1h", 0, None, 0.0)],
        }))
    );
}

/// Calls of each Redis command since the last `CONFIG RESETSTAT` (but `INFO` and
/// `CONFIG`), from `INFO commandstats`.
async fn command_calls(redis: &crate::support::TestRedis) -> Vec<(String, u64)> {
    let info: String = ::redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
    info.lines()
        .filter_map(|l| l.strip_prefix("cmdstat_"))
        .filter_map(|l| {
            let (name, rest) = l.split_once(":calls=")?;
            let calls = rest.split(',').next()?.parse().ok()?;
            Some((name.to_owned(), calls))
        })
        .filter(|(name, _)| name != "info" && !name.starts_with("config"))
        .collect()
}

#[tokio::test]
async fn a_cross_board_read_costs_one_script_call_per_window_read_and_nothing_else() {
    let h = Harness::redis().await;
    let hot = h.board("1h", &["1h", "24h"]).await;
    let rust = h.board("1h", &["24h"]).await;
    let authors = h.board("1h", &["1h", "24h", "7d"]).await;
    let boards = [hot.as_str(), rust.as_str(), authors.as_str()];
    h.boards
        .write_event_to_boards(&boards, &Event::new("post:42", 1), None)
        .await
        .unwrap();
    let redis = h.redis.as_ref().unwrap();
    // A first read loads the read script; the boards are cached since the write.
    h.boards
        .member_across("post:42", &boards, None)
        .await
        .unwrap();
    let _: () = ::redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
    let read = h
        .boards
        .member_across("post:42", &boards, None)
        .await
        .unwrap();
    assert_eq!(read.boards.len(), 3);
    assert!(read.boards.iter().all(|b| b.result.is_ok()), "{read:?}");
    // Six windows on three boards: six read scripts, sent at once on the one
    // multiplexed connection, and no other call. The other commands counted are the
    // scripts' own reads (one HMGET each: a board loaded again would add one).
    let calls = command_calls(redis).await;
    let count = |command: &str| {
        calls
            .iter()
            .find(|(c, _)| c == command)
            .map_or(0, |(_, n)| *n)
    };
    assert_eq!((count("evalsha"), count("hmget")), (6, 6), "{calls:?}");
    let script_reads = [
        "hmget",
        "zcount",
        "zrangebyscore",
        "zrevrangebyscore",
        "zscore",
        "zrange",
        "zrevrange",
        "zcard",
        "hget",
    ];
    for (command, _) in &calls {
        assert!(
            command == "evalsha" || script_reads.contains(&command.as_str()),
            "{command} sent by a cross-board read: {calls:?}"
        );
    }
}

#[tokio::test]
async fn a_cross_board_read_sends_every_script_before_the_first_reply_comes_back() {
    use crate::proxy::{Fault, FaultProxy};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    let redis = crate::support::TestRedis::spawn().await;
    let proxy = FaultProxy::start(&redis.url).await;
    let store = rollboard::RedisStore::connect(&proxy.url()).await.unwrap();
    let clock = crate::support::clock();
    let boards = crate::support::with_clock(Arc::new(store), &clock);
    let mut names = Vec::new();
    for windows in [&["1h", "24h"][..], &["24h"], &["1h", "24h", "7d"]] {
        let name = unique("b");
        let config = rollboard::BoardConfig::parse("1h", windows).unwrap();
        boards.create(&name, config).await.unwrap();
        names.push(name);
    }
    boards
        .write_event_to_boards(&names, &Event::new("post:42", 1), None)
        .await
        .unwrap();
    // Loads the read script, so that the read below sends only its six calls.
    boards.member_across("post:42", &names, None).await.unwrap();
    let before = proxy.requests();
    // The first reply is held back for 2 s: a read sending its calls one after the
    // other would send one until then.
    proxy.arm(Fault::Hold(Duration::from_secs(2)), 1, |r| {
        r.command() == "EVALSHA"
    });
    let read = tokio::spawn({
        let (boards, names) = (boards.clone(), names.clone());
        async move { boards.member_across("post:42", &names, None).await }
    });
    let started = Instant::now();
    while proxy.requests() - before < 6 && started.elapsed() < Duration::from_millis(1500) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let sent_while_held = proxy.requests() - before;
    let across = read.await.unwrap().unwrap();
    assert_eq!(proxy.fired(), 1);
    assert_eq!(
        sent_while_held, 6,
        "six windows on three boards: all six calls in flight at once (one round trip)"
    );
    assert_eq!(across.boards.len(), 3);
    assert!(across.boards.iter().all(|b| b.result.is_ok()), "{across:?}");
}
