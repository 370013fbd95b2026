//! Failover under writes: a cluster with one replica per master; while writers post
//! events to a busy board and a reader reads its top, `CLUSTER FAILOVER` on the
//! replica of the board's master promotes it. The service carries on by itself: the
//! board afterwards equals the oracle of acknowledged writes, and requests during the
//! failover get at most a bounded number of `store_unavailable` and no other error.

use std::sync::Arc;

use rollboard::{BoardConfig, RedisOptions, RedisStore, Rollboard};

use crate::cluster_load::{Load, assert_windows_equal};
use crate::support::{clock, unique, with_clock};
use crate::test_cluster::TestCluster;

/// Most `store_unavailable` answers all writers together, or the reader, may see (0 in
/// practice; writes that did not follow `MOVED` from the demoted master saw 3).
const UNAVAILABLE_BOUND: u64 = 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_takes_over_a_busy_boards_master_under_writes() {
    let cluster = TestCluster::start_with(3, 1);
    let options = RedisOptions {
        // Generous, so that no reply is lost to a slow machine: every write answered
        // unavailable is then one that did not run (MOVED, READONLY, CLUSTERDOWN).
        response_timeout: std::time::Duration::from_secs(10),
        ..RedisOptions::default()
    };
    let store = RedisStore::connect_cluster_with(&cluster.urls, options)
        .await
        .unwrap();
    let clock = clock();
    let boards: Rollboard = with_clock(Arc::new(store), &clock);
    let name = unique("fail");
    boards
        .create_board(&name, BoardConfig::parse("1h", &["1h", "24h"]).unwrap())
        .await
        .unwrap();
    let slot = cluster.keyslot(&format!("board_{{{name}}}"));
    let master = cluster.owner(slot);
    let replica = cluster.replica_of(master);

    let load = Load::start(&boards, &name);
    load.more(50).await;
    // A coordinated failover: the master stops taking writes, the replica catches up
    // and takes over its slots.
    assert_eq!(cluster.cli(replica, &["CLUSTER", "FAILOVER"]).trim(), "OK");
    tokio::task::block_in_place(|| cluster.wait_owner(slot, replica));
    eprintln!("failover: promoted");
    load.more(50).await;
    let seen = load.stop().await;
    eprintln!(
        "failover: {} batches acknowledged, {} store_unavailable to writers, {} reads, {} \
         store_unavailable to the reader",
        seen.batches, seen.writes_unavailable, seen.reads, seen.reads_unavailable
    );
    assert!(
        seen.writes_unavailable <= UNAVAILABLE_BOUND,
        "{} store_unavailable answers to the writers",
        seen.writes_unavailable
    );
    assert!(seen.reads > 0);
    assert!(
        seen.reads_unavailable <= UNAVAILABLE_BOUND,
        "{} to the reader",
        seen.reads_unavailable
    );
    // The old replica is the master now, and the board is exact on it.
    assert_eq!(cluster.owner_seen_by(master, slot), replica);
    assert_eq!(
        cluster.cli(master, &["ROLE"]).lines().next(),
        Some("slave"),
        "the old master follows the new one"
    );
    assert_windows_equal(&boards, &name, &seen.oracle).await;
    let total: i64 = seen.oracle.values().sum();
    assert!(
        total >= 100 * 15,
        "at least 100 batches of 15 acknowledged: {total}"
    );
}
