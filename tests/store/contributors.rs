//! Contributors against a brute-force oracle that keeps every event, on every store and
//! a cluster: a board capping each contributor at 2 per member takes random likes and
//! unlikes (with and without a contributor, some late, some under an idempotency key
//! and sent twice), boundary retirements by two retirers at once, member removals and
//! active relayouts. After every step each
//! window's every total equals the oracle's (the events without a contributor in full,
//! plus per contributor their sum inside the window clamped to ±2), each event's
//! `counted` equals what it changed in the largest window, each member's history sums
//! its events per slot, and a contributor's view gives its sum per window and member.

use std::collections::BTreeMap;

use rollboard::{BoardConfig, Event, Layout, RelayoutOptions, Span, Timestamp};

use super::hidden::{MEMBERS, Rng, WINDOWS};
use crate::support::{Harness, START, unique};

on_every_store!(
    capped_contributions_equal_the_oracle_after_every_step,
    a_board_keeping_contributors_refuses_recompute_and_new_windows,
    a_dropped_board_leaves_no_contribution_behind,
);

const CAP: i64 = 2;
const BY: [&str; 4] = ["u1", "u2", "u3", "u4"];

/// Every accepted event: slot, contributor, member, delta.
#[derive(Default)]
struct Oracle {
    events: Vec<(i64, Option<String>, String, i64)>,
}

impl Oracle {
    /// Each member's total in the window whose slots are those after `cutoff`.
    fn totals(&self, cutoff: i64) -> BTreeMap<String, i64> {
        let mut plain: BTreeMap<String, i64> = BTreeMap::new();
        let mut pairs: BTreeMap<(String, String), i64> = BTreeMap::new();
        for (_, by, member, delta) in self.events.iter().filter(|e| e.0 > cutoff) {
            match by {
                None => *plain.entry(member.clone()).or_default() += delta,
                Some(by) => *pairs.entry((by.clone(), member.clone())).or_default() += delta,
            }
        }
        for ((_, member), sum) in pairs {
            *plain.entry(member).or_default() += sum.clamp(-CAP, CAP);
        }
        plain.retain(|_, total| *total != 0);
        plain
    }

    /// The sum of `by`'s deltas to `member` in the window after `cutoff`.
    fn pair(&self, cutoff: i64, by: &str, member: &str) -> i64 {
        let events = self.events.iter().filter(|e| e.0 > cutoff);
        events
            .filter(|e| e.1.as_deref() == Some(by) && e.2 == member)
            .map(|e| e.3)
            .sum()
    }
}

