//! Contributors against a brute-force oracle that keeps every event, on every store and
//! a cluster: a board capping each contributor per member, one giving each a budget, and
//! one with both take random likes and unlikes (with and without a contributor, some
//! late, some under an idempotency key and sent twice, some written after a boundary
//! before the retirer runs), boundary retirements by two retirers at once, member
//! removals and active relayouts. The oracle fixes each event's admitted part when it is
//! written (a like: at most the budget less what the contributor's admitted likes use
//! inside the largest window; an unlike: at most what its admitted events gave the member
//! there; a member's removal takes its events out of every window, not out of the budget
//! they used). After every step each window's every total equals the oracle's (the events
//! without a contributor in full, plus per contributor their admitted sum inside the
//! window clamped to the cap), each event's `counted` equals what it changed in the
//! largest window, each member's history sums its events per slot, a contributor's view
//! gives its sums per window and member, and a member's its contributors' (the first two).

use std::collections::BTreeMap;

use rollboard::{BoardConfig, Event, Layout, RelayoutOptions, Span, Timestamp};

use super::hidden::{MEMBERS, Rng, WINDOWS};
use crate::support::{Harness, START, ts, unique};

on_every_store!(
    capped_contributions_equal_the_oracle_after_every_step,
    budgeted_contributions_equal_the_oracle_after_every_step,
    capped_and_budgeted_contributions_equal_the_oracle_after_every_step,
    half_hour_slots_contributions_equal_the_oracle_after_every_step,
    a_board_keeping_contributors_refuses_recompute_and_new_windows,
    a_dropped_board_leaves_no_contribution_behind,
    a_quarantined_contributors_write_answers_as_if_it_were_not,
    a_quarantined_writers_standing_is_its_unquarantined_twins,
    a_partial_retraction_keeps_a_sum_that_passes_through_zero,
    unlikes_past_the_cap_count_down_to_minus_the_cap_only,
    a_like_after_a_boundary_before_the_retirer_meets_the_previous_slot,
);

/// A `1h` board of [`WINDOWS`] capping each contributor at 1 per member.
fn capped_at_one() -> BoardConfig {
    BoardConfig::parse("1h", &WINDOWS)
        .unwrap()
        .with_contributor_cap(Some(1))
        .unwrap()
}

/// The contributors of a board: named after it, so that a quarantine (of every board
/// of the store) touches no other test's.
fn contributors(board: &str) -> [String; 4] {
    [1, 2, 3, 4].map(|i| format!("{board}:u{i}"))
}

/// What each event of a write counted, by index.
fn counted(outcome: &rollboard::BatchOutcome) -> Vec<(usize, i64)> {
    let counted = outcome.counted.iter();
    counted.map(|c| (c.index, c.counted)).collect()
}

/// A board's caps: per member and per contributor.
#[derive(Clone, Copy)]
struct Caps {
    member: Option<i64>,
    budget: Option<i64>,
}

impl Caps {
    fn clamp(&self, sum: i64) -> i64 {
        self.member.map_or(sum, |cap| sum.clamp(-cap, cap))
    }
}

/// An accepted event.
struct Accepted {
    slot: i64,
    by: Option<String>,
    member: String,
    delta: i64,
    /// The part its contributor's budget admitted.
    admitted: i64,
    /// Its member was removed: it counts nowhere, but the budget it used stays used.
    removed: bool,
}

/// Every accepted event.
struct Oracle {
    caps: Caps,
    events: Vec<Accepted>,
    /// The board's contributors.
    by: [String; 4],
    /// Those quarantined: their events count nowhere (their replies as ever).
    held: std::collections::BTreeSet<String>,
}

impl Oracle {
    /// Each member's total in the window whose slots are those after `cutoff`.
    fn totals(&self, cutoff: i64) -> BTreeMap<String, i64> {
        let mut plain: BTreeMap<String, i64> = BTreeMap::new();
        let mut pairs: BTreeMap<(String, String), i64> = BTreeMap::new();
        for e in self.live(cutoff) {
            match &e.by {
                None => *plain.entry(e.member.clone()).or_default() += e.admitted,
                Some(by) if self.held.contains(by) => {}
                Some(by) => *pairs.entry((by.clone(), e.member.clone())).or_default() += e.admitted,
            }
        }
        for ((_, member), sum) in pairs {
            *plain.entry(member).or_default() += self.caps.clamp(sum);
        }
        plain.retain(|_, total| *total != 0);
        plain
    }

    /// The sums of `by`'s deltas to `member` in the window after `cutoff`: all of them,
    /// and what was admitted.
    fn pair(&self, cutoff: i64, by: &str, member: &str) -> (i64, i64) {
        let events = self.live(cutoff);
        let events = events.filter(|e| e.by.as_deref() == Some(by) && e.member == member);
        events.fold((0, 0), |(d, a), e| (d + e.delta, a + e.admitted))
    }

    /// The events in the window after `cutoff` whose member was not removed.
    fn live(&self, cutoff: i64) -> impl Iterator<Item = &Accepted> {
        self.events
            .iter()
            .filter(move |e| e.slot > cutoff && !e.removed)
    }

