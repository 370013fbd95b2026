//! Changing a sharded board's shard count online (`Rollboard::reshard`): a board grown
//! from 3 shards to 5 and shrunk to 2 while six writers go on (plain and keyed writes,
//! deltas that cancel out) answers every read as its twin of one shard fed the same
//! events, on every store; a reshard cut short is finished by running it again, and a
//! member hidden on every board meanwhile is hidden on it as it ends; what a reshard
//! cannot do is refused with a clear error.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rollboard::{
    BoardConfig, Error, Event, MemberData, ModerationNote, Order, Resharding, Rollboard,
    ScoreRange, Ties,
};

use crate::support::{Harness, board_names, unique};

on_every_store!(
    a_board_resharded_under_writes_reads_as_its_twin,
    a_board_of_one_shard_is_sharded_and_back,
    a_keyed_write_retried_after_each_reshard_counts_once,
    what_a_reshard_cannot_do_is_refused,
);

/// Members written: skewed, so a few lead and most are in the long tail.
const MEMBERS: u64 = 600;

/// The writers running beside each reshard.
const WRITERS: u64 = 6;

/// `count` events from `rng`: skewed members, mostly positive deltas; every tenth
/// member of the `zero:` family gets +3 now and -3 in the next hour's writes (its
/// values cancel out: it holds slot values and no total).
fn events(rng: &mut StdRng, count: usize, hour: i64) -> Vec<Event> {
    let mut events: Vec<Event> = (0..count)
        .map(|_| {
            let m = (rng.random_range(0.0f64..1.0).powi(2) * MEMBERS as f64) as u64;
            let delta = if rng.random_bool(0.9) {
                rng.random_range(1..4)
            } else {
                -1
            };
            Event::new(format!("post:{m}"), delta)
        })
        .collect();
    let zero = rng.random_range(0..40);
    events.push(Event::new(format!("zero:{hour}:{zero}"), 3));
    if hour > 0 {
        events.push(Event::new(format!("zero:{}:{zero}", hour - 1), -3));
    }
    events
}

/// Writes the same batches to `one` and `other` from `WRITERS` tasks (a third of the
/// batches under an idempotency key, sent twice), each applied whole on both.
async fn write_beside(b: &Rollboard, one: &str, other: &str, seed: u64, hour: i64) {
    let writers = (0..WRITERS).map(|w| {
        let (b, one, other) = (b.clone(), one.to_owned(), other.to_owned());
        tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(seed * 100 + w);
            for batch in 0..12 {
                let events = events(&mut rng, 60, hour);
                for board in [&one, &other] {
                    let outcome = match batch % 3 {
                        0 => {
                            let key = format!("k-{seed}-{w}-{batch}");
                            b.windowed(board)
                                .write_idempotent(&events, &key)
                                .await
                                .unwrap();
                            b.windowed(board)
                                .write_idempotent(&events, &key)
                                .await
                                .unwrap()
                        }
                        _ => b.windowed(board).incr_batch(&events).await.unwrap(),
                    };
                    assert_eq!(outcome.accepted, events.len(), "{board}");
                }
                tokio::task::yield_now().await;
            }
        })
    });
    for writer in writers.collect::<Vec<_>>() {
        writer.await.unwrap();
    }
}

