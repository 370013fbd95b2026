//! Hidden members (moderation), on every store and a cluster: a board and its twin take
//! the same random writes (likes and unlikes), removals, boundary retirements and
//! recomputes, and the board hides and shows random members on the way. After every
//! step each window of the board reads as its twin's ranking with the hidden members
//! left out and the ranks closed up (top pages, `around`, ranks of a list, member
//! reads), a hidden member's own read answers its twin's total with `hidden` and no
//! rank; once every member is shown again, the board reads exactly as its twin. On a
//! dense board too, whose tallies must leave hidden totals out, and on max, min and
//! latest boards, whose values are set rather than added, and on a sharded board; a
//! reshard takes each hidden member's mark along.

use std::collections::BTreeSet;
use std::sync::Arc;

use rollboard::{
    Aggregate, AroundOptions, BoardConfig, Error, Event, MemberData, ModerationNote, ScoreRange,
    Span, Ties,
};

use rollboard::jobs::export::{ExportOptions, export_with};
use rollboard::jobs::import::Format;

use crate::support::{Harness, triples, unique};

on_every_store!(
    a_hidden_member_keeps_counting_out_of_every_ranking_and_comes_back_exact,
    a_dense_board_ranks_its_hidden_members_out_of_the_distinct_totals,
    member_data_stays_with_a_hidden_member_while_it_holds_a_total,
    a_write_answers_a_hidden_members_standing_as_holding_none,
    a_reshard_takes_each_hidden_member_along,
    a_max_board_keeps_a_hidden_members_highest_value_apart,
    a_dense_min_board_keeps_a_hidden_members_lowest_value_out_of_the_tallies,
    a_latest_board_keeps_a_hidden_members_newest_value_apart,
    a_sharded_board_hides_a_member_on_its_shard,
    a_moderator_lists_the_hidden_members_and_exports_them_marked,
);

pub(super) const MEMBERS: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];
pub(super) const WINDOWS: [&str; 2] = ["1h", "3h"];

/// No reason, no actor.
fn note() -> ModerationNote {
    ModerationNote::default()
}

/// A small deterministic generator (xorshift), so a failure replays.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// `entries` (rank, member, score) of the twin's whole ranking with `hidden` left out,
/// ranked again as `ties` ranks: what the board must read.
fn without(
    entries: &[(u64, String, i64)],
    hidden: &BTreeSet<String>,
    ties: Ties,
) -> Vec<(u64, String, i64)> {
    let mut out: Vec<(u64, String, i64)> = Vec::new();
    let mut distinct = 0;
    for (_, member, score) in entries.iter().filter(|e| !hidden.contains(&e.1)) {
        let tied = out.last().is_some_and(|last| last.2 == *score);
        distinct += u64::from(!tied);
        let rank = match ties {
            Ties::Dense => distinct,
            Ties::Position => out.len() as u64 + 1,
            Ties::Competition if tied => out.last().unwrap().0,
            Ties::Competition => out.len() as u64 + 1,
        };
        out.push((rank, member.clone(), *score));
    }
    out
}

/// The first page of the top: the ranking `want` with the `pins` (member, position, in
/// the board's order) that are not `hidden` shown at their positions, each with its
/// rank (0: not ranked) and its total in `twin` (`entries`, every ranked member).
fn pinned_page(
    want: &[(u64, String, i64)],
    pins: &[(String, u32)],
    hidden: &BTreeSet<String>,
    twin_totals: &[(String, i64)],
) -> Vec<(u64, String, i64)> {
    let shown: Vec<_> = pins.iter().filter(|(m, _)| !hidden.contains(m)).collect();
    let mut page: Vec<_> = want
        .iter()
        .filter(|e| !shown.iter().any(|(m, _)| *m == e.1))
        .cloned()
        .collect();
    for (member, position) in shown {
        let rank = want.iter().find(|e| e.1 == *member).map_or(0, |e| e.0);
        let total = twin_totals
            .iter()
            .find(|(m, _)| m == member)
            .map_or(0, |t| t.1);
        let at = (*position as usize - 1).min(page.len());
        page.insert(at, (rank, member.clone(), total));
    }
    page
}