    /// What a view shows of `by`'s sums (all, admitted) to a member: the part that counts,
    /// none while it is quarantined.
    fn shown(&self, by: &str, (sum, admitted): (i64, i64)) -> (i64, i64) {
        match self.held.contains(by) {
            true => (sum, 0),
            false => (sum, self.caps.clamp(admitted)),
        }
    }

    /// Records an event written when the largest window's slots were those after
    /// `cutoff`; returns the part admitted.
    fn write(&mut self, cutoff: i64, slot: i64, e: &Event) -> i64 {
        let admitted = match (&e.by, self.caps.budget) {
            (Some(by), Some(budget)) => {
                let inside = self.events.iter().filter(|x| x.slot > cutoff);
                let used: i64 = inside
                    .filter(|x| x.by.as_deref() == Some(by.as_str()) && x.admitted > 0)
                    .map(|x| x.admitted)
                    .sum();
                let given = self.pair(cutoff, by, &e.member).1;
                if e.delta > 0 {
                    e.delta.min((budget - used).max(0))
                } else {
                    e.delta.max(-given.max(0))
                }
            }
            _ => e.delta,
        };
        self.events.push(Accepted {
            slot,
            by: e.by.clone(),
            member: e.member.clone(),
            delta: e.delta,
            admitted,
            removed: false,
        });
        admitted
    }
}

async fn capped_contributions_equal_the_oracle_after_every_step(h: Harness) {
    let caps = Caps {
        member: Some(2),
        budget: None,
    };
    contributions_equal_the_oracle(h, caps, "1h", 0x2545_F491_4F6C_DD1D).await;
}

async fn budgeted_contributions_equal_the_oracle_after_every_step(h: Harness) {
    let caps = Caps {
        member: None,
        budget: Some(4),
    };
    contributions_equal_the_oracle(h, caps, "1h", 0x9E37_79B9_7F4A_7C15).await;
}

async fn capped_and_budgeted_contributions_equal_the_oracle_after_every_step(h: Harness) {
    let caps = Caps {
        member: Some(1),
        budget: Some(3),
    };
    contributions_equal_the_oracle(h, caps, "1h", 0xD1B5_4A32_D192_ED03).await;
}

/// Window 1 two slots long: the Redis store keeps its pair sums (a window one slot long
/// reads them from the slot's stage, as the three above do).
async fn half_hour_slots_contributions_equal_the_oracle_after_every_step(h: Harness) {
    let caps = Caps {
        member: Some(2),
        budget: Some(3),
    };
    contributions_equal_the_oracle(h, caps, "30m", 0x5851_F42D_4C95_7F2D).await;
}

/// A batch of one to three events, some late (up to 2h back), written at `elapsed`:
/// checks what each counted against the oracle; returns how many counted something
/// other than their delta.
async fn write_batch(
    h: &Harness,
    board: &str,
    config: &BoardConfig,
    oracle: &mut Oracle,
    rng: &mut Rng,
    (step, elapsed): (usize, i64),
) -> usize {
    let b = h.boards.windowed(board);
    let now = Timestamp::from_unix_seconds(START + elapsed).unwrap();
    let largest = config.cutoff(WINDOWS.len() - 1, now);
    let mut events = Vec::new();
    for _ in 0..1 + rng.below(3) {
        let member = MEMBERS[rng.below(4) as usize];
        let delta = [1, 1, 1, 2, -1, 3][rng.below(6) as usize];
        let mut event = Event::new(member, delta);
        if rng.below(4) > 0 {
            event = event.by(oracle.by[rng.below(4) as usize].clone());
        }
        if rng.below(3) == 0 {
            let back = rng.below(7_200) as i64;
            event = event.at(Timestamp::from_unix_seconds(START + elapsed - back).unwrap());
        }
        events.push(event);
    }
    let outcome = if rng.below(3) == 0 {
        let key = format!("k{step}");
        let first = b.write_idempotent(&events, &key).await.unwrap();
        let again = b.write_idempotent(&events, &key).await.unwrap();
        assert_eq!(first, again, "step {step}: a retry answers the same");
        first
    } else {
        b.incr_batch(&events).await.unwrap()
    };
    assert!(outcome.rejected.is_empty(), "step {step}: {outcome:?}");
    let mut counted = outcome.counted.iter();
    let mut capped = 0;
    for (index, e) in events.iter().enumerate() {
        let slot = config.slot_start(e.at.unwrap_or(now));
        let before =
            e.by.as_ref()
                .map(|by| oracle.pair(largest, by, &e.member).1);
        oracle.write(largest, slot, e);
        let (Some(by), Some(before)) = (&e.by, before) else {
            continue;
        };
        let after = oracle.pair(largest, by, &e.member).1;
        let expected = oracle.caps.clamp(after) - oracle.caps.clamp(before);
        let c = counted.next().expect("a counted event");
        assert_eq!(
            (c.index, c.counted),
            (index, expected),
            "step {step}: {e:?}"
        );
        capped += usize::from(expected != e.delta);
    }
    assert_eq!(counted.next(), None, "step {step}");
    capped
}