/// Every read of `other` equals the same read of `one`: pages from both ends, ranks and
/// scores of members, histories, member data beside the top and the board's state.
async fn same_reads(b: &Rollboard, one: &str, other: &str, what: &str) {
    let config = b.board(one).await.unwrap().config;
    let twin = b.describe_board(one).await.unwrap();
    let status = b.describe_board(other).await.unwrap();
    for (w, t) in status.windows.iter().zip(&twin.windows) {
        assert_eq!(
            (w.members, w.ranked),
            (t.members, t.ranked),
            "{what}: {w:?} {t:?}"
        );
    }
    for window in config.windows() {
        let w = Some(*window);
        for (order, offset, limit) in [
            (Order::Desc, 0, 1000),
            (Order::Asc, 0, 50),
            (Order::Desc, 200, 30),
        ] {
            let all = ScoreRange::ALL;
            let a = b
                .windowed(one)
                .ranking(w, all, order, offset, limit)
                .await
                .unwrap();
            let s = b
                .windowed(other)
                .ranking(w, all, order, offset, limit)
                .await
                .unwrap();
            assert_eq!(a.entries, s.entries, "{what}: {window} {order:?} {offset}");
        }
        let members: Vec<String> = (0..MEMBERS)
            .step_by(11)
            .map(|m| format!("post:{m}"))
            .chain((0..40).map(|z| format!("zero:0:{z}")))
            .collect();
        let a = b.windowed(one).ranks(&members, w).await.unwrap();
        let s = b.windowed(other).ranks(&members, w).await.unwrap();
        assert_eq!(a.entries, s.entries, "{what}: ranks in {window}");
        for member in members.iter().step_by(9) {
            let a = b.windowed(one).score(member, w).await.unwrap();
            let s = b.windowed(other).score(member, w).await.unwrap();
            assert_eq!(a, s, "{what}: {member} in {window}");
        }
    }
    for m in [0, 1, 5, 77, 301] {
        let member = format!("post:{m}");
        let a = b.windowed(one).history(&member).await.unwrap();
        let s = b.windowed(other).history(&member).await.unwrap();
        assert_eq!(a, s, "{what}: history of {member}");
    }
    let a = b
        .windowed(one)
        .with_data(b.windowed(one).top(None, 0, 30).await.unwrap());
    let s = b
        .windowed(other)
        .with_data(b.windowed(other).top(None, 0, 30).await.unwrap());
    assert_eq!(a.await.unwrap().entries, s.await.unwrap().entries, "{what}");
}

/// On Redis: the members that hold data on `board` or on any of its shards (one entry
/// per shard that holds it), sorted, each checked to hold a total in that shard's
/// largest window (`3h`): a member that moved left no data behind.
async fn data_kept(h: &Harness, board: &str) -> Option<Vec<String>> {
    let mut raw = h.redis.as_ref()?.raw().await;
    let mut keys: Vec<String> = ::redis::cmd("KEYS")
        .arg(format!("data_{{{board}#*}}"))
        .query_async(&mut raw)
        .await
        .unwrap();
    keys.push(format!("data_{{{board}}}"));
    let mut held = Vec::new();
    for key in keys {
        let shard = &key["data_{".len()..key.len() - 1];
        let fields: Vec<String> = ::redis::cmd("HKEYS")
            .arg(&key)
            .query_async(&mut raw)
            .await
            .unwrap();
        for member in fields {
            let total: Option<i64> = ::redis::cmd("ZSCORE")
                .arg(format!("stats_{{{shard}}}_10800"))
                .arg(&member)
                .query_async(&mut raw)
                .await
                .unwrap();
            assert!(
                total.is_some(),
                "{member} holds data on {shard} without a total"
            );
            held.push(member);
        }
    }
    held.sort();
    Some(held)
}

/// On Redis: the sharded board's shards hold data for the members its twin does.
async fn same_data(h: &Harness, one: &str, sharded: &str) {
    let twin = data_kept(h, one).await;
    assert!(twin.as_ref().is_none_or(|t| !t.is_empty()), "{twin:?}");
    assert_eq!(data_kept(h, sharded).await, twin);
}

