//! Where the test Redis is, and factories of store clients for the testkit.

#![allow(dead_code, unreachable_pub, clippy::expect_used, clippy::print_stderr)]

use std::sync::Arc;
use std::time::Duration;

use leasehold::LeaseStore;
use leasehold_redis::{RedisOptions, RedisStore};

/// The variable naming the test server.
pub const URL_VAR: &str = "LEASEHOLD_TEST_REDIS_URL";
/// Used when the variable is unset outside CI: the conventional local server.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// The Redis URL, or `None` to skip. With `CI` set the URL must be given and reachable; without
/// it, a local server on 6379 is used when it answers.
pub fn url() -> Option<String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("{URL_VAR} is not set; scripts/test starts Redis and sets it")
        }
        _ => {
            if std::net::TcpStream::connect_timeout(
                &std::net::SocketAddr::from(([127, 0, 0, 1], 6379)),
                Duration::from_millis(500),
            )
            .is_ok()
            {
                Some(DEFAULT_URL.to_owned())
            } else {
                eprintln!(
                    "skipping: {URL_VAR} is not set and nothing answers on 127.0.0.1:6379 (run scripts/test to start Redis)"
                );
                None
            }
        }
    }
}

/// Options with a key prefix unique to this test run, so runs sharing a server never meet.
pub fn options() -> RedisOptions {
    RedisOptions::default()
        .with_prefix(format!(
            "lhtest-{}",
            &leasehold::store::Token::random().to_hex()[..12]
        ))
        .with_response_timeout(Duration::from_secs(2))
        .with_connect_timeout(Duration::from_secs(2))
        .with_idle_retention(Duration::from_secs(60))
}

/// A factory making a new store (its own connections) per call, as separate nodes would have;
/// all share one key prefix.
pub fn factory(url: String) -> impl Fn() -> Arc<dyn LeaseStore> + Send + Sync {
    let options = options();
    move || {
        Arc::new(RedisStore::connect_lazy(&url, options.clone()).expect("valid URL"))
            as Arc<dyn LeaseStore>
    }
}

/// `url` with its `host:port` replaced by `addr` (user, password, database and query kept).
pub fn via(url: &str, addr: std::net::SocketAddr) -> String {
    let (scheme, rest) = url.split_once("://").expect("URL with ://");
    let (authority, tail) = rest
        .find(['/', '?', '#'])
        .map_or((rest, ""), |i| rest.split_at(i));
    let userinfo = authority.rsplit_once('@').map(|(u, _)| format!("{u}@"));
    format!("{scheme}://{}{addr}{tail}", userinfo.unwrap_or_default())
}

/// The server address in `url` (host and port, default port 6379).
pub async fn target(url: &str) -> std::net::SocketAddr {
    let (_, rest) = url.split_once("://").expect("URL with ://");
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host_port = if host_port.contains(':') {
        host_port.to_owned()
    } else {
        format!("{host_port}:6379")
    };
    tokio::net::lookup_host(host_port)
        .await
        .expect("resolvable Redis host")
        .next()
        .expect("an address")
}

/// A private `redis-server` on a free loopback port, for tests that kill and restart it. Killed
/// when dropped.
pub struct RedisServer {
    pub port: u16,
    child: Option<tokio::process::Child>,
}

impl RedisServer {
    /// Starts one, or `None` (skip) when `redis-server` is not installed outside CI.
    pub async fn start() -> Option<Self> {
        let installed = std::process::Command::new("redis-server")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !installed {
            if std::env::var_os("CI").is_some() {
                panic!("redis-server is not installed; scripts/test installs it");
            }
            eprintln!("skipping: redis-server is not installed");
            return None;
        }
        let port = leasehold_testkit::free_port().expect("a free port");
        let mut server = Self { port, child: None };
        server.restart().await;
        Some(server)
    }

    /// The URL of this server.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills the server (SIGKILL: no shutdown save) and waits until it is gone.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// Starts the server again on the same port, in memory only, and waits until it answers.
    pub async fn restart(&mut self) {
        self.kill().await;
        let port = self.port.to_string();
        let child = tokio::process::Command::new("redis-server")
            .args([
                "--port",
                &port,
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if ping(self.port).await {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "redis-server on port {port} did not answer within 10 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn ping(port: u16) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    let mut buf = [0u8; 7];
    s.write_all(b"PING\r\n").await.is_ok()
        && s.read_exact(&mut buf).await.is_ok()
        && &buf == b"+PONG\r\n"
}
