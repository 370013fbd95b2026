//! Movement in reads (`with=movement`) on every store and a cluster: a watched board
//! takes random likes, unlikes, retirements, removals and hides, one step a second, and
//! each watched top is noted after every step. Then, for every step noted, the top read
//! with its movement since that step gives each member inside the watched top the rank
//! it had then (`None`: outside the top then), and nothing to a member below it. The
//! newest changes read newest first page back through what `changes` reads oldest first.

use std::collections::BTreeMap;

use rollboard::{BoardConfig, ChangeCause, ChangeType, ModerationNote, Span, Watch};

use super::hidden::{MEMBERS, Rng, WINDOWS};
use crate::support::{Harness, START, unique};

/// Each watched window's top: member → rank.
type Tops = BTreeMap<Span, BTreeMap<String, u64>>;

on_every_store!(
    movement_gives_each_watched_member_its_rank_at_any_earlier_step,
    recent_changes_page_back_newest_first,
);

async fn movement_gives_each_watched_member_its_rank_at_any_earlier_step(h: Harness) {
    let (hour, three) = (Span::parse("1h").unwrap(), Span::parse("3h").unwrap());
    let tops = [(hour, 3), (three, 4)];
    let watches = tops.map(|(w, n)| Watch::new(w, n).unwrap()).to_vec();
    let config = BoardConfig::parse("1h", &WINDOWS)
        .unwrap()
        .with_watch(watches)
        .unwrap();
    let board = unique("movement");
    h.boards.create(&board, config).await.unwrap();
    let b = h.boards.windowed(&board);
    let mut rng = Rng(0x5851_F42D_4C95_7F2D);
    // Per step: its time (unix ms) and each watched top then.
    let mut noted: Vec<(i64, Tops)> = Vec::new();
    let mut elapsed = 0;
    for _ in 0..60 {
        elapsed += match rng.below(10) {
            0 => 1200 + 600 * rng.below(4) as i64,
            _ => 1,
        };
        h.at(elapsed);
        let member = MEMBERS[rng.below(MEMBERS.len() as u64) as usize];
        match rng.below(12) {
            0..=8 => {
                let delta = [1, 1, 2, 3, -1, -2][rng.below(6) as usize];
                b.incr(member, delta, None).await.unwrap();
            }
            9 => {
                b.remove_member(member).await.unwrap();
            }
            10 => {
                b.hide(member, &ModerationNote::default()).await.unwrap();
            }
            _ => {
                b.show(member, &ModerationNote::default()).await.unwrap();
            }
        }
        b.retire(None).await.unwrap();
        let mut then = BTreeMap::new();
        for (w, n) in tops {
            let page = b.top(Some(w), 0, u64::from(n)).await.unwrap();
            let ranks = page.entries.into_iter().map(|e| (e.member, e.rank));
            then.insert(w, ranks.collect());
        }
        noted.push(((START + elapsed) * 1000, then));
    }
    let mut compared = 0;
    for (since, then) in &noted {
        for (w, n) in tops {
            let page = b.top(Some(w), 0, 8).await.unwrap();
            let page = b.with_movement(page, *since).await.unwrap();
            for e in &page.entries {
                let movement = e.movement.map(|m| m.was);
                if e.rank > u64::from(n) {
                    assert_eq!(movement, None, "below the top: {e:?}");
                    continue;
                }
                let was = then[&w].get(&e.member).copied();
                if movement != Some(was) {
                    let all = b.changes(None, 1000).await.unwrap().changes;
                    for c in all {
                        eprintln!(
                            "{} {:?} {} {} r{:?} f{:?} {:?} at {}",
                            c.id,
                            c.kind,
                            c.member,
                            c.window,
                            c.rank,
                            c.from,
                            c.cause,
                            c.at - START * 1000
                        );
                    }
                    for (t, th) in &noted {
                        eprintln!("{} {:?}", t - START * 1000, th);
                    }
                }
                assert_eq!(movement, Some(was), "{w} since {since}: {e:?}");
                compared += usize::from(was != Some(e.rank));
            }
        }
    }
    // Many members stood elsewhere (or outside the top) at an earlier step.
    assert!(compared >= 60, "{compared} movements");
    // A window not watched is refused, saying so.
    let unwatched = BoardConfig::parse("1h", &WINDOWS).unwrap();
    let other = unique("unwatched");
    h.boards.create(&other, unwatched).await.unwrap();
    let o = h.boards.windowed(&other);
    let page = o.top(Some(hour), 0, 3).await.unwrap();
    let err = o.with_movement(page, 0).await.unwrap_err();
    assert_eq!(err.code(), "invalid_query", "{err}");
    assert!(err.to_string().contains("is not watched"), "{err}");
}

async fn recent_changes_page_back_newest_first(h: Harness) {
    let hour = Span::parse("1h").unwrap();
    let config = BoardConfig::parse("1h", &WINDOWS)
        .unwrap()
        .with_watch(vec![Watch::new(hour, 3).unwrap()])
        .unwrap();
    let board = unique("recent");
    h.boards.create(&board, config).await.unwrap();
    let b = h.boards.windowed(&board);
    for (i, member) in MEMBERS.iter().enumerate() {
        b.incr(member, 1 + i as i64, None).await.unwrap();
    }
    let oldest_first: Vec<String> = b
        .changes(None, 1000)
        .await
        .unwrap()
        .changes
        .into_iter()
        .map(|c| c.id)
        .collect();
    // Each of 8 members enters at rank 1 and moves the others down; from the 4th on,
    // the 3rd leaves.
    assert_eq!(oldest_first.len(), 1 + 2 + 3 + 5 * 4);
    let mut newest_first = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let page = b.recent_changes(before.as_deref(), 5).await.unwrap();
        assert_eq!(page.board, board);
        let done = page.changes.len() < 5;
        before = page.changes.last().map(|c| c.id.clone()).or(before);
        newest_first.extend(page.changes.into_iter().map(|c| c.id));
        if done {
            break;
        }
    }
    newest_first.reverse();
    assert_eq!(newest_first, oldest_first);
    // A trim records its changes as caused by the trim: below h and g, f goes first, then
    // e (which entered at 3 as f left), and so on; a, removed last, leaves last.
    h.at(5);
    b.trim(Some(hour), 2).await.unwrap();
    let newest = b.recent_changes(None, 1).await.unwrap().changes;
    let c = &newest[0];
    let row = (c.kind, c.member.as_str(), c.from, c.cause, c.at);
    let at = (START + 5) * 1000;
    assert_eq!(row, (ChangeType::Left, "a", Some(3), ChangeCause::Trim, at));
    let err = b.recent_changes(None, 1001).await.unwrap_err();
    assert_eq!(err.code(), "invalid_query", "{err}");
}
