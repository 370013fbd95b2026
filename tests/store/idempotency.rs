//! Writes under an idempotency key, on both stores: applied once while the key lives,
//! answered as the first time, told apart from another write under the same key, and
//! forgotten after the key's time to live (by the injected clock; Redis also expires the
//! record by itself).

use rollboard::{BatchOutcome, Error, Event, Span};

use crate::support::{Harness, START, pairs, ranking, ts};

on_every_store!(
    a_keyed_batch_is_applied_once_and_answered_as_the_first_time,
    a_key_is_forgotten_after_its_time_to_live,
    a_batch_of_several_calls_replays_every_part,
    dropping_a_board_forgets_its_keys,
    a_key_outlives_a_new_version_of_its_board,
    a_malformed_key_is_rejected,
);

fn codes(outcome: &BatchOutcome) -> Vec<(usize, &'static str)> {
    outcome
        .rejected
        .iter()
        .map(|r| (r.index, r.error.code()))
        .collect()
}

async fn top(h: &Harness, board: &str, window: &str) -> Vec<(String, i64)> {
    let window = Some(Span::parse(window).unwrap());
    ranking(&h.boards.windowed(board).top(window, 0, 100).await.unwrap())
}

async fn a_keyed_batch_is_applied_once_and_answered_as_the_first_time(h: Harness) {
    let b = h.board("1h", &["1h", "3h"]).await;
    h.at(3600 + 1800);
    let events = [
        Event::new("a", 2),
        Event::new("b", 1).at(ts(START + 10)),
        Event::new("c", 1).at(ts(START - 4 * 3600)),
        Event::new("a", 0),
    ];
    let first = h
        .boards
        .windowed(&b)
        .write_idempotent(&events, "k-1")
        .await
        .unwrap();
    assert_eq!(first.accepted, 2);
    assert_eq!(codes(&first), [(2, "too_late"), (3, "invalid_delta")]);

    // Ten minutes later (events without a time would fall in the same slot anyway, and
    // the too-late message names the oldest open slot of the first call's time).
    h.at(3600 + 2400);
    let again = h
        .boards
        .windowed(&b)
        .write_idempotent(&events, "k-1")
        .await
        .unwrap();
    assert_eq!(again, first);
    // Two hours later the event at START + 10 would be too late for both windows; the
    // retry still answers as the first call did.
    h.at(4 * 3600 + 1);
    let late = h
        .boards
        .windowed(&b)
        .write_idempotent(&events, "k-1")
        .await
        .unwrap();
    assert_eq!(late, first);
    h.at(3600 + 2400);
    assert_eq!(top(&h, &b, "1h").await, pairs(&[("a", 2)]));
    assert_eq!(top(&h, &b, "3h").await, pairs(&[("a", 2), ("b", 1)]));

    // The same key for other events is refused, and applies nothing.
    let err = h
        .boards
        .windowed(&b)
        .write_idempotent(&events[..1], "k-1")
        .await
        .unwrap_err();
    assert_eq!(err, Error::IdempotencyKeyReused { key: "k-1".into() });
    assert_eq!(err.code(), "idempotency_key_reused");
    // Another key counts again.
    let other = h
        .boards
        .windowed(&b)
        .write_idempotent(&events, "k-2")
        .await
        .unwrap();
    assert_eq!(other.accepted, 2);
    assert_eq!(top(&h, &b, "3h").await, pairs(&[("a", 4), ("b", 2)]));
}

async fn a_key_is_forgotten_after_its_time_to_live(h: Harness) {
    let b = h.board("1h", &["2d"]).await;
    let events = [Event::new("a", 1)];
    h.boards
        .windowed(&b)
        .write_idempotent(&events, "k")
        .await
        .unwrap();
    if let Some(redis) = &h.redis {
        // Redis forgets the record by itself after the TTL (24 h by default).
        let version = h.boards.board(&b).await.unwrap().version;
        let mut raw = redis.raw().await;
        let ttl: i64 = ::redis::cmd("PTTL")
            .arg(format!("idem_{{{b}}}_{version}_k"))
            .query_async(&mut raw)
            .await
            .unwrap();
        assert!((86_340_000..=86_400_000).contains(&ttl), "PTTL {ttl}");
    }
    // Within the TTL by the clock: a replay.
    h.at(86_399);
    h.boards
        .windowed(&b)
        .write_idempotent(&events, "k")
        .await
        .unwrap();
    assert_eq!(top(&h, &b, "2d").await, pairs(&[("a", 1)]));
    // At the TTL: forgotten, applied again, and remembered afresh.
    h.at(86_400);
    h.boards
        .windowed(&b)
        .write_idempotent(&events, "k")
        .await
        .unwrap();
    assert_eq!(top(&h, &b, "2d").await, pairs(&[("a", 2)]));
    h.at(86_401);
    h.boards
        .windowed(&b)
        .write_idempotent(&events, "k")
        .await
        .unwrap();
    assert_eq!(top(&h, &b, "2d").await, pairs(&[("a", 2)]));
}