async fn contributions_equal_the_oracle(h: Harness, caps: Caps, slot: &str, seed: u64) {
    let config = BoardConfig::parse(slot, &WINDOWS)
        .unwrap()
        .with_contributor_cap(caps.member.map(|c| c as u64))
        .unwrap()
        .with_contributor_budget(caps.budget.map(|c| c as u64))
        .unwrap();
    let board = unique("contrib");
    h.boards.create(&board, config.clone()).await.unwrap();
    let b = || h.boards.windowed(&board);
    let mut rng = Rng(seed);
    let mut oracle = Oracle {
        caps,
        events: Vec::new(),
        by: contributors(&board),
        held: Default::default(),
    };
    let mut elapsed = 0;
    let (mut batches, mut capped, mut retracted, mut quarantines) = (0, 0, 0, 0);
    let mut layout = Layout::Compact;
    for step in 0..120 {
        match rng.below(20) {
            0..=9 => {
                capped +=
                    write_batch(&h, &board, &config, &mut oracle, &mut rng, (step, elapsed)).await;
                batches += 1;
            }
            10..=13 => {
                // Time moves on by 10 to 70 minutes, and the board retires, sometimes
                // after a batch written before the retirer ran.
                elapsed += 600 + 600 * rng.below(7) as i64;
                h.at(elapsed);
                if rng.below(2) == 0 {
                    let at = (step, elapsed);
                    capped += write_batch(&h, &board, &config, &mut oracle, &mut rng, at).await;
                }
                // Two retirers at once (two replicas): neither retires a pair twice.
                let (one, two) = tokio::join!(b().retire(None), b().retire(None));
                one.unwrap();
                two.unwrap();
            }
            14 => {
                let member = MEMBERS[rng.below(4) as usize];
                b().remove_member(member).await.unwrap();
                for e in oracle.events.iter_mut().filter(|e| e.member == member) {
                    e.removed = true;
                }
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
            16 => {
                // A contributor's contributions taken back, all of them or those from a
                // slot on (that of `since`, up to 3h back).
                let by = oracle.by[rng.below(4) as usize].clone();
                let by = by.as_str();
                let since = (rng.below(2) == 0).then(|| {
                    let back = rng.below(3 * 3_600) as i64;
                    Timestamp::from_unix_seconds(START + elapsed - back).unwrap()
                });
                let from = since.map_or(i64::MIN, |t| config.slot_start(t));
                let taken: Vec<&Accepted> = oracle
                    .live(i64::MIN)
                    .filter(|e| e.by.as_deref() == Some(by) && e.slot >= from)
                    .collect();
                let pairs: std::collections::BTreeSet<(i64, &str)> =
                    taken.iter().map(|e| (e.slot, e.member.as_str())).collect();
                let deltas: u64 = taken.iter().map(|e| e.delta.unsigned_abs()).sum();
                let named = [board.clone()];
                let done = h.boards.retract(by, since, Some(&named)).await.unwrap();
                assert_eq!(done.state, rollboard::RetractionState::Done, "step {step}");
                assert_eq!(done.boards_left, 0, "step {step}");
                // Stage parts net out within a slot: at most one contribution per
                // (slot, member), at most |delta| per event.
                assert!(
                    done.contributions <= pairs.len() as u64,
                    "step {step}: {done:?}"
                );
                assert!(done.events <= deltas, "step {step}: {done:?}");
                assert_eq!(
                    done.boards,
                    u64::from(done.contributions > 0 || done.events > 0)
                );
                retracted += done.contributions;
                oracle
                    .events
                    .retain(|e| e.by.as_deref() != Some(by) || e.slot < from);
            }
            17 | 18 => {
                // A contributor quarantined, or released: on every board of the store.
                let by = oracle.by[rng.below(2) as usize].clone();
                let done = if oracle.held.contains(&by) {
                    oracle.held.remove(&by);
                    h.boards.release(&by).await.unwrap()
                } else {
                    oracle.held.insert(by.clone());
                    h.boards.quarantine(&by).await.unwrap()
                };
                assert!(done.changed, "step {step}: {done:?}");
                assert_eq!(done.quarantined, oracle.held.contains(&by), "step {step}");
                quarantines += 1;
            }
            _ => {
                // A like without a contributor, through the single-event path.
                let member = MEMBERS[rng.below(4) as usize];
                b().incr(member, 1, None).await.unwrap();
                let now = Timestamp::from_unix_seconds(START + elapsed).unwrap();
                oracle.write(0, config.slot_start(now), &Event::new(member, 1));
            }
        }
        let now = Timestamp::from_unix_seconds(START + elapsed).unwrap();
        oracle
            .events
            .retain(|e| e.slot > config.cutoff(WINDOWS.len() - 1, now));
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
        let by = oracle.by[step % 4].as_str();
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
                .filter(|(_, sums)| *sums != (0, 0))
                .map(|(m, sums)| {
                    let (sum, counted) = oracle.shown(by, sums);
                    (m, sum, counted)
                })
                .collect();
            expected.sort_by(|a, b| (b.1, a.0).cmp(&(a.1, b.0)));
            assert_eq!(
                read, expected,
                "step {step}: {by} in window {}",
                window.window
            );
        }
        let member = MEMBERS[step % 4];
        let view = h
            .boards
            .member_contributors(&board, member, 2)
            .await
            .unwrap();
        for (j, window) in view.windows.iter().enumerate() {
            let cutoff = config.cutoff(j, now);
            let mut all: Vec<(&str, i64, i64)> = oracle
                .by
                .iter()
                .map(|by| (by.as_str(), oracle.pair(cutoff, by, member)))
                .filter(|(_, sums)| *sums != (0, 0))
                .map(|(by, sums)| {
                    let (sum, counted) = oracle.shown(by, sums);
                    (by, sum, counted)
                })
                .collect();
            all.sort_by(|a, b| (b.1, a.0).cmp(&(a.1, b.0)));
            let (contributed, counted) = all.iter().fold((0, 0), |(d, c), e| (d + e.1, c + e.2));
            assert_eq!(
                (window.contributors, window.contributed, window.counted),
                (all.len() as u64, contributed, counted),
                "step {step}: contributors of {member} in window {}",
                window.window
            );
            all.truncate(2);
            let top: Vec<(&str, i64, i64)> = window
                .top
                .iter()
                .map(|c| (c.by.as_str(), c.contributed, c.counted))
                .collect();
            assert_eq!(top, all, "step {step}: contributors of {member}");
        }
        let history = b().history(member).await.unwrap();
        let mut expected: BTreeMap<i64, i64> = BTreeMap::new();
        for e in oracle.live(i64::MIN).filter(|e| e.member == member) {
            *expected.entry(e.slot).or_default() += e.delta;
        }
        expected.retain(|_, v| *v != 0);
        let read: BTreeMap<i64, i64> = history.points.iter().map(|p| (p.slot, p.value)).collect();
        assert_eq!(read, expected, "step {step}: history of {member}");
    }
    assert!(batches >= 40, "{batches} batches written");
    assert!(capped >= 10, "{capped} events the caps took some of");
    assert!(retracted >= 5, "{retracted} contributions taken back");
    assert!(quarantines >= 4, "{quarantines} quarantines and releases");
    for by in std::mem::take(&mut oracle.held) {
        h.boards.release(&by).await.unwrap();
    }
    // Once every slot has left the largest window, nothing of the contributors stays.
    h.at(elapsed + 2 * 86_400);
    b().retire(None).await.unwrap();
    let named = [board.clone()];
    for by in &oracle.by {
        let view = h.boards.contributions(by, Some(&named)).await.unwrap();
        let windows = &view.boards[0].windows;
        assert!(windows.iter().all(|w| w.members.is_empty()), "{view:?}");
    }
    let Some(redis) = &h.redis else {
        return;
    };
    let mut raw = redis.raw().await;
    let mut left: Vec<String> = ::redis::cmd("KEYS")
        .arg(format!("*{{{board}}}*"))
        .query_async(&mut raw)
        .await
        .unwrap();
    left.retain(|k| k.contains("ctr") || k.contains("slot_"));
    assert_eq!(left, Vec::<String>::new());
}

