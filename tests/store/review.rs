//! The review gate, on every store and a cluster: a gated board and an ungated twin take
//! the same random likes, unlikes, removals and boundary retirements; on the way the
//! gated board hides and shows members, allows and denies them, pins and unpins them, is
//! recomputed, and has its gate's rank changed and the gate removed and set again.
//! After every step each window of the gated board reads as its twin's ranking without the hidden members and
//! those the gate must hold by its definition (an unreviewed member ranking at or over
//! the K-th allowed public member of some window), ranks closed up, the pins shown on the
//! first page (every read of `hidden.rs`: pages from both ends, a score range, `around`,
//! ranks of a list, member reads with their percentiles), and its review queue
//! lists exactly the held members with the ranks they would have. On sum boards of each
//! tie rule, and on max, min and latest boards, whose writes set values.

use std::collections::BTreeSet;

use rollboard::{
    Aggregate, BoardConfig, Decision, Event, ModerationNote, ReviewPolicy, Span, Ties, Timestamp,
};

use super::hidden::{MEMBERS, Rng, WINDOWS, check};
use super::resharding::{cut_while_moving, sharded_beside};
use crate::support::{Harness, START, triples, unique};

on_every_store!(
    the_gate_holds_exactly_the_unreviewed_members_over_the_bar,
    the_gate_holds_by_position_on_a_board_ranking_ties_by_position,
    the_gate_holds_by_dense_rank_on_a_dense_board,
    a_dense_gate_bars_at_the_kth_distinct_allowed_total,
    the_gate_holds_the_highest_unreviewed_values_on_a_max_board,
    the_gate_holds_the_lowest_unreviewed_values_on_a_dense_min_board,
    the_gate_holds_the_newest_unreviewed_values_on_a_latest_board,
    the_gate_holds_across_the_shards_of_a_sharded_board_resharded_on_the_way,
    the_gate_holds_by_position_across_the_shards_of_a_sharded_board,
    a_sharded_boards_held_events_are_each_delivered_once,
    likes_at_once_on_every_shard_leave_the_gate_exact_once_they_answer,
    a_gate_across_shards_with_few_allowed_members_reads_as_on_one_shard,
);

/// What the moderator did: allowed and hidden members, and the gate's rank (none: off).
struct Moderation {
    allowed: BTreeSet<String>,
    hidden: BTreeSet<String>,
    k: Option<usize>,
}

/// Whether `(score, member)` ranks at or over `bar` (none: every ranked entry does);
/// `sign` -1 on a min board, whose lower values rank first.
fn over_bar(
    bar: Option<&(u64, String, i64)>,
    (score, member): (i64, &str),
    ties: Ties,
    sign: i64,
) -> bool {
    bar.is_none_or(|(_, m, s)| {
        sign * score > sign * s || (score == *s && (ties != Ties::Position || member <= m.as_str()))
    })
}

/// The members the gate must hold, from the twin's rankings `windows` (each the whole
/// ranking, in order) by the gate's definition.
fn must_hold(
    windows: &[Vec<(u64, String, i64)>],
    m: &Moderation,
    ties: Ties,
    sign: i64,
) -> BTreeSet<String> {
    let Some(k) = m.k else {
        return BTreeSet::new();
    };
    let mut held = BTreeSet::new();
    for entries in windows {
        let public = |e: &&(u64, String, i64)| !m.hidden.contains(&e.1);
        let mut allowed: Vec<&(u64, String, i64)> = entries
            .iter()
            .filter(public)
            .filter(|e| m.allowed.contains(&e.1))
            .collect();
        // A dense rank of K or better: at least the K-th distinct allowed total.
        if ties == Ties::Dense {
            allowed.dedup_by_key(|e| e.2);
        }
        let bar = allowed.get(k - 1).copied();
        for (_, member, score) in entries.iter().filter(public) {
            if !m.allowed.contains(member) && over_bar(bar, (*score, member), ties, sign) {
                held.insert(member.clone());
            }
        }
    }
    held
}

async fn run(h: Harness, aggregate: Aggregate, ties: Ties, seed: u64) {
    run_sharded(h, aggregate, ties, 1, seed).await;
}

