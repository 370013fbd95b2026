//! Cached reads (`max_staleness_ms`): a read that allows a bound is answered from the
//! service process's cache while the answer is at most that old (`age_ms` exact under the
//! injected clock), a write through the same process is seen at once, another replica's
//! only after the bound; bound 0 is never cached; concurrent misses share one store call.

use std::sync::Arc;

use reqwest::StatusCode;
use rollboard::service::ServiceConfig;
use rollboard::{MemoryStore, Rollboard, Settings, Span, Staleness, Store};
use serde_json::{Value, json};

use crate::support::{
    Backend, TestApp, TestRedis, clock, entries, ranked, spawn_app_on, spawn_app_with, unique,
};

/// Two service processes on one store (a fresh Redis, or one memory store shared) and
/// one clock: replicas. `b` serves reads with `b_staleness_ms` as its default.
async fn replicas(backend: Backend, b_staleness_ms: u64) -> (TestApp, TestApp) {
    let redis = Arc::new(TestRedis::spawn().await);
    let clock = clock();
    let config = |ms: u64| ServiceConfig {
        max_clock_skew: None,
        settings: Settings {
            max_staleness_ms: ms,
            ..Settings::default()
        },
        ..ServiceConfig::default()
    };
    match backend {
        Backend::Redis => (
            spawn_app_with(redis.clone(), clock.clone(), config(0)).await,
            spawn_app_with(redis, clock, config(b_staleness_ms)).await,
        ),
        Backend::Memory => {
            let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
            (
                spawn_app_on(store.clone(), redis.clone(), clock.clone(), config(0)).await,
                spawn_app_on(store, redis, clock, config(b_staleness_ms)).await,
            )
        }
    }
}

