//! Watched tops and their changes, on every store and a cluster: a watched board takes
//! random likes, unlikes, removals, trims, boundary retirements, recomputes, hides and shows
//! (and, gated, the review gate's holds and decisions), and its watches change on the
//! way. After every step a reader that applied each change read since the last step to
//! the tops it held reads exactly what `top?limit=N` answers of each watched window,
//! ranks included (ties by competition, dense or position), with nothing missing,
//! repeated or out of order. One scripted run checks every field of the changes a few
//! writes, a retirement, a hide and a watch change record, and a board keeping few
//! changes refuses a read after one it trimmed. A stream of changes follows them as they
//! are recorded, and resumes after an id.

use std::collections::BTreeMap;

use rollboard::{
    BoardConfig, Change, ChangeCause, ChangeType, ChangesKept, Decision, ModerationNote,
    ReviewPolicy, Rollboard, Span, Ties, Watch,
};

use super::hidden::{MEMBERS, Rng, WINDOWS};
use crate::support::{Harness, START, unique};

on_every_store!(
    replaying_the_changes_rebuilds_every_watched_top_by_competition,
    replaying_the_changes_rebuilds_every_watched_top_dense,
    replaying_the_changes_rebuilds_every_watched_top_by_position_under_a_gate,
    each_change_says_who_moved_where_why_and_who_passed_whom,
    a_read_after_trimmed_changes_is_refused,
    a_change_stream_follows_the_changes_as_they_are_recorded,
);

/// A reader's copy of the watched tops: per window, member → rank.
pub(super) type Tops = BTreeMap<Span, BTreeMap<String, u64>>;

/// Applies `changes` to `tops` as a reader does, checking each against what it holds.
pub(super) fn apply(tops: &mut Tops, changes: &[Change], step: usize) {
    for c in changes {
        let top = tops.entry(c.window).or_default();
        let member = c.member.clone();
        match c.kind {
            ChangeType::Entered => {
                let rank = c.rank.expect("an entered change has a rank");
                assert_eq!(top.insert(member, rank), None, "step {step}: {c:?}");
            }
            ChangeType::Left => assert_eq!(top.remove(&member), c.from, "step {step}: {c:?}"),
            ChangeType::Moved => {
                assert_eq!(c.rank, c.to, "step {step}: {c:?}");
                let rank = c.to.expect("a moved change has a rank");
                assert_eq!(top.insert(member, rank), c.from, "step {step}: {c:?}");
            }
        }
    }
}

/// Reads every change after `after` (in pages of 7), checking the ids increase.
pub(super) async fn read_changes(
    boards: &Rollboard,
    board: &str,
    after: &mut Option<String>,
) -> Vec<Change> {
    let mut all = Vec::new();
    loop {
        let page = boards
            .windowed(board)
            .changes(after.as_deref(), 7)
            .await
            .unwrap();
        for c in &page.changes {
            let id = |text: &str| {
                let (ms, n) = text.split_once('-').unwrap();
                (ms.parse::<u64>().unwrap(), n.parse::<u64>().unwrap())
            };
            assert!(
                after.as_deref().is_none_or(|a| id(a) < id(&c.id)),
                "{after:?} then {c:?}"
            );
            *after = Some(c.id.clone());
        }
        let done = page.changes.len() < 7;
        all.extend(page.changes);
        if done {
            return all;
        }
    }
}

/// The watches of a step: each window watched or not, to a top of 1 to 4.
fn watches(rng: &mut Rng) -> Vec<Watch> {
    let mut out = Vec::new();
    for window in WINDOWS {
        if rng.below(4) > 0 {
            let top = 1 + rng.below(4) as u32;
            out.push(Watch::new(Span::parse(window).unwrap(), top).unwrap());
        }
    }
    out
}