async fn a_batch_of_several_calls_replays_every_part(h: Harness) {
    let b = h.board("1h", &["1h"]).await;
    // 2,500 events: three store calls of at most 1,000 (`events_per_call`).
    let events: Vec<Event> = (0..2500)
        .map(|i| Event::new(format!("m{}", i % 7), 1))
        .collect();
    let key = rollboard::IdempotencyKey::parse("big").unwrap();
    let fingerprint = rollboard::Fingerprint::of_events(&events);
    let first = h
        .boards
        .windowed(&b)
        .write_keyed(&events, &key, &fingerprint)
        .await
        .unwrap();
    assert_eq!((first.outcome.accepted, first.replayed), (2500, false));
    let again = h
        .boards
        .windowed(&b)
        .write_keyed(&events, &key, &fingerprint)
        .await
        .unwrap();
    assert_eq!((again.outcome.accepted, again.replayed), (2500, true));
    let top = top(&h, &b, "1h").await;
    assert_eq!(top.iter().map(|(_, s)| s).sum::<i64>(), 2500);
    assert_eq!(top[0], ("m0".to_owned(), 358));
    if let Some(redis) = &h.redis {
        let mut raw = redis.raw().await;
        let mut records: Vec<String> = ::redis::cmd("KEYS")
            .arg(format!("idem_{{{b}}}_*"))
            .query_async(&mut raw)
            .await
            .unwrap();
        records.sort();
        let version = h.boards.board(&b).await.unwrap().version;
        let name = |part: &str| format!("idem_{{{b}}}_{version}_big{part}");
        assert_eq!(records, [name(""), name("\u{1f}1"), name("\u{1f}2")]);
    }
}

async fn dropping_a_board_forgets_its_keys(h: Harness) {
    let b = h.board("1h", &["1h"]).await;
    let events = [Event::new("a", 1)];
    h.boards
        .windowed(&b)
        .write_idempotent(&events, "k")
        .await
        .unwrap();
    h.boards.drop_board(&b).await.unwrap();
    if let Some(redis) = &h.redis {
        // Left to expire by themselves (within the TTL, 24 h by default), and never seen
        // by the next incarnation: their names carry the board's version.
        let mut raw = redis.raw().await;
        let left: Vec<String> = ::redis::cmd("KEYS")
            .arg(format!("idem_{{{b}}}_*"))
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(left.len(), 1, "{left:?}");
        let ttl: i64 = ::redis::cmd("PTTL")
            .arg(&left[0])
            .query_async(&mut raw)
            .await
            .unwrap();
        assert!(ttl > 0 && ttl <= 86_400_000, "{ttl}");
    }
    h.boards
        .create(&b, rollboard::BoardConfig::parse("1h", &["1h"]).unwrap())
        .await
        .unwrap();
    let outcome = h
        .boards
        .windowed(&b)
        .write_idempotent(&events, "k")
        .await
        .unwrap();
    assert_eq!(outcome.accepted, 1);
    assert_eq!(top(&h, &b, "1h").await, pairs(&[("a", 1)]));
}

/// A window added gives the board a new version; a keyed write retried after it is still
/// applied once (its record is named by the board's first version).
async fn a_key_outlives_a_new_version_of_its_board(h: Harness) {
    let b = h.board("1h", &["1h"]).await;
    let events = [Event::new("a", 3), Event::new("b", 1)];
    let key = rollboard::IdempotencyKey::parse("k").unwrap();
    let fingerprint = rollboard::Fingerprint::of_events(&events);
    let write = || {
        h.boards
            .windowed(&b)
            .write_keyed(&events, &key, &fingerprint)
    };
    let first = write().await.unwrap();
    assert_eq!((first.outcome.accepted, first.replayed), (2, false));
    let version = h.boards.board(&b).await.unwrap().version;
    let wider = rollboard::BoardConfig::parse("1h", &["1h", "2h"]).unwrap();
    h.boards.create(&b, wider).await.unwrap();
    let board = h.boards.board(&b).await.unwrap();
    assert_ne!(board.version, version);
    assert_eq!(board.incarnation, version);
    let again = write().await.unwrap();
    assert_eq!((again.outcome.accepted, again.replayed), (2, true));
    assert_eq!(top(&h, &b, "1h").await, pairs(&[("a", 3), ("b", 1)]));
}

async fn a_malformed_key_is_rejected(h: Harness) {
    let b = h.board("1h", &["1h"]).await;
    for key in ["", "has space", &"k".repeat(256)] {
        let err = h
            .boards
            .windowed(&b)
            .write_idempotent(&[Event::new("a", 1)], key)
            .await
            .unwrap_err();
        assert_eq!(err.code(), "invalid_idempotency_key", "{key:?}");
    }
    assert_eq!(top(&h, &b, "1h").await, pairs(&[]));
}
