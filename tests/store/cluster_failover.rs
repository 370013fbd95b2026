//! Failover under writes: a cluster with one replica per master; while writers post
//! events to a busy board and a reader reads its top, `CLUSTER FAILOVER` on the
//! replica of the board's master promotes it. The service carries on by itself: the
//! board afterwards equals the oracle of acknowledged writes, and requests during the
//! failover get at most a bounded number of `store_unavailable` and no other error.

use crate::cluster_load::{Load, assert_windows_equal, busy_board};
use crate::test_cluster::TestCluster;

/// Most `store_unavailable` answers all writers together, or the reader, may see (0 in
/// practice; writes that did not follow `MOVED` from the demoted master saw 3).
const UNAVAILABLE_BOUND: u64 = 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_takes_over_a_busy_boards_master_under_writes() {
    let cluster = TestCluster::start_with(3, 1);
    let (boards, name, slot) = busy_board(&cluster, "fail").await;
    let master = cluster.owner(slot);
    let replica = cluster.replica_of(master);

    let load = Load::start(&boards, &name);
    load.more(50).await;
    // A coordinated failover: the master stops taking writes, the replica catches up
    // and takes over its slots.
    tokio::task::block_in_place(|| cluster.failover(replica, slot));
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
    assert_windows_equal(&boards, &name, &seen).await;
    let total: i64 = seen.oracle.values().sum();
    assert!(
        total >= 100 * 15,
        "at least 100 batches of 15 acknowledged: {total}"
    );
}