/// Checks every read of `board` against `twin`'s with `hidden` left out (and `pins`
/// shown on the first page).
pub(super) async fn check(
    h: &Harness,
    (board, twin): (&str, &str),
    hidden: &BTreeSet<String>,
    pins: &[(String, u32)],
    ties: Ties,
    step: usize,
) {
    for window in WINDOWS {
        let w = Some(Span::parse(window).unwrap());
        let all = h.boards.windowed(twin).top(w, 0, 1000).await.unwrap();
        let want = without(&triples(&all.entries), hidden, ties);
        let mut totals = Vec::new();
        for member in MEMBERS {
            let own = h.boards.windowed(twin).score(member, w).await.unwrap();
            totals.push((member.to_owned(), own.map_or(0, |s| s.score)));
        }
        let first = pinned_page(&want, pins, hidden, &totals);
        let got = h.boards.windowed(board).top(w, 0, 1000).await.unwrap();
        assert_eq!(triples(&got.entries), first, "step {step}, {window}: top");
        // A page from an offset that moves with the step (offsets count visible members),
        // from each end (the bottom lowest first), and a page of the totals from 2 to 4.
        let offset = 1 + step as u64 % 4;
        let page = h.boards.windowed(board).top(w, offset, 2).await.unwrap();
        let later: Vec<_> = want.iter().skip(offset as usize).take(2).cloned().collect();
        assert_eq!(triples(&page.entries), later, "step {step}, {window}: page");
        let bottom = h.boards.windowed(board).bottom(w, offset, 3).await.unwrap();
        let lowest: Vec<_> = want
            .iter()
            .rev()
            .skip(offset as usize)
            .take(3)
            .cloned()
            .collect();
        assert_eq!(
            triples(&bottom.entries),
            lowest,
            "step {step}, {window}: bottom"
        );
        let range = ScoreRange::new(Some(2), Some(4)).unwrap();
        let ranged = h.boards.windowed(board).top_in_range(w, range, 0, 1000);
        let in_range: Vec<_> = want
            .iter()
            .filter(|e| (2..=4).contains(&e.2))
            .cloned()
            .collect();
        assert_eq!(
            triples(&ranged.await.unwrap().entries),
            in_range,
            "step {step}, {window}: totals 2 to 4"
        );
        let ranks = h.boards.windowed(board).ranks(&MEMBERS, w).await.unwrap();
        let twin_ranks = h.boards.windowed(twin).ranks(&MEMBERS, w).await.unwrap();
        let reads = ranks.entries.iter().zip(&twin_ranks.entries);
        for (member, (read, twin_read)) in MEMBERS.iter().zip(reads) {
            // A hidden member reads as holding no total; a visible one keeps its total,
            // ranked or not, and ranks among the visible members.
            let visible = want.iter().find(|e| e.1 == *member);
            let score = if hidden.contains(*member) {
                0
            } else {
                twin_read.score
            };
            assert_eq!(
                read.rank,
                visible.map(|e| e.0),
                "step {step}, {window}: rank of {member}"
            );
            assert_eq!(
                read.score, score,
                "step {step}, {window}: score of {member}"
            );
            let own = h.boards.windowed(board).score(member, w).await.unwrap();
            let twin_own = h.boards.windowed(twin).score(member, w).await.unwrap();
            let hid = hidden.contains(*member);
            match (own, twin_own) {
                (None, None) => assert!(!hid, "step {step}, {window}: {member} hidden"),
                // Hidden, holding nothing here: its read says so, with 0.
                (Some(own), None) if hid => {
                    assert_eq!((own.score, own.rank, own.hidden), (0, None, true));
                }
                (Some(own), Some(twin_own)) => {
                    assert_eq!(
                        own.score, twin_own.score,
                        "step {step}, {window}: total of {member}"
                    );
                    assert_eq!(own.hidden, hid, "step {step}, {window}: {member} hidden");
                    if let Some(seen) = visible {
                        // Ranked strictly below: those after every total equal to its own.
                        let below = want.iter().rev().take_while(|e| e.2 != seen.2).count();
                        let share = below as f64 / want.len() as f64;
                        assert_eq!(own.percentile, share, "step {step}, {window}: {member}");
                    }
                    let rank = if hid { None } else { visible.map(|e| e.0) };
                    assert_eq!(
                        own.rank, rank,
                        "step {step}, {window}: own rank of {member}"
                    );
                }
                (own, twin_own) => {
                    panic!("step {step}, {window}: {member} read {own:?}, twin {twin_own:?}")
                }
            }
            let around = h
                .boards
                .windowed(board)
                .around(member, w, 1, AroundOptions::default())
                .await
                .unwrap();
            let at = want.iter().position(|e| e.1 == *member);
            let expected = at.map(|p| want[p.saturating_sub(1)..(p + 2).min(want.len())].to_vec());
            assert_eq!(
                around.map(|p| triples(&p.entries)),
                expected,
                "step {step}, {window}: around {member}"
            );
        }
    }
}

