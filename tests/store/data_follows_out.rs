//! Member data follows a member out, on every family (sum, sharded sum, max, min,
//! latest) and every store: when the largest window retires the member (in chunks of
//! one member, over plain slots, listpack slots and compact buckets), when a recompute
//! drops a drifted total, and on removal, bulk removal and trim. On Redis nothing of the
//! member is left behind either: no `data_{b}` field, and on a max, min or latest board
//! no record (peak list or newest event) of a member that holds no value.

use ::redis::aio::MultiplexedConnection;
use rollboard::{Aggregate, BoardConfig, Event, MemberData, RetireOptions};

use crate::support::{Harness, START, ts, unique};

on_every_store!(
    data_and_records_go_when_the_largest_window_retires_the_member,
    data_goes_when_a_recompute_drops_a_member_without_a_value,
    data_goes_with_removal_bulk_removal_and_trim,
);

mod bucketed {
    //! The same on a server whose listpacks hold at most 4 entries: the retirer converts
    //! each closed slot of 4 members or more into buckets of 2, and retires it bucket by
    //! bucket.
    use crate::support::Harness;

    #[tokio::test]
    async fn data_and_records_go_when_the_largest_window_retires_the_member() {
        super::data_and_records_go_when_the_largest_window_retires_the_member(
            Harness::redis_bucketed().await,
        )
        .await
    }

    #[tokio::test]
    async fn data_goes_when_a_recompute_drops_a_member_without_a_value() {
        super::data_goes_when_a_recompute_drops_a_member_without_a_value(
            Harness::redis_bucketed().await,
        )
        .await
    }
}

/// A board family: its aggregate, and its shards (a sum board spread over 3 shards is a
/// family of its own, with its own paths).
#[derive(Clone, Copy, Debug)]
struct Family {
    aggregate: Aggregate,
    shards: u32,
}

const fn family(aggregate: Aggregate, shards: u32) -> Family {
    Family { aggregate, shards }
}

const FAMILIES: [Family; 5] = [
    family(Aggregate::Sum, 1),
    family(Aggregate::Sum, 3),
    family(Aggregate::Max, 1),
    family(Aggregate::Min, 1),
    family(Aggregate::Latest, 1),
];
const HOUR: i64 = 3600;

/// An event of `member` worth `v` on a board of `family`: a delta, or a value.
fn event(family: Family, member: &str, v: i64) -> Event {
    match family.aggregate {
        Aggregate::Sum => Event::new(member, v),
        _ => Event::value(member, v),
    }
}

fn data(member: &str) -> MemberData {
    MemberData::parse(&format!("{member:?}")).unwrap()
}

/// A board of `family` with hourly slots and `windows`.
async fn board(h: &Harness, family: Family, windows: &[&str]) -> String {
    let name = unique("dfo");
    let config = BoardConfig::parse("1h", windows)
        .unwrap()
        .with_aggregate(family.aggregate)
        .with_shards(family.shards)
        .unwrap();
    h.boards.create(&name, config).await.unwrap();
    name
}

/// Of `members`, those whose data the board answers (each holds its own name as data).
async fn with_data(h: &Harness, board: &str, members: &[&str]) -> Vec<String> {
    let mut held = Vec::new();
    for m in members {
        if let Some(d) = h.boards.windowed(board).member_data(m).await.unwrap() {
            assert_eq!(d.as_str(), format!("{m:?}"), "the data of {m}");
            held.push(m.to_string());
        }
    }
    held
}

/// On Redis: the keys named `<prefix>_{<board>…` of the board and of its shards.
async fn board_keys(raw: &mut MultiplexedConnection, prefix: &str, board: &str) -> Vec<String> {
    let mut keys = Vec::new();
    for pattern in [
        format!("{prefix}_{{{board}}}*"),
        format!("{prefix}_{{{board}#*"),
    ] {
        let found: Vec<String> = ::redis::cmd("KEYS")
            .arg(pattern)
            .query_async(raw)
            .await
            .unwrap();
        keys.extend(found);
    }
    keys
}

/// On Redis: the fields of the member data and of the records (peak lists or newest
/// events; none on a sum board) of the board and its shards, sorted. `None` on a store
/// without raw access.
async fn raw_fields(h: &Harness, board: &str) -> Option<(Vec<String>, Vec<String>)> {
    let mut raw = h.redis.as_ref()?.raw().await;
    let mut fields = Vec::new();
    for prefix in ["data", "peaks", "newest"] {
        let mut f = Vec::new();
        for key in board_keys(&mut raw, prefix, board).await {
            let held: Vec<String> = ::redis::cmd("HKEYS")
                .arg(key)
                .query_async(&mut raw)
                .await
                .unwrap();
            f.extend(held);
        }
        f.sort();
        fields.push(f);
    }
    let data = fields.remove(0);
    Some((data, fields.concat()))
}