async fn run(h: Harness, ties: Ties, gate: Option<u32>, seed: u64) {
    let mut rng = Rng(seed);
    let config = BoardConfig::parse("1h", &WINDOWS)
        .unwrap()
        .with_ties(ties)
        .with_review(gate.map(|k| ReviewPolicy::new(k).unwrap()));
    let watched = |w: Vec<Watch>| config.clone().with_watch(w).unwrap();
    let board = unique("watched");
    let mut current = watches(&mut rng);
    h.boards
        .create(&board, watched(current.clone()))
        .await
        .unwrap();
    let note = ModerationNote::default;
    let (mut tops, mut after) = (Tops::new(), None);
    let (mut elapsed, mut seen, mut trims) = (0, 0, 0);
    for step in 0..80 {
        let member = MEMBERS[rng.below(MEMBERS.len() as u64) as usize];
        let b = h.boards.windowed(&board);
        match rng.below(24) {
            0..=11 => {
                let delta = [1, 1, 2, 3, -1, -2][rng.below(6) as usize];
                b.incr(member, delta, None).await.unwrap();
            }
            12..=14 => {
                elapsed += 1200 + 600 * rng.below(6) as i64;
                h.at(elapsed);
                b.retire(None).await.unwrap();
            }
            15 => {
                let w = Span::parse(WINDOWS[rng.below(2) as usize]).unwrap();
                b.recompute(Some(w)).await.unwrap();
            }
            16 => {
                b.remove_member(member).await.unwrap();
            }
            17 => {
                b.hide(member, &note()).await.unwrap();
            }
            18 => {
                b.show(member, &note()).await.unwrap();
            }
            19..=21 if gate.is_some() => {
                b.review(member, Decision::Allow, &note()).await.unwrap();
            }
            _ => {
                current = watches(&mut rng);
                h.boards
                    .create(&board, watched(current.clone()))
                    .await
                    .unwrap();
            }
        }
        if step % 20 == 19 {
            // A trim to the top 1 of either window.
            let w = Span::parse(WINDOWS[step / 20 % 2]).unwrap();
            trims += b.trim(Some(w), 1).await.unwrap().removed;
        }
        let changes = read_changes(&h.boards, &board, &mut after).await;
        seen += changes.len();
        apply(&mut tops, &changes, step);
        for window in WINDOWS {
            let w = Span::parse(window).unwrap();
            let top = match current.iter().find(|x| x.window() == w) {
                Some(watch) => {
                    let page = b.top(Some(w), 0, u64::from(watch.top())).await.unwrap();
                    page.entries
                        .iter()
                        .map(|e| (e.member.clone(), e.rank))
                        .collect()
                }
                None => BTreeMap::new(),
            };
            let held = tops.get(&w).cloned().unwrap_or_default();
            assert_eq!(held, top, "step {step}, {window}: the replayed top");
        }
    }
    // The run moved the tops a lot, trims among the causes (a gated board's public
    // ranking stays too short for its trims to remove anyone).
    assert!(seen >= 40, "{seen} changes");
    assert!(gate.is_some() || trims > 0, "{trims} members trimmed");
}

async fn replaying_the_changes_rebuilds_every_watched_top_by_competition(h: Harness) {
    run(h, Ties::Competition, None, 0x2545_F491_4F6C_DD1D).await;
}

async fn replaying_the_changes_rebuilds_every_watched_top_dense(h: Harness) {
    run(h, Ties::Dense, None, 0x9E37_79B9_7F4A_7C15).await;
}

async fn replaying_the_changes_rebuilds_every_watched_top_by_position_under_a_gate(h: Harness) {
    run(h, Ties::Position, Some(2), 0xD1B5_4A32_D192_ED03).await;
}

/// A change as compared here: type, member, rank, score, from, to, passed, cause.
type Row = (
    ChangeType,
    String,
    Option<u64>,
    i64,
    Option<u64>,
    Option<u64>,
    Vec<String>,
    ChangeCause,
);

fn rows(changes: &[Change]) -> Vec<Row> {
    let row = |c: &Change| {
        let c = c.clone();
        (
            c.kind, c.member, c.rank, c.score, c.from, c.to, c.passed, c.cause,
        )
    };
    changes.iter().map(row).collect()
}

/// The row of a change: `to` is the rank of a move.
fn row(
    kind: ChangeType,
    member: &str,
    rank: Option<u64>,
    score: i64,
    from: Option<u64>,
    passed: &[&str],
    cause: ChangeCause,
) -> Row {
    let to = (kind == ChangeType::Moved).then_some(rank).flatten();
    let passed = passed.iter().map(|x| x.to_string()).collect();
    (
        kind,
        member.to_owned(),
        rank,
        score,
        from,
        to,
        passed,
        cause,
    )
}

