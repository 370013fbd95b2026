//! Bounded trending writes: a batch of fresh members is applied in `trend_write.lua`
//! calls of at most the board's cap of events, each stopping at the call budget, and
//! stays exact against the oracle on every store; on Redis it is split (every call's
//! events counted from `SLOWLOG`), and under an idempotency key a batch cut after some
//! calls is completed by its retry with each event applied once (fault proxy on real
//! Redis).

use std::sync::Arc;
use std::time::Duration;

use rollboard::{
    Error, Event, Fingerprint, IdempotencyKey, IngestOptions, RedisOptions, RedisStore, Rollboard,
    TrendingConfig,
};

use crate::bounded_writes::script_calls;
use crate::proxy::{Fault, FaultProxy, Request};
use crate::support::{Harness, START, TestRedis, clock, ts, unique, with_clock};
use crate::trending::{Oracle, check_page, close};

on_every_store!(a_ten_thousand_event_batch_of_fresh_members_is_exact,);

/// Events in the big batch: what the issue measured as one 39 ms call.
const EVENTS: usize = 10_000;

/// The most events one call may carry (the batch maximum of a call's cap).
const CALL_BOUND: usize = 1000;

/// `EVENTS` events of as many fresh members, `at` spread over the last hour (`now` is
/// `START + 3600`), deltas 1 to 5.
fn fresh_batch(oracle: &mut Oracle) -> Vec<Event> {
    (0..EVENTS)
        .map(|i| {
            let member = format!("m{i:05}");
            let delta = 1 + (i % 5) as i64;
            let at = START + 3600 - (i % 3600) as i64;
            oracle.add(&member, delta, at * 1000);
            Event::new(member, delta).at(ts(at))
        })
        .collect()
}

/// Writes the batch to a fresh `1h` board and checks every score against the oracle:
/// the whole ranking page by page, and a member's score on its own.
async fn write_and_check(boards: &Rollboard) -> String {
    let name = unique("tw");
    let config = TrendingConfig::parse("1h").unwrap();
    boards.create(&name, config).await.unwrap();
    let mut oracle = Oracle::default();
    let events = fresh_batch(&mut oracle);
    let outcome = boards.trending(&name).incr_batch(&events).await.unwrap();
    assert_eq!((outcome.accepted, outcome.rejected.len()), (EVENTS, 0));
    let now_ms = (START + 3600) * 1000;
    let (_, counts) = boards.trending(&name).describe().await.unwrap();
    assert_eq!(
        (counts.members, counts.ranked),
        (EVENTS as u64, EVENTS as u64)
    );
    for offset in (0..EVENTS).step_by(500) {
        let page = boards
            .trending(&name)
            .top(offset as u64, 500)
            .await
            .unwrap();
        assert_eq!(page.entries.len(), 500);
        check_page(&page, &oracle, now_ms, 3600, offset);
    }
    for member in ["m00000", "m04321", "m09999"] {
        let got = boards.trending(&name).score(member).await.unwrap().unwrap();
        close(got.score, oracle.score(member, now_ms, 3600), member);
    }
    name
}

async fn a_ten_thousand_event_batch_of_fresh_members_is_exact(h: Harness) {
    h.at(3600);
    write_and_check(&h.boards).await;
}

/// One `trend_write.lua` call Redis logged: how many events it carried.
fn events_of(args: &[String]) -> usize {
    // EVALSHA sha numkeys, 3 keys (no idempotency key), 7 fixed ARGV, then 3 per event.
    // SLOWLOG keeps 32 arguments: the last says how many more there were.
    let argc = match args.last().and_then(|a| a.strip_prefix("... (")) {
        Some(more) => 31 + more.split(' ').next().unwrap().parse::<usize>().unwrap(),
        None => args.len(),
    };
    assert_eq!(args[2], "3", "{args:?}");
    assert_eq!((argc - 13) % 3, 0, "{args:?}");
    (argc - 13) / 3
}