async fn a_board_keeping_contributors_refuses_recompute_and_new_windows(h: Harness) {
    let board = unique("contrib-fixed");
    h.boards.create(&board, capped_at_one()).await.unwrap();
    let error = h.boards.windowed(&board).recompute(None).await.unwrap_err();
    assert_eq!(error.code(), "invalid_config");
    assert_eq!(
        error.to_string(),
        "invalid board config: the board keeps contributors (\"per_contributor_member\" or \
         \"per_contributor\"), which a recompute does not rebuild yet: its totals are kept \
         exact by its writes and retirement"
    );
    let wider = BoardConfig::parse("1h", &["1h", "3h", "6h"])
        .unwrap()
        .with_contributor_cap(Some(1))
        .unwrap();
    let error = h.boards.create(&board, wider).await.unwrap_err();
    assert_eq!(error.code(), "board_conflict");
}

async fn a_dropped_board_leaves_no_contribution_behind(h: Harness) {
    let config = capped_at_one().with_contributor_budget(Some(1)).unwrap();
    let board = unique("contrib-drop");
    h.boards.create(&board, config).await.unwrap();
    let late = Timestamp::from_unix_seconds(START - 3600).unwrap();
    // u1's second like is over its budget: refused, and kept as such.
    let events = [
        Event::new("a", 1).by("u1"),
        Event::new("a", 1).by("u2"),
        Event::new("b", 2),
        Event::new("b", 1).by("u1").at(late),
    ];
    let outcome = h.boards.windowed(&board).incr_batch(&events).await.unwrap();
    assert_eq!(outcome.accepted, 4);
    assert_eq!(counted(&outcome), [(0, 1), (1, 1), (3, 0)]);
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

/// Concurrent callers' likes share `write.lua` calls (group commit, never summed): 60
/// single likes at once, half from one contributor to one post (capping at 1: exactly one
/// of them counts), half from contributors of their own to another, take a few calls,
/// and count exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_callers_likes_share_calls_and_count_exactly() {
    let redis = crate::test_redis::TestRedis::spawn().await;
    let clock = crate::support::clock();
    let boards = crate::support::with_clock(redis.store().await, &clock);
    let board = unique("contrib-joined");
    let config = capped_at_one();
    boards.create(&board, config).await.unwrap();
    let warm = [Event::new("c", 1).by("u0")];
    boards.windowed(&board).incr_batch(&warm).await.unwrap();
    let before = crate::bounded_writes::script_calls(&redis).await;
    // Writes held for 200 ms: the first likes' calls wait, so the others queue behind
    // them and join, however loaded the machine (their callers may be slower to queue
    // than Redis to answer otherwise).
    let mut raw = redis.raw().await;
    let mut pause = ::redis::cmd("CLIENT");
    pause.arg("PAUSE").arg(200).arg("WRITE");
    let () = pause.query_async(&mut raw).await.unwrap();
    let likes = (0..60).map(|i| {
        let (boards, board) = (boards.clone(), board.clone());
        let event = match i % 2 {
            0 => Event::new("a", 1).by("u1"),
            _ => Event::new("b", 1).by(format!("u{i}")),
        };
        async move {
            let outcome = boards.windowed(&board).incr_batch(&[event]).await.unwrap();
            counted(&outcome)
        }
    });
    let counted = futures_util::future::join_all(likes).await;
    let calls = crate::bounded_writes::script_calls(&redis).await - before;
    // At most max_in_flight (3) calls held by the pause, the rest in one or two.
    assert!(calls <= 6, "60 likes took {calls} calls");
    let a: Vec<i64> = counted.iter().step_by(2).map(|c| c[0].1).collect();
    assert_eq!(a.iter().filter(|c| **c == 1).count(), 1, "{a:?}");
    assert_eq!(a.iter().filter(|c| **c == 0).count(), 29, "{a:?}");
    assert!(counted.iter().skip(1).step_by(2).all(|c| c == &[(0, 1)]));
    for window in WINDOWS {
        let top = crate::bounded_writes::top(&boards, &board, window).await;
        let want = [("b", 30), ("a", 1), ("c", 1)].map(|(m, t)| (m.to_string(), t));
        assert_eq!(top, want, "{window}");
    }
}

