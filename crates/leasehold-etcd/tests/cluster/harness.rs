//! A private 3-member etcd cluster on loopback for fault tests: real `etcd` processes with
//! temporary data directories, killed when dropped. Member-to-member traffic goes through a
//! partition proxy per member, so a test can cut one member off from the others while it keeps
//! running and serving its clients.
//!
//! Why not one plain TCP proxy per member: etcd's peer transport sends each direction of a
//! member pair over connections the *receiving* member dialled (stream readers) or the sender
//! dialled (pipeline posts), so refusing the connections *to* a member leaves half of its
//! traffic flowing. Every raft request names its sender in an `X-Server-From` header; the
//! partition proxy reads it from the first request of each connection and refuses (and, when a
//! partition starts, closes) every connection that crosses the cut, in both directions.

#![allow(dead_code, unreachable_pub, clippy::expect_used, clippy::unwrap_used)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::{Client, ConnectOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, timeout};

/// Which member is cut off from the other two, if any.
type Cut = Option<usize>;
/// Member ids (as peers write them in `X-Server-From`: lowercase hex) → member index.
type Ids = Arc<Mutex<HashMap<String, usize>>>;

/// One member's partition proxy; stopped when dropped.
struct PeerProxy {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for PeerProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PeerProxy {
    async fn start(me: usize, target: SocketAddr, cut: watch::Receiver<Cut>, ids: Ids) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("bound");
        let task = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            while let Ok((inbound, _)) = listener.accept().await {
                conns.spawn(relay(inbound, me, target, cut.clone(), Arc::clone(&ids)));
                while conns.try_join_next().is_some() {}
            }
        });
        Self { addr, task }
    }
}