/// [`run`] with the gated board in `shards` shards (the twin in one); with more than
/// one, the board is also resharded to 1 to 3 shards now and then.
async fn run_sharded(h: Harness, aggregate: Aggregate, ties: Ties, shards: u32, seed: u64) {
    let config = BoardConfig::parse("1h", &WINDOWS)
        .unwrap()
        .with_aggregate(aggregate)
        .with_ties(ties);
    let mut count = shards;
    let gated = |k: Option<usize>, count: u32| {
        let policy = k.map(|k| ReviewPolicy::new(k as u32).unwrap());
        let config = config.clone().with_shards(count).unwrap();
        config.with_review(policy)
    };
    let (board, twin) = (unique("gated"), unique("twin"));
    let sign = aggregate.sign();
    let mut m = Moderation {
        allowed: BTreeSet::new(),
        hidden: BTreeSet::new(),
        k: Some(2),
    };
    h.boards.create(&board, gated(m.k, count)).await.unwrap();
    h.boards.create(&twin, config.clone()).await.unwrap();
    let note = ModerationNote::default;
    // A sharded board's shards hold allowed members from the start, so the bar across
    // the shards often differs from a shard's own.
    if shards > 1 {
        for member in &MEMBERS[..4] {
            let gate = h.boards.windowed(&board);
            assert!(gate.review(member, Decision::Allow, &note()).await.unwrap());
            m.allowed.insert(member.to_string());
        }
    }
    let mut rng = Rng(seed);
    let mut elapsed = 0;
    // How often the gate held someone, and let someone go that nobody allowed.
    let (mut holding, mut let_go) = (0, 0);
    let mut before = BTreeSet::new();
    // The pins, in the board's order (by position, a new one after those of its position).
    let mut pins: Vec<(String, u32)> = Vec::new();
    let until = Timestamp::from_unix_seconds(START + 30 * 86_400).unwrap();
    for step in 0..if shards > 1 { 120 } else { 70 } {
        let member = MEMBERS[rng.below(MEMBERS.len() as u64) as usize];
        let gate = h.boards.windowed(&board);
        match rng.below(26) {
            0..=9 => {
                // A like (or a few), or an unlike; on a max, min or latest board a value.
                let delta = [1, 1, 2, 3, -1][rng.below(5) as usize];
                let value = if aggregate == Aggregate::Sum {
                    0
                } else {
                    rng.below(9) as i64 - 3
                };
                for b in [&board, &twin] {
                    let w = h.boards.windowed(b);
                    if aggregate == Aggregate::Sum {
                        w.incr(member, delta, None).await.unwrap();
                    } else {
                        w.incr_batch(&[Event::value(member, value)]).await.unwrap();
                    }
                }
            }
            10..=12 => {
                let changed = gate.review(member, Decision::Allow, &note()).await.unwrap();
                let new = m.allowed.insert(member.to_owned());
                assert_eq!(
                    changed,
                    new || before.contains(member),
                    "step {step}: allow"
                );
            }
            13 => {
                let changed = gate.review(member, Decision::Deny, &note()).await.unwrap();
                let removed = m.allowed.remove(member);
                let hid = m.hidden.insert(member.to_owned());
                assert_eq!(changed, removed || hid, "step {step}: deny");
            }
            14 => {
                let changed = gate.hide(member, &note()).await.unwrap();
                assert_eq!(
                    changed,
                    m.hidden.insert(member.to_owned()),
                    "step {step}: hide"
                );
            }
            15 => {
                let changed = gate.show(member, &note()).await.unwrap();
                assert_eq!(changed, m.hidden.remove(member), "step {step}: show");
            }
            16..=18 => {
                elapsed += 1200 + 600 * rng.below(6) as i64;
                h.at(elapsed);
                for b in [&board, &twin] {
                    h.boards.windowed(b).retire(None).await.unwrap();
                }
            }
            19 => {
                let w = Span::parse(WINDOWS[rng.below(2) as usize]).unwrap();
                gate.recompute(Some(w)).await.unwrap();
            }
            22 => {
                let position = 1 + rng.below(3) as u32;
                gate.pin(member, position, until, &note()).await.unwrap();
                pins.retain(|(m, _)| m != member);
                pins.push((member.to_owned(), position));
                pins.sort_by_key(|(_, p)| *p);
            }
            23 => {
                let had = gate.unpin(member, &note()).await.unwrap();
                assert_eq!(
                    had,
                    pins.iter().any(|(m, _)| m == member),
                    "step {step}: unpin"
                );
                pins.retain(|(m, _)| m != member);
            }
            20..=21 => {
                // The gate's rank changes, or the gate goes, or comes back.
                m.k = [None, Some(1), Some(2), Some(3)][rng.below(4) as usize];
                h.boards.create(&board, gated(m.k, count)).await.unwrap();
            }
            24 if shards > 1 => {
                count = 1 + rng.below(3) as u32;
                gate.reshard(count).await.unwrap();
            }
            _ => {
                for b in [&board, &twin] {
                    h.boards.windowed(b).remove_member(member).await.unwrap();
                }
            }
        }
        let mut rankings = Vec::new();
        for window in WINDOWS {
            let w = Some(Span::parse(window).unwrap());
            let all = h.boards.windowed(&twin).top(w, 0, 1000).await.unwrap();
            rankings.push(triples(&all.entries));
        }
        let held = must_hold(&rankings, &m, ties, sign);
        holding += usize::from(!held.is_empty());
        let_go += before
            .difference(&held)
            .filter(|x| !m.allowed.contains(*x))
            .count();
        before = held.clone();
        let out: BTreeSet<String> = m.hidden.union(&held).cloned().collect();
        check(&h, (&board, &twin), &out, &pins, ties, step).await;
        for (window, entries) in WINDOWS.iter().zip(&rankings) {
            let w = Some(Span::parse(window).unwrap());
            let queue = gate.review_queue(w).await.unwrap();
            assert_eq!(queue.above_rank, m.k.map(|k| k as u32), "step {step}");
            let listed: BTreeSet<String> = queue.held.iter().map(|e| e.member.clone()).collect();
            assert_eq!(listed, held, "step {step}, {window}: the queue");
            let public: Vec<_> = entries.iter().filter(|e| !out.contains(&e.1)).collect();
            for e in &queue.held {
                let own = entries.iter().find(|t| t.1 == e.member);
                // Its total there, ranked or not (the ranking lists positive ones only).
                let total = h.boards.windowed(&twin).score(&e.member, w).await.unwrap();
                assert_eq!(
                    e.score,
                    total.map(|t| t.score),
                    "step {step}, {window}: {e:?}"
                );
                let rank = own.map(|(_, member, score)| {
                    let ahead = public.iter().filter(|(_, m2, s2)| {
                        sign * s2 > sign * score
                            || (ties == Ties::Position && s2 == score && m2 < member)
                    });
                    let mut ahead: Vec<i64> = ahead.map(|e| e.2).collect();
                    if ties == Ties::Dense {
                        ahead.dedup();
                    }
                    ahead.len() as u64 + 1
                });
                assert_eq!(
                    e.rank, rank,
                    "step {step}, {window}: would-be rank of {e:?}"
                );
            }
            let hidden = gate.hidden_members(w).await.unwrap();
            let listed: BTreeSet<String> =
                hidden.members.iter().map(|e| e.member.clone()).collect();
            assert_eq!(listed, m.hidden, "step {step}, {window}: the hidden list");
        }
    }
    // The run exercised the gate both ways.
    assert!(
        holding >= 20 && let_go >= 5,
        "held in {holding} steps, let go {let_go}"
    );
}