/// A quarantine and a release walked in many calls (a call budget of 1 µs: one HSCAN
/// step of 20 sums a call) while the contributor and others like on: every total is
/// exact after each, a sum the walk met or not, written before or during it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quarantine_walked_in_many_calls_while_likes_go_on_stays_exact() {
    let redis = crate::test_redis::TestRedis::spawn().await;
    let options = rollboard::RedisOptions {
        retire: rollboard::RetireOptions {
            chunk_budget: std::time::Duration::from_micros(1),
            ..rollboard::RetireOptions::default()
        },
        ..rollboard::RedisOptions::default()
    };
    let clock = crate::support::clock();
    let boards = crate::support::with_clock(redis.store_with(options).await, &clock);
    let board = unique("contrib-walk");
    let config = capped_at_one();
    boards.create(&board, config).await.unwrap();
    let bot = format!("{board}:bot");
    // post -> (the others' likes, the bot's sum)
    let mut expected: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let write = |round: usize, held: bool| {
        let (boards, board, bot) = (boards.clone(), board.clone(), bot.clone());
        async move {
            let mut written = Vec::new();
            for i in 0..150 {
                let post = format!("post:{}", (round * 97 + i * 7) % 400);
                let (by, delta) = match i % 3 {
                    0 => (format!("user:{round}:{i}"), 1),
                    1 => (bot.clone(), 1),
                    _ => (bot.clone(), -1),
                };
                let event = Event::new(post.clone(), delta).by(by.clone());
                let outcome = boards.windowed(&board).incr_batch(&[event]).await.unwrap();
                // Answered as if it were not quarantined.
                let counted = outcome.counted[0].counted;
                assert!(counted == delta || counted == 0, "{held}: {outcome:?}");
                written.push((post, by == bot, delta));
                tokio::task::yield_now().await;
            }
            written
        }
    };
    let record = |expected: &mut BTreeMap<String, (i64, i64)>,
                  written: Vec<(String, bool, i64)>| {
        for (post, by_bot, delta) in written {
            let e = expected.entry(post).or_default();
            if by_bot { e.1 += delta } else { e.0 += delta }
        }
    };
    let check = |expected: BTreeMap<String, (i64, i64)>, held: bool| {
        let (boards, board) = (boards.clone(), board.clone());
        async move {
            let mut want: BTreeMap<String, i64> = BTreeMap::new();
            for (post, (others, bot)) in expected {
                let total = others + if held { 0 } else { bot.clamp(-1, 1) };
                if total != 0 {
                    want.insert(post, total);
                }
            }
            for window in WINDOWS {
                let w = Span::parse(window).unwrap();
                let top = boards
                    .windowed(&board)
                    .top(Some(w), 0, 1_000)
                    .await
                    .unwrap();
                let read: BTreeMap<String, i64> = top
                    .entries
                    .into_iter()
                    .map(|e| (e.member, e.score))
                    .collect();
                let positive: BTreeMap<String, i64> =
                    want.clone().into_iter().filter(|(_, t)| *t > 0).collect();
                assert_eq!(read, positive, "held {held}, window {window}");
            }
        }
    };
    // The bot likes 300 posts first: 600 sums to walk, 30 calls or so.
    let first: Vec<Event> = (0..300)
        .map(|i| Event::new(format!("post:{i}"), 1).by(bot.clone()))
        .collect();
    boards.windowed(&board).incr_batch(&first).await.unwrap();
    record(
        &mut expected,
        first.iter().map(|e| (e.member.clone(), true, 1)).collect(),
    );

    let (held, written) = tokio::join!(boards.quarantine(&bot), write(1, true));
    let held = held.unwrap();
    // Of the bot's 600 sums, a few it unliked to 0 before the walk met them.
    assert!(
        held.quarantined && held.changed && held.sums >= 500,
        "{held:?}"
    );
    record(&mut expected, written);
    check(expected.clone(), true).await;

    let (released, written) = tokio::join!(boards.release(&bot), write(2, false));
    let released = released.unwrap();
    assert!(!released.quarantined && released.changed, "{released:?}");
    record(&mut expected, written);
    check(expected, false).await;
}