async fn run(h: Harness, aggregate: Aggregate, ties: Ties, seed: u64) {
    let config = BoardConfig::parse("1h", &WINDOWS).unwrap();
    run_on(h, config.with_aggregate(aggregate).with_ties(ties), seed).await;
}

/// [`run`] on boards of `config`.
async fn run_on(h: Harness, config: BoardConfig, seed: u64) {
    let (aggregate, ties) = (config.aggregate(), config.ties());
    let config = || config.clone();
    let (board, twin) = (unique("hid"), unique("twin"));
    h.boards.create(&board, config()).await.unwrap();
    h.boards.create(&twin, config()).await.unwrap();
    let mut rng = Rng(seed);
    let mut hidden = BTreeSet::new();
    let mut elapsed = 0;
    for step in 0..60 {
        let member = MEMBERS[rng.below(MEMBERS.len() as u64) as usize];
        match rng.below(20) {
            0..=9 => {
                // A like (or a few), or an unlike; on a max, min or latest board a value.
                let delta = [1, 1, 2, 3, -1][rng.below(5) as usize];
                let value = rng.below(9) as i64 - 3;
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
                let changed = h
                    .boards
                    .windowed(&board)
                    .hide(member, &note())
                    .await
                    .unwrap();
                assert_eq!(
                    changed,
                    hidden.insert(member.to_owned()),
                    "step {step}: hide {member}"
                );
            }
            13..=14 => {
                let changed = h
                    .boards
                    .windowed(&board)
                    .show(member, &note())
                    .await
                    .unwrap();
                assert_eq!(changed, hidden.remove(member), "step {step}: show {member}");
            }
            15..=17 => {
                // Time moves on by 20 to 50 minutes, and both boards retire: the board
                // by the many-boards path (on Redis one `retire_small.lua` call when it
                // fits), its twin window by window.
                elapsed += 1200 + 600 * rng.below(6) as i64;
                h.at(elapsed);
                let loaded = Arc::new(h.boards.board(&board).await.unwrap());
                for result in h.boards.retire_many(&[loaded]).await {
                    result.unwrap();
                }
                h.boards.windowed(&twin).retire(None).await.unwrap();
            }
            18 => {
                let w = Span::parse(WINDOWS[rng.below(2) as usize]).unwrap();
                h.boards.windowed(&board).recompute(Some(w)).await.unwrap();
            }
            _ => {
                for b in [&board, &twin] {
                    h.boards.windowed(b).remove_member(member).await.unwrap();
                }
            }
        }
        check(&h, (&board, &twin), &hidden, &[], ties, step).await;
    }
    for member in std::mem::take(&mut hidden) {
        assert!(
            h.boards
                .windowed(&board)
                .show(&member, &note())
                .await
                .unwrap()
        );
    }
    check(&h, (&board, &twin), &hidden, &[], ties, usize::MAX).await;
}

async fn a_hidden_member_keeps_counting_out_of_every_ranking_and_comes_back_exact(h: Harness) {
    run(h, Aggregate::Sum, Ties::Competition, 0x9E37_79B9_7F4A_7C15).await;
}

async fn a_dense_board_ranks_its_hidden_members_out_of_the_distinct_totals(h: Harness) {
    run(h, Aggregate::Sum, Ties::Dense, 0x2545_F491_4F6C_DD1D).await;
}

async fn a_max_board_keeps_a_hidden_members_highest_value_apart(h: Harness) {
    run(h, Aggregate::Max, Ties::Competition, 0x1234_5678_9ABC_DEF1).await;
}

async fn a_dense_min_board_keeps_a_hidden_members_lowest_value_out_of_the_tallies(h: Harness) {
    run(h, Aggregate::Min, Ties::Dense, 0x0F1E_2D3C_4B5A_6978).await;
}