async fn the_gate_holds_exactly_the_unreviewed_members_over_the_bar(h: Harness) {
    run(h, Aggregate::Sum, Ties::Competition, 0x5DEE_CE66_D1CE_4E5B).await;
}

async fn the_gate_holds_by_position_on_a_board_ranking_ties_by_position(h: Harness) {
    run(h, Aggregate::Sum, Ties::Position, 0x7F4A_7C15_9E37_79B9).await;
}

async fn the_gate_holds_by_dense_rank_on_a_dense_board(h: Harness) {
    run(h, Aggregate::Sum, Ties::Dense, 0x9E37_79B9_7F4A_7C15).await;
}

async fn the_gate_holds_the_highest_unreviewed_values_on_a_max_board(h: Harness) {
    run(h, Aggregate::Max, Ties::Competition, 0x2545_F491_4F6C_DD1D).await;
}

async fn the_gate_holds_the_lowest_unreviewed_values_on_a_dense_min_board(h: Harness) {
    run(h, Aggregate::Min, Ties::Dense, 0x0F1E_2D3C_4B5A_6978).await;
}

async fn the_gate_holds_the_newest_unreviewed_values_on_a_latest_board(h: Harness) {
    run(h, Aggregate::Latest, Ties::Position, 0x1234_5678_9ABC_DEF1).await;
}