async fn each_change_says_who_moved_where_why_and_who_passed_whom(h: Harness) {
    use ChangeCause::{Hide, Retire, Watch as ByWatch, Write};
    use ChangeType::{Entered, Left, Moved};
    let hour = Span::parse("1h").unwrap();
    let config = BoardConfig::parse("1h", &WINDOWS).unwrap();
    let top3 = vec![Watch::new(hour, 3).unwrap()];
    let board = unique("scripted");
    h.boards
        .create(&board, config.clone().with_watch(top3.clone()).unwrap())
        .await
        .unwrap();
    let b = h.boards.windowed(&board);
    let mut after = None;
    for (member, delta) in [("a", 3), ("b", 2), ("c", 1), ("d", 1)] {
        b.incr(member, delta, None).await.unwrap();
    }
    // d ties c at 1 and ranks after it (ties by member): outside the top 3.
    let changes = read_changes(&h.boards, &board, &mut after).await;
    assert_eq!(
        rows(&changes),
        vec![
            row(Entered, "a", Some(1), 3, None, &[], Write),
            row(Entered, "b", Some(2), 2, None, &[], Write),
            row(Entered, "c", Some(3), 1, None, &[], Write),
        ]
    );
    assert!(changes.iter().all(|c| c.window == hour));
    b.incr("d", 4, None).await.unwrap();
    b.incr("b", -2, None).await.unwrap();
    assert_eq!(
        rows(&read_changes(&h.boards, &board, &mut after).await),
        vec![
            row(Left, "c", None, 1, Some(3), &[], Write),
            row(Entered, "d", Some(1), 5, None, &[], Write),
            row(Moved, "a", Some(2), 3, Some(1), &["d"], Write),
            row(Moved, "b", Some(3), 2, Some(2), &["d"], Write),
            // b's unlikes take it to 0: it leaves, c comes back.
            row(Left, "b", None, 0, Some(3), &[], Write),
            row(Entered, "c", Some(3), 1, None, &[], Write),
        ]
    );
    b.hide("d", &ModerationNote::default()).await.unwrap();
    assert_eq!(
        rows(&read_changes(&h.boards, &board, &mut after).await),
        vec![
            row(Left, "d", None, 0, Some(1), &[], Hide),
            row(Moved, "a", Some(1), 3, Some(2), &["d"], Hide),
            row(Moved, "c", Some(2), 1, Some(3), &["d"], Hide),
        ]
    );
    // The hour's slot leaves the window at START + 1h: every member leaves at once.
    h.at(3600);
    b.retire(None).await.unwrap();
    let retired = read_changes(&h.boards, &board, &mut after).await;
    assert_eq!(
        rows(&retired),
        vec![
            row(Left, "a", None, 0, Some(1), &[], Retire),
            row(Left, "c", None, 0, Some(2), &[], Retire),
        ]
    );
    assert!(
        retired.iter().all(|c| c.at == (START + 3600) * 1000),
        "{retired:?}"
    );
    // A new watch lists its top as entered, a watch removed lists it as left.
    b.incr("e", 2, None).await.unwrap();
    let three = Span::parse("3h").unwrap();
    let both = vec![Watch::new(hour, 3).unwrap(), Watch::new(three, 2).unwrap()];
    h.boards
        .create(&board, config.clone().with_watch(both).unwrap())
        .await
        .unwrap();
    h.boards
        .create(
            &board,
            config
                .clone()
                .with_watch(vec![Watch::new(three, 2).unwrap()])
                .unwrap(),
        )
        .await
        .unwrap();
    let changes = read_changes(&h.boards, &board, &mut after).await;
    assert_eq!(
        rows(&changes),
        vec![
            row(Entered, "e", Some(1), 2, None, &[], Write),
            row(Entered, "a", Some(1), 3, None, &[], ByWatch),
            row(Entered, "e", Some(2), 2, None, &[], ByWatch),
            row(Left, "e", None, 2, Some(1), &[], ByWatch),
        ]
    );
    let windows: Vec<Span> = changes.iter().map(|c| c.window).collect();
    assert_eq!(windows, [hour, three, three, hour]);
}

