//! Migrations: applied in order, once, recorded in Redis; twice is a no-op; two at once
//! apply each once; a failure records nothing. Each test has a Redis of its own (the
//! record and the lock are global keys).

use std::sync::Arc;
use std::time::Duration;

use rollboard::jobs::migrate::{
    APPLIED_KEY, LOCK_KEY, LegacyTarget, MigrateError, MigrateOptions, all, migrate, status,
};
use rollboard::jobs::prefix_move::MoveError;
use rollboard::{
    BoardConfig, Coverage, Event, KeyPrefix, ManualClock, RedisOptions, RedisStore, Rollboard,
    SampleQuery, Settings, Span,
};
use std::collections::BTreeMap;
use time::OffsetDateTime;

use crate::dystats::DyStats;
use crate::support::{START, TestRedis, ranking, ts};

const END: i64 = START + 10 * 3600 + 600;

/// Writes five hours of likes to the legacy board `name`, as the article's code does.
async fn legacy_board(redis: &TestRedis, name: &str) {
    let mut conn = redis.raw().await;
    let legacy = DyStats::new(name, 24, 1);
    for i in 0..100i64 {
        let at = END - 5 * 3600 + i * 180;
        legacy
            .incr_stats(&mut conn, &format!("post:{}", i * i % 17), 1 + i % 2, at)
            .await;
    }
}