/// On a dense board "rank 2" is the dense rank: with a and b allowed at 10 and c at 5,
/// an unreviewed 7 would rank 2nd (behind one distinct total) and is held, an
/// unreviewed 4 would rank 3rd and is not; the queue says 2.
async fn a_dense_gate_bars_at_the_kth_distinct_allowed_total(h: Harness) {
    let config = BoardConfig::parse("1h", &WINDOWS)
        .unwrap()
        .with_ties(Ties::Dense)
        .with_review(Some(ReviewPolicy::new(2).unwrap()));
    let board = unique("dense-gate");
    h.boards.create(&board, config).await.unwrap();
    let b = || h.boards.windowed(&board);
    for member in ["a", "b", "c"] {
        b().review(member, Decision::Allow, &ModerationNote::default())
            .await
            .unwrap();
    }
    for (member, total) in [("a", 10), ("b", 10), ("c", 5), ("x", 7), ("y", 4)] {
        b().incr(member, total, None).await.unwrap();
    }
    let top = b().top(None, 0, 10).await.unwrap();
    let expected = [(1, "a", 10), (1, "b", 10), (2, "c", 5), (3, "y", 4)];
    let expected: Vec<(u64, String, i64)> = expected
        .iter()
        .map(|(r, m, s)| (*r, m.to_string(), *s))
        .collect();
    assert_eq!(triples(&top.entries), expected);
    let queue = b().review_queue(None).await.unwrap();
    let held: Vec<_> = queue
        .held
        .iter()
        .map(|e| (e.member.as_str(), e.score, e.rank))
        .collect();
    assert_eq!(held, [("x", Some(7), Some(2))]);
}

async fn the_gate_holds_across_the_shards_of_a_sharded_board_resharded_on_the_way(h: Harness) {
    run_sharded(
        h,
        Aggregate::Sum,
        Ties::Competition,
        3,
        0x5851_F42D_4C95_7F2D,
    )
    .await;
}

async fn the_gate_holds_by_position_across_the_shards_of_a_sharded_board(h: Harness) {
    run_sharded(h, Aggregate::Sum, Ties::Position, 2, 0x9E37_79B9_7F4A_7C16).await;
}

/// A decision waits while a reshard moves members: the reshard carries each allowed
/// member's mark to its new shard, which a decision meanwhile would race. Once it ends,
/// the members allowed before pass the gate on their new shards. On Redis, whose
/// reshard can be cut while it moves members.
#[tokio::test]
async fn a_decision_on_a_board_being_resharded_waits() {
    let h = Harness::redis().await;
    let (_, board) = sharded_beside(&h, "gated-move", 11).await;
    let b = || h.boards.windowed(&board);
    // The top 10 allowed: some of them move to the third shard.
    let top = b().top(None, 0, 10).await.unwrap();
    let note = ModerationNote::default;
    for e in &top.entries {
        b().review(&e.member, Decision::Allow, &note())
            .await
            .unwrap();
    }
    let gated = BoardConfig::parse("1h", &["1h", "3h"])
        .unwrap()
        .with_shards(2)
        .unwrap()
        .with_review(Some(ReviewPolicy::new(10).unwrap()));
    h.boards.create(&board, gated).await.unwrap();
    let at = cut_while_moving(&h, &board, 60).await;
    let err = b().review("x", Decision::Allow, &note()).await.unwrap_err();
    assert_eq!(err.code(), "board_busy", "{err}");
    h.at(at + 31);
    b().reshard(3).await.unwrap();
    // Each allowed member ranks where it did (no write since); held, only unreviewed
    // members tied with the 10th (rank 10 too, competition ranks).
    let after = b().top(None, 0, 10).await.unwrap();
    assert_eq!(triples(&after.entries), triples(&top.entries));
    let queue = b().review_queue(None).await.unwrap();
    let tenth = top.entries[9].score;
    let tied = |e: &rollboard::HeldMember| e.score == Some(tenth) && e.rank == Some(10);
    assert!(queue.held.iter().all(tied), "{queue:?}");
}