async fn a_board_resharded_under_writes_reads_as_its_twin(h: Harness) {
    let (one, sharded) = (unique("one"), unique("resharded"));
    let b = &h.boards;
    let config = BoardConfig::parse("1h", &["1h", "3h"]).unwrap();
    b.create(&one, config.clone()).await.unwrap();
    let three = config.clone().with_shards(3).unwrap();
    b.create(&sharded, three).await.unwrap();
    h.at(60);
    write_beside(b, &one, &sharded, 1, 0).await;
    // Data on the leaders, kept by each member's shard.
    let leaders = b.windowed(&one).top(None, 0, 12).await.unwrap().entries;
    for (m, leader) in leaders.iter().enumerate() {
        let data = MemberData::parse(&format!(r#"{{"title":"post {m}"}}"#)).unwrap();
        for board in [&one, &sharded] {
            b.windowed(board)
                .set_member_data(&leader.member, data.clone())
                .await
                .unwrap();
        }
    }
    same_reads(b, &one, &sharded, "before").await;

    // Grown to 5 shards while six writers go on, an hour later (the first hour's slot is
    // frozen out of the 1h window, not yet retired).
    h.at(3600 + 60);
    let (report, ()) = tokio::join!(
        b.windowed(&sharded).reshard(5),
        write_beside(b, &one, &sharded, 2, 1)
    );
    let report = report.unwrap();
    assert_eq!((report.from, report.to), (3, 5));
    // Jump hashing moves two fifths of the members, to the two new shards.
    assert!(report.moved_members > 150, "{report:?}");
    assert!(report.moved_values >= report.moved_members, "{report:?}");
    let board = b.board(&sharded).await.unwrap();
    assert_eq!((board.config.shards(), board.resharding), (5, None));
    // The moves retired the shards (the first hour's slot left the 1h window): the
    // twin, retired too, reads the same.
    b.windowed(&one).retire(None).await.unwrap();
    same_reads(b, &one, &sharded, "grown").await;
    same_data(&h, &one, &sharded).await;
    let report = b.windowed(&sharded).retire(None).await.unwrap();
    assert_eq!(report.slots_retired, 0, "{report:?}");
    let again = b.windowed(&sharded).reshard(5).await.unwrap();
    assert_eq!((again.from, again.to, again.moved_members), (5, 5, 0));

    // Shrunk to 2 while writers go on: members of shards 2 to 4 move, the rest stay.
    h.at(2 * 3600 + 60);
    let (report, ()) = tokio::join!(
        b.windowed(&sharded).reshard(2),
        write_beside(b, &one, &sharded, 3, 2)
    );
    let report = report.unwrap();
    assert_eq!((report.from, report.to), (5, 2));
    assert!(report.moved_members > 200, "{report:?}");
    for board in [&one, &sharded] {
        b.windowed(board).retire(None).await.unwrap();
    }
    same_reads(b, &one, &sharded, "shrunk").await;
    same_data(&h, &one, &sharded).await;
    // An hour on, the slots the moves wrote into retire as the twin's do.
    h.at(3 * 3600 + 60);
    write_beside(b, &one, &sharded, 4, 3).await;
    for board in [&one, &sharded] {
        b.windowed(board).retire(None).await.unwrap();
    }
    same_reads(b, &one, &sharded, "an hour on").await;
    let status = b.describe_board(&sharded).await.unwrap();
    assert_eq!(status.config.shards(), 2);
    // The shards a smaller count leaves out are gone; none is listed.
    let names = board_names(b).await;
    assert!(names.contains(&sharded) && names.iter().all(|n| !n.contains('#')));
    b.drop_board(&sharded).await.unwrap();
    b.drop_board(&one).await.unwrap();
}

async fn a_board_of_one_shard_is_sharded_and_back(h: Harness) {
    let (one, board) = (unique("one"), unique("grown"));
    let b = &h.boards;
    let config = BoardConfig::parse("1h", &["1h", "3h"])
        .unwrap()
        .with_ties(Ties::Position);
    for name in [&one, &board] {
        b.create(name, config.clone()).await.unwrap();
    }
    h.at(60);
    write_beside(b, &one, &board, 5, 0).await;
    let report = b.windowed(&board).reshard(4).await.unwrap();
    assert_eq!((report.from, report.to), (1, 4));
    assert!(report.moved_members > 300, "{report:?}");
    same_reads(b, &one, &board, "sharded").await;
    h.at(3600 + 60);
    let (back, ()) = tokio::join!(
        b.windowed(&board).reshard(1),
        write_beside(b, &one, &board, 6, 1)
    );
    assert_eq!(back.unwrap().to, 1);
    for name in [&one, &board] {
        b.windowed(name).retire(None).await.unwrap();
    }
    same_reads(b, &one, &board, "one shard again").await;
    assert_eq!(b.board(&board).await.unwrap().config, config);
}

/// A keyed write recorded on 3 shards, retried after the board grew to 5, shrank to 2
/// and went back to 1: each retry is a replay that applies nothing (its first call's
/// split is found by shard 0's record). After a shrink, the events of a shard it removed
/// are answered `store_unavailable`, maybe applied (their record went with the shard);
/// the rest as applied. (Max, min and latest boards keep their count.)
async fn a_keyed_write_retried_after_each_reshard_counts_once(h: Harness) {
    let (one, board) = (unique("one"), unique("keyed"));
    let b = &h.boards;
    let config = BoardConfig::parse("1h", &["1h", "3h"]).unwrap();
    b.create(&one, config.clone()).await.unwrap();
    b.create(&board, config.with_shards(3).unwrap())
        .await
        .unwrap();
    h.at(60);
    let event = |m: i64| Event::new(format!("post:{m}"), m + 1);
    let events: Vec<Event> = (0..60).map(event).collect();
    for name in [&one, &board] {
        let first = b.windowed(name).write_idempotent(&events, "k").await;
        assert_eq!(first.unwrap().accepted, 60);
    }
    let mut uncertain = 0;
    for (count, what) in [(5, "grown"), (2, "shrunk"), (1, "one shard")] {
        b.windowed(&board).reshard(count).await.unwrap();
        let again = b
            .windowed(&board)
            .write_idempotent(&events, "k")
            .await
            .unwrap();
        let codes: Vec<&str> = again.rejected.iter().map(|r| r.error.code()).collect();
        assert!(
            codes.iter().all(|c| *c == "store_unavailable"),
            "{what}: {codes:?}"
        );
        assert_eq!(again.accepted + codes.len(), 60, "{what}");
        // Growing removes no shard; every smaller count removes some of the first three.
        assert_eq!(codes.is_empty(), count == 5, "{what}: {codes:?}");
        assert!(codes.len() >= uncertain, "{what}");
        uncertain = codes.len();
        same_reads(b, &one, &board, what).await;
        let other = [event(70)];
        let reused = b.windowed(&board).write_idempotent(&other, "k").await;
        assert_eq!(
            reused.unwrap_err().code(),
            "idempotency_key_reused",
            "{what}"
        );
    }
    // A new key on the board of one shard again applies.
    for name in [&one, &board] {
        let fresh = b.windowed(name).write_idempotent(&events, "k2").await;
        assert_eq!(fresh.unwrap().accepted, 60);
    }
    same_reads(b, &one, &board, "a new key").await;
}

async fn what_a_reshard_cannot_do_is_refused(h: Harness) {
    let b = &h.boards;
    let dense = unique("dense");
    let config = BoardConfig::parse("1h", &["1h"]).unwrap();
    b.create(&dense, config.clone().with_ties(Ties::Dense))
        .await
        .unwrap();
    let err = b.windowed(&dense).reshard(3).await.unwrap_err();
    assert_eq!(err.code(), "invalid_config", "{err}");
    assert!(err.to_string().contains("dense"), "{err}");
    let max = unique("max");
    let max_config = config
        .clone()
        .with_aggregate(rollboard::Aggregate::Max)
        .with_shards(2)
        .unwrap();
    b.create(&max, max_config).await.unwrap();
    let err = b.windowed(&max).reshard(3).await.unwrap_err();
    assert_eq!(err.code(), "aggregate_unsupported", "{err}");
    let board = unique("counts");
    b.create(&board, config.with_shards(2).unwrap())
        .await
        .unwrap();
    for shards in [0, 33] {
        let err = b.windowed(&board).reshard(shards).await.unwrap_err();
        assert_eq!(err.code(), "invalid_config", "{err}");
    }
    let err = b.windowed("no-such-board").reshard(3).await.unwrap_err();
    assert_eq!(err.code(), "board_not_found");
}

/// A reshard cut short (its future dropped mid-way, as a crash would leave it) leaves the
/// board readable and is finished by running it again with the same count, once its
/// lease has run out; another count is refused meanwhile.
async fn a_reshard_cut_short_is_finished_by_running_it_again(h: Harness) {
    let b = &h.boards;
    let (one, board) = sharded_beside(&h, "cut", 7).await;
    let at = cut_while_moving(&h, &board, 60).await;
    // Its lease holds: a second run is refused, as is another count.
    for shards in [3, 4] {
        let err = b.windowed(&board).reshard(shards).await.unwrap_err();
        assert_eq!(
            err,
            Error::ReshardRunning {
                board: board.clone(),
                to: 3
            }
        );
        assert_eq!(err.code(), "board_busy");
    }
    // Writes go on; once the lease has run out, the same count finishes the move.
    h.at(at + 31);
    write_beside(b, &one, &board, 8, 0).await;
    let report = b.windowed(&board).reshard(3).await.unwrap();
    assert_eq!((report.from, report.to), (2, 3));
    assert_eq!(b.board(&board).await.unwrap().resharding, None);
    same_reads(b, &one, &board, "finished").await;
}

/// A board of one shard and its twin of 2 shards (named after `name`), both written by
/// the writers of `seed` at the harness's second 60.
pub(super) async fn sharded_beside(h: &Harness, name: &str, seed: u64) -> (String, String) {
    let b = &h.boards;
    let (one, board) = (unique("one"), unique(name));
    let config = BoardConfig::parse("1h", &["1h", "3h"]).unwrap();
    b.create(&one, config.clone()).await.unwrap();
    b.create(&board, config.with_shards(2).unwrap())
        .await
        .unwrap();
    h.at(60);
    write_beside(b, &one, &board, seed, 0).await;
    (one, board)
}

/// Runs `board`'s reshard to 3 shards and cuts it ever later, from `at` seconds on,
/// until the cut falls while members move (a run cut before it began holds its lease:
/// each try is 31 s after the one before); the time of the last try.
pub(super) async fn cut_while_moving(h: &Harness, board: &str, mut at: i64) -> i64 {
    let b = &h.boards;
    let mut cut = Duration::from_millis(2);
    loop {
        at += 31;
        h.at(at);
        let run = tokio::time::timeout(cut, b.windowed(board).reshard(3)).await;
        assert!(run.is_err(), "the reshard ended before {cut:?}: {run:?}");
        // The board this process reports is the one stored (its cached copy is not
        // left behind by the run cut short).
        let state = b.board(board).await.unwrap().resharding;
        let stored = b.boards().await.unwrap();
        let stored = stored.iter().find(|s| s.name.as_str() == board).unwrap();
        assert_eq!(state, stored.resharding, "cut at {cut:?}");
        if state == Some(Resharding::Moving { to: 3 }) {
            return at;
        }
        assert_eq!(state, None, "cut at {cut:?}");
        cut *= 2;
    }
}

/// A member hidden on every board while a board is resharded skips that board (hiding
/// waits for the move), and is hidden there as the reshard ends.
async fn a_member_hidden_everywhere_during_a_reshard_is_hidden_as_it_ends(h: Harness) {
    let b = &h.boards;
    let (_, board) = sharded_beside(&h, "hidden-move", 9).await;
    let spam = unique("spam");
    b.windowed(&board)
        .incr(&spam, 1_000_000, None)
        .await
        .unwrap();
    let at = cut_while_moving(&h, &board, 60).await;
    let note = ModerationNote::default();
    let hidden = b.hide_member(&spam, None, &note).await.unwrap();
    let skipped: Vec<(&str, &str)> = hidden
        .skipped
        .iter()
        .map(|s| (s.board.as_str(), s.code.as_str()))
        .collect();
    assert!(
        skipped.contains(&(board.as_str(), "board_busy")),
        "{skipped:?}"
    );
    let leader = || async {
        let top = b.windowed(&board).top(None, 0, 1).await.unwrap();
        top.entries[0].member.clone()
    };
    assert_eq!(leader().await, spam, "shown while the reshard runs");
    h.at(at + 31);
    let report = b.windowed(&board).reshard(3).await.unwrap();
    assert_eq!((report.from, report.to), (2, 3));
    assert_ne!(leader().await, spam);
    let standing = b
        .windowed(&board)
        .score(&spam, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (standing.score, standing.rank, standing.hidden),
        (1_000_000, None, true)
    );
    b.show_member(&spam, None, &note).await.unwrap();
    assert_eq!(leader().await, spam);
}

#[tokio::test]
async fn a_member_hidden_everywhere_during_a_reshard_on_redis_is_hidden_as_it_ends() {
    let h = Harness::redis().await;
    a_member_hidden_everywhere_during_a_reshard_is_hidden_as_it_ends(h).await;
}

#[tokio::test]
async fn a_reshard_cut_short_on_redis_is_finished_by_running_it_again() {
    a_reshard_cut_short_is_finished_by_running_it_again(Harness::redis().await).await;
}

#[tokio::test]
async fn a_reshard_cut_short_on_plain_slots_is_finished_by_running_it_again() {
    a_reshard_cut_short_is_finished_by_running_it_again(Harness::redis_plain().await).await;
}