/// While quarantined, a bot's likes count in no total, and its writes answer as if they
/// did: `counted` and `return=standing` (its total with what it gave; its rank among the
/// other members' public totals); another user's standing is the public one; released,
/// everything counts again.
async fn a_quarantined_contributors_write_answers_as_if_it_were_not(h: Harness) {
    let config = capped_at_one();
    let board = unique("contrib-held");
    h.boards.create(&board, config).await.unwrap();
    let b = || h.boards.windowed(&board);
    let [u1, u2, u3, bot] = contributors(&board);
    let likes = [
        ("a", &u1),
        ("a", &u2),
        ("a", &u3),
        ("b", &u1),
        ("b", &u2),
        ("c", &u1),
        ("b", &bot),
        ("c", &bot),
    ];
    let events: Vec<Event> = likes
        .iter()
        .map(|(post, by)| Event::new(*post, 1).by((*by).clone()))
        .collect();
    b().incr_batch(&events).await.unwrap();
    let tops = || async {
        let mut all = Vec::new();
        for window in WINDOWS {
            let top = b()
                .top(Some(Span::parse(window).unwrap()), 0, 10)
                .await
                .unwrap();
            all.push(
                top.entries
                    .into_iter()
                    .map(|e| (e.member, e.score))
                    .collect::<Vec<_>>(),
            );
        }
        all
    };
    let ranking = |list: &[(&str, i64)]| -> Vec<Vec<(String, i64)>> {
        let one: Vec<(String, i64)> = list.iter().map(|(m, s)| (m.to_string(), *s)).collect();
        vec![one.clone(), one]
    };
    assert_eq!(tops().await, ranking(&[("a", 3), ("b", 3), ("c", 2)]));

    let held = h.boards.quarantine(&bot).await.unwrap();
    assert_eq!((held.quarantined, held.changed, held.sums), (true, true, 4));
    assert_eq!(tops().await, ranking(&[("a", 3), ("b", 2), ("c", 1)]));

    let events = [
        Event::new("d", 1).by(bot.clone()),
        Event::new("b", 1).by(bot.clone()),
    ];
    let written = b().incr_batch_standing(&events, None).await.unwrap();
    assert_eq!(counted(&written.outcome), [(0, 1), (1, 0)]);
    let standing = |written: &rollboard::StandingOutcome| {
        written
            .standings
            .iter()
            .flat_map(|s| {
                s.windows.iter().map(|w| {
                    (
                        s.member.clone(),
                        w.score_before,
                        w.rank_before,
                        w.score,
                        w.rank,
                    )
                })
            })
            .collect::<Vec<_>>()
    };
    // As if: a 3, b 3 and c 2 (the bot's likes counted) rank above d's 1.
    let d = ("d".to_string(), Some(0), None, 1, Some(4));
    let b_as_if = ("b".to_string(), Some(3), Some(1), 3, Some(1));
    assert_eq!(standing(&written), [d.clone(), d, b_as_if.clone(), b_as_if]);
    assert_eq!(tops().await, ranking(&[("a", 3), ("b", 2), ("c", 1)]));
    // Another user's standing is the public one.
    let other = [Event::new("d", 1).by(u3.clone())];
    let written = b().incr_batch_standing(&other, None).await.unwrap();
    let d = ("d".to_string(), Some(0), None, 1, Some(3));
    assert_eq!(standing(&written), [d.clone(), d]);

    let released = h.boards.release(&bot).await.unwrap();
    assert_eq!((released.quarantined, released.changed), (false, true));
    assert_eq!(
        tops().await,
        ranking(&[("a", 3), ("b", 3), ("c", 2), ("d", 2)])
    );
    let again = h.boards.release(&bot).await.unwrap();
    assert_eq!((again.changed, again.sums), (false, 0));
}