/// Creates a `1h`/`24h` board through `app`; its name. Returns once `app`'s retirer has
/// made its first pass over the board (it passes a board it has not seen at once, and a
/// pass, like any change through the process, forgets the board's cached reads): the
/// ages the tests read are then the clock's alone.
async fn board(app: &TestApp) -> String {
    let name = unique("cache");
    let reply = app
        .put(
            &format!("/v1/boards/{name}"),
            json!({"slot": "1h", "windows": ["1h", "24h"]}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    let passed = format!("rollboard_retired_fields_total{{board=\"{name}\"}} ");
    for _ in 0..200 {
        if app.get_text("/metrics").await.contains(&passed) {
            return name;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the retirer made no pass over {name} within 2 s");
}

async fn like(app: &TestApp, board: &str, member: &str, delta: i64) {
    let reply = app
        .post(
            &format!("/v1/boards/{board}/events"),
            json!({"member": member, "delta": delta}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
}

/// A 200 reply's body.
async fn ok(app: &TestApp, path: &str) -> Value {
    let reply = app.get(path).await;
    assert_eq!(reply.status, StatusCode::OK, "{path}: {:?}", reply.body);
    reply.body
}

fn age(body: &Value) -> u64 {
    body["age_ms"]
        .as_u64()
        .unwrap_or_else(|| panic!("no age_ms in {body}"))
}

/// The five cached reads of `board` with `query` (`max_staleness_ms=…`), as
/// (top entries, member score, ranks scores, around entries, the top 100 percent's
/// entries, ages).
async fn reads(app: &TestApp, board: &str, query: &str) -> (Value, Vec<u64>) {
    let top = ok(app, &format!("/v1/boards/{board}/top?window=24h&{query}")).await;
    let member = ok(
        app,
        &format!("/v1/boards/{board}/members/a?window=24h&{query}"),
    )
    .await;
    let ranks = ok(
        app,
        &format!("/v1/boards/{board}/ranks?members=a,b,c&window=24h&{query}"),
    )
    .await;
    let around = ok(
        app,
        &format!("/v1/boards/{board}/members/b/around?n=1&window=24h&{query}"),
    )
    .await;
    let percent = ok(
        app,
        &format!("/v1/boards/{board}/top?percent=100&window=24h&{query}"),
    )
    .await;
    let ages = [&top, &member, &ranks, &around, &percent].map(age).to_vec();
    let view = json!({
        "top": top["entries"],
        "member": member["score"],
        "ranks": ranks["entries"],
        "around": around["entries"],
        "percent": percent["entries"],
    });
    (view, ages)
}

fn view(a: i64, b: i64) -> Value {
    let mut top = [("a", a), ("b", b)];
    top.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(y.0)));
    let top: Vec<Value> = top
        .iter()
        .enumerate()
        .map(|(i, (m, s))| json!({"rank": i + 1, "member": m, "score": s}))
        .collect();
    let rank = |m: &str| top.iter().find(|e| e["member"] == m).unwrap()["rank"].clone();
    json!({
        "top": top,
        "member": a,
        "ranks": [
            {"member": "a", "score": a, "rank": rank("a")},
            {"member": "b", "score": b, "rank": rank("b")},
            {"member": "c", "score": 0, "rank": null},
        ],
        "around": top,
        "percent": top,
    })
}

/// Another replica's write is seen only once the cached answer is older than the bound;
/// until then every read answers the cached value with its exact age.
async fn another_replicas_write_is_seen_after_the_bound(backend: Backend) {
    let (a, b) = replicas(backend, 0).await;
    let board = board(&a).await;
    a.at(60);
    like(&a, &board, "a", 3).await;
    like(&a, &board, "b", 1).await;
    let q = "max_staleness_ms=1000";
    assert_eq!(reads(&b, &board, q).await, (view(3, 1), vec![0; 5]));
    like(&a, &board, "b", 5).await;
    // The writer's own replica sees it at once (its cache was never filled, bound or not).
    assert_eq!(reads(&a, &board, q).await, (view(3, 6), vec![0; 5]));
    a.clock.advance_millis(400);
    assert_eq!(reads(&b, &board, q).await, (view(3, 1), vec![400; 5]));
    a.clock.advance_millis(600);
    assert_eq!(reads(&b, &board, q).await, (view(3, 1), vec![1000; 5]));
    // A tighter bound on the same replica does not take the cached answer.
    assert_eq!(
        reads(&b, &board, "max_staleness_ms=999").await,
        (view(3, 6), vec![0; 5])
    );
    a.clock.advance_millis(1);
    like(&a, &board, "a", 10).await;
    assert_eq!(reads(&b, &board, q).await, (view(3, 6), vec![1; 5]));
    a.clock.advance_millis(1000);
    assert_eq!(reads(&b, &board, q).await, (view(13, 6), vec![0; 5]));
}

/// Bound 0 (asked, or the service's default) reads the store every time, and a service
/// whose default is above 0 caches the reads that do not say.
async fn bound_zero_is_never_cached(backend: Backend) {
    let (a, b) = replicas(backend, 5_000).await;
    let board = board(&a).await;
    a.at(60);
    like(&a, &board, "a", 3).await;
    like(&a, &board, "b", 1).await;
    assert_eq!(reads(&b, &board, "").await, (view(3, 1), vec![0; 5]));
    assert_eq!(
        reads(&b, &board, "max_staleness_ms=0").await,
        (view(3, 1), vec![0; 5])
    );
    like(&a, &board, "b", 5).await;
    a.clock.advance_millis(2_000);
    // The service's default (5 s) answers from the cache; 0 reads the store.
    assert_eq!(reads(&b, &board, "").await, (view(3, 1), vec![2_000; 5]));
    assert_eq!(
        reads(&b, &board, "max_staleness_ms=0").await,
        (view(3, 6), vec![0; 5])
    );
    // Bound 0 kept nothing: the default still serves the older answer.
    assert_eq!(reads(&b, &board, "").await, (view(3, 1), vec![2_000; 5]));
    // And replica a (default 0) never caches.
    assert_eq!(reads(&a, &board, "").await, (view(3, 6), vec![0; 5]));
}

mod replicas_on_memory {
    use crate::support::Backend::Memory;
    #[tokio::test]
    async fn another_replicas_write_is_seen_after_the_bound() {
        super::another_replicas_write_is_seen_after_the_bound(Memory).await
    }
    #[tokio::test]
    async fn bound_zero_is_never_cached() {
        super::bound_zero_is_never_cached(Memory).await
    }
}

mod replicas_on_redis {
    use crate::support::Backend::Redis;
    #[tokio::test]
    async fn another_replicas_write_is_seen_after_the_bound() {
        super::another_replicas_write_is_seen_after_the_bound(Redis).await
    }
    #[tokio::test]
    async fn bound_zero_is_never_cached() {
        super::bound_zero_is_never_cached(Redis).await
    }
}

/// Every kind of write through the same process is seen by the next cached read at once.
async fn a_write_through_the_same_app_is_seen_at_once(app: TestApp) {
    let board = board(&app).await;
    app.at(60);
    like(&app, &board, "a", 3).await;
    like(&app, &board, "b", 1).await;
    let q = "max_staleness_ms=60000";
    assert_eq!(reads(&app, &board, q).await, (view(3, 1), vec![0; 5]));
    app.clock.advance_millis(250);
    assert_eq!(reads(&app, &board, q).await, (view(3, 1), vec![250; 5]));

    // An event.
    like(&app, &board, "b", 5).await;
    assert_eq!(reads(&app, &board, q).await, (view(3, 6), vec![0; 5]));

    // A batch under an idempotency key.
    let reply = app
        .post_keyed(
            &format!("/v1/boards/{board}/events"),
            r#"{"events":[{"member":"a","delta":4}]}"#,
            Some("k1"),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(reads(&app, &board, q).await, (view(7, 6), vec![0; 5]));

    // Member data, read beside a cached page.
    let top_with_data = format!("/v1/boards/{board}/top?window=24h&with=data&{q}");
    let data = |body: &Value| {
        body["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["data"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(data(&ok(&app, &top_with_data).await), vec![json!(null); 2]);
    let reply = app
        .put(
            &format!("/v1/boards/{board}/members/a/data"),
            json!({"t": "A"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT, "{:?}", reply.body);
    let page = ok(&app, &top_with_data).await;
    assert_eq!(data(&page), vec![json!({"t": "A"}), json!(null)]);
    assert_eq!(age(&page), 0);

    // A removal.
    let reply = app.delete(&format!("/v1/boards/{board}/members/b")).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let top = ok(&app, &format!("/v1/boards/{board}/top?window=24h&{q}")).await;
    assert_eq!(entries(&top), ranked(&[(1, "a", 7)]));
    assert_eq!(age(&top), 0);

    // A drop and re-creation.
    let reply = app.delete(&format!("/v1/boards/{board}")).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT, "{:?}", reply.body);
    let reply = app
        .get(&format!("/v1/boards/{board}/top?window=24h&{q}"))
        .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{:?}", reply.body);
    let reply = app
        .put(
            &format!("/v1/boards/{board}"),
            json!({"slot": "1h", "windows": ["1h", "24h"]}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    let top = ok(&app, &format!("/v1/boards/{board}/top?window=24h&{q}")).await;
    assert_eq!(entries(&top), ranked(&[]));
}

/// A trending board's reads are cached the same way, and its writes invalidate them.
async fn trending_reads_are_cached_too(app: TestApp) {
    let board = unique("trend");
    let reply = app
        .put(
            &format!("/v1/boards/{board}"),
            json!({"kind": "trending", "half_life": "1h"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    like(&app, &board, "a", 2).await;
    let top = format!("/v1/boards/{board}/top?max_staleness_ms=1000");
    let first = ok(&app, &top).await;
    assert_eq!(age(&first), 0);
    app.clock.advance_millis(700);
    let again = ok(&app, &top).await;
    assert_eq!(age(&again), 700);
    // The cached answer, decayed to the time it was read.
    assert_eq!(again["at"], first["at"]);
    assert_eq!(again["entries"], first["entries"]);
    like(&app, &board, "b", 5).await;
    let after = ok(&app, &top).await;
    assert_eq!(age(&after), 0);
    assert_eq!(after["entries"][0]["member"], "b");
    let member = ok(
        &app,
        &format!("/v1/boards/{board}/members/b?max_staleness_ms=1000"),
    )
    .await;
    assert_eq!(age(&member), 0);
    app.clock.advance_millis(10);
    let member = ok(
        &app,
        &format!("/v1/boards/{board}/members/b?max_staleness_ms=1000"),
    )
    .await;
    assert_eq!(age(&member), 10);
}

/// Pages of one window under different score ranges, orders, offsets and limits are
/// cached apart.
async fn pages_of_different_ranges_orders_and_offsets_are_cached_apart(app: TestApp) {
    let board = board(&app).await;
    like(&app, &board, "a", 3).await;
    like(&app, &board, "b", 1).await;
    let top =
        |range: &str| format!("/v1/boards/{board}/top?window=24h&max_staleness_ms=60000{range}");
    let members = |body: &Value| -> Vec<String> {
        let entries = body["entries"].as_array().unwrap().iter();
        entries
            .map(|e| e["member"].as_str().unwrap().to_string())
            .collect()
    };
    let all = ok(&app, &top("")).await;
    let high = ok(&app, &top("&min_score=2")).await;
    let low = ok(&app, &top("&max_score=2")).await;
    assert_eq!(
        (members(&all), members(&high), members(&low)),
        (
            vec!["a".into(), "b".into()],
            vec!["a".into()],
            vec!["b".into()]
        )
    );
    let asc = ok(&app, &top("&order=asc")).await;
    let second = ok(&app, &top("&offset=1")).await;
    let first = ok(&app, &top("&limit=1")).await;
    assert_eq!(
        (members(&asc), members(&second), members(&first)),
        (
            vec!["b".into(), "a".into()],
            vec!["b".into()],
            vec!["a".into()]
        )
    );
    app.clock.advance_millis(5);
    let again = ok(&app, &top("&min_score=2")).await;
    assert_eq!((members(&again), age(&again)), (vec!["a".into()], 5));
}

/// A bound above a minute is 422 `invalid_query` saying what is accepted; one that is
/// not a number is 400 naming the parameter.
async fn a_bad_bound_is_refused(app: TestApp) {
    let board = board(&app).await;
    let message = "invalid query: max_staleness_ms must be between 0 (exact: read the store) \
                   and 60000 (a minute, the oldest answer the read cache keeps), got 60001";
    for path in [
        format!("/v1/boards/{board}/top?max_staleness_ms=60001"),
        format!("/v1/boards/{board}/members/a?max_staleness_ms=60001"),
        format!("/v1/boards/{board}/members/a/around?max_staleness_ms=60001"),
        format!("/v1/boards/{board}/ranks?members=a&max_staleness_ms=60001"),
    ] {
        let reply = app.get(&path).await;
        assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY, "{path}");
        assert_eq!(reply.code(), "invalid_query", "{path}");
        assert_eq!(reply.body["error"]["message"], message, "{path}");
    }
    let reply = app
        .post(
            &format!("/v1/boards/{board}/ranks"),
            json!({"members": ["a"], "max_staleness_ms": 60_001}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(reply.body["error"]["message"], message);
    let reply = app
        .get(&format!("/v1/boards/{board}/top?max_staleness_ms=-1"))
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        reply.body["error"]["message"],
        "query parameter max_staleness_ms: expected a non-negative integer"
    );
    // The largest bound is accepted; the POST body's bound is used.
    let top = ok(
        &app,
        &format!("/v1/boards/{board}/top?max_staleness_ms=60000"),
    )
    .await;
    assert_eq!(age(&top), 0);
    let reply = app
        .post(
            &format!("/v1/boards/{board}/ranks"),
            json!({"members": ["a"], "max_staleness_ms": 60_000}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    app.clock.advance_millis(30);
    let reply = app
        .post(
            &format!("/v1/boards/{board}/ranks"),
            json!({"members": ["a"], "max_staleness_ms": 60_000}),
        )
        .await;
    assert_eq!(reply.body["age_ms"], 30);
    // A whole number written with a fraction part is that integer, as in every body.
    let reply = app
        .post(
            &format!("/v1/boards/{board}/ranks"),
            json!({"members": ["a"], "max_staleness_ms": 144.0}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(reply.body["age_ms"], 30);
}

on_memory_and_redis!(
    a_write_through_the_same_app_is_seen_at_once,
    trending_reads_are_cached_too,
    pages_of_different_ranges_orders_and_offsets_are_cached_apart,
    a_bad_bound_is_refused,
);

/// Calls Redis has served, all commands but `INFO`, from `INFO commandstats`.
async fn redis_calls(conn: &mut ::redis::aio::MultiplexedConnection) -> u64 {
    let info: String = ::redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .unwrap();
    info.lines()
        .filter(|l| l.starts_with("cmdstat_") && !l.starts_with("cmdstat_info:"))
        .map(|l| {
            let calls = l.split("calls=").nth(1).unwrap();
            calls.split(',').next().unwrap().parse::<u64>().unwrap()
        })
        .sum()
}

/// 32 concurrent cached reads of one page cost Redis what one read does; 32 exact ones
/// twice that (the first reads alone, the 31 that arrived while it was under way share
/// the next read).
#[tokio::test]
async fn concurrent_cached_reads_share_one_store_call() {
    let redis = TestRedis::spawn().await;
    let boards = Rollboard::with(redis.store().await, Arc::new(clock()), Settings::default());
    let board = unique("flight");
    boards
        .create(
            &board,
            rollboard::BoardConfig::parse("1h", &["1h", "24h"]).unwrap(),
        )
        .await
        .unwrap();
    let events: Vec<rollboard::Event> = (0..50)
        .map(|i| rollboard::Event::new(format!("m{i}"), i + 1))
        .collect();
    boards.windowed(&board).incr_batch(&events).await.unwrap();
    let window = Some(Span::parse("24h").unwrap());
    let mut conn = redis.raw().await;
    // The first read also loads the board and its script.
    boards.windowed(&board).top(window, 0, 10).await.unwrap();

    let before = redis_calls(&mut conn).await;
    let exact = boards.windowed(&board).top(window, 0, 10).await.unwrap();
    let one = redis_calls(&mut conn).await - before;
    assert!(one >= 1, "a read calls Redis");

    let before = redis_calls(&mut conn).await;
    let pages =
        futures_util::future::join_all((0..32).map(|_| boards.windowed(&board).top(window, 0, 10)))
            .await;
    assert_eq!(redis_calls(&mut conn).await - before, 2 * one);
    assert!(pages.iter().all(|p| p.as_ref().unwrap() == &exact));

    let cached = boards.reading_within(Staleness::from_millis(1000).unwrap());
    let before = redis_calls(&mut conn).await;
    let pages =
        futures_util::future::join_all((0..32).map(|_| cached.windowed(&board).top(window, 0, 10)))
            .await;
    assert_eq!(redis_calls(&mut conn).await - before, one);
    assert!(pages.iter().all(|p| p.as_ref().unwrap() == &exact));

    // A write through this process: the next reads share one new call.
    boards
        .windowed(&board)
        .incr_batch(&events[49..])
        .await
        .unwrap();
    let before = redis_calls(&mut conn).await;
    let pages =
        futures_util::future::join_all((0..32).map(|_| cached.windowed(&board).top(window, 0, 10)))
            .await;
    assert_eq!(redis_calls(&mut conn).await - before, one);
    for page in &pages {
        let leader = &page.as_ref().unwrap().entries[0];
        assert_eq!((leader.member.as_str(), leader.score), ("m49", 100));
    }
}
