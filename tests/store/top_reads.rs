//! Redis-only: a page of the top, highest first, is read by plain commands in one
//! transaction, and handed to `read_ranking.lua` only when the page needs it (a tie group
//! cut by its edge that goes on past what the window's reads learned to read, a window
//! behind, dense ranks); concurrent exact reads of one page, or
//! of one window's members, share one store read. Each case counts the server's script
//! calls and transactions around its reads, on a server of the test's own, and checks
//! the answers exactly.

use std::future::Future;

use rollboard::{AroundOptions, BoardConfig, Event, Span, Ties, TopPage};

use crate::support::{Harness, START, triples};
use crate::test_redis::TestRedis;

/// The scripts and transactions the server has run so far.
async fn calls(redis: &TestRedis) -> (u64, u64) {
    let [scripts, shas, transactions] = ran(redis, ["eval", "evalsha", "exec"]).await;
    (scripts + shas, transactions)
}

/// How many times the server has run each of `commands` so far (a first `EVALSHA`
/// answered `NOSCRIPT` is counted as a call that failed or was rejected, not as run).
async fn ran<const N: usize>(redis: &TestRedis, commands: [&str; N]) -> [u64; N] {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
    commands.map(|command| {
        let Some(line) = info
            .lines()
            .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:")))
        else {
            return 0;
        };
        let field = |name: &str| -> u64 {
            line.split(',')
                .find_map(|f| f.strip_prefix(&format!("{name}=")))
                .map_or(0, |v| v.parse().unwrap())
        };
        field("calls") - field("failed_calls") - field("rejected_calls")
    })
}

fn day() -> Option<Span> {
    Some(Span::parse("24h").unwrap())
}

/// A board (ties as `ties`) holding a 5, three 3s (c, a, b) and two 1s.
async fn board(ties: Ties) -> (Harness, String) {
    let h = Harness::on_own_redis().await;
    let config = BoardConfig::parse("1h", &["1h", "24h"])
        .unwrap()
        .with_ties(ties);
    let name = crate::support::unique("top");
    h.boards.create(&name, config).await.unwrap();
    let events =
        [("e", 5), ("c", 3), ("a", 3), ("b", 3), ("y", 1), ("x", 1)].map(|(m, d)| Event::new(m, d));
    h.boards.windowed(&name).incr_batch(&events).await.unwrap();
    (h, name)
}

/// How a read was made: by the transaction alone, by the script after it, or by the
/// script alone (dense ranks, known before anything is read).
const PLAIN: (u64, u64) = (0, 1);
const HANDED_OVER: (u64, u64) = (1, 1);
const SCRIPTED: (u64, u64) = (1, 0);

/// Reads the page at `offset, limit` of the 24 h window, and counts the scripts and
/// transactions the server ran for it.
async fn read(h: &Harness, name: &str, offset: u64, limit: u64) -> (TopPage, (u64, u64)) {
    let redis = h.redis.as_ref().unwrap();
    let before = calls(redis).await;
    let page = h
        .boards
        .windowed(name)
        .top(day(), offset, limit)
        .await
        .unwrap();
    let after = calls(redis).await;
    (page, (after.0 - before.0, after.1 - before.1))
}

/// As [`read`], the page's (rank, member, score).
async fn page(
    h: &Harness,
    name: &str,
    offset: u64,
    limit: u64,
) -> (Vec<(u64, String, i64)>, (u64, u64)) {
    let (page, ran) = read(h, name, offset, limit).await;
    (triples(&page.entries), ran)
}

fn expect(entries: &[(u64, &str, i64)]) -> Vec<(u64, String, i64)> {
    entries
        .iter()
        .map(|&(r, m, s)| (r, m.to_owned(), s))
        .collect()
}