async fn a_latest_board_keeps_a_hidden_members_newest_value_apart(h: Harness) {
    run(
        h,
        Aggregate::Latest,
        Ties::Competition,
        0x5DEE_CE66_D1CE_4E5B,
    )
    .await;
}

async fn a_sharded_board_hides_a_member_on_its_shard(h: Harness) {
    let config = BoardConfig::parse("1h", &WINDOWS).unwrap();
    run_on(h, config.with_shards(3).unwrap(), 0x6A09_E667_F3BC_C908).await;
}

async fn member_data_stays_with_a_hidden_member_while_it_holds_a_total(h: Harness) {
    let board = unique("hiddata");
    let config = BoardConfig::parse("1h", &WINDOWS).unwrap();
    h.boards.create(&board, config).await.unwrap();
    let b = || h.boards.windowed(&board);
    let data = |v: &str| MemberData::parse(&format!("{{\"title\":{v:?}}}")).unwrap();
    b().incr("a", 2, None).await.unwrap();
    assert!(b().hide("a", &note()).await.unwrap());
    // A hidden member holding a total keeps data, set before or while hidden, through a
    // recompute of the largest window (which sweeps the data of members without one).
    b().set_member_data("a", data("first")).await.unwrap();
    b().recompute(Some(Span::parse("3h").unwrap()))
        .await
        .unwrap();
    assert_eq!(b().member_data("a").await.unwrap(), Some(data("first")));
    assert!(b().show("a", &note()).await.unwrap());
    assert_eq!(b().member_data("a").await.unwrap(), Some(data("first")));
    // Hidden, its total back to 0: the data goes, as a shown member's would.
    assert!(b().hide("a", &note()).await.unwrap());
    b().incr("a", -2, None).await.unwrap();
    assert_eq!(b().member_data("a").await.unwrap(), None);
    let refused = b().set_member_data("a", data("again")).await.unwrap_err();
    assert!(
        matches!(refused, Error::MemberNotFound { .. }),
        "{refused:?}"
    );
}

async fn a_write_answers_a_hidden_members_standing_as_holding_none(h: Harness) {
    let board = unique("hidstand");
    h.boards
        .create(&board, BoardConfig::parse("1h", &WINDOWS).unwrap())
        .await
        .unwrap();
    let b = || h.boards.windowed(&board);
    b().incr("a", 4, None).await.unwrap();
    b().incr("b", 2, None).await.unwrap();
    assert!(b().hide("a", &note()).await.unwrap());
    // What a write answers is public: a hidden member reads as holding no total.
    let written = b().incr_standing("a", 1, None).await.unwrap();
    let seen: Vec<_> = written
        .windows
        .iter()
        .map(|w| (w.score, w.rank, w.score_before, w.rank_before))
        .collect();
    assert_eq!(seen, [(0, None, Some(0), None); 2]);
    let written = b().incr_standing("b", 1, None).await.unwrap();
    assert_eq!(written.windows[1].rank, Some(1));
    assert!(b().show("a", &note()).await.unwrap());
    let own = b().score("a", None).await.unwrap().unwrap();
    assert_eq!((own.score, own.rank, own.hidden), (5, Some(1), false));
}