fn names(members: &[&str]) -> Vec<String> {
    members.iter().map(|m| m.to_string()).collect()
}

/// What Redis keeps of the board's members: their data, and (not on a sum board) their
/// records, each exactly `members`.
async fn assert_kept(h: &Harness, board: &str, family: Family, members: &[&str]) {
    if let Some((data, records)) = raw_fields(h, board).await {
        assert_eq!(data, names(members), "{family:?}: data_{{{board}}}");
        let want = if family.aggregate == Aggregate::Sum {
            vec![]
        } else {
            names(members)
        };
        assert_eq!(records, want, "{family:?}: records of {board}");
    }
}

/// Retires `board` in chunks of one member: the number of chunks.
async fn retire_in_chunks(h: &Harness, board: &str) -> u64 {
    let options = RetireOptions {
        chunk_size: 1,
        ..Default::default()
    };
    h.boards
        .windowed(board)
        .retire(Some(options))
        .await
        .unwrap()
        .chunks
}

/// Whether the harness's server keeps hashes of more than 4 fields out of listpacks (then
/// the retirer converts closed slots of 4 members or more into buckets).
async fn bucketed(h: &Harness) -> bool {
    let Some(redis) = &h.redis else { return false };
    let reply: Vec<String> = ::redis::cmd("CONFIG")
        .arg("GET")
        .arg("hash-max-listpack-entries")
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
    reply[1].parse::<u32>().unwrap() <= 4
}

const LEAVING: [&str; 8] = ["a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"];

/// Eight members `a0`..`a7` in the slot at START, `c` in the next slot, `p` in both: each
/// with its own name as data.
async fn written(h: &Harness, board: &str, family: Family) {
    let mut events: Vec<Event> = LEAVING
        .iter()
        .enumerate()
        .map(|(i, m)| event(family, m, 10 + i as i64).at(ts(START)))
        .collect();
    events.push(event(family, "p", 3).at(ts(START)));
    events.push(event(family, "c", 5).at(ts(START + HOUR)));
    events.push(event(family, "p", 4).at(ts(START + HOUR)));
    let events: Vec<Event> = events
        .into_iter()
        .map(|e| {
            let d = data(&e.member);
            e.with_data(d)
        })
        .collect();
    let outcome = h.boards.windowed(board).incr_batch(&events).await.unwrap();
    assert!(outcome.rejected.is_empty(), "{:?}", outcome.rejected);
}

async fn data_and_records_go_when_the_largest_window_retires_the_member(h: Harness) {
    let all: Vec<&str> = LEAVING.iter().copied().chain(["c", "p"]).collect();
    for family in FAMILIES {
        h.at(HOUR);
        let board = board(&h, family, &["1h", "3h"]).await;
        written(&h, &board, family).await;
        assert_kept(&h, &board, family, &all).await;
        // A pass at the boundary the slot at START closed at (a compact board's retirer
        // converts it then); at the next, it leaves the 1h window: everyone keeps a
        // value in the 3h one.
        retire_in_chunks(&h, &board).await;
        h.at(2 * HOUR);
        retire_in_chunks(&h, &board).await;
        assert_eq!(with_data(&h, &board, &all).await, names(&all), "{family:?}");
        if family.shards == 1 && bucketed(&h).await {
            let redis = h.redis.as_ref().unwrap();
            let converted: bool = ::redis::cmd("HEXISTS")
                .arg(format!("slotgeo_{{{board}}}"))
                .arg(START)
                .query_async(&mut redis.raw().await)
                .await
                .unwrap();
            assert!(converted, "{family:?}: the slot at START is not in buckets");
        }
        // It leaves the 3h window: a0..a7 lose their values, their data and their records;
        // p keeps its value of the next slot, and its data.
        h.at(3 * HOUR);
        let chunks = retire_in_chunks(&h, &board).await;
        if family.shards == 1 && bucketed(&h).await {
            assert!(chunks > 1, "{family:?}: {chunks} chunk");
        }
        assert_eq!(
            with_data(&h, &board, &all).await,
            names(&["c", "p"]),
            "{family:?}"
        );
        assert_kept(&h, &board, family, &["c", "p"]).await;
        let top = h
            .boards
            .windowed(&board)
            .top(Some("3h".parse().unwrap()), 0, 20)
            .await
            .unwrap();
        let ranked: Vec<&str> = top.entries.iter().map(|e| e.member.as_str()).collect();
        let want = if family.aggregate == Aggregate::Min {
            ["p", "c"]
        } else {
            ["c", "p"]
        };
        assert_eq!(ranked, want, "{family:?}");
        // The next slot leaves too: nothing is left, not even a key of a slot.
        h.at(4 * HOUR);
        retire_in_chunks(&h, &board).await;
        assert_eq!(with_data(&h, &board, &all).await, names(&[]), "{family:?}");
        assert_kept(&h, &board, family, &[]).await;
        if let Some(redis) = &h.redis {
            let left = board_keys(&mut redis.raw().await, "slot*", &board).await;
            assert_eq!(left, Vec::<String>::new(), "{family:?}");
        }
        let error = h
            .boards
            .windowed(&board)
            .set_member_data("c", data("c"))
            .await
            .unwrap_err();
        assert_eq!(error.code(), "member_not_found", "{family:?}");
    }
}

