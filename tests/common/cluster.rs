//! A real Redis Cluster for tests: `redis-server --cluster-enabled yes` on free ports
//! (below 55000, with the bus port P+10000 free too), joined by `redis-cli --cluster
//! create`, ready when every node says `cluster_state:ok`. One cluster is shared by a
//! test binary ([`TestCluster::shared`]; tests use unique board names); a test that moves
//! slots starts its own ([`TestCluster::start`]). Each server runs under a shell that
//! kills it when this process's end of its stdin closes, so the servers go with the
//! test process however it ends.

#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A running local Redis Cluster.
pub struct TestCluster {
    /// `redis://127.0.0.1:P` of every master, in the order of `ports`.
    pub urls: Vec<String>,
    pub ports: Vec<u16>,
    /// On a cluster from [`TestCluster::start_tls`]: the `rediss://` URL of every master
    /// and the PEM file of the CA that signed their certificate.
    pub tls: Option<(Vec<String>, PathBuf)>,
    dir: PathBuf,
    /// The certificates of a TLS cluster, deleted with it.
    certs: Option<tempfile::TempDir>,
    /// The shells that keep the servers (dropping them, or this process ending, kills
    /// the servers).
    keepers: Mutex<Vec<Child>>,
}

impl TestCluster {
    /// The cluster of this test binary: three masters, started on first use.
    pub fn shared() -> &'static TestCluster {
        static SHARED: OnceLock<TestCluster> = OnceLock::new();
        SHARED.get_or_init(|| TestCluster::start(3))
    }

    /// A cluster of `masters` masters and no replicas, of the caller's own.
    pub fn start(masters: usize) -> TestCluster {
        TestCluster::start_with(masters, 0)
    }

    /// A cluster of `masters` masters with `replicas` replicas each, of the caller's own.
    pub fn start_with(masters: usize, replicas: usize) -> TestCluster {
        TestCluster::start_inner(masters, replicas, None)
    }

    /// A cluster of `masters` masters whose clients, and whose nodes between them (the
    /// bus), speak TLS only: a certificate for 127.0.0.1 signed by a CA made for it
    /// (redis-test's helper). Each node also keeps a plain port, on loopback, for the
    /// harness's `redis-cli`; `tls` has the `rediss://` URLs and the CA's PEM file.
    pub fn start_tls(masters: usize) -> TestCluster {
        let certs_dir = tempfile::TempDir::new().unwrap();
        let certs = redis_test::utils::build_keys_and_certs_for_tls(&certs_dir);
        let mut cluster = TestCluster::start_inner(masters, 0, Some(&certs));
        cluster.certs = Some(certs_dir);
        cluster
    }

    fn start_inner(
        masters: usize,
        replicas: usize,
        tls: Option<&redis_test::utils::TlsFilePaths>,
    ) -> TestCluster {
        static STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "rollboard-cluster-{}-{}",
            std::process::id(),
            STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let ports = free_ports(masters * (1 + replicas));
        let tls_ports = match tls {
            Some(_) => free_ports(ports.len()),
            None => Vec::new(),
        };
        let mut keepers = Vec::new();
        for (i, port) in ports.iter().enumerate() {
            // The bus stays on port + 10000 (MEET names the plain port); clients are
            // told the TLS port.
            let tls_args = tls.map_or(String::new(), |certs| {
                format!(
                    "--tls-port {} --tls-cert-file {} --tls-key-file {} --tls-ca-cert-file {} \
                     --tls-cluster yes --tls-auth-clients no --cluster-port {} ",
                    tls_ports[i],
                    certs.redis_crt.display(),
                    certs.redis_key.display(),
                    certs.ca_crt.display(),
                    port + 10000
                )
            });
            let script = format!(
                "redis-server --cluster-enabled yes --port {port} --bind 127.0.0.1 {tls_args}\
                 --cluster-config-file {dir}/nodes-{port}.conf --dir {dir} --save '' \
                 --appendonly no --cluster-node-timeout 3000 --loglevel warning \
                 --repl-diskless-sync-delay 0 \
                 --logfile {dir}/redis-{port}.log & pid=$!; cat >/dev/null; kill -9 $pid 2>/dev/null",
                dir = dir.display()
            );
            let child = Command::new("sh")
                .arg("-c")
                .arg(script)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .expect("start redis-server");
            keepers.push(child);
        }
        let cluster = TestCluster {
            urls: ports
                .iter()
                .map(|p| format!("redis://127.0.0.1:{p}"))
                .collect(),
            tls: tls.map(|certs| {
                let urls = tls_ports
                    .iter()
                    .map(|p| format!("rediss://127.0.0.1:{p}"))
                    .collect();
                (urls, certs.ca_crt.clone())
            }),
            ports,
            dir,
            keepers: Mutex::new(keepers),
            certs: None,
        };
        for port in &cluster.ports {
            wait_until(&format!("redis-server on {port}"), || {
                cli(*port, &["PING"]).is_some_and(|o| o.trim() == "PONG")
            });
        }
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        for port in &cluster.ports {
            create.arg(format!("127.0.0.1:{port}"));
        }
        let out = create
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .output()
            .expect("redis-cli --cluster create");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        cluster.wait_ok();
        // Every node knows the replicas as such, and every replica has synced.
        let slaves = masters * replicas;
        for port in &cluster.ports {
            wait_until(&format!("{slaves} replicas known to {port}"), || {
                cli(*port, &["CLUSTER", "NODES"])
                    .is_some_and(|n| n.lines().filter(|l| l.contains("slave")).count() == slaves)
            });
            // A node knows itself a replica as soon as `CLUSTER NODES` says so; its
            // first sync may come later.
            let replica = cli(*port, &["CLUSTER", "NODES"]).is_some_and(|n| {
                n.lines()
                    .any(|l| l.contains("myself") && l.contains("slave"))
            });
            if replica {
                wait_until(&format!("replica {port} in sync"), || {
                    cli(*port, &["INFO", "replication"]).is_some_and(|i| {
                        i.contains("master_link_status:up")
                            && i.contains("master_sync_in_progress:0")
                    })
                });
            }
        }
        cluster
    }

    /// Waits until every node says `cluster_state:ok` and knows every master.
    pub fn wait_ok(&self) {
        for port in &self.ports {
            wait_until(&format!("cluster_state:ok on {port}"), || {
                let info = cli(*port, &["CLUSTER", "INFO"]).unwrap_or_default();
                info.contains("cluster_state:ok")
                    && info.contains(&format!("cluster_known_nodes:{}", self.ports.len()))
                    && info.contains("cluster_slots_ok:16384")
            });
        }
    }

    /// `redis-cli -p <port> args…`, its output; panics when it cannot run.
    pub fn cli(&self, port: u16, args: &[&str]) -> String {
        cli(port, args).unwrap_or_else(|| panic!("redis-cli -p {port} {args:?} failed"))
    }

    /// The hash slot of `key` (`CLUSTER KEYSLOT`).
    pub fn keyslot(&self, key: &str) -> u16 {
        self.cli(self.ports[0], &["CLUSTER", "KEYSLOT", key])
            .trim()
            .parse()
            .unwrap()
    }

    /// The port of the master that owns `slot`, from `CLUSTER NODES` of `asked`.
    pub fn owner_seen_by(&self, asked: u16, slot: u16) -> u16 {
        let nodes = self.cli(asked, &["CLUSTER", "NODES"]);
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() > 2 && fields[2].contains("master") && owns(line, slot) {
                let address = fields[1].split('@').next().unwrap();
                return address.rsplit_once(':').unwrap().1.parse().unwrap();
            }
        }
        panic!("no master owns slot {slot}: {nodes}");
    }

    /// The port of the master that owns `slot`.
    pub fn owner(&self, slot: u16) -> u16 {
        self.owner_seen_by(self.ports[0], slot)
    }

    /// The port of a replica of the master on `master`.
    pub fn replica_of(&self, master: u16) -> u16 {
        let id = self.node_id(master);
        let nodes = self.cli(master, &["CLUSTER", "NODES"]);
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() > 3 && fields[2].contains("slave") && fields[3] == id {
                let address = fields[1].split('@').next().unwrap();
                return address.rsplit_once(':').unwrap().1.parse().unwrap();
            }
        }
        panic!("the master on {master} has no replica: {nodes}");
    }

    /// Promotes the replica on `replica` by `CLUSTER FAILOVER` and waits until every node
    /// sees it own `slot`. Redis gives up a manual failover after 5 s (the replica must
    /// catch up and win the masters' votes in that time, which a loaded machine can miss):
    /// it is then asked again, at most three times.
    pub fn failover(&self, replica: u16, slot: u16) {
        for attempt in 1..=3 {
            assert_eq!(self.cli(replica, &["CLUSTER", "FAILOVER"]).trim(), "OK");
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(15) {
                if self.owner_seen_by_now(replica, slot) == Some(replica) {
                    return self.wait_owner(slot, replica);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            eprintln!(
                "failover attempt {attempt}: {replica} not promoted in 15 s: {}",
                self.log(replica)
            );
        }
        panic!("the replica on {replica} was not promoted by three CLUSTER FAILOVERs");
    }

    /// Waits until every node says the master of `slot` is the node on `port`.
    pub fn wait_owner(&self, slot: u16, port: u16) {
        for asked in &self.ports {
            wait_until(&format!("{asked} sees {port} own slot {slot}"), || {
                cli(*asked, &["CLUSTER", "NODES"]).is_some_and(|nodes| {
                    nodes.lines().any(|line| {
                        let fields: Vec<&str> = line.split_whitespace().collect();
                        fields.len() > 2
                            && fields[2].contains("master")
                            && fields[1].starts_with(&format!("127.0.0.1:{port}@"))
                            && owns(line, slot)
                    })
                })
            });
        }
    }

    /// Waits until every node but those on `dead` says the master of `slot` is the
    /// node on `port` (after a master was killed: its replica promoted).
    pub fn wait_owner_among_live(&self, slot: u16, port: u16, dead: &[u16]) {
        for asked in self.ports.iter().filter(|p| !dead.contains(p)) {
            wait_until(&format!("{asked} sees {port} own slot {slot}"), || {
                self.owner_seen_by_now(*asked, slot) == Some(port)
            });
        }
    }

    /// The master of `slot` as the node on `asked` sees it now, if any.
    fn owner_seen_by_now(&self, asked: u16, slot: u16) -> Option<u16> {
        let nodes = cli(asked, &["CLUSTER", "NODES"])?;
        nodes.lines().find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.len() > 2
                && fields[2].contains("master")
                && !fields[2].contains("fail")
                && owns(line, slot))
            .then(|| {
                let address = fields[1].split('@').next().unwrap();
                address.rsplit_once(':').unwrap().1.parse().unwrap()
            })
        })
    }

    /// The log of the server on `port` (warnings and up).
    pub fn log(&self, port: u16) -> String {
        std::fs::read_to_string(self.dir.join(format!("redis-{port}.log"))).unwrap_or_default()
    }

    /// The process id of the server on `port` (read while it answers: a stopped
    /// server is signalled by its pid).
    pub fn pid(&self, port: u16) -> u32 {
        self.cli(port, &["INFO", "server"])
            .lines()
            .find_map(|l| l.trim().strip_prefix("process_id:")?.parse().ok())
            .unwrap_or_else(|| panic!("no process_id from the server on {port}"))
    }

    /// The node id of the master on `port`.
    pub fn node_id(&self, port: u16) -> String {
        self.cli(port, &["CLUSTER", "MYID"]).trim().to_owned()
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        for mut keeper in self.keepers.lock().unwrap().drain(..) {
            if let Some(mut stdin) = keeper.stdin.take() {
                let _ = stdin.flush();
            }
            let _ = keeper.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether the `CLUSTER NODES` line lists `slot` among its ranges.
fn owns(line: &str, slot: u16) -> bool {
    line.split_whitespace().skip(8).any(|range| {
        let range = range.trim_start_matches('[');
        match range.split_once('-') {
            Some((a, b)) => match (a.parse::<u16>(), b.parse::<u16>()) {
                (Ok(a), Ok(b)) => (a..=b).contains(&slot),
                _ => false,
            },
            None => range.parse::<u16>() == Ok(slot),
        }
    })
}

/// `redis-cli -p <port> args…`, its output when it ran and did not print an error.
fn cli(port: u16, args: &[&str]) -> Option<String> {
    let out = Command::new("redis-cli")
        .arg("-p")
        .arg(port.to_string())
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.success() && !text.starts_with("ERR") && !text.starts_with("Could not"))
        .then_some(text)
}

fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what}: not ready within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends `signal` (`KILL`, `STOP`, `CONT`) to the process `pid`.
pub fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} {pid}");
}

/// `n` ports below 55000 that are free, each with its bus port (+10000) free too.
pub fn free_ports(n: usize) -> Vec<u16> {
    use std::net::TcpListener;
    let mut ports = Vec::new();
    let seed = std::process::id() as u64
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos() as u64;
    let mut candidate = 20000 + (seed % 20000) as u16;
    while ports.len() < n {
        candidate = if candidate >= 44990 {
            20000
        } else {
            candidate + 7
        };
        let free = |p: u16| TcpListener::bind(("127.0.0.1", p)).is_ok();
        if free(candidate) && free(candidate + 10000) {
            ports.push(candidate);
        }
    }
    ports
}
