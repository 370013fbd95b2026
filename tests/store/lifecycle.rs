//! Board lifecycle in Redis across crashes: a board whose creator stopped between its two
//! steps is listed again, a drop that stopped half-way is finished by the next create,
//! and a board's write committer ends when it idles (see also tests/board_churn.rs).

use std::sync::Arc;

use std::time::Duration;

use rollboard::{BoardConfig, IngestOptions, RedisOptions, RedisStore};

use crate::proxy::{Fault, FaultProxy};
use crate::support::{Harness, START, board_names, pairs, ranking, unique, with_clock};
use crate::tasks::{alive_tasks, settle};

const REGISTRY: &str = "rollboard:boards";

async fn listed(h: &Harness) -> Vec<String> {
    let boards = with_clock(h.redis.as_ref().unwrap().store().await, &h.clock);
    board_names(&boards).await
}

#[tokio::test]
async fn a_board_whose_creator_stopped_before_listing_it_is_listed_when_next_touched() {
    let h = Harness::redis().await;
    let b = h.board("1h", &["1h", "2h"]).await;
    h.boards.windowed(&b).incr("a", 5, None).await.unwrap();
    // The state a creator leaves when it stops between create_board.lua and the SADD.
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let _: i64 = redis::cmd("SREM")
        .arg(REGISTRY)
        .arg(&b)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(!listed(&h).await.contains(&b));

    // Any process that touches the board again (here a fresh one reading it) lists it.
    let other = with_clock(h.redis.as_ref().unwrap().store().await, &h.clock);
    let page = other.windowed(&b).top(None, 0, 10).await.unwrap();
    assert_eq!(ranking(&page), pairs(&[("a", 5)]));
    assert!(listed(&h).await.contains(&b));

    // Listed, it is retired by the sweep like any board.
    h.clock.set(crate::support::ts(START + 3 * 3600));
    let reports = other.retire_all().await.unwrap();
    assert!(reports.iter().any(|(name, _)| name.as_str() == b));
    assert_eq!(
        ranking(&other.windowed(&b).top(None, 0, 10).await.unwrap()),
        []
    );
}

#[tokio::test]
async fn creating_a_board_whose_drop_stopped_half_way_finishes_the_drop_first() {
    let h = Harness::redis().await;
    let b = h.board("1h", &["1h"]).await;
    h.boards.windowed(&b).incr("a", 5, None).await.unwrap();
    // A drop that marked the record and unlisted it, then stopped.
    h.mark_dropping(&b).await;
    let mut raw = h.redis.as_ref().unwrap().raw().await;
    let _: i64 = redis::cmd("SREM")
        .arg(REGISTRY)
        .arg(&b)
        .query_async(&mut raw)
        .await
        .unwrap();

    let other = with_clock(h.redis.as_ref().unwrap().store().await, &h.clock);
    let created = other
        .create(&b, BoardConfig::parse("1h", &["1h"]).unwrap())
        .await
        .unwrap();
    assert!(matches!(created, rollboard::Created::New(_)));
    assert!(listed(&h).await.contains(&b));
    // A new incarnation: the old totals are gone.
    assert_eq!(
        ranking(&other.windowed(&b).top(None, 0, 10).await.unwrap()),
        []
    );
}

#[tokio::test]
async fn an_idle_committer_ends_and_a_later_write_starts_another() {
    let h = Harness::redis().await;
    let options = RedisOptions {
        ingest: IngestOptions {
            committer_idle: std::time::Duration::from_millis(50),
            ..IngestOptions::default()
        },
        ..RedisOptions::default()
    };
    let store = RedisStore::connect_with(&h.redis.as_ref().unwrap().url, options)
        .await
        .unwrap();
    let boards = with_clock(Arc::new(store), &h.clock);
    let b = unique("idle");
    boards
        .create(&b, BoardConfig::parse("1h", &["1h"]).unwrap())
        .await
        .unwrap();
    let before = alive_tasks();
    boards.windowed(&b).incr("a", 1, None).await.unwrap();
    assert_eq!(alive_tasks(), before + 1);
    settle(before).await;
    assert_eq!(alive_tasks(), before);
    boards.windowed(&b).incr("a", 2, None).await.unwrap();
    assert_eq!(
        ranking(&boards.windowed(&b).top(None, 0, 10).await.unwrap()),
        pairs(&[("a", 3)])
    );
}

#[tokio::test]
async fn an_idle_committer_ends_only_once_its_batch_in_flight_is_applied() {
    let h = Harness::redis().await;
    let proxy = FaultProxy::start(&h.redis.as_ref().unwrap().url).await;
    let options = RedisOptions {
        response_timeout: Duration::from_secs(30),
        ingest: IngestOptions {
            committer_idle: Duration::from_millis(20),
            max_in_flight: 2,
            ..IngestOptions::default()
        },
        ..RedisOptions::default()
    };
    let store = RedisStore::connect_with(&proxy.url(), options)
        .await
        .unwrap();
    let boards = with_clock(Arc::new(store), &h.clock);
    let b = unique("inflight");
    boards
        .create(&b, BoardConfig::parse("1h", &["1h"]).unwrap())
        .await
        .unwrap();
    let before = alive_tasks();
    // The write's call reaches Redis only after 3 s: its batch is in flight meanwhile.
    let index = format!("slots_{{{b}}}");
    proxy.arm(Fault::Delay(Duration::from_secs(3)), 1, move |r| {
        r.is_script_with_key(&index)
    });
    let writer = tokio::spawn({
        let (boards, b) = (boards.clone(), b.clone());
        async move { boards.windowed(&b).incr("a", 1, None).await.unwrap() }
    });
    proxy.wait_fired(1).await;
    // Many idle periods later, the committer still waits for its batch: the writer,
    // the committer and the batch's call are alive.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(alive_tasks(), before + 3);
    writer.await.unwrap();
    // Then it idles out.
    settle(before).await;
    assert_eq!(alive_tasks(), before);
    assert_eq!(
        ranking(&boards.windowed(&b).top(None, 0, 10).await.unwrap()),
        pairs(&[("a", 1)])
    );
}