#[tokio::test]
async fn pages_inside_tie_groups_are_read_without_a_script() {
    let (h, name) = board(Ties::Competition).await;
    let all = [
        (1, "e", 5),
        (2, "a", 3),
        (2, "b", 3),
        (2, "c", 3),
        (5, "x", 1),
        (5, "y", 1),
    ];
    assert_eq!(page(&h, &name, 0, 10).await, (expect(&all), PLAIN));
    assert_eq!(page(&h, &name, 0, 4).await, (expect(&all[..4]), PLAIN));
    assert_eq!(page(&h, &name, 1, 3).await, (expect(&all[1..4]), PLAIN));
    assert_eq!(page(&h, &name, 4, 10).await, (expect(&all[4..]), PLAIN));
    assert_eq!(page(&h, &name, 6, 10).await, (vec![], PLAIN));
}

#[tokio::test]
async fn a_tie_group_cut_by_the_page_is_read_by_the_script_once_then_read_further() {
    let (h, name) = board(Ties::Competition).await;
    let top_two = expect(&[(1, "e", 5), (2, "a", 3)]);
    // One entry past the page shows the group of 3s goes on: the script reads it, and
    // the window's next reads of that page read the group by its score, other pages 8
    // entries past each edge.
    assert_eq!(page(&h, &name, 0, 2).await, (top_two.clone(), HANDED_OVER));
    assert_eq!(page(&h, &name, 0, 2).await, (top_two, PLAIN));
    // A page cut through both of its edges' groups, from the same reach.
    assert_eq!(
        page(&h, &name, 2, 3).await,
        (expect(&[(2, "b", 3), (2, "c", 3), (5, "x", 1)]), PLAIN)
    );
    // A group that grows past that reach: the script again, then its score.
    let events: Vec<Event> = (0..30).map(|i| Event::new(format!("t{i:02}"), 3)).collect();
    h.boards.windowed(&name).incr_batch(&events).await.unwrap();
    let mut want = vec![(1, "e".to_owned(), 5), (2, "a".to_owned(), 3)];
    want.extend(["b", "c", "t00", "t01"].map(|m| (2, m.to_owned(), 3)));
    assert_eq!(page(&h, &name, 0, 6).await, (want.clone(), HANDED_OVER));
    assert_eq!(page(&h, &name, 0, 6).await, (want, PLAIN));
    assert_eq!(
        page(&h, &name, 32, 3).await,
        (expect(&[(2, "t28", 3), (2, "t29", 3), (35, "x", 1)]), PLAIN)
    );
}

#[tokio::test]
async fn a_page_cut_through_a_group_of_any_size_reads_it_by_its_score() {
    let (h, name) = board(Ties::Competition).await;
    let write = |events: Vec<Event>| {
        let board = h.boards.windowed(&name);
        async move { board.incr_batch(&events).await.unwrap() }
    };
    // 300 more 3s: a group no reach holds (it reads at most 128 entries).
    write(
        (0..300)
            .map(|i| Event::new(format!("t{i:03}"), 3))
            .collect(),
    )
    .await;
    let mut want = vec![(1, "e".to_owned(), 5)];
    want.extend(["a", "b", "c", "t000", "t001"].map(|m| (2, m.to_owned(), 3)));
    assert_eq!(page(&h, &name, 0, 6).await, (want.clone(), HANDED_OVER));
    for _ in 0..3 {
        assert_eq!(page(&h, &name, 0, 6).await, (want.clone(), PLAIN));
    }
    // Writes into the group change its first members, not its score.
    write(vec![Event::new("_", 3), Event::new("a", -3)]).await;
    want.splice(1..2, [(2, "_".to_owned(), 3)]);
    assert_eq!(page(&h, &name, 0, 6).await, (want, PLAIN));
    // Writes that move the page's edge into another group (ten 4s): the script once,
    // then that group by its score.
    write((0..10).map(|i| Event::new(format!("u{i}"), 4)).collect()).await;
    let mut want = vec![(1, "e".to_owned(), 5)];
    want.extend((0..5).map(|i| (2, format!("u{i}"), 4)));
    assert_eq!(page(&h, &name, 0, 6).await, (want.clone(), HANDED_OVER));
    assert_eq!(page(&h, &name, 0, 6).await, (want, PLAIN));
    // A page whose last entry ends its group: no group cut.
    let mut events = vec![Event::new("u5", 1)];
    events.extend([4, 6, 7, 8, 9].map(|i| Event::new(format!("u{i}"), -4)));
    write(events).await;
    let mut want = vec![(1, "e".to_owned(), 5), (1, "u5".to_owned(), 5)];
    want.extend((0..4).map(|i| (3, format!("u{i}"), 4)));
    for _ in 0..2 {
        assert_eq!(page(&h, &name, 0, 6).await, (want.clone(), PLAIN));
    }
}