async fn a_read_after_trimmed_changes_is_refused(h: Harness) {
    let hour = Span::parse("1h").unwrap();
    let kept = ChangesKept::new(3, Span::parse("1d").unwrap()).unwrap();
    let config = BoardConfig::parse("1h", &WINDOWS)
        .unwrap()
        .with_watch(vec![Watch::new(hour, 5).unwrap()])
        .unwrap()
        .with_changes_kept(Some(kept));
    let board = unique("trimmed");
    h.boards.create(&board, config).await.unwrap();
    let b = h.boards.windowed(&board);
    for member in MEMBERS.iter().take(5) {
        b.incr(member, 1, None).await.unwrap();
    }
    // Five members entered; the newest three changes are kept.
    let kept = b.changes(None, 100).await.unwrap().changes;
    let members: Vec<&str> = kept.iter().map(|c| c.member.as_str()).collect();
    assert_eq!(members, ["c", "d", "e"]);
    let later = b.changes(Some(&kept[0].id), 100).await.unwrap().changes;
    let listed: Vec<&str> = later.iter().map(|c| c.member.as_str()).collect();
    assert_eq!(listed, ["d", "e"], "after a kept change");
    let err = b.changes(Some("0-1"), 100).await.unwrap_err();
    assert_eq!(err.code(), "changes_trimmed", "{err}");
    let err = b.changes(Some("x"), 100).await.unwrap_err();
    assert_eq!(err.code(), "invalid_query", "{err}");
    let err = b.changes(None, 0).await.unwrap_err();
    assert_eq!(err.code(), "invalid_query", "{err}");
    // A watched board is not resharded: a sharded board cannot be watched.
    let err = b.reshard(2).await.unwrap_err();
    assert_eq!(err.code(), "invalid_config", "{err}");
    assert!(err.to_string().contains("watches its top"), "{err}");
    // A board that cannot be watched says so.
    let sharded = BoardConfig::parse("1h", &WINDOWS)
        .unwrap()
        .with_shards(2)
        .unwrap();
    let err = sharded
        .with_watch(vec![Watch::new(hour, 5).unwrap()])
        .unwrap_err();
    assert_eq!(err.code(), "invalid_config", "{err}");
    let err = BoardConfig::parse("1h", &WINDOWS)
        .unwrap()
        .with_watch(vec![Watch::new(Span::parse("2h").unwrap(), 5).unwrap()])
        .unwrap_err();
    assert!(
        err.to_string().contains("not one of the board's windows"),
        "{err}"
    );
}

async fn a_change_stream_follows_the_changes_as_they_are_recorded(h: Harness) {
    use futures_util::StreamExt;
    let hour = Span::parse("1h").unwrap();
    let config = BoardConfig::parse("1h", &WINDOWS)
        .unwrap()
        .with_watch(vec![Watch::new(hour, 2).unwrap()])
        .unwrap();
    let board = unique("streamed");
    h.boards.create(&board, config).await.unwrap();
    let b = h.boards.windowed(&board);
    b.incr("a", 2, None).await.unwrap();
    let poll = std::time::Duration::from_millis(5);
    let mut stream = Box::pin(b.change_stream(None, poll));
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(
        (first.kind, first.member.as_str(), first.rank),
        (ChangeType::Entered, "a", Some(1))
    );
    // Nothing more yet: the stream waits, then yields what a later write records.
    let waiting = tokio::time::timeout(std::time::Duration::from_millis(50), stream.next()).await;
    assert!(waiting.is_err(), "{waiting:?}");
    b.incr("b", 3, None).await.unwrap();
    let mut next = Vec::new();
    for _ in 0..2 {
        let c = stream.next().await.unwrap().unwrap();
        next.push((c.kind, c.member, c.rank));
    }
    assert_eq!(
        next,
        [
            (ChangeType::Entered, "b".to_owned(), Some(1)),
            (ChangeType::Moved, "a".to_owned(), Some(2))
        ]
    );
    // A stream resumed after the first change yields the same two.
    let mut resumed = Box::pin(b.change_stream(Some(first.id.clone()), poll));
    let again = resumed.next().await.unwrap().unwrap();
    assert_eq!(
        (again.kind, again.member.as_str()),
        (ChangeType::Entered, "b")
    );
    // A stream of a board that does not exist yields the error and ends.
    let mut missing = Box::pin(
        h.boards
            .windowed(&unique("nowhere"))
            .change_stream(None, poll),
    );
    let err = missing.next().await.unwrap().unwrap_err();
    assert_eq!(err.code(), "board_not_found", "{err}");
    assert!(missing.next().await.is_none());
}