/// A sharded board's held events are its shards' merged, oldest first (by the time of
/// each shard's stream): delivering some
/// moves the cursor of each one's shard, and the next read answers exactly the others.
async fn a_sharded_boards_held_events_are_each_delivered_once(h: Harness) {
    let config = BoardConfig::parse("1h", &WINDOWS)
        .unwrap()
        .with_shards(3)
        .unwrap()
        .with_review(Some(ReviewPolicy::new(1).unwrap()));
    let board = unique("held-events");
    h.boards.create(&board, config).await.unwrap();
    let b = || h.boards.windowed(&board);
    // No member allowed: each newcomer is held, once.
    for (k, member) in MEMBERS.iter().enumerate() {
        h.at(k as i64);
        b().incr(member, 1, None).await.unwrap();
    }
    assert_eq!(b().held_cursor(None).await.unwrap(), None);
    let events = b().held_events(None, 100).await.unwrap();
    // Each once (events of one millisecond on Redis's clock come shard by shard).
    let mut members: Vec<&str> = events.iter().map(|e| e.member.as_str()).collect();
    members.sort_unstable();
    assert_eq!(members, MEMBERS);
    assert!(events.iter().all(|e| e.board == board), "{events:?}");
    for event in &events[..3] {
        b().held_cursor(Some(&event.id)).await.unwrap();
    }
    let cursor = b().held_cursor(None).await.unwrap();
    let rest = b().held_events(cursor.as_deref(), 100).await.unwrap();
    assert_eq!(rest, events[3..]);
}

/// Likes at once on every shard of a gated board, each followed by a publication of the
/// bar across the shards: once they have all answered, the gate holds exactly what its
/// definition says.
async fn likes_at_once_on_every_shard_leave_the_gate_exact_once_they_answer(h: Harness) {
    let config = BoardConfig::parse("1h", &WINDOWS).unwrap();
    let gated = config
        .clone()
        .with_shards(3)
        .unwrap()
        .with_review(Some(ReviewPolicy::new(2).unwrap()));
    let (board, twin) = (unique("racing"), unique("twin"));
    h.boards.create(&board, gated).await.unwrap();
    h.boards.create(&twin, config).await.unwrap();
    let mut m = Moderation {
        allowed: BTreeSet::new(),
        hidden: BTreeSet::new(),
        k: Some(2),
    };
    for member in &MEMBERS[..3] {
        let gate = h.boards.windowed(&board);
        gate.review(member, Decision::Allow, &ModerationNote::default())
            .await
            .unwrap();
        m.allowed.insert(member.to_string());
    }
    let mut rng = Rng(0x2F0E_1A7C_33D5_92B1);
    for round in 0..20 {
        let deltas: Vec<i64> = MEMBERS
            .iter()
            .map(|_| [1, 2, 3, -1][rng.below(4) as usize])
            .collect();
        let likes = MEMBERS.iter().zip(&deltas).map(|(member, delta)| {
            let b = h.boards.windowed(&board);
            async move { b.incr(member, *delta, None).await }
        });
        for answer in futures_util::future::join_all(likes).await {
            answer.unwrap();
        }
        for (member, delta) in MEMBERS.iter().zip(&deltas) {
            h.boards
                .windowed(&twin)
                .incr(member, *delta, None)
                .await
                .unwrap();
        }
        let mut rankings = Vec::new();
        for window in WINDOWS {
            let w = Some(Span::parse(window).unwrap());
            let all = h.boards.windowed(&twin).top(w, 0, 1000).await.unwrap();
            rankings.push(triples(&all.entries));
        }
        let held = must_hold(&rankings, &m, Ties::Competition, 1);
        check(&h, (&board, &twin), &held, &[], Ties::Competition, round).await;
    }
}

