//! The shared server of `leasehold workbench` and `leasehold serve` on a real loopback listener:
//! the `Host:` check against DNS rebinding, and the header read timeout of `leasehold_axum::serve`
//! underneath (on paused tokio time: the server's timers are tokio timers). The shutdown bound is
//! tested in leasehold-axum's `tests/bounded_serve.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use leasehold_workbench::web::{self, HEADER_READ_TIMEOUT};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

type Server = JoinHandle<Result<(), web::WebError>>;

/// Serves `router` on 127.0.0.1:0; the sender stops it.
async fn start(router: Router, allow_remote: bool) -> (SocketAddr, oneshot::Sender<()>, Server) {
    let listener = web::bind("127.0.0.1:0".parse().unwrap(), false)
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(web::serve(listener, router, allow_remote, async {
        let _ = stopped.await;
    }));
    (addr, stop, server)
}

/// Sends `raw` on a new connection and reads until the server closes it.
async fn exchange(addr: SocketAddr, raw: &str) -> String {
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(raw.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), conn.read_to_end(&mut answer))
        .await
        .expect("the server answers and closes")
        .unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

async fn status_for_host(addr: SocketAddr, host: Option<&str>) -> String {
    let host = host.map(|h| format!("host: {h}\r\n")).unwrap_or_default();
    let answer = exchange(
        addr,
        &format!("GET /api/scenarios HTTP/1.1\r\n{host}connection: close\r\n\r\n"),
    )
    .await;
    answer.lines().next().unwrap_or("").to_owned()
}

#[tokio::test]
async fn requests_naming_another_host_are_refused_with_421() {
    let (addr, stop, server) = start(web::workbench_router(), false).await;
    let port = addr.port();
    for host in [
        format!("localhost:{port}"),
        format!("LocalHost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
    ] {
        let status = status_for_host(addr, Some(&host)).await;
        assert!(status.starts_with("HTTP/1.1 200"), "{host}: {status}");
    }
    for host in [
        "evil.example".to_owned(),
        format!("evil.example:{port}"),
        format!("localhost:{}", port.wrapping_add(1)),
        "localhost".to_owned(),
        format!("127.0.0.1.evil.example:{port}"),
        format!("localhost:+{port}"),
        format!("[::1]x:{port}"),
        String::new(),
    ] {
        let status = status_for_host(addr, Some(&host)).await;
        assert!(status.starts_with("HTTP/1.1 421"), "{host:?}: {status}");
    }
    // HTTP/1.0 without any Host, and an absolute target naming another host.
    let answer = exchange(addr, "GET /api/scenarios HTTP/1.0\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.0 421"), "{answer}");
    let answer = exchange(
        addr,
        &format!(
            "GET http://evil.example:{port}/api/scenarios HTTP/1.1\r\nhost: localhost:{port}\r\nconnection: close\r\n\r\n"
        ),
    )
    .await;
    assert!(!answer.starts_with("HTTP/1.1 200"), "{answer}");
    // The refusal says why, briefly, and how to allow other names; unknown paths are refused too.
    let answer = exchange(
        addr,
        "GET /nowhere HTTP/1.1\r\nhost: evil.example\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 421"), "{answer}");
    let body = answer.split_once("\r\n\r\n").unwrap().1;
    assert!(
        body.contains("--allow-remote") && body.len() < 300,
        "{body}"
    );

    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn allow_remote_accepts_any_host() {
    let (addr, stop, server) = start(web::workbench_router(), true).await;
    for host in ["evil.example", "evil.example:1", "my-host.internal:7878"] {
        let status = status_for_host(addr, Some(host)).await;
        assert!(status.starts_with("HTTP/1.1 200"), "{host}: {status}");
    }
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_request_head_that_never_ends_is_cut_off_after_the_header_timeout() {
    let (addr, stop, server) = start(web::workbench_router(), false).await;
    let started = Instant::now();
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /api/scen").await.unwrap();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest).await; // EOF or reset: closed either way
    let waited = started.elapsed();
    assert!(
        waited >= HEADER_READ_TIMEOUT && waited < HEADER_READ_TIMEOUT + Duration::from_secs(1),
        "closed after {waited:?}"
    );
    // The server is still there for everyone else.
    let status = status_for_host(addr, Some(&addr.to_string())).await;
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}