async fn legacy_stats(redis: &TestRedis, name: &str) -> std::collections::BTreeMap<String, i64> {
    let entries: Vec<(String, i64)> = redis::cmd("ZRANGE")
        .arg(format!("stats_{name}"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
    entries.into_iter().collect()
}

async fn boards_at_end(redis: &TestRedis) -> Rollboard {
    Rollboard::with(
        redis.store().await,
        Arc::new(ManualClock::new(ts(END))),
        Settings::default(),
    )
}

fn options(targets: &[(&str, &str)]) -> MigrateOptions {
    MigrateOptions {
        legacy: targets
            .iter()
            .map(|(legacy, board)| LegacyTarget {
                legacy: (*legacy).to_owned(),
                board: (*board).to_owned(),
                config: BoardConfig::parse("1h", &["1h", "26h"]).unwrap(),
            })
            .collect(),
        ..MigrateOptions::default()
    }
}

#[tokio::test]
async fn migrate_applies_each_migration_once_and_records_it() {
    let redis = TestRedis::spawn().await;
    legacy_board(&redis, "likes").await;
    let stats = legacy_stats(&redis, "likes").await;
    let boards = boards_at_end(&redis).await;

    let before = status(&redis.url, &RedisOptions::default()).await.unwrap();
    assert_eq!(before.len(), all().len());
    assert_eq!(
        (before[0].id, before[0].name.as_str()),
        (1, "legacy_layout")
    );
    assert!(before.iter().all(|s| s.applied.is_none()));

    let opts = options(&[("likes", "hot")]);
    let first = migrate(&boards, &redis.url, &opts, |_| {}).await.unwrap();
    assert_eq!(first.already, 0);
    assert_eq!(first.applied.len(), 1);
    let (id, name, summary) = &first.applied[0];
    assert_eq!((*id, name.as_str()), (1, "legacy_layout"));
    let slots: Vec<String> = redis::cmd("KEYS")
        .arg("slot_likes_*")
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
    let mut fields = 0;
    for key in &slots {
        let n: u64 = redis::cmd("HLEN")
            .arg(key)
            .query_async(&mut redis.raw().await)
            .await
            .unwrap();
        fields += n;
    }
    assert_eq!(
        summary,
        &format!(
            "likes -> hot: {fields} of {fields} fields imported (0 before, 0 older than the largest window skipped)"
        )
    );
    assert_eq!(ranking(&boards, "hot", "26h").await, stats);

    let after = status(&redis.url, &RedisOptions::default()).await.unwrap();
    let record = after[0].applied.as_ref().expect("0001 is recorded");
    assert_eq!(&record.summary, summary);
    assert!(
        (OffsetDateTime::now_utc() - record.applied_at)
            .whole_seconds()
            .abs()
            < 60
    );

    // Twice is a no-op.
    let second = migrate(&boards, &redis.url, &opts, |_| panic!("nothing to apply"))
        .await
        .unwrap();
    assert_eq!((second.applied.len(), second.already), (0, all().len()));
    assert_eq!(ranking(&boards, "hot", "26h").await, stats);
    assert_eq!(
        status(&redis.url, &RedisOptions::default()).await.unwrap(),
        after
    );

    // Killed after the import but before its record: running it again adds nothing.
    let _: () = redis::cmd("HDEL")
        .arg(APPLIED_KEY)
        .arg("0001")
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
    let again = migrate(&boards, &redis.url, &opts, |_| {}).await.unwrap();
    assert_eq!(
        again.applied[0].2,
        format!(
            "likes -> hot: {fields} of {fields} fields imported ({fields} before, 0 older than the largest window skipped)"
        )
    );
    assert_eq!(ranking(&boards, "hot", "26h").await, stats);
    let lock: Option<String> = redis::cmd("GET")
        .arg(LOCK_KEY)
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
    assert_eq!(lock, None, "the lock is released");
}

#[tokio::test]
async fn two_migrates_at_once_apply_each_migration_once() {
    let redis = TestRedis::spawn().await;
    for name in ["likes", "views", "posts"] {
        legacy_board(&redis, name).await;
    }
    let opts = options(&[("likes", "hot"), ("views", "viewed"), ("posts", "posted")]);
    let (a, b) = (boards_at_end(&redis).await, boards_at_end(&redis).await);
    let (ra, rb) = tokio::join!(
        migrate(&a, &redis.url, &opts, |_| {}),
        migrate(&b, &redis.url, &opts, |_| {})
    );
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    assert_eq!(
        ra.applied.len() + rb.applied.len(),
        all().len(),
        "{ra:?} {rb:?}"
    );
    assert_eq!(ra.already + rb.already, all().len());
    for (legacy, board) in [("likes", "hot"), ("views", "viewed"), ("posts", "posted")] {
        assert_eq!(
            ranking(&a, board, "26h").await,
            legacy_stats(&redis, legacy).await
        );
    }
}

#[tokio::test]
async fn an_undeclared_legacy_board_stops_the_migration_and_records_nothing() {
    let redis = TestRedis::spawn().await;
    legacy_board(&redis, "likes").await;
    legacy_board(&redis, "orphan").await;
    let boards = boards_at_end(&redis).await;
    let error = migrate(&boards, &redis.url, &options(&[("likes", "hot")]), |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&error, MigrateError::Failed { id: 1, message, .. } if message.starts_with("legacy boards with no target: orphan;")),
        "{error}"
    );
    assert!(
        status(&redis.url, &RedisOptions::default()).await.unwrap()[0]
            .applied
            .is_none()
    );
    assert_eq!(
        boards.board("hot").await.unwrap_err().code(),
        "board_not_found"
    );

    // Declared, it goes through.
    let both = options(&[("likes", "hot"), ("orphan", "adopted")]);
    let report = migrate(&boards, &redis.url, &both, |_| {}).await.unwrap();
    assert_eq!(report.applied.len(), 1);
    assert_eq!(
        ranking(&boards, "adopted", "26h").await,
        legacy_stats(&redis, "orphan").await
    );
}

#[tokio::test]
async fn a_held_lock_makes_migrate_wait_then_give_up() {
    let redis = TestRedis::spawn().await;
    let mut conn = redis.raw().await;
    let _: () = redis::cmd("SET")
        .arg(LOCK_KEY)
        .arg("someone")
        .arg("PX")
        .arg(60_000)
        .query_async(&mut conn)
        .await
        .unwrap();
    let boards = boards_at_end(&redis).await;
    let opts = MigrateOptions {
        wait: Duration::from_millis(300),
        ..MigrateOptions::default()
    };
    let error = migrate(&boards, &redis.url, &opts, |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(error, MigrateError::Busy { waited } if waited >= Duration::from_millis(300)),
        "{error}"
    );
    let holder: String = redis::cmd("GET")
        .arg(LOCK_KEY)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(holder, "someone", "another holder's lock is left alone");

    // Once it is released, migrate goes ahead (nothing legacy here).
    let _: () = redis::cmd("DEL")
        .arg(LOCK_KEY)
        .query_async(&mut conn)
        .await
        .unwrap();
    let report = migrate(&boards, &redis.url, &opts, |_| {}).await.unwrap();
    assert_eq!(report.applied[0].2, "no legacy boards found");
}

#[cfg(feature = "tls")]
#[tokio::test]
async fn migrate_status_connects_over_tls_with_the_private_ca() {
    let redis = TestRedis::spawn_tls().await;
    let (tls_url, ca) = redis.tls.clone().unwrap();
    let with_ca = RedisOptions {
        tls_ca: Some(ca),
        ..RedisOptions::default()
    };
    let over_tls = status(&tls_url, &with_ca).await.unwrap();
    assert!(!over_tls.is_empty());
    assert!(over_tls.iter().all(|s| s.applied.is_none()));
    assert_eq!(
        over_tls,
        status(&redis.url, &RedisOptions::default()).await.unwrap()
    );
    let without_ca = status(&tls_url, &RedisOptions::default()).await;
    assert_eq!(without_ca.unwrap_err().code(), "store_unavailable");
}

/// Every key of `redis`, sorted.
async fn all_keys(redis: &TestRedis) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut redis.raw().await)
        .await
        .unwrap();
    keys.sort();
    keys
}