/// Each shard keeps the bars across the shards of the highest-numbered publication it
/// took: a publication read before another took a lower number, and arriving after it,
/// changes nothing. Here every shard has taken one numbered far ahead that names no bar
/// (as one read when nobody was allowed), so the publication after a later like, whose
/// bar is the allowed member's, is refused, and the shards gate alone: on the shard
/// without an allowed member, every member is held. On Redis, whose keys the test
/// writes.
#[tokio::test]
async fn a_shard_refuses_bars_numbered_below_those_it_took() {
    let h = Harness::redis().await;
    let config = BoardConfig::parse("1h", &WINDOWS)
        .unwrap()
        .with_shards(2)
        .unwrap()
        .with_review(Some(ReviewPolicy::new(1).unwrap()));
    let board = unique("numbered");
    h.boards.create(&board, config).await.unwrap();
    let b = || h.boards.windowed(&board);
    // 40 members over both shards, one allowed and leading.
    let members: Vec<String> = (0..40).map(|i| format!("m{i}")).collect();
    for member in &members {
        b().incr(member, 1, None).await.unwrap();
    }
    b().review("m0", Decision::Allow, &ModerationNote::default())
        .await
        .unwrap();
    b().incr("m0", 10, None).await.unwrap();
    // With the bar across the shards (m0's 11), nobody else is held.
    assert!(b().review_queue(None).await.unwrap().held.is_empty());
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let pattern = format!("board_{{{board}*}}:bars");
    let bars: Vec<String> = ::redis::cmd("KEYS")
        .arg(&pattern)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(bars.len(), 2, "{bars:?}");
    for key in &bars {
        let exts: Vec<String> = ::redis::cmd("HKEYS")
            .arg(key)
            .query_async::<Vec<String>>(&mut raw)
            .await
            .unwrap()
            .into_iter()
            .filter(|f| f.ends_with(":ext"))
            .collect();
        let mut set = ::redis::cmd("HSET");
        set.arg(key).arg("epoch").arg(1_000_000_000_000u64);
        for field in exts {
            set.arg(field).arg("-");
        }
        let _: () = set.query_async(&mut raw).await.unwrap();
    }
    for member in &members[1..] {
        b().incr(member, 1, None).await.unwrap();
    }
    // The shard without m0 holds all of its members (they would rank 2nd, but it gates
    // alone); m0's shard holds none (m0 is its bar).
    let held = b().review_queue(None).await.unwrap().held;
    assert!(!held.is_empty() && held.len() < 39, "{held:?}");
    assert!(held.iter().all(|e| e.rank == Some(2)), "{held:?}");
}

/// A board of 3 shards and one of a single shard, gated alike (K 3), with 600 members
/// of whom the first 3 and 10 ranking 401st to 410th are allowed, read alike: every entry
/// of every window, and the queue. A shard holding fewer than 3 of the first 3 finds its
/// 3rd allowed member below its first 100 public ones: it reads its allowed members by
/// their totals rather than walking on.
async fn a_gate_across_shards_with_few_allowed_members_reads_as_on_one_shard(h: Harness) {
    let config = BoardConfig::parse("1h", &WINDOWS)
        .unwrap()
        .with_ties(Ties::Position)
        .with_review(Some(ReviewPolicy::new(3).unwrap()));
    let (sharded, one) = (unique("few-allowed"), unique("one"));
    let sharded_config = config.clone().with_shards(3).unwrap();
    h.boards.create(&sharded, sharded_config).await.unwrap();
    h.boards.create(&one, config).await.unwrap();
    let members: Vec<String> = (0..600).map(|i| format!("p{i}")).collect();
    let note = ModerationNote::default;
    for b in [&sharded, &one] {
        let board = || h.boards.windowed(b);
        for member in members[..3].iter().chain(&members[400..410]) {
            board()
                .review(member, Decision::Allow, &note())
                .await
                .unwrap();
        }
        let events: Vec<Event> = members
            .iter()
            .enumerate()
            .map(|(i, m)| Event::new(m.clone(), 1000 - i as i64))
            .collect();
        board().incr_batch(&events).await.unwrap();
        // With the bar across the shards published, one more like: its publication
        // reads each shard's allowed members past its first 100 public ones.
        board().incr(&members[599], 1, None).await.unwrap();
    }
    for window in WINDOWS {
        let w = Some(Span::parse(window).unwrap());
        let mut reads = Vec::new();
        for b in [&sharded, &one] {
            let top = h.boards.windowed(b).top(w, 0, 1000).await.unwrap();
            let queue = h.boards.windowed(b).review_queue(w).await.unwrap();
            reads.push((triples(&top.entries), queue.held));
        }
        assert_eq!(reads[0], reads[1], "{window}");
        let (top, held) = &reads[0];
        // The 3rd allowed member (p2) is the bar: nobody unreviewed is over it.
        assert_eq!((top.len(), held.len()), (600, 0));
    }
}
