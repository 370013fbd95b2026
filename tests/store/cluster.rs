//! Redis Cluster specifics (the conformance suite and the property test also run on the
//! cluster): boards spread over the masters with every key of a board in its one hash
//! slot, counters listed across nodes, the jobs that scan refusing a cluster node.

use std::collections::BTreeSet;

use rollboard::{BoardConfig, Event, RedisOptions};

use crate::support::{Harness, START, pairs, ranking, unique};
use crate::test_cluster::TestCluster;

/// Board names, one whose hash slot each master owns, so the test does not depend on
/// luck: names are drawn until every master has one.
fn one_board_per_master(cluster: &TestCluster) -> Vec<(String, u16, u16)> {
    let mut found: Vec<(String, u16, u16)> = Vec::new();
    for i in 0..200 {
        let name = unique(&format!("spread{i}-"));
        let slot = cluster.keyslot(&format!("board_{{{name}}}"));
        let owner = cluster.owner(slot);
        if !found.iter().any(|(_, _, o)| *o == owner) {
            found.push((name, slot, owner));
        }
        if found.len() == cluster.ports.len() {
            return found;
        }
    }
    panic!("200 names did not cover every master");
}

#[tokio::test]
async fn boards_land_on_different_masters_with_every_key_in_the_boards_slot() {
    let h = Harness::cluster().await;
    let cluster = TestCluster::shared();
    let boards = one_board_per_master(cluster);
    let owners: BTreeSet<u16> = boards.iter().map(|(_, _, o)| *o).collect();
    assert_eq!(owners.len(), 3, "three boards on three masters");
    for (n, (name, slot, owner)) in boards.iter().enumerate() {
        h.boards
            .create(name, BoardConfig::parse("1h", &["1h", "24h"]).unwrap())
            .await
            .unwrap();
        let score = n as i64 + 1;
        h.boards
            .windowed(name)
            .incr_batch(&[Event::new("a", score), Event::new("b", 10)])
            .await
            .unwrap();
        let top = h.boards.windowed(name).top(None, 0, 10).await.unwrap();
        assert_eq!(ranking(&top), pairs(&[("b", 10), ("a", score)]));
        // Every key of the board is on its owner, in the board's one slot: the record,
        // the slot index, two totals and the open slot's one hash (written plain even
        // on a compact board, the default, until the retirer compacts it).
        let keys = cluster.cli(*owner, &["--raw", "KEYS", &format!("*{{{name}}}*")]);
        let keys: Vec<&str> = keys.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(keys.len(), 5, "keys of {name}: {keys:?}");
        assert!(
            keys.contains(&format!("slot_{{{name}}}_{START}").as_str()),
            "{keys:?}"
        );
        for key in &keys {
            assert_eq!(cluster.keyslot(key), *slot, "{key}");
        }
        // The slot lists the same five (other tests' boards may share the slot: only
        // this board's keys are counted).
        let in_slot = cluster.cli(
            *owner,
            &["CLUSTER", "GETKEYSINSLOT", &slot.to_string(), "1000"],
        );
        let mut in_slot: Vec<&str> = in_slot
            .lines()
            .filter(|k| k.contains(&format!("{{{name}}}")))
            .collect();
        in_slot.sort_unstable();
        let mut listed = keys.clone();
        listed.sort_unstable();
        assert_eq!(in_slot, listed);
        for other in cluster.ports.iter().filter(|p| *p != owner) {
            let elsewhere = cluster.cli(*other, &["KEYS", &format!("*{{{name}}}*")]);
            assert_eq!(elsewhere.trim(), "", "no key of {name} on {other}");
        }
    }
    // The registry (a global key, on whichever master owns its slot) lists all three.
    let listed: BTreeSet<String> = h
        .boards
        .boards()
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.name.to_string())
        .collect();
    for (name, _, _) in &boards {
        assert!(listed.contains(name), "{name} listed");
    }
    assert_eq!(h.boards.store().kind(), "redis-cluster");
}

#[tokio::test]
async fn counters_on_many_nodes_are_listed_together() {
    let h = Harness::cluster().await;
    let names: Vec<String> = (0..12).map(|i| unique(&format!("ctr{i}-"))).collect();
    for name in &names {
        h.boards.counters().incr(name, 2, None).await.unwrap();
    }
    let listed: BTreeSet<String> = h
        .boards
        .counters()
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.name.to_string())
        .collect();
    for name in &names {
        assert!(listed.contains(name), "{name} listed");
    }
}

#[tokio::test]
async fn jobs_that_scan_refuse_a_cluster_node() {
    let cluster = TestCluster::shared();
    let err = rollboard::jobs::legacy::find_legacy_boards(
        &format!("{}/", cluster.urls[0]),
        &RedisOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("runs on a single Redis only: redis://127.0.0.1:"),
        "{err}"
    );
    assert!(
        err.to_string().contains("is a node of a Redis Cluster"),
        "{err}"
    );
}