/// What the boards, counters, stats and rates of a deployment hold.
async fn contents(boards: &Rollboard) -> (BTreeMap<String, i64>, i64, u64, Vec<u64>) {
    let top = ranking(boards, "hot", "26h").await;
    let day = Span::parse("1d").unwrap();
    let views = boards
        .counters()
        .samples("views", day, SampleQuery::default());
    let count = views.await.unwrap().iter().map(|s| s.count).sum();
    let stats = boards.stats().read("home", "AccessTime").await.unwrap();
    let recorded = stats.current.map_or(0, |hour| hour.count);
    let rates = boards.rates().counts("user-7", None, Coverage::Partial);
    let rates = rates
        .await
        .unwrap()
        .counts
        .iter()
        .map(|(_, n)| *n)
        .collect();
    (top, count, recorded, rates)
}

#[tokio::test]
async fn migrate_moves_an_unprefixed_deployment_under_the_key_prefix() {
    let redis = TestRedis::spawn().await;
    let plain = boards_at_end(&redis).await;
    let config = BoardConfig::parse("1h", &["1h", "26h"]).unwrap();
    plain.create("hot", config.clone()).await.unwrap();
    let events = [Event::new("a", 5), Event::new("b", 3)];
    let hot = plain.windowed("hot");
    hot.write_idempotent(&events, "k-1").await.unwrap();
    plain.counters().incr("views", 4, None).await.unwrap();
    plain
        .stats()
        .record("home", "AccessTime", 1.5)
        .await
        .unwrap();
    plain.rates().hit("user-7", 2, None).await.unwrap();
    migrate(&plain, &redis.url, &MigrateOptions::default(), |_| {})
        .await
        .unwrap();
    // An application's own keys, and the article's layout, beside rollboard's.
    let mut raw = redis.raw().await;
    for key in ["session:1", "slot_likes_7200", "board_x"] {
        let _: () = redis::cmd("SET")
            .arg(key)
            .arg("v")
            .query_async(&mut raw)
            .await
            .unwrap();
    }
    let before = contents(&plain).await;
    let hot: BTreeMap<String, i64> = [("a".to_owned(), 5), ("b".to_owned(), 3)].into();
    assert_eq!((&before.0, before.1, before.2), (&hot, 4, 1));
    assert!(before.3.iter().all(|&n| n == 2), "{:?}", before.3);
    let others = ["board_x", "session:1", "slot_likes_7200"];
    let rollboard_keys: Vec<String> = all_keys(&redis)
        .await
        .into_iter()
        .filter(|k| !others.contains(&k.as_str()))
        .collect();
    assert!(rollboard_keys.len() > 10, "{rollboard_keys:?}");

    let prefixed = RedisOptions {
        key_prefix: KeyPrefix::parse("app1:").unwrap(),
        ..RedisOptions::default()
    };
    let under = Rollboard::with(
        Arc::new(
            RedisStore::connect_with(&redis.url, prefixed.clone())
                .await
                .unwrap(),
        ),
        Arc::new(ManualClock::new(ts(END))),
        Settings::default(),
    );
    let moving = MigrateOptions {
        redis: prefixed.clone(),
        move_from: Some(KeyPrefix::default()),
        ..MigrateOptions::default()
    };
    let report = migrate(&under, &redis.url, &moving, |_| {}).await.unwrap();
    assert_eq!(
        (report.moved, report.applied.len(), report.already),
        (rollboard_keys.len() as u64, 0, all().len())
    );
    let mut want: Vec<String> = rollboard_keys.iter().map(|k| format!("app1:{k}")).collect();
    want.extend(others.map(str::to_owned));
    want.sort();
    assert_eq!(all_keys(&redis).await, want);
    // The same contents under the prefix.
    assert_eq!(contents(&under).await, before);
    // The keyed write is still known: replayed, not applied again.
    let replay = under
        .windowed("hot")
        .write_idempotent(&events, "k-1")
        .await
        .unwrap();
    assert_eq!(replay.accepted, 2);
    assert_eq!(ranking(&under, "hot", "26h").await, before.0);

    // Again: nothing left to move.
    let again = migrate(&under, &redis.url, &moving, |_| {}).await.unwrap();
    assert_eq!(again.moved, 0);
    // A deployment already writing under the prefix: the move refuses, moving nothing.
    plain.create("hot", config).await.unwrap();
    let refused = migrate(&under, &redis.url, &moving, |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, MigrateError::Move(MoveError::Taken { first, .. }) if first == "app1:board_{hot}"),
        "{refused}"
    );
    assert!(all_keys(&redis).await.contains(&"board_{hot}".to_owned()));
}