/// On a Redis of its own, the batch goes in several calls (counted from `INFO
/// commandstats` and from `SLOWLOG`, which logs every call here), none carrying more
/// than the per-call bound, together carrying every event exactly once.
#[tokio::test]
async fn a_ten_thousand_event_trending_batch_is_split_into_bounded_calls() {
    let redis = TestRedis::spawn().await;
    let clock = clock();
    clock.set(ts(START + 3600));
    let boards = with_clock(redis.store().await, &clock);
    let mut conn = redis.raw().await;
    let _: () = ::redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(0)
        .arg("slowlog-max-len")
        .arg(100_000)
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = ::redis::cmd("SLOWLOG")
        .arg("RESET")
        .query_async(&mut conn)
        .await
        .unwrap();
    let before = script_calls(&redis).await;
    let name = write_and_check(&boards).await;
    let scripts = script_calls(&redis).await - before;

    let log: Vec<::redis::Value> = ::redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    let values = format!("trend_{{{name}}}");
    let (mut calls, mut micros) = (Vec::new(), Vec::new());
    for entry in &log {
        let ::redis::Value::Array(fields) = entry else {
            continue;
        };
        let Some(::redis::Value::Array(args)) = fields.get(3) else {
            continue;
        };
        let args: Vec<String> = args
            .iter()
            .map(|a| match a {
                ::redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                other => format!("{other:?}"),
            })
            .collect();
        // trend_write.lua's: the board's values as second key, a budget as ARGV[7].
        let budget = args.get(12).is_some_and(|a| {
            a.split(' ').count() == 2 && a.split(' ').all(|n| n.parse::<u64>().is_ok())
        });
        if args[0] == "EVALSHA" && args.get(4) == Some(&values) && budget {
            // The first event's member (m<index>) says where the call started.
            let start: usize = args[13].strip_prefix('m').unwrap().parse().unwrap();
            calls.push((start, events_of(&args)));
            micros.push(match fields.get(2) {
                Some(::redis::Value::Int(us)) => *us,
                _ => 0,
            });
        }
    }
    // The writes, plus the create, the reads and their loads.
    assert!(scripts >= calls.len() as u64, "{scripts} scripts");
    calls.sort();
    // The first call is logged twice: refused NOSCRIPT (the script not loaded yet on this
    // server), then sent again after loading it.
    calls.dedup();
    assert!(
        calls.len() >= EVENTS / CALL_BOUND,
        "{} calls: {calls:?}",
        calls.len()
    );
    assert!(
        calls.iter().all(|&(_, n)| (1..=CALL_BOUND).contains(&n)),
        "{calls:?}"
    );
    // Each call starts where the one before stopped (at or before the end of what it
    // carried), the first at event 0, the last carrying the batch's end.
    assert_eq!(calls[0].0, 0);
    for pair in calls.windows(2) {
        let ((start, carried), (next, _)) = (pair[0], pair[1]);
        assert!(start < next && next <= start + carried, "{calls:?}");
    }
    let (last, carried) = calls[calls.len() - 1];
    assert_eq!(last + carried, EVENTS);
    eprintln!(
        "{} calls, longest {} us",
        calls.len(),
        micros.iter().max().unwrap()
    );
}

/// A `trend_write.lua` call of the board whose values are `trend_{board}`, carrying
/// `member`.
fn trend_write_of(board: &str, member: &str) -> impl Fn(&Request) -> bool + Send + Sync + 'static {
    let (values, member) = (format!("trend_{{{board}}}"), member.to_owned());
    move |r| r.is_script_with_key(&values) && r.has_arg(&member)
}

/// A Rollboard on Redis through `proxy` whose calls carry one event each (a zero
/// budget), or sized by the default budget.
async fn through(proxy: &FaultProxy, one_per_call: bool) -> (Rollboard, rollboard::ManualClock) {
    let mut options = RedisOptions::default();
    if one_per_call {
        options.ingest = IngestOptions {
            call_budget: Duration::ZERO,
            ..IngestOptions::default()
        };
    }
    let store = RedisStore::connect_with(&proxy.url(), options)
        .await
        .unwrap();
    let clock = clock();
    clock.set(ts(START + 60));
    (with_clock(Arc::new(store), &clock), clock)
}