#[tokio::test]
async fn position_ranks_are_read_without_a_script_and_dense_ones_with_it() {
    let (h, name) = board(Ties::Position).await;
    let all = [
        (1, "e", 5),
        (2, "a", 3),
        (3, "b", 3),
        (4, "c", 3),
        (5, "x", 1),
        (6, "y", 1),
    ];
    assert_eq!(page(&h, &name, 0, 10).await, (expect(&all), PLAIN));
    assert_eq!(page(&h, &name, 1, 3).await, (expect(&all[1..4]), PLAIN));

    let (h, name) = board(Ties::Dense).await;
    let all = [
        (1, "e", 5),
        (2, "a", 3),
        (2, "b", 3),
        (2, "c", 3),
        (3, "x", 1),
        (3, "y", 1),
    ];
    assert_eq!(page(&h, &name, 0, 10).await, (expect(&all), SCRIPTED));
}

#[tokio::test]
async fn a_window_behind_is_read_by_the_script_with_its_coverage() {
    let (h, name) = board(Ties::Competition).await;
    assert!(
        !h.boards
            .windowed(&name)
            .top(day(), 0, 1)
            .await
            .unwrap()
            .behind
    );
    // A day and an hour later, nothing retired: the totals still hold the first slot.
    h.at(25 * 3600);
    let (page, ran) = read(&h, &name, 0, 1).await;
    assert_eq!(ran, HANDED_OVER);
    // From the first slot, START's, which left the window an hour ago.
    assert!(page.behind);
    assert_eq!(page.from, START);
    assert_eq!(page.lag_ms, 3600 * 1000);
    assert_eq!(triples(&page.entries), expect(&[(1, "e", 5)]));
}

#[tokio::test]
async fn concurrent_exact_reads_share_one_transaction_started_after_they_arrived() {
    let (h, name) = board(Ties::Competition).await;
    let redis = h.redis.as_ref().unwrap();
    let top = || h.boards.windowed(&name).top(day(), 0, 10);
    let first = top().await.unwrap();
    let before = calls(redis).await;
    // 64 reads at once: the first reads by itself, the 63 that arrived while it was under
    // way share the next one.
    let pages = futures_util::future::join_all((0..64).map(|_| top())).await;
    let after = calls(redis).await;
    assert_eq!((after.0 - before.0, after.1 - before.1), (0, 2));
    for page in pages {
        assert_eq!(page.unwrap(), first);
    }
}