/// True if traffic between `sender` and `receiver` crosses the cut. A connection whose first
/// request named no sender (a health probe or version check) is refused during a partition too:
/// Go reuses such a connection for later raft messages of the same member.
fn crosses(cut: Cut, sender: Option<usize>, receiver: usize) -> bool {
    match (cut, sender) {
        (Some(isolated), Some(sender)) => (sender == isolated) != (receiver == isolated),
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// Reads the head of the first HTTP request (up to its blank line) and the sender id it names
/// (probes and version checks name none).
async fn head(inbound: &mut TcpStream) -> Option<(Vec<u8>, Option<String>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(5);
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 64 * 1024 {
        let n = timeout(deadline - Instant::now(), inbound.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&buf).to_ascii_lowercase();
    let sender = text
        .lines()
        .find_map(|l| l.strip_prefix("x-server-from:"))
        .map(|id| id.trim().to_owned());
    Some((buf, sender))
}

async fn relay(
    mut inbound: TcpStream,
    me: usize,
    target: SocketAddr,
    mut cut: watch::Receiver<Cut>,
    ids: Ids,
) {
    let Some((first, sender_id)) = head(&mut inbound).await else {
        return;
    };
    // Resolved at every check: connections made while the cluster formed predate the id map.
    let sender = || {
        sender_id
            .as_ref()
            .and_then(|id| ids.lock().unwrap().get(id).copied())
    };
    if crosses(*cut.borrow_and_update(), sender(), me) {
        return;
    }
    let Ok(mut outbound) = TcpStream::connect(target).await else {
        return;
    };
    if outbound.write_all(&first).await.is_err() {
        return;
    }
    let copy = tokio::io::copy_bidirectional(&mut inbound, &mut outbound);
    tokio::pin!(copy);
    loop {
        tokio::select! {
            _ = &mut copy => return,
            changed = cut.changed() => {
                if changed.is_err() || crosses(*cut.borrow_and_update(), sender(), me) {
                    return; // both sockets close
                }
            }
        }
    }
}

/// One etcd member.
struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
}

/// A 3-member cluster; every process is killed and every data directory removed when dropped.
pub struct Cluster {
    dir: tempfile::TempDir,
    members: Vec<Member>,
    proxies: Vec<PeerProxy>,
    cut: watch::Sender<Cut>,
    ids: Ids,
    initial_cluster: String,
    token: String,
}

/// The member count.
pub const SIZE: usize = 3;

/// A loopback port held while a cluster test runs: binding it is the lock, so cluster tests run
/// one at a time whether the runner puts them in threads (cargo test) or processes (nextest),
/// and a crashed test releases it with its process.
const EXCLUSIVE_PORT: u16 = 23_809;

/// Waits until no other cluster test runs (up to 5 minutes); the lock is held until the returned
/// listener is dropped.
pub async fn exclusive() -> std::net::TcpListener {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Ok(held) = std::net::TcpListener::bind(("127.0.0.1", EXCLUSIVE_PORT)) {
            return held;
        }
        assert!(
            Instant::now() < deadline,
            "another cluster test held 127.0.0.1:{EXCLUSIVE_PORT} for 5 minutes"
        );
        sleep(Duration::from_millis(100)).await;
    }
}

impl Cluster {
    /// Starts a cluster and waits until every member answers linearizable reads, or `None`
    /// (skip) when `etcd` is not installed outside CI.
    pub async fn start() -> Option<Self> {
        if !super::common::etcd_installed() {
            return None;
        }
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (cut, _) = watch::channel(None);
        let ids: Ids = Arc::default();
        let mut members = Vec::new();
        let mut proxies = Vec::new();
        for i in 0..SIZE {
            let peer_port = super::common::free_port();
            let target = SocketAddr::from(([127, 0, 0, 1], peer_port));
            proxies.push(PeerProxy::start(i, target, cut.subscribe(), Arc::clone(&ids)).await);
            members.push(Member {
                name: format!("m{i}"),
                client_port: super::common::free_port(),
                peer_port,
                child: None,
            });
        }
        let initial_cluster = members
            .iter()
            .zip(&proxies)
            .map(|(m, p)| format!("{}=http://{}", m.name, p.addr))
            .collect::<Vec<_>>()
            .join(",");
        let mut cluster = Self {
            dir,
            members,
            proxies,
            cut,
            ids,
            initial_cluster,
            token: format!("lh-{}", &leasehold::store::Token::random().to_hex()[..8]),
        };
        for i in 0..SIZE {
            cluster.spawn(i);
        }
        for i in 0..SIZE {
            cluster.wait_healthy(i).await;
        }
        let client = cluster.client(&cluster.endpoints()).await;
        let mut client = client;
        let list = client.member_list().await.expect("member list");
        for m in list.members() {
            let index = cluster
                .members
                .iter()
                .position(|x| x.name == m.name())
                .expect("a known member");
            cluster
                .ids
                .lock()
                .unwrap()
                .insert(format!("{:x}", m.id()), index);
        }
        Some(cluster)
    }

    fn spawn(&mut self, i: usize) {
        let data = self.dir.path().join(&self.members[i].name);
        let log = std::fs::File::create(
            self.dir
                .path()
                .join(format!("{}.log", self.members[i].name)),
        )
        .expect("a log file");
        let m = &self.members[i];
        let client_url = format!("http://127.0.0.1:{}", m.client_port);
        let child = Command::new("etcd")
            .arg("--name")
            .arg(&m.name)
            .arg("--data-dir")
            .arg(&data)
            .args(["--listen-client-urls", &client_url])
            .args(["--advertise-client-urls", &client_url])
            .args([
                "--listen-peer-urls",
                &format!("http://127.0.0.1:{}", m.peer_port),
            ])
            .args([
                "--initial-advertise-peer-urls",
                &format!("http://{}", self.proxies[i].addr),
            ])
            .args(["--initial-cluster", &self.initial_cluster])
            .args(["--initial-cluster-token", &self.token])
            .args(["--initial-cluster-state", "new"])
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .expect("etcd starts");
        self.members[i].child = Some(child);
    }

    /// A client on `endpoints` (comma-separated), failing fast.
    pub async fn client(&self, endpoints: &str) -> Client {
        let endpoints: Vec<String> = endpoints
            .split(',')
            .map(|e| format!("http://{e}"))
            .collect();
        let options = ConnectOptions::new()
            .with_require_leader(true)
            .with_timeout(Duration::from_secs(2))
            .with_connect_timeout(Duration::from_secs(1));
        Client::connect(endpoints, Some(options))
            .await
            .expect("a client")
    }

    /// The client endpoint of member `i`: `127.0.0.1:port`.
    pub fn endpoint(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.members[i].client_port)
    }

    /// Every client endpoint, comma-separated.
    pub fn endpoints(&self) -> String {
        (0..SIZE)
            .map(|i| self.endpoint(i))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The client endpoints of every member but `i`.
    pub fn endpoints_but(&self, i: usize) -> String {
        (0..SIZE)
            .filter(|j| *j != i)
            .map(|j| self.endpoint(j))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Waits until member `i` answers a linearizable read (it has a leader and a quorum).
    pub async fn wait_healthy(&self, i: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let endpoint = format!("http://{}", self.endpoint(i));
        loop {
            let options = ConnectOptions::new()
                .with_require_leader(true)
                .with_connect_timeout(Duration::from_millis(500));
            let answered = async {
                let mut c = Client::connect([endpoint.as_str()], Some(options))
                    .await
                    .ok()?;
                c.get("health", None).await.ok()
            };
            if timeout(Duration::from_secs(2), answered)
                .await
                .ok()
                .flatten()
                .is_some()
            {
                return;
            }
            if Instant::now() >= deadline {
                // The directory goes with the cluster: show the member's log here.
                let log = self
                    .dir
                    .path()
                    .join(format!("{}.log", self.members[i].name));
                let log = std::fs::read_to_string(&log).unwrap_or_default();
                let lines: Vec<&str> = log.lines().collect();
                panic!(
                    "etcd member {i} did not become healthy within 30 s; the end of its log:\n{}",
                    lines[lines.len().saturating_sub(30)..].join("\n")
                );
            }
            sleep(Duration::from_millis(100)).await;
        }
    }

    /// The index of the current Raft leader, as the members agree on it.
    pub async fn leader(&self, among: &[usize]) -> usize {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            for &i in among {
                let Ok(Ok(mut c)) = timeout(
                    Duration::from_secs(1),
                    Client::connect([format!("http://{}", self.endpoint(i))], None),
                )
                .await
                else {
                    continue;
                };
                if let Ok(Ok(status)) = timeout(Duration::from_secs(1), c.status()).await {
                    let id = format!("{:x}", status.leader());
                    if let Some(&index) = self.ids.lock().unwrap().get(&id)
                        && among.contains(&index)
                    {
                        return index;
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "no leader among {among:?} within 20 s"
            );
            sleep(Duration::from_millis(100)).await;
        }
    }

    /// Kills member `i` (SIGKILL) and waits until it is gone.
    pub async fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            let _ = child.kill().await;
        }
    }

    /// Starts member `i` again on its data directory and waits until it is healthy.
    pub async fn restart(&mut self, i: usize) {
        self.kill(i).await;
        self.spawn(i);
        self.wait_healthy(i).await;
    }

    /// Cuts member `i` off from the other two (it keeps running and serving its clients).
    pub fn isolate(&self, i: usize) {
        self.cut.send_replace(Some(i));
    }

    /// Ends the partition.
    pub fn heal(&self) {
        self.cut.send_replace(None);
    }

    /// The data directory (for messages).
    pub fn dir(&self) -> PathBuf {
        self.dir.path().to_owned()
    }
}