async fn a_reshard_takes_each_hidden_member_along(h: Harness) {
    let board = unique("hidreshard");
    h.boards
        .create(&board, BoardConfig::parse("1h", &WINDOWS).unwrap())
        .await
        .unwrap();
    let b = || h.boards.windowed(&board);
    let members = ["a", "b", "c", "d", "e", "f", "g", "h"];
    for (i, member) in members.iter().enumerate() {
        b().incr(member, 10 - i as i64, None).await.unwrap();
    }
    for member in ["a", "d", "g"] {
        assert!(b().hide(member, &note()).await.unwrap());
    }
    let shown = |hidden: &[&str]| {
        let kept = members
            .iter()
            .enumerate()
            .filter(|(_, m)| !hidden.contains(m));
        let ranked = kept
            .enumerate()
            .map(|(r, (i, m))| (r as u64 + 1, m.to_string(), 10 - i as i64));
        ranked.collect::<Vec<_>>()
    };
    let listed = |hidden: &[(&str, i64)]| {
        let members = hidden.iter().map(|(m, s)| (m.to_string(), Some(*s)));
        members.collect::<Vec<_>>()
    };
    // Across shard counts and back, each hidden member stays hidden with its totals
    // (wherever a move puts it), and the others rank as before.
    for shards in [3, 2, 1] {
        let report = b().reshard(shards).await.unwrap();
        assert_eq!(report.to, shards);
        for window in WINDOWS {
            let w = Some(Span::parse(window).unwrap());
            let top = b().top(w, 0, 10).await.unwrap();
            assert_eq!(
                triples(&top.entries),
                shown(&["a", "d", "g"]),
                "{shards} shards"
            );
            let hidden = b().hidden_members(w).await.unwrap().members;
            let hidden: Vec<_> = hidden.into_iter().map(|m| (m.member, m.score)).collect();
            assert_eq!(
                hidden,
                listed(&[("a", 10), ("d", 7), ("g", 4)]),
                "{shards} shards"
            );
        }
        let own = b().score("d", None).await.unwrap().unwrap();
        assert_eq!((own.score, own.rank, own.hidden), (7, None, true));
        // A like while hidden still counts, on the member's shard.
        b().incr("g", 1, None).await.unwrap();
        b().incr("g", -1, None).await.unwrap();
    }
    assert!(b().show("d", &note()).await.unwrap());
    b().reshard(3).await.unwrap();
    assert!(b().show("a", &note()).await.unwrap());
    let top = b().top(None, 0, 10).await.unwrap();
    assert_eq!(triples(&top.entries), shown(&["g"]));
}

async fn a_moderator_lists_the_hidden_members_and_exports_them_marked(h: Harness) {
    let board = unique("hidlist");
    let config = BoardConfig::parse("1h", &WINDOWS).unwrap();
    h.boards.create(&board, config.clone()).await.unwrap();
    let b = || h.boards.windowed(&board);
    for (member, delta) in [("a", 5), ("b", 3), ("s", 9), ("z", 2)] {
        b().incr(member, delta, None).await.unwrap();
    }
    for member in ["s", "t", "z"] {
        assert!(b().hide(member, &note()).await.unwrap());
    }
    let listed = b().hidden_members(None).await.unwrap();
    assert_eq!(listed.window, Span::parse("1h").unwrap());
    let members: Vec<_> = listed
        .members
        .iter()
        .map(|m| (m.member.as_str(), m.score))
        .collect();
    assert_eq!(members, [("s", Some(9)), ("z", Some(2)), ("t", None)]);

    // The export writes them after the ranking, marked; those holding nothing not at all.
    let export = |format| {
        let options = ExportOptions {
            format,
            hidden: true,
            ..ExportOptions::default()
        };
        let boards = &h.boards;
        let board = &board;
        async move {
            let mut out = Vec::new();
            let report = export_with(boards, board, &options, &mut out)
                .await
                .unwrap();
            assert_eq!((report.entries, report.hidden), (2, 2));
            String::from_utf8(out).unwrap()
        }
    };
    assert_eq!(
        export(Format::Json).await,
        concat!(
            "{\"rank\":1,\"member\":\"a\",\"score\":5}\n",
            "{\"rank\":2,\"member\":\"b\",\"score\":3}\n",
            "{\"member\":\"s\",\"score\":9,\"hidden\":true}\n",
            "{\"member\":\"z\",\"score\":2,\"hidden\":true}\n",
        )
    );
    assert_eq!(
        export(Format::Csv).await,
        "rank,member,score,hidden\n1,a,5,\n2,b,3,\n,s,9,true\n,z,2,true\n"
    );

    // A min board lists its own values (stored negated).
    let min = unique("hidlistmin");
    h.boards
        .create(&min, config.with_aggregate(Aggregate::Min))
        .await
        .unwrap();
    let m = || h.boards.windowed(&min);
    let values = [
        Event::value("a", 4),
        Event::value("s", -2),
        Event::value("s", 7),
    ];
    m().incr_batch(&values).await.unwrap();
    assert!(m().hide("s", &note()).await.unwrap());
    let listed = m().hidden_members(None).await.unwrap();
    assert_eq!(listed.members[0].score, Some(-2));
    assert_eq!(listed.members.len(), 1);
}
