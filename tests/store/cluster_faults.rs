//! A lost reply on Redis Cluster: every node of a cluster of this test's own announces a
//! fault proxy as its address (`cluster-announce-port`), so the cluster client reaches
//! each node through one. A write that Redis ran but whose reply is cut fails as
//! unavailable and counts once: the cluster client's own retry after a broken
//! connection would send it again, so writes never go through that retry.

use std::sync::Arc;

use rollboard::{BoardConfig, RedisStore};

use crate::proxy::{Fault, FaultProxy};
use crate::support::{clock, pairs, ranking, unique, with_clock};
use crate::test_cluster::TestCluster;

/// The cluster, with a proxy per node that the nodes announce; the proxies by node port.
async fn behind_proxies() -> (TestCluster, Vec<(u16, FaultProxy)>) {
    let cluster = TestCluster::start(3);
    let mut proxies = Vec::new();
    for port in cluster.ports.clone() {
        let proxy = FaultProxy::start(&format!("redis://127.0.0.1:{port}/")).await;
        let proxy_port = proxy_port(&proxy);
        let bus = (port + 10000).to_string();
        cluster.cli(
            port,
            &["CONFIG", "SET", "cluster-announce-bus-port", bus.as_str()],
        );
        cluster.cli(
            port,
            &[
                "CONFIG",
                "SET",
                "cluster-announce-port",
                proxy_port.to_string().as_str(),
            ],
        );
        proxies.push((port, proxy));
    }
    // Every node knows every other by its proxy's port before the client asks.
    for port in &cluster.ports {
        for _ in 0..600 {
            let nodes = cluster.cli(*port, &["CLUSTER", "NODES"]);
            if proxies
                .iter()
                .all(|(_, p)| nodes.contains(&format!(":{}@", proxy_port(p))))
            {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
    cluster.wait_ok();
    (cluster, proxies)
}

fn proxy_port(proxy: &FaultProxy) -> u16 {
    proxy
        .url()
        .trim_start_matches("redis://127.0.0.1:")
        .trim_end_matches('/')
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_write_whose_reply_is_cut_counts_once_and_is_not_sent_again() {
    let (cluster, proxies) = behind_proxies().await;
    let seeds: Vec<String> = proxies.iter().map(|(_, p)| p.url()).collect();
    let store = RedisStore::connect_cluster(&seeds).await.unwrap();
    let clock = clock();
    let boards = with_clock(Arc::new(store), &clock);
    let name = unique("cut");
    boards
        .create(&name, BoardConfig::parse("1h", &["1h"]).unwrap())
        .await
        .unwrap();
    boards.windowed(&name).incr("a", 1, None).await.unwrap();
    // CLUSTER NODES names each master by its announced address: its proxy's port.
    let owner = cluster.owner(cluster.keyslot(&format!("board_{{{name}}}")));
    let proxy = &proxies
        .iter()
        .find(|(_, p)| proxy_port(p) == owner)
        .unwrap()
        .1;
    let index = format!("slots_{{{name}}}");
    proxy.arm(Fault::Cut, 1, move |r| {
        r.is_script_with_key(&index) && r.has_arg("a")
    });
    let err = boards.windowed(&name).incr("a", 1, None).await.unwrap_err();
    assert_eq!(err.code(), "store_unavailable", "{err:?}");
    assert_eq!(proxy.fired(), 1);
    // Redis ran it once; the client did not send it again on a new connection.
    let top = boards.windowed(&name).top(None, 0, 10).await.unwrap();
    assert_eq!(ranking(&top), pairs(&[("a", 2)]));
    boards.windowed(&name).incr("a", 1, None).await.unwrap();
    let top = boards.windowed(&name).top(None, 0, 10).await.unwrap();
    assert_eq!(ranking(&top), pairs(&[("a", 3)]));
}