/// A quarantined bot's writes answer the standing its twin's identical writes answer on
/// a board of the same config where the twin is not quarantined: every member's total
/// and rank as if the bot's likes counted, its likes to the other posts included, on
/// every tie rule and with negative totals ranked or not (but densely); random likes and unlikes of
/// three users and the bot, then the bot's batches with their standing, some users'
/// between them. At least one answer differs from the public ranking (not vacuous).
async fn a_quarantined_writers_standing_is_its_unquarantined_twins(h: Harness) {
    use rollboard::{RankedTotals, Ties};
    let mut rng = Rng(0x9e37_79b9);
    let mut differed = 0;
    for ties in [Ties::Competition, Ties::Dense, Ties::Position] {
        for rank in [RankedTotals::Positive, RankedTotals::Nonzero] {
            if (ties, rank) == (Ties::Dense, RankedTotals::Nonzero) {
                continue; // a net-vote board does not rank densely
            }
            let config = BoardConfig::parse("1h", &WINDOWS)
                .unwrap()
                .with_ties(ties)
                .with_rank(rank)
                .unwrap()
                .with_contributor_cap(Some(1))
                .unwrap();
            let held = unique("contrib-asif");
            let twin = unique("contrib-twin");
            for board in [&held, &twin] {
                h.boards.create(board, config.clone()).await.unwrap();
            }
            let (q, t) = (contributors(&held), contributors(&twin));
            let event = |users: &[String; 4], (user, member, delta): (usize, usize, i64)| {
                Event::new(MEMBERS[member], delta).by(users[user].clone())
            };
            let random = |rng: &mut Rng, user: usize| {
                let delta = if rng.below(4) == 0 { -1 } else { 1 };
                (user, rng.below(6) as usize, delta)
            };
            let mut first = Vec::new();
            for _ in 0..40 {
                let user = rng.below(4) as usize;
                first.push(random(&mut rng, user));
            }
            for (board, users) in [(&held, &q), (&twin, &t)] {
                let events: Vec<Event> = first.iter().map(|e| event(users, *e)).collect();
                h.boards.windowed(board).incr_batch(&events).await.unwrap();
            }
            h.boards.quarantine(&q[3]).await.unwrap();
            for round in 0..6 {
                let user = if round % 2 == 0 {
                    3
                } else {
                    rng.below(3) as usize
                };
                let size = 1 + rng.below(3);
                let writes: Vec<_> = (0..size).map(|_| random(&mut rng, user)).collect();
                let mut read = Vec::new();
                for (board, users) in [(&held, &q), (&twin, &t)] {
                    let events: Vec<Event> = writes.iter().map(|e| event(users, *e)).collect();
                    let written = h.boards.windowed(board);
                    let written = written.incr_batch_standing(&events, None).await.unwrap();
                    let counted = counted(&written.outcome);
                    let standings: Vec<_> = written
                        .standings
                        .iter()
                        .flat_map(|s| {
                            s.windows.iter().map(|w| {
                                let before = (w.score_before, w.rank_before);
                                (s.member.clone(), w.window, before, (w.score, w.rank))
                            })
                        })
                        .collect();
                    read.push((counted, standings));
                }
                // Another user's standing is the public one, which the bot's likes do
                // not reach on the first board: only what it counted must agree.
                assert_eq!(read[0].0, read[1].0, "{ties:?} {rank:?} round {round}");
                if user == 3 {
                    assert_eq!(
                        read[0], read[1],
                        "{ties:?} {rank:?} round {round}: {writes:?}"
                    );
                    // Not vacuous: the public ranks differ from what the bot is answered.
                    for (member, window, _, answered) in &read[0].1 {
                        let public = h.boards.windowed(&held).score(member, Some(*window));
                        let public = public
                            .await
                            .unwrap()
                            .map_or((0, None), |s| (s.score, s.rank));
                        differed += usize::from(public != *answered);
                    }
                }
            }
        }
    }
    assert!(
        differed > 0,
        "no standing of the bot differed from the public ranking"
    );
}

