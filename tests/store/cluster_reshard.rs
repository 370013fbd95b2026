//! Resharding under writes: while writers post events to a busy board and a reader reads
//! its top, the board's hash slot moves to another master (`CLUSTER SETSLOT … IMPORTING /
//! MIGRATING`, `MIGRATE … KEYS`, `CLUSTER SETSLOT … NODE`). Afterwards the board equals
//! the oracle of acknowledged writes; requests during the move answer at most a bounded
//! number of `store_unavailable` errors and no other error.

use crate::cluster_load::{Load, assert_windows_equal, busy_board};
use crate::test_cluster::TestCluster;

/// Most `store_unavailable` answers all writers together, or the reader, may see during
/// the move (with redirects and `TRYAGAIN` followed it is 0 in practice; without, a
/// dozen or hundreds).
const UNAVAILABLE_BOUND: u64 = 5;

/// A plain connection to one node, for the operator's commands.
async fn node(port: u16) -> redis::aio::MultiplexedConnection {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

async fn node_id(port: u16) -> String {
    redis::cmd("CLUSTER")
        .arg("MYID")
        .query_async(&mut node(port).await)
        .await
        .unwrap()
}

/// Moves `slot` from the master on `from` to the one on `to`, as `redis-cli --cluster
/// reshard` does, telling every master the new owner at the end.
async fn move_slot(cluster: &TestCluster, slot: u16, from: u16, to: u16) -> usize {
    let (from_id, to_id) = (node_id(from).await, node_id(to).await);
    let (mut source, mut target) = (node(from).await, node(to).await);
    let setslot = |state: &str, id: &str| {
        let mut cmd = redis::cmd("CLUSTER");
        cmd.arg("SETSLOT").arg(slot).arg(state).arg(id);
        cmd
    };
    let _: () = setslot("IMPORTING", &from_id)
        .query_async(&mut target)
        .await
        .unwrap();
    let _: () = setslot("MIGRATING", &to_id)
        .query_async(&mut source)
        .await
        .unwrap();
    let mut moved = 0;
    loop {
        let keys: Vec<String> = redis::cmd("CLUSTER")
            .arg("GETKEYSINSLOT")
            .arg(slot)
            .arg(100)
            .query_async(&mut source)
            .await
            .unwrap();
        if keys.is_empty() {
            break;
        }
        moved += keys.len();
        let _: () = redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(to)
            .arg("")
            .arg(0)
            .arg(5000)
            .arg("KEYS")
            .arg(&keys)
            .query_async(&mut source)
            .await
            .unwrap();
    }
    let _: () = setslot("NODE", &to_id)
        .query_async(&mut target)
        .await
        .unwrap();
    let _: () = setslot("NODE", &to_id)
        .query_async(&mut source)
        .await
        .unwrap();
    for port in cluster.ports.iter().filter(|p| **p != from && **p != to) {
        let _: () = setslot("NODE", &to_id)
            .query_async(&mut node(*port).await)
            .await
            .unwrap();
    }
    moved
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_boards_slot_moves_to_another_master_under_writes() {
    let cluster = TestCluster::start(3);
    let (boards, name, slot) = busy_board(&cluster, "busy").await;
    let from = cluster.owner(slot);
    let to = *cluster.ports.iter().find(|p| **p != from).unwrap();

    let load = Load::start(&boards, &name);
    load.more(50).await;
    let moved = move_slot(&cluster, slot, from, to).await;
    load.more(50).await;
    let seen = load.stop().await;
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
    eprintln!(
        "reshard: {} batches acknowledged, {} store_unavailable to writers, {} reads, {} \
         store_unavailable to the reader",
        seen.batches, seen.writes_unavailable, seen.reads, seen.reads_unavailable
    );

    // The board now lives on the other master, all of it.
    assert_eq!(cluster.owner(slot), to);
    assert_eq!(cluster.owner_seen_by(from, slot), to);
    // Record, index, two totals and the open slot's hash (written plain even on a
    // compact board, the default) moved, and all of them are on the new owner.
    let keys = cluster.cli(to, &["--raw", "KEYS", &format!("*{{{name}}}*")]);
    let keys: Vec<&str> = keys.lines().filter(|l| !l.is_empty()).collect();
    assert!(moved >= 5, "{moved} keys moved: {keys:?}");
    assert_eq!(moved, keys.len(), "{keys:?}");
    assert!(
        keys.contains(&format!("slots_{{{name}}}").as_str()),
        "{keys:?}"
    );
    assert_windows_equal(&boards, &name, &seen).await;
    let total: i64 = seen.oracle.values().sum();
    assert!(
        total >= 100 * 15,
        "at least 100 batches of 15 acknowledged: {total}"
    );
}
