//! A master killed (`kill -9`) under writes, on a cluster of three masters with a replica
//! each; the cluster promotes the replica by itself. Redis replicates asynchronously,
//! so what the promoted replica lacks is what the dead master had not sent yet. On this
//! machine that lag is microseconds (and what the kernel buffered still arrives), so
//! each test first stops the replica (`SIGSTOP`) and cuts its link (`CLIENT KILL TYPE
//! replica`) for a moment: the writes of that moment are the ones a real failover puts
//! at risk.
//!
//! With `min_replica_acks` = 1 every acknowledged event is counted on the new master
//! (acknowledged ≤ counted ≤ acknowledged + uncertain); without it, the events
//! acknowledged while the replica lagged are lost, and the test measures how many.

use std::collections::BTreeMap;
use std::time::Duration;

use rollboard::{RedisOptions, ReplicaAcks, Rollboard};

use crate::cluster_load::{Load, Seen, busy_board_with};
use crate::test_cluster::{TestCluster, signal};

/// How long the replica is stopped before its master is killed.
const LAG: Duration = Duration::from_millis(400);

/// Runs the load on a board of a fresh cluster, stops the replica of the board's master
/// for [`LAG`], kills the master, lets the replica take over and the load go on; then
/// what the load saw and what the new master counts, per member (the `24h` window; the
/// `1h` window must hold the same).
async fn kill_under_writes(prefix: &str, acks: ReplicaAcks) -> (Seen, BTreeMap<String, i64>) {
    let cluster = TestCluster::start_with(3, 1);
    let options = RedisOptions {
        response_timeout: Duration::from_secs(10),
        replica_acks: acks,
        ..RedisOptions::default()
    };
    let (boards, name, slot) = busy_board_with(&cluster, prefix, options).await;
    let master = cluster.owner(slot);
    let replica = cluster.replica_of(master);
    let (master_pid, replica_pid) = (cluster.pid(master), cluster.pid(replica));

    let load = Load::start(&boards, &name);
    load.more(50).await;
    // The replica stops and its link is cut: what the master takes from now on stays
    // on the master alone (a stopped replica cannot connect again).
    signal(replica_pid, "STOP");
    cluster.cli(master, &["CLIENT", "KILL", "TYPE", "replica"]);
    tokio::time::sleep(LAG).await;
    signal(master_pid, "KILL");
    signal(replica_pid, "CONT");
    tokio::task::block_in_place(|| cluster.wait_owner_among_live(slot, replica, &[master]));
    eprintln!("{prefix}: {replica} promoted");
    if acks.min == 0 {
        load.more(50).await;
    } else {
        // The new master has no replica (the killed one was its master): its writes
        // are applied and answered uncertain, until an operator adds a replica.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let seen = load.stop().await;
    eprintln!(
        "{prefix}: {} batches acknowledged, {} unavailable or uncertain",
        seen.batches, seen.writes_unavailable
    );
    let counted = counted(&boards, &name, "24h").await;
    assert_eq!(counted, self::counted(&boards, &name, "1h").await);
    (seen, counted)
}

/// Member → total in `window` of `board`.
async fn counted(boards: &Rollboard, board: &str, window: &str) -> BTreeMap<String, i64> {
    let top = boards
        .windowed(board)
        .top(Some(window.parse().unwrap()), 0, 100)
        .await
        .unwrap();
    top.entries
        .iter()
        .map(|e| (e.member.clone(), e.score))
        .collect()
}

/// Per member, how much of what was acknowledged is not counted.
fn lost(seen: &Seen, counted: &BTreeMap<String, i64>) -> i64 {
    seen.oracle
        .iter()
        .map(|(m, acked)| (acked - counted.get(m).copied().unwrap_or(0)).max(0))
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_min_replica_acks_a_killed_master_loses_no_acknowledged_event() {
    let acks = ReplicaAcks {
        min: 1,
        timeout: Duration::from_millis(200),
    };
    let (seen, counted) = kill_under_writes("kill-acked", acks).await;
    for (member, acked) in &seen.oracle {
        let got = counted.get(member).copied().unwrap_or(0);
        let maybe = seen.maybe.get(member).copied().unwrap_or(0);
        assert!(
            *acked <= got && got <= acked + maybe,
            "{member}: acknowledged {acked}, counted {got}, uncertain {maybe}"
        );
    }
    assert_eq!(lost(&seen, &counted), 0);
    // The writes of the lag were answered uncertain, not acknowledged.
    assert!(seen.writes_unavailable > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_min_replica_acks_a_killed_master_loses_what_it_had_not_replicated() {
    let (seen, counted) = kill_under_writes("kill-plain", ReplicaAcks::default()).await;
    let lost = lost(&seen, &counted);
    let acknowledged: i64 = seen.oracle.values().sum();
    eprintln!(
        "without min_replica_acks: {lost} of {acknowledged} acknowledged deltas lost ({} \
         batches acknowledged)",
        seen.batches
    );
    // Nothing is counted that was never sent…
    for (member, got) in &counted {
        let acked = seen.oracle.get(member).copied().unwrap_or(0);
        let maybe = seen.maybe.get(member).copied().unwrap_or(0);
        assert!(*got <= acked + maybe, "{member}: counted {got}");
    }
    // …but the events acknowledged while the replica lagged are gone.
    assert!(lost > 0, "the lag's acknowledged writes were lost");
}