/// A retraction of some slots (`since`) that takes a contributor's sum to a member through
/// 0 and back (its parts taken back in the order they were written: a like two slots
/// in, then a backdated unlike a slot in) leaves what the slots before `since` gave, as
/// on a twin board that only ever had those.
async fn a_partial_retraction_keeps_a_sum_that_passes_through_zero(h: Harness) {
    let config = BoardConfig::parse("1h", &WINDOWS)
        .unwrap()
        .with_contributor_cap(Some(2))
        .unwrap();
    let (board, twin) = (unique("contrib-through-0"), unique("contrib-twin"));
    h.boards.create(&board, config.clone()).await.unwrap();
    h.boards.create(&twin, config).await.unwrap();
    let [u, other, ..] = contributors(&board);
    h.clock.set(ts(START + 2 * 3600 + 1800));
    let like = |delta: i64, minutes: i64, by: &str| {
        Event::new("m", delta).by(by).at(ts(START + minutes * 60))
    };
    let kept = [like(1, 10, &u), like(1, 20, &other)];
    h.boards.windowed(&board).incr_batch(&kept).await.unwrap();
    h.boards.windowed(&twin).incr_batch(&kept).await.unwrap();
    for later in [like(1, 130, &u), like(-1, 70, &u)] {
        h.boards
            .windowed(&board)
            .incr_batch(&[later])
            .await
            .unwrap();
    }
    let done = h
        .boards
        .retract(
            &u,
            Some(ts(START + 3600)),
            Some(std::slice::from_ref(&board)),
        )
        .await
        .unwrap();
    assert_eq!((done.contributions, done.events), (2, 2));
    let ours = sums_and_tops(&h.boards, &u, &board).await;
    let theirs = sums_and_tops(&h.boards, &u, &twin).await;
    assert_eq!(
        ours.0[1],
        [("m".to_string(), 1, 1)],
        "3h: the slot before since"
    );
    assert_eq!(ours, theirs);
}

/// A contributor's sums on `board` per window (member, contributed, counted), and the
/// board's top 10 in each window.
async fn sums_and_tops(
    boards: &rollboard::Rollboard,
    by: &str,
    board: &str,
) -> (Vec<Vec<(String, i64, i64)>>, Vec<Vec<(String, i64)>>) {
    let view = boards
        .contributions(by, Some(&[board.to_owned()]))
        .await
        .unwrap();
    let sums = view.boards[0].windows.iter().map(|w| {
        let members = w.members.iter();
        members
            .map(|c| (c.member.clone(), c.contributed, c.counted))
            .collect()
    });
    let mut tops = Vec::new();
    for window in WINDOWS {
        let window = Some(Span::parse(window).unwrap());
        let top = boards.windowed(board).top(window, 0, 10).await.unwrap();
        tops.push(
            top.entries
                .into_iter()
                .map(|e| (e.member, e.score))
                .collect(),
        );
    }
    (sums.collect(), tops)
}

/// A contributor's unlikes count down to -cap and no further: capping at 1, a like and
/// three unlikes (one write, one delta for all) leave its sum at -2 and its counted part
/// at -1, and a like of 3 then counts 2 (from -1 to 1), in both windows.
async fn unlikes_past_the_cap_count_down_to_minus_the_cap_only(h: Harness) {
    let config = capped_at_one();
    let board = unique("contrib-below");
    h.boards.create(&board, config).await.unwrap();
    let [u, ..] = contributors(&board);
    let b = h.boards.windowed(&board);
    let like = b.incr_batch(&[Event::new("m", 1).by(&u)]).await.unwrap();
    assert_eq!(counted(&like), [(0, 1)]);
    let unlikes = vec![Event::new("m", -1).by(&u); 3];
    let unlikes = b.incr_batch(&unlikes).await.unwrap();
    assert_eq!(counted(&unlikes), [(0, -1), (1, -1), (2, 0)]);
    let (sums, _) = sums_and_tops(&h.boards, &u, &board).await;
    assert_eq!(sums, vec![vec![("m".to_string(), -2, -1)]; 2]);
    let like = b.incr_batch(&[Event::new("m", 3).by(&u)]).await.unwrap();
    assert_eq!(counted(&like), [(0, 2)]);
    let (sums, tops) = sums_and_tops(&h.boards, &u, &board).await;
    assert_eq!(sums, vec![vec![("m".to_string(), 1, 1)]; 2]);
    assert_eq!(tops, vec![vec![("m".to_string(), 1)]; 2]);
}

/// A like written after a boundary, before the retirer runs, meets the previous slot's
/// like still in window 1's sums (the Redis store reads them from the slots' stages):
/// capping at 1, likes of the same member by the same contributor in two slots count 1
/// and 0, and once the previous slot has left 1h each window counts 1.
async fn a_like_after_a_boundary_before_the_retirer_meets_the_previous_slot(h: Harness) {
    let config = capped_at_one();
    let board = unique("contrib-boundary");
    h.boards.create(&board, config).await.unwrap();
    let [u, ..] = contributors(&board);
    let b = h.boards.windowed(&board);
    h.at(600);
    let like = b.incr_batch(&[Event::new("m", 1).by(&u)]).await.unwrap();
    assert_eq!(counted(&like), [(0, 1)]);
    h.at(3600 + 600);
    let like = b.incr_batch(&[Event::new("m", 1).by(&u)]).await.unwrap();
    assert_eq!(counted(&like), [(0, 0)]);
    b.retire(None).await.unwrap();
    let (sums, tops) = sums_and_tops(&h.boards, &u, &board).await;
    let m = "m".to_string();
    assert_eq!(sums, vec![vec![(m.clone(), 1, 1)], vec![(m.clone(), 2, 1)]]);
    assert_eq!(tops, vec![vec![(m, 1)]; 2]);
}
