//! The compact slot layout's write path on real Redis: a slot's stage lives in bucket
//! hashes named `<stage>:<i>`, each member in the bucket its SHA-1 and the slot's linear
//! hashing geometry (`slotgeo_{b}`) give, splitting while the slot grows so every bucket
//! stays a listpack; late writes follow the frozen geometry; plain boards have none.
//! The open slot is written plain on every board (the retirer compacts it once closed:
//! `open_slot.rs`), so these tests write to closed slots: a late event that creates a
//! closed slot gives it a geometry.

use std::collections::BTreeMap;

use rollboard::{BoardConfig, Event, Layout, Span};

use crate::support::{Harness, START, TestRedis, ts, unique};

/// The geometry of a slot as (L, p, count), if it is compact.
async fn geometry(h: &Harness, board: &str, slot: i64) -> Option<(u32, u64, u64)> {
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let text: Option<String> = redis::cmd("HGET")
        .arg(format!("slotgeo_{{{board}}}"))
        .arg(slot)
        .query_async(&mut raw)
        .await
        .unwrap();
    text.map(|t| {
        let parts: Vec<u64> = t.split(' ').map(|p| p.parse().unwrap()).collect();
        (parts[0] as u32, parts[1], parts[2])
    })
}

/// The bucket a member belongs to under geometry (L, p): the spec of `bucket_of`.
fn bucket_of(member: &str, l: u32, p: u64) -> u64 {
    let digest = sha1_smol::Sha1::from(member).digest().bytes();
    let h = u64::from(u32::from_be_bytes([
        digest[0], digest[1], digest[2], digest[3],
    ]));
    let b = h % (1 << l);
    if b < p { h % (2 << l) } else { b }
}

/// Every field of every bucket of `stage_key` as member -> (bucket, value), checking
/// each bucket's encoding.
async fn buckets(h: &Harness, stage_key: &str, count: u64) -> BTreeMap<String, (u64, i64)> {
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let mut all = BTreeMap::new();
    for i in 0..count {
        let key = format!("{stage_key}:{i}");
        let fields: BTreeMap<String, i64> = redis::cmd("HGETALL")
            .arg(&key)
            .query_async(&mut raw)
            .await
            .unwrap();
        if !fields.is_empty() {
            let encoding: String = redis::cmd("OBJECT")
                .arg("ENCODING")
                .arg(&key)
                .query_async(&mut raw)
                .await
                .unwrap();
            assert_eq!(encoding, "listpack", "{key} holds {} fields", fields.len());
        }
        for (member, value) in fields {
            assert!(all.insert(member, (i, value)).is_none());
        }
    }
    all
}

async fn compact_board(h: &Harness, windows: &[&str]) -> String {
    let name = unique("c");
    let config = BoardConfig::parse("1h", windows)
        .unwrap()
        .with_layout(Some(Layout::Compact));
    h.boards.create(&name, config).await.unwrap();
    name
}

