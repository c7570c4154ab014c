//! A private 3-server ZooKeeper ensemble on loopback: real `java` processes running Debian's
//! ZooKeeper jars, with temporary data directories, killed when dropped.

#![allow(
    dead_code,
    unreachable_pub,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::print_stderr
)]

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio::time::{Instant, sleep, timeout};

/// Debian's ZooKeeper jar (its manifest names the jars it needs).
pub const JAR: &str = "/usr/share/java/zookeeper.jar";

/// One server of the ensemble.
pub struct Server {
    pub client_port: u16,
    child: Option<Child>,
    _dir: tempfile::TempDir,
}

/// A 3-server ensemble.
pub struct Ensemble {
    pub servers: Vec<Server>,
}

/// True if ZooKeeper's jar and java are installed; otherwise skips (or fails under CI).
pub fn installed() -> bool {
    let java = std::process::Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    let ok = java && std::path::Path::new(JAR).exists();
    if !ok {
        if std::env::var_os("CI").is_some() {
            panic!("java or {JAR} is missing; scripts/test installs Debian's zookeeper");
        }
        eprintln!("skipping: java or {JAR} is missing (apt-get install zookeeper)");
    }
    ok
}

/// Sends a four-letter word to `port` and returns the answer.
pub async fn four_letters(port: u16, word: &str) -> Option<String> {
    let talk = async {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        s.write_all(word.as_bytes()).await.ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).await.ok()?;
        Some(out)
    };
    timeout(Duration::from_secs(2), talk).await.ok().flatten()
}

impl Ensemble {
    /// Starts three servers (tick 200 ms) and waits until one of them leads.
    pub async fn start() -> Self {
        let ports: Vec<[u16; 3]> = (0..3)
            .map(|_| {
                [
                    super::common::free_port(),
                    super::common::free_port(),
                    super::common::free_port(),
                ]
            })
            .collect();
        let members: String = ports
            .iter()
            .enumerate()
            .map(|(i, [_, quorum, election])| {
                format!("server.{}=127.0.0.1:{quorum}:{election}\n", i + 1)
            })
            .collect();
        let mut servers = Vec::new();
        for (i, [client, _, _]) in ports.iter().enumerate() {
            let dir = tempfile::tempdir().expect("a temporary directory");
            let data = dir.path().join("data");
            std::fs::create_dir_all(&data).unwrap();
            std::fs::write(data.join("myid"), format!("{}\n", i + 1)).unwrap();
            let cfg = dir.path().join("zoo.cfg");
            std::fs::write(
                &cfg,
                format!(
                    "tickTime=200\ninitLimit=50\nsyncLimit=10\ndataDir={}\nclientPort={client}\n\
                     clientPortAddress=127.0.0.1\nadmin.enableServer=false\n\
                     4lw.commands.whitelist=*\n{members}",
                    data.display()
                ),
            )
            .unwrap();
            let child = Command::new("java")
                .args(["-Xmx128m", "-cp", JAR])
                .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
                .arg(&cfg)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .expect("java starts");
            servers.push(Server {
                client_port: *client,
                child: Some(child),
                _dir: dir,
            });
        }
        let ensemble = Self { servers };
        ensemble.leader(Duration::from_secs(60)).await;
        ensemble
    }

    /// The servers' client addresses, `127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3`.
    pub fn servers(&self) -> String {
        self.servers
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.client_port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The index of the leading server among those running, waiting up to `within` for one.
    pub async fn leader(&self, within: Duration) -> usize {
        let deadline = Instant::now() + within;
        loop {
            for (i, s) in self.servers.iter().enumerate() {
                if s.child.is_none() {
                    continue;
                }
                if let Some(out) = four_letters(s.client_port, "srvr").await
                    && out.contains("Mode: leader")
                {
                    return i;
                }
            }
            assert!(Instant::now() < deadline, "no leader within {within:?}");
            sleep(Duration::from_millis(200)).await;
        }
    }

    /// Kills server `i` (SIGKILL) and waits for it to exit.
    pub async fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.servers[i].child.take() {
            child.kill().await.expect("kill");
        }
    }
}