async fn capped_contributions_equal_the_oracle_after_every_step(h: Harness) {
    let config = BoardConfig::parse("1h", &WINDOWS)
        .unwrap()
        .with_contributor_cap(Some(CAP as u64))
        .unwrap();
    let board = unique("contrib");
    h.boards.create(&board, config.clone()).await.unwrap();
    let b = || h.boards.windowed(&board);
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut oracle = Oracle::default();
    let mut elapsed = 0;
    let (mut counted_checked, mut capped) = (0, 0);
    let mut layout = Layout::Compact;
    for step in 0..120 {
        let now = Timestamp::from_unix_seconds(START + elapsed).unwrap();
        let largest = config.cutoff(WINDOWS.len() - 1, now);
        match rng.below(17) {
            0..=9 => {
                // A batch of one to three events, some late (up to 2h back).
                let mut events = Vec::new();
                for _ in 0..1 + rng.below(3) {
                    let member = MEMBERS[rng.below(4) as usize];
                    let delta = [1, 1, 1, 2, -1, 3][rng.below(6) as usize];
                    let mut event = Event::new(member, delta);
                    if rng.below(4) > 0 {
                        event = event.by(BY[rng.below(BY.len() as u64) as usize]);
                    }
                    if rng.below(3) == 0 {
                        let back = rng.below(7_200) as i64;
                        event =
                            event.at(Timestamp::from_unix_seconds(START + elapsed - back).unwrap());
                    }
                    events.push(event);
                }
                let outcome = if rng.below(3) == 0 {
                    let key = format!("k{step}");
                    let first = b().write_idempotent(&events, &key).await.unwrap();
                    let again = b().write_idempotent(&events, &key).await.unwrap();
                    assert_eq!(first, again, "step {step}: a retry answers the same");
                    first
                } else {
                    b().incr_batch(&events).await.unwrap()
                };
                assert!(outcome.rejected.is_empty(), "step {step}: {outcome:?}");
                let mut counted = outcome.counted.iter();
                for (index, e) in events.iter().enumerate() {
                    let slot = config.slot_start(e.at.unwrap_or(now));
                    let before = e.by.as_ref().map(|by| oracle.pair(largest, by, &e.member));
                    oracle
                        .events
                        .push((slot, e.by.clone(), e.member.clone(), e.delta));
                    let (Some(by), Some(before)) = (&e.by, before) else {
                        continue;
                    };
                    let after = oracle.pair(largest, by, &e.member);
                    let expected = after.clamp(-CAP, CAP) - before.clamp(-CAP, CAP);
                    let c = counted.next().expect("a counted event");
                    assert_eq!(
                        (c.index, c.counted),
                        (index, expected),
                        "step {step}: {e:?}"
                    );
                    counted_checked += 1;
                    capped += usize::from(expected != e.delta);
                }
                assert_eq!(counted.next(), None, "step {step}");
            }
            10..=13 => {
                // Time moves on by 10 to 70 minutes, and the board retires.
                elapsed += 600 + 600 * rng.below(7) as i64;
                h.at(elapsed);
                // Two retirers at once (two replicas): neither retires a pair twice.
                let (one, two) = tokio::join!(b().retire(None), b().retire(None));
                one.unwrap();
                two.unwrap();
            }
            14 => {
                let member = MEMBERS[rng.below(4) as usize];
                b().remove_member(member).await.unwrap();
                oracle.events.retain(|e| e.2 != member);
            }
            15 => {
                // An active relayout to the other layout: it converts the member values
                // of the live slots, never their contributions.
                layout = match layout {
                    Layout::Plain => Layout::Compact,
                    Layout::Compact => Layout::Plain,
                };
                let now = RelayoutOptions {
                    now: true,
                    ..RelayoutOptions::default()
                };
                assert!(b().relayout(layout, now).await.unwrap().complete);
            }
            _ => {
                // A like without a contributor, through the single-event path.
                let member = MEMBERS[rng.below(4) as usize];
                b().incr(member, 1, None).await.unwrap();
                oracle
                    .events
                    .push((config.slot_start(now), None, member.to_owned(), 1));
            }
        }
        let now = Timestamp::from_unix_seconds(START + elapsed).unwrap();
        oracle
            .events
            .retain(|e| e.0 > config.cutoff(WINDOWS.len() - 1, now));
        for (j, window) in WINDOWS.iter().enumerate() {
            let w = Span::parse(window).unwrap();
            let expected = oracle.totals(config.cutoff(j, now));
            let mut read = BTreeMap::new();
            for member in MEMBERS {
                if let Some(s) = b().score(member, Some(w)).await.unwrap() {
                    read.insert(member.to_owned(), s.score);
                }
            }
            assert_eq!(read, expected, "step {step}: window {window}");
            let top = b().top(Some(w), 0, 10).await.unwrap();
            let ranked: Vec<(String, i64)> = top
                .entries
                .into_iter()
                .map(|e| (e.member, e.score))
                .collect();
            let mut positive: Vec<(String, i64)> =
                expected.into_iter().filter(|(_, t)| *t > 0).collect();
            positive.sort_by(|a, b| (b.1, &a.0).cmp(&(a.1, &b.0)));
            assert_eq!(ranked, positive, "step {step}: top of {window}");
        }
        let by = BY[step % BY.len()];
        let named = [board.clone()];
        let view = h.boards.contributions(by, Some(&named)).await.unwrap();
        for (j, window) in view.boards[0].windows.iter().enumerate() {
            let cutoff = config.cutoff(j, now);
            let read: Vec<(&str, i64, i64)> = window
                .members
                .iter()
                .map(|c| (c.member.as_str(), c.contributed, c.counted))
                .collect();
            let mut expected: Vec<(&str, i64, i64)> = MEMBERS[..4]
                .iter()
                .map(|m| (*m, oracle.pair(cutoff, by, m)))
                .filter(|(_, sum)| *sum != 0)
                .map(|(m, sum)| (m, sum, sum.clamp(-CAP, CAP)))
                .collect();
            expected.sort_by(|a, b| (b.1, a.0).cmp(&(a.1, b.0)));
            assert_eq!(
                read, expected,
                "step {step}: {by} in window {}",
                window.window
            );
        }
        let member = MEMBERS[step % 4];
        let history = b().history(member).await.unwrap();
        let mut expected: BTreeMap<i64, i64> = BTreeMap::new();
        for e in oracle.events.iter().filter(|e| e.2 == member) {
            *expected.entry(e.0).or_default() += e.3;
        }
        expected.retain(|_, v| *v != 0);
        let read: BTreeMap<i64, i64> = history.points.iter().map(|p| (p.slot, p.value)).collect();
        assert_eq!(read, expected, "step {step}: history of {member}");
    }
    assert!(
        counted_checked >= 80,
        "{counted_checked} counted events checked"
    );
    assert!(capped >= 10, "{capped} events the cap took some of");
}

async fn a_board_keeping_contributors_refuses_recompute_and_new_windows(h: Harness) {
    let config = || {
        BoardConfig::parse("1h", &WINDOWS)
            .unwrap()
            .with_contributor_cap(Some(1))
            .unwrap()
    };
    let board = unique("contrib-fixed");
    h.boards.create(&board, config()).await.unwrap();
    let error = h.boards.windowed(&board).recompute(None).await.unwrap_err();
    assert_eq!(error.code(), "invalid_config");
    assert_eq!(
        error.to_string(),
        "invalid board config: the board keeps contributors (\"per_contributor_member\"), \
         which a recompute does not rebuild yet: its totals are kept exact by its writes and \
         retirement"
    );
    let wider = BoardConfig::parse("1h", &["1h", "3h", "6h"])
        .unwrap()
        .with_contributor_cap(Some(1))
        .unwrap();
    let error = h.boards.create(&board, wider).await.unwrap_err();
    assert_eq!(error.code(), "board_conflict");
}

async fn a_dropped_board_leaves_no_contribution_behind(h: Harness) {
    let config = BoardConfig::parse("1h", &WINDOWS)
        .unwrap()
        .with_contributor_cap(Some(1))
        .unwrap();
    let board = unique("contrib-drop");
    h.boards.create(&board, config).await.unwrap();
    let late = Timestamp::from_unix_seconds(START - 3600).unwrap();
    let events = [
        Event::new("a", 1).by("u1"),
        Event::new("a", 1).by("u2"),
        Event::new("b", 2),
        Event::new("b", 1).by("u1").at(late),
    ];
    let outcome = h.boards.windowed(&board).incr_batch(&events).await.unwrap();
    assert_eq!(outcome.accepted, 4);
    h.boards.drop_board(&board).await.unwrap();
    let Some(redis) = &h.redis else {
        return;
    };
    let mut raw = redis.raw().await;
    let left: Vec<String> = ::redis::cmd("KEYS")
        .arg(format!("*{{{board}}}*"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(left, Vec::<String>::new());
}