#[tokio::test]
async fn a_growing_slot_splits_into_listpack_buckets_holding_each_member_once() {
    let h = Harness::redis().await;
    // Slot START is closed at START + 1h, and no window froze it yet.
    let b = compact_board(&h, &["2h", "24h"]).await;
    h.at(3600);
    // 3,000 members in batches of 500, each written twice (once +2, once +1).
    for round in 0..2 {
        for chunk in 0..6 {
            let events: Vec<Event> = (chunk * 500..(chunk + 1) * 500)
                .map(|i| Event::new(format!("member:{i}"), 2 - round).at(ts(START + 10)))
                .collect();
            h.boards.windowed(&b).incr_batch(&events).await.unwrap();
        }
    }
    let (l, p, count) = geometry(&h, &b, START).await.expect("a compact slot");
    assert_eq!(count, 3000, "each member counted once as a new field");
    let n = (1u64 << l) + p;
    assert!(count <= 64 * n, "{count} fields over {n} buckets");
    assert!(
        count > 64 * (n - 1),
        "no more splits than needed: {n} buckets"
    );
    let stored = buckets(&h, &format!("slot_{{{b}}}_{START}"), n + 4).await;
    assert_eq!(stored.len(), 3000);
    for (member, (bucket, value)) in &stored {
        assert_eq!(*bucket, bucket_of(member, l, p), "{member}");
        assert_eq!(*value, 3);
    }
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let plain: bool = redis::cmd("EXISTS")
        .arg(format!("slot_{{{b}}}_{START}"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(!plain, "no plain stage hash on a compact slot");
    let day = Some(Span::parse("24h").unwrap());
    let standing = h
        .boards
        .windowed(&b)
        .score("member:2999", day)
        .await
        .unwrap();
    assert_eq!(standing.map(|s| s.score), Some(3));
}

#[tokio::test]
async fn late_writes_to_a_frozen_slot_follow_its_geometry_without_splitting() {
    let h = Harness::redis().await;
    let b = compact_board(&h, &["2h", "24h"]).await;
    h.at(3600);
    let events: Vec<Event> = (0..200)
        .map(|i| Event::new(format!("m{i}"), 1).at(ts(START + 10)))
        .collect();
    h.boards.windowed(&b).incr_batch(&events).await.unwrap();
    let frozen = geometry(&h, &b, START).await.unwrap();
    // Window 2h freezes slot START.
    h.at(7200);
    // 400 late members land in stage 2 of the frozen slot: more than the geometry's
    // fill, yet it must not change (retirement moves whole buckets from now on).
    let late: Vec<Event> = (0..600)
        .map(|i| Event::new(format!("m{i}"), 5).at(ts(START + 10)))
        .collect();
    h.boards.windowed(&b).incr_batch(&late).await.unwrap();
    let (l, p, _) = geometry(&h, &b, START).await.unwrap();
    assert_eq!((l, p), (frozen.0, frozen.1));
    let n = (1u64 << l) + p;
    let stage2 = buckets(&h, &format!("slot_{{{b}}}_{START}_1"), n + 4).await;
    assert_eq!(stage2.len(), 600);
    for (member, (bucket, value)) in &stage2 {
        assert_eq!(*bucket, bucket_of(member, l, p), "{member}");
        assert_eq!(*value, 5);
    }
    let day = Some(Span::parse("24h").unwrap());
    let m7 = h.boards.windowed(&b).score("m7", day).await.unwrap();
    assert_eq!(m7.map(|s| s.score), Some(6));
    let m500 = h.boards.windowed(&b).score("m500", day).await.unwrap();
    assert_eq!(m500.map(|s| s.score), Some(5));
}

#[tokio::test]
async fn boards_naming_no_layout_follow_the_stores_default_and_plain_ones_keep_one_hash() {
    // A store whose default is plain.
    // Each write is a late event creating the closed slot START (the clock is an hour on).
    let late = Some(ts(START + 10));
    let h = Harness::redis_plain().await;
    h.at(3600);
    let b = h.board("1h", &["1h", "2h"]).await;
    h.boards.windowed(&b).incr("a", 1, late).await.unwrap();
    assert_eq!(geometry(&h, &b, START).await, None);
    let board = h.boards.board(&b).await.unwrap();
    assert_eq!(board.config.layout(), None);

    // The store's own default: compact (but its open slot is written plain).
    let compact = Harness::redis().await;
    compact.at(3600);
    let c = compact.board("1h", &["1h", "2h"]).await;
    compact
        .boards
        .windowed(&c)
        .incr("a", 1, late)
        .await
        .unwrap();
    assert_eq!(geometry(&compact, &c, START).await, Some((0, 0, 1)));
    compact
        .boards
        .windowed(&c)
        .incr("a", 1, None)
        .await
        .unwrap();
    assert_eq!(geometry(&compact, &c, START + 3600).await, None);
    let explicit = unique("p");
    let config = BoardConfig::parse("1h", &["1h", "2h"])
        .unwrap()
        .with_layout(Some(Layout::Plain));
    compact
        .boards
        .create(&explicit, config.clone())
        .await
        .unwrap();
    compact
        .boards
        .windowed(&explicit)
        .incr("a", 1, late)
        .await
        .unwrap();
    assert_eq!(geometry(&compact, &explicit, START).await, None);
    assert_eq!(
        compact.boards.board(&explicit).await.unwrap().config,
        config
    );
}

#[tokio::test]
async fn a_new_slot_starts_with_the_buckets_the_slot_before_it_filled() {
    let h = Harness::redis().await;
    // Both slots are created by late events, each an hour after it started.
    let b = compact_board(&h, &["3h"]).await;
    h.at(3600);
    let events: Vec<Event> = (0..3000)
        .map(|i| Event::new(format!("m{i}"), 1).at(ts(START + 10)))
        .collect();
    h.boards.windowed(&b).incr_batch(&events).await.unwrap();
    assert_eq!(geometry(&h, &b, START).await.unwrap().2, 3000);
    h.at(7200);
    h.boards
        .windowed(&b)
        .incr("m1", 1, Some(ts(START + 3610)))
        .await
        .unwrap();
    // 3000 / 64 = 46 buckets: L = 5, p = 46 - 32.
    assert_eq!(geometry(&h, &b, START + 3600).await, Some((5, 14, 1)));
    let stored = buckets(&h, &format!("slot_{{{b}}}_{}", START + 3600), 46).await;
    assert_eq!(stored["m1"], (bucket_of("m1", 5, 14), 1));
    let three = Some(Span::parse("3h").unwrap());
    let m1 = h.boards.windowed(&b).score("m1", three).await.unwrap();
    assert_eq!(m1.map(|s| s.score), Some(2));
}

/// `bucket_key` (lua/compact_slots.lua) names bucket `i` `<stage>:<i>`, `i` in decimal: the digits
/// come from tables below 10^6 (and from `string.format` above), so every number below
/// 10^5 and every 7th up to past 10^6 is checked against `string.format('%d', i)`, and
/// some against Rust's.
#[tokio::test]
async fn bucket_keys_name_the_bucket_number_in_decimal() {
    let redis = TestRedis::start().await;
    let mut raw = redis.raw().await;
    let script = format!(
        "{}\n{}",
        include_str!("../../src/store/redis/lua/compact_slots.lua"),
        "local wrong = {}
        local i = 0
        while i <= 1100000 and #wrong < 5 do
          if bucket_key('s', i) ~= 's:' .. string.format('%d', i) then wrong[#wrong + 1] = i end
          i = i + (i < 100000 and 1 or 7)
        end
        local named = {}
        for x = 1, #ARGV do named[x] = bucket_key('slot_{b}_0', tonumber(ARGV[x])) end
        return {wrong, named}"
    );
    let numbers: [u64; 19] = [
        0, 7, 9, 10, 42, 99, 100, 101, 999, 1000, 1234, 9999, 10000, 10001, 99999, 100000, 987654,
        999999, 1000000,
    ];
    let (wrong, named): (Vec<i64>, Vec<String>) = redis::cmd("EVAL")
        .arg(script)
        .arg(0)
        .arg(&numbers[..])
        .arg(4_294_967_295u64)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(wrong, Vec::<i64>::new(), "bucket numbers named wrongly");
    let expected: Vec<String> = numbers
        .iter()
        .chain([4_294_967_295].iter())
        .map(|i| format!("slot_{{b}}_0:{i}"))
        .collect();
    assert_eq!(named, expected);
}

/// With a bucket fill of 1 (listpacks of at most 2 entries), a slot that follows one of
/// 2,500 members starts with 2,500 buckets: members written to it land in buckets
/// numbered up to four digits, each in the bucket its hash names, once.
#[tokio::test]
async fn members_land_in_their_bucket_of_a_slot_of_thousands_of_buckets() {
    let redis = TestRedis::spawn().await;
    redis.config_set("hash-max-listpack-entries", "2").await;
    let clock = crate::support::clock();
    let h = Harness {
        boards: crate::support::with_clock(redis.store().await, &clock),
        clock,
        redis: Some(redis),
        in_memory: false,
    };
    // Both slots are created by late events, each an hour after it started.
    let b = compact_board(&h, &["3h"]).await;
    h.at(3600);
    let events: Vec<Event> = (0..2500)
        .map(|i| Event::new(format!("m{i}"), 1).at(ts(START + 10)))
        .collect();
    for chunk in events.chunks(500) {
        h.boards.windowed(&b).incr_batch(chunk).await.unwrap();
    }
    h.at(7200);
    let twice: Vec<Event> = (0..2500)
        .map(|i| Event::new(format!("m{i}"), 2).at(ts(START + 3610)))
        .collect();
    for chunk in twice.chunks(500) {
        h.boards.windowed(&b).incr_batch(chunk).await.unwrap();
    }
    // 2500 = 2^11 + 452 buckets, numbered 0..=2499.
    assert_eq!(geometry(&h, &b, START + 3600).await, Some((11, 452, 2500)));
    let stage = format!("slot_{{{b}}}_{}", START + 3600);
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let mut found = BTreeMap::new();
    for i in 0..2500 + 4 {
        let fields: BTreeMap<String, i64> = redis::cmd("HGETALL")
            .arg(format!("{stage}:{i}"))
            .query_async(&mut raw)
            .await
            .unwrap();
        for (member, value) in fields {
            assert_eq!(value, 2, "{member}");
            assert!(found.insert(member, i).is_none());
        }
    }
    assert_eq!(found.len(), 2500);
    for (member, bucket) in &found {
        assert_eq!(*bucket, bucket_of(member, 11, 452), "{member}");
    }
    assert!(found.values().any(|bucket| *bucket >= 1000));
    let three = Some(Span::parse("3h").unwrap());
    let m2345 = h.boards.windowed(&b).score("m2345", three).await.unwrap();
    assert_eq!(m2345.map(|s| s.score), Some(3));
}
