//! Compact slots made by hand, for retirement and drop tests that choose a slot's
//! geometry themselves (how many buckets, how far split) instead of leaving it to the
//! write path: each stage hash of a slot is moved into the buckets its members hash to,
//! as the compact layout keeps them (`<stage>:<i>`, see `Geometry`). (The write path's
//! own compact slots are tested in `compact_slots.rs`.)

use std::collections::HashMap;

use crate::oracle::Geometry;

/// The stage keys of slot `slot` of `board` with `windows` windows, stage 1 first.
pub fn stage_keys(board: &str, slot: i64, windows: usize) -> Vec<String> {
    (0..windows)
        .map(|k| match k {
            0 => format!("slot_{{{board}}}_{slot}"),
            k => format!("slot_{{{board}}}_{slot}_{k}"),
        })
        .collect()
}

/// Gives slot `slot` the geometry `geometry` (when it has none yet), then moves every plain stage hash of the slot into its buckets,
/// adding to what they hold (a field reaching 0 is deleted). Run again after writes that
/// went to a plain stage hash, it folds them in the same way.
pub async fn make_compact(
    raw: &mut redis::aio::MultiplexedConnection,
    board: &str,
    slot: i64,
    windows: usize,
    geometry: Geometry,
) {
    let geo_key = format!("slotgeo_{{{board}}}");
    let _: i64 = redis::cmd("HSETNX")
        .arg(&geo_key)
        .arg(slot)
        .arg(format!("{} {} 0", geometry.level, geometry.split))
        .query_async(raw)
        .await
        .unwrap();
    for stage in stage_keys(board, slot, windows) {
        let values: HashMap<String, i64> = redis::cmd("HGETALL")
            .arg(&stage)
            .query_async(raw)
            .await
            .unwrap();
        for (member, v) in values {
            let bucket = format!("{stage}:{}", geometry.bucket_of(&member));
            let sum: i64 = redis::cmd("HINCRBY")
                .arg(&bucket)
                .arg(&member)
                .arg(v)
                .query_async(raw)
                .await
                .unwrap();
            if sum == 0 {
                let _: i64 = redis::cmd("HDEL")
                    .arg(&bucket)
                    .arg(&member)
                    .query_async(raw)
                    .await
                    .unwrap();
            }
        }
        let _: i64 = redis::cmd("DEL")
            .arg(&stage)
            .query_async(raw)
            .await
            .unwrap();
    }
}

/// How many fields bucket `i` of `stage` holds.
pub async fn bucket_len(raw: &mut redis::aio::MultiplexedConnection, stage: &str, i: u64) -> i64 {
    redis::cmd("HLEN")
        .arg(format!("{stage}:{i}"))
        .query_async(raw)
        .await
        .unwrap()
}

/// The geometry of the split slot `split_slot` makes: 2^6 + 5 = 69 buckets.
pub const SPLIT: Geometry = Geometry {
    level: 6,
    split: 5,
    to_plain: false,
};
/// Members of the split slot.
pub const MEMBERS: usize = 3_000;
/// The buckets' fill on a server whose `hash-max-listpack-entries` is `LISTPACK` (see
/// `layout.rs`): buckets over 4 x 16 fields are retired by HSCAN steps.
pub const FILL: u64 = 16;
pub const LISTPACK: &str = "32";
/// Late writes go to members of buckets below this one, so the next stage has these
/// buckets (a merge) and not the others (a RENAME).
pub const LATE_BUCKETS: u64 = 20;

/// A `1h`/`3h` board (with `ties`) whose slot START holds `MEMBERS` members in the
/// compact geometry `SPLIT`, plus a plain slot at START + 1 h of 500 members; then, at
/// START + 2 h (window 1 froze slot START), late writes into slot START's stage 2 for
/// members of buckets below `LATE_BUCKETS`: new members (so some of those buckets grow
/// past 4 x `FILL`), members cancelled to 0 and members raised. Leaves the clock at
/// START + 2 h and returns the board and its oracle.
pub async fn split_slot_board(
    boards: &rollboard::Rollboard,
    clock: &rollboard::ManualClock,
    raw: &mut redis::aio::MultiplexedConnection,
    ties: rollboard::Ties,
) -> (String, crate::oracle::Oracle) {
    use crate::support::{START, ts, unique};
    use rollboard::{BoardConfig, Event};

    let config = BoardConfig::parse("1h", &["1h", "3h"])
        .unwrap()
        .with_ties(ties);
    let board = unique("cs");
    boards.create(&board, config.clone()).await.unwrap();
    let mut oracle = crate::oracle::Oracle::new(config);
    let write = async |events: Vec<Event>, slot: i64, oracle: &mut crate::oracle::Oracle| {
        for chunk in events.chunks(1000) {
            let outcome = boards.windowed(&board).incr_batch(chunk).await.unwrap();
            assert!(outcome.rejected.is_empty(), "{:?}", outcome.rejected);
        }
        for e in &events {
            oracle.record(slot, &e.member, e.delta);
        }
    };

    clock.set(ts(START));
    let events = (0..MEMBERS)
        .map(|i| Event::new(format!("m{i}"), 1 + (i % 3) as i64))
        .collect();
    write(events, START, &mut oracle).await;
    clock.set(ts(START + 3600));
    let events = (0..500).map(|i| Event::new(format!("p{i}"), 2)).collect();
    write(events, START + 3600, &mut oracle).await;
    make_compact(raw, &board, START, 2, SPLIT).await;

    clock.set(ts(START + 2 * 3600));
    let at = ts(START + 60);
    let late = |m: &String| SPLIT.bucket_of(m) < LATE_BUCKETS;
    let mut events: Vec<Event> = (0..MEMBERS)
        .map(|i| format!("late{i}"))
        .filter(late)
        .map(|m| Event::new(m, 1).at(at))
        .collect();
    for i in (0..MEMBERS).filter(|i| late(&format!("m{i}"))) {
        match i % 5 {
            0 => events.push(Event::new(format!("m{i}"), -(1 + (i % 3) as i64)).at(at)),
            1 => events.push(Event::new(format!("m{i}"), 4).at(at)),
            _ => {}
        }
    }
    write(events, START, &mut oracle).await;
    make_compact(raw, &board, START, 2, SPLIT).await;
    (board, oracle)
}