/// A recompute while retirement is due keeps every member and its data, and the
/// retirement after it takes them out; on Redis, a member whose total in the largest
/// window was drift (set by hand) leaves it with its data when a recompute repairs it.
async fn data_goes_when_a_recompute_drops_a_member_without_a_value(h: Harness) {
    for family in FAMILIES {
        h.at(HOUR);
        let board = board(&h, family, &["1h", "3h"]).await;
        written(&h, &board, family).await;
        // A recompute while the slot at START waits for its retirement keeps everyone.
        h.at(3 * HOUR);
        h.boards.windowed(&board).recompute(None).await.unwrap();
        let all: Vec<&str> = LEAVING.iter().copied().chain(["c", "p"]).collect();
        assert_eq!(with_data(&h, &board, &all).await, names(&all), "{family:?}");
        // Retirement after it takes a0..a7 out with their data.
        retire_in_chunks(&h, &board).await;
        assert_eq!(
            with_data(&h, &board, &all).await,
            names(&["c", "p"]),
            "{family:?}"
        );
        assert_kept(&h, &board, family, &["c", "p"]).await;
        // (On one board: a sharded board's totals are its shards'.)
        let Some(redis) = h.redis.as_ref().filter(|_| family.shards == 1) else {
            continue;
        };
        // Drift: a total set by hand in the largest window, data set for it through the
        // board; and 600 more such members with data written by hand (more than one step
        // of the sweep). The recompute takes them all away.
        let mut raw = redis.raw().await;
        let ghosts: Vec<String> = (0..600).map(|g| format!("ghost{g}")).collect();
        let mut zadd = ::redis::cmd("ZADD");
        let mut hset = ::redis::cmd("HSET");
        zadd.arg(format!("stats_{{{board}}}_{}", 3 * HOUR))
            .arg(9)
            .arg("ghost");
        hset.arg(format!("data_{{{board}}}"));
        for g in &ghosts {
            zadd.arg(9).arg(g);
            hset.arg(g).arg(format!("{g:?}"));
        }
        let _: () = zadd.query_async(&mut raw).await.unwrap();
        let _: () = hset.query_async(&mut raw).await.unwrap();
        h.boards
            .windowed(&board)
            .set_member_data("ghost", data("ghost"))
            .await
            .unwrap();
        assert_eq!(
            with_data(&h, &board, &["ghost", "ghost599", "c"]).await,
            names(&["ghost", "ghost599", "c"])
        );
        h.boards.windowed(&board).recompute(None).await.unwrap();
        assert_eq!(
            with_data(&h, &board, &["ghost", "c", "p"]).await,
            names(&["c", "p"]),
            "{family:?}"
        );
        assert_kept(&h, &board, family, &["c", "p"]).await;
    }
}

async fn data_goes_with_removal_bulk_removal_and_trim(h: Harness) {
    for family in FAMILIES {
        let board = board(&h, family, &["1h", "1d"]).await;
        let all = ["a", "b", "c", "d", "e"];
        let events: Vec<Event> = all
            .iter()
            .enumerate()
            .map(|(i, m)| event(family, m, 10 - i as i64).with_data(data(m)))
            .collect();
        h.boards.windowed(&board).incr_batch(&events).await.unwrap();
        assert_kept(&h, &board, family, &all).await;
        h.boards.windowed(&board).remove_member("a").await.unwrap();
        h.boards
            .windowed(&board)
            .remove_members(&["b"])
            .await
            .unwrap();
        assert_eq!(with_data(&h, &board, &all).await, names(&["c", "d", "e"]));
        assert_kept(&h, &board, family, &["c", "d", "e"]).await;
        // Trim the 1h window to its top 1 (the highest value; a min board's lowest).
        let (kept, mut gone) = if family.aggregate == Aggregate::Min {
            ("e", vec!["c", "d"])
        } else {
            ("c", vec!["d", "e"])
        };
        let mut trimmed = h
            .boards
            .windowed(&board)
            .trim(None, 1)
            .await
            .unwrap()
            .members;
        trimmed.sort();
        gone.sort();
        assert_eq!(trimmed, names(&gone), "{family:?}");
        assert_eq!(
            with_data(&h, &board, &all).await,
            names(&[kept]),
            "{family:?}"
        );
        assert_kept(&h, &board, family, &[kept]).await;
    }
}