/// Each of `asked` read by `read` one at a time, then all at once: the answers at once
/// (which must equal those one at a time) and the scripts and transactions they cost.
async fn alone_then_together<T, F, Fut>(
    redis: &TestRedis,
    asked: &[&'static str],
    read: F,
) -> (Vec<T>, (u64, u64))
where
    T: PartialEq + std::fmt::Debug,
    F: Fn(&'static str) -> Fut,
    Fut: Future<Output = rollboard::Result<T>>,
{
    let mut alone = Vec::new();
    for &m in asked {
        alone.push(read(m).await.unwrap());
    }
    let before = calls(redis).await;
    let together = futures_util::future::join_all(asked.iter().map(|&m| read(m))).await;
    let after = calls(redis).await;
    let together: Vec<T> = together.into_iter().map(Result::unwrap).collect();
    assert_eq!(together, alone);
    (together, (after.0 - before.0, after.1 - before.1))
}

#[tokio::test]
async fn concurrent_exact_member_reads_share_one_script_call() {
    let (h, name) = board(Ties::Competition).await;
    let redis = h.redis.as_ref().unwrap();
    let asked = ["e", "a", "x", "nobody", "a", "c", "y", "b"];
    let score = |m: &'static str| h.boards.windowed(&name).score(m, day());
    // The first reads by itself; the seven that arrived while it was under way share the
    // next call, duplicates and a member without a total included.
    let (together, ran) = alone_then_together(redis, &asked, score).await;
    assert_eq!(ran, (2, 0));
    let ranks: Vec<_> = together
        .iter()
        .map(|s| s.as_ref().map(|s| (s.member.as_str(), s.score, s.rank)))
        .collect();
    assert_eq!(
        ranks,
        [
            Some(("e", 5, Some(1))),
            Some(("a", 3, Some(2))),
            Some(("x", 1, Some(5))),
            None,
            Some(("a", 3, Some(2))),
            Some(("c", 3, Some(2))),
            Some(("y", 1, Some(5))),
            Some(("b", 3, Some(2))),
        ]
    );
}

#[tokio::test]
async fn concurrent_exact_reads_around_members_share_one_script_call() {
    let (h, name) = board(Ties::Competition).await;
    let redis = h.redis.as_ref().unwrap();
    let asked = ["b", "e", "nobody", "y", "b"];
    let options = AroundOptions {
        fill: true,
        ..AroundOptions::default()
    };
    let around = |m: &'static str| h.boards.windowed(&name).around(m, day(), 1, options);
    let (together, ran) = alone_then_together(redis, &asked, around).await;
    assert_eq!(ran, (2, 0));
    let pages: Vec<_> = together
        .iter()
        .map(|p| p.as_ref().map(|p| triples(&p.entries)))
        .collect();
    assert_eq!(
        pages,
        [
            Some(expect(&[(2, "a", 3), (2, "b", 3), (2, "c", 3)])),
            Some(expect(&[(1, "e", 5), (2, "a", 3), (2, "b", 3)])),
            None,
            Some(expect(&[(2, "c", 3), (5, "x", 1), (5, "y", 1)])),
            Some(expect(&[(2, "a", 3), (2, "b", 3), (2, "c", 3)])),
        ]
    );
}

#[tokio::test]
async fn pages_read_further_stay_exact_while_writes_reshape_the_tie_groups() {
    use rand::{Rng, SeedableRng};
    let redis = Harness::on_own_redis().await;
    let memory = Harness::memory().await;
    let name = crate::support::unique("reach");
    let config = BoardConfig::parse("1h", &["1h", "24h"]).unwrap();
    for h in [&redis, &memory] {
        h.boards.create(&name, config.clone()).await.unwrap();
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(48);
    let mut handed_over = [0, 0];
    for step in 0..400 {
        // Likes and a few unlikes to 80 members, whose totals stay in a few tie groups.
        let events: Vec<Event> = (0..rng.random_range(1..6))
            .map(|_| {
                let delta = if rng.random_ratio(1, 6) { -1 } else { 1 };
                Event::new(format!("m{:02}", rng.random_range(0..80)), delta)
            })
            .collect();
        for h in [&redis, &memory] {
            h.boards.windowed(&name).incr_batch(&events).await.unwrap();
        }
        // A random page, and the top page (whose edge's group is read by its score).
        let random = (rng.random_range(0..90), rng.random_range(1..16));
        for (offset, limit) in [random, (0, 5)] {
            let (got, ran) = read(&redis, &name, offset, limit).await;
            let want = memory
                .boards
                .windowed(&name)
                .top(day(), offset, limit)
                .await
                .unwrap();
            assert_eq!(
                triples(&got.entries),
                triples(&want.entries),
                "step {step}: offset {offset} limit {limit}"
            );
            assert!(ran == PLAIN || ran == HANDED_OVER, "step {step}: {ran:?}");
            handed_over[usize::from(offset == 0 && limit == 5)] += u64::from(ran == HANDED_OVER);
        }
    }
    // Most pages cut a group (80 members share a few totals: reading one entry past each
    // edge, 303 of the random reads need the script), yet pages of every offset and
    // length share the window's reach without pulling it back and forth: 1 does. The top
    // page needs it only when writes move its edge into another cut group: 3 times.
    assert!(
        handed_over[0] <= 5,
        "{handed_over:?} of 400 reads handed over"
    );
    assert!(
        handed_over[1] <= 10,
        "{handed_over:?} of 400 reads handed over"
    );
}

#[tokio::test]
async fn pages_around_members_of_one_total_read_together_count_that_total_once() {
    let (h, name) = board(Ties::Position).await;
    let events: Vec<Event> = (1..=7).map(|i| Event::new(format!("g{i}"), 2)).collect();
    h.boards.windowed(&name).incr_batch(&events).await.unwrap();
    let redis = h.redis.as_ref().unwrap();
    // Ranking positions e, a, b, c, g1 … g7, x, y: each page inside the 2s.
    let asked = ["g2", "g4", "g6", "g3"];
    let around = |m: &'static str| {
        h.boards
            .windowed(&name)
            .around(m, day(), 1, AroundOptions::default())
    };
    let [before] = ran(redis, ["zcount"]).await;
    let (together, scripts) = alone_then_together(redis, &asked, around).await;
    let [after] = ran(redis, ["zcount"]).await;
    // The first alone, the three that came meanwhile in one call: each call counts the
    // 2s' members above and holding them once (the reads one at a time before, 4 calls
    // and 8 counts, are in `before`).
    assert_eq!(scripts, (2, 0));
    assert_eq!(after - before, 8 + 4);
    let pages: Vec<_> = together
        .iter()
        .map(|p| triples(&p.as_ref().unwrap().entries))
        .collect();
    let g = |i: u64| (i + 4, format!("g{i}"), 2);
    assert_eq!(
        pages,
        [2, 4, 6, 3].map(|i: u64| vec![g(i - 1), g(i), g(i + 1)])
    );
}

#[tokio::test]
async fn pages_read_by_the_script_keep_members_of_any_bytes_and_their_totals() {
    // The script answers a page's totals and members joined by byte 255: members with
    // line breaks, tabs, NUL, separators of other formats and every width of UTF-8
    // (`ÿ` is C3 BF) come back whole, and a dense board's top page (read by the script)
    // and pages around members (in one call) hold the same entries.
    let h = Harness::on_own_redis().await;
    let config = BoardConfig::parse("1h", &["1h", "24h"])
        .unwrap()
        .with_ties(Ties::Dense);
    let name = crate::support::unique("bytes");
    h.boards.create(&name, config).await.unwrap();
    let members = ["a\nb", "tab\there", "nul\0", "ÿ", "é,|;", "🎉", " "];
    let events: Vec<Event> = members
        .iter()
        .enumerate()
        .map(|(i, m)| Event::new(*m, 1 + (i as i64) / 2))
        .collect();
    h.boards.windowed(&name).incr_batch(&events).await.unwrap();
    let top = h.boards.windowed(&name).top(day(), 0, 10).await.unwrap();
    let expected = expect(&[
        (1, " ", 4),
        (2, "é,|;", 3),
        (2, "🎉", 3),
        (3, "nul\0", 2),
        (3, "ÿ", 2),
        (4, "a\nb", 1),
        (4, "tab\there", 1),
    ]);
    assert_eq!(triples(&top.entries), expected);
    let around = |m: &'static str| {
        h.boards
            .windowed(&name)
            .around(m, day(), 1, AroundOptions::default())
    };
    let pages = futures_util::future::join_all(members.map(around)).await;
    for (member, page) in members.iter().zip(pages) {
        let page = triples(&page.unwrap().unwrap().entries);
        let at = expected.iter().position(|e| e.1 == *member).unwrap();
        let end = (at + 2).min(expected.len());
        assert_eq!(page, expected[at.saturating_sub(1)..end], "{member:?}");
    }
}