/// Five events of four members, `ev-b`'s the second call.
fn five() -> Vec<Event> {
    vec![
        Event::new("ev-a", 1),
        Event::new("ev-b", 2),
        Event::new("ev-c", 3),
        Event::new("ev-a", 4),
        Event::new("ev-d", 5),
    ]
}

/// The scores of the board now, by member.
async fn scores(boards: &Rollboard, name: &str) -> Vec<(String, f64)> {
    let page = boards.trending(name).top(0, 100).await.unwrap();
    page.entries
        .into_iter()
        .map(|e| (e.member, e.score))
        .collect()
}

/// Under an idempotency key, a batch whose second call lost its reply (Redis ran it) is
/// completed by its retry, even from a later `now` and with another cap: the retry
/// admits the events at the recorded `now`, replays the two recorded calls and applies
/// the rest in one call, so each event counts once; a third try replays everything and
/// answers as the first.
#[tokio::test]
async fn a_keyed_trending_batch_cut_after_two_calls_is_completed_exactly_by_its_retry() {
    let redis = TestRedis::spawn().await;
    let proxy = FaultProxy::start(&redis.url).await;
    let (boards, _clock) = through(&proxy, true).await;
    let name = unique("tk");
    boards
        .create(&name, TrendingConfig::parse("1h").unwrap())
        .await
        .unwrap();
    let key = IdempotencyKey::parse("cut").unwrap();
    let fingerprint = Fingerprint::of_events(&five());
    proxy.arm(Fault::Cut, 1, trend_write_of(&name, "ev-b"));
    let lost = boards
        .trending(&name)
        .write_keyed(&five(), &key, &fingerprint)
        .await;
    match lost {
        Err(Error::StoreUnavailable(message)) => {
            assert!(
                message.contains("after 1 of the batch's 5 events"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(proxy.fired(), 1);
    // ev-a (1) and ev-b (2) are in, at START + 60; the rest was never sent.
    assert_eq!(
        scores(&boards, &name).await,
        [("ev-b".to_owned(), 2.0), ("ev-a".to_owned(), 1.0)]
    );

    // The retry comes 30 s later, from a store with the default budget.
    let (other, other_clock) = through(&proxy, false).await;
    other_clock.set(ts(START + 90));
    let before = script_calls(&redis).await;
    let again = other
        .trending(&name)
        .write_keyed(&five(), &key, &fingerprint)
        .await
        .unwrap();
    // The first call answers its record's now; then, at that now, two replayed calls
    // and one call for events 2..5.
    assert_eq!(script_calls(&redis).await - before, 4);
    assert!(!again.replayed);
    assert_eq!(
        (again.outcome.accepted, again.outcome.rejected.len()),
        (5, 0)
    );
    // Every event once, at START + 60, read at START + 90.
    let mut oracle = Oracle::default();
    for e in five() {
        oracle.add(&e.member, e.delta, (START + 60) * 1000);
    }
    let now_ms = (START + 90) * 1000;
    let got = scores(&other, &name).await;
    let want = oracle.ranking(now_ms, 3600);
    assert_eq!(
        got.iter().map(|(m, _)| m.as_str()).collect::<Vec<_>>(),
        ["ev-a", "ev-d", "ev-c", "ev-b"]
    );
    for ((member, score), (want_member, _)) in got.iter().zip(&want) {
        assert_eq!(member, want_member);
        close(*score, oracle.score(member, now_ms, 3600), member);
    }

    let before = script_calls(&redis).await;
    let third = other
        .trending(&name)
        .write_keyed(&five(), &key, &fingerprint)
        .await
        .unwrap();
    assert!(third.replayed);
    assert_eq!(third.outcome, again.outcome);
    // The first call answers its record's now (START + 60 ≠ START + 90), then its three
    // records are followed.
    assert_eq!(script_calls(&redis).await - before, 4);
    assert_eq!(scores(&other, &name).await, got);
}
