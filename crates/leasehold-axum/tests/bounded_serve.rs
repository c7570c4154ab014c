//! `leasehold_axum::serve` on a real loopback listener, on paused tokio time (its timers are tokio
//! timers): the header read timeout, and a shutdown that waits for requests in flight at most
//! `SHUTDOWN_GRACE` — what `axum::serve(..).with_graceful_shutdown(..)` does not bound.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use leasehold_axum::{HEADER_READ_TIMEOUT, SHUTDOWN_GRACE};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Notify, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Serves `router` on 127.0.0.1:0; the sender stops it.
async fn start(router: Router) -> (SocketAddr, oneshot::Sender<()>, JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(leasehold_axum::serve(listener, router, async {
        let _ = stopped.await;
    }));
    (addr, stop, server)
}

fn hello() -> Router {
    Router::new().route("/hello", get(|| async { "hello" }))
}

#[tokio::test(start_paused = true)]
async fn a_request_head_that_never_ends_is_cut_off_after_the_header_timeout() {
    let (addr, stop, server) = start(hello()).await;
    let started = Instant::now();
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /hel").await.unwrap();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest).await; // EOF or reset: closed either way
    let waited = started.elapsed();
    assert!(
        waited >= HEADER_READ_TIMEOUT && waited < HEADER_READ_TIMEOUT + Duration::from_secs(1),
        "closed after {waited:?}"
    );
    // A connection that sends nothing at all is cut off the same way.
    let started = Instant::now();
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let _ = silent.read_to_end(&mut rest).await;
    assert!(started.elapsed() >= HEADER_READ_TIMEOUT);
    // Everyone else is still served.
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(b"GET /hello HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).await.unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.ends_with("hello"),
        "{answer}"
    );
    stop.send(()).unwrap();
    server.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn shutdown_waits_for_a_slow_request_at_most_the_grace_period() {
    let entered = Arc::new(Notify::new());
    let inside = entered.clone();
    let router = Router::new().route(
        "/slow",
        get(move || {
            let inside = inside.clone();
            async move {
                inside.notify_one();
                tokio::time::sleep(Duration::from_secs(3600)).await;
                "too late"
            }
        }),
    );
    let (addr, stop, server) = start(router).await;
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(format!("GET /slow HTTP/1.1\r\nhost: {addr}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    entered.notified().await;
    // Another client holds a request head open.
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /sl").await.unwrap();

    let stopping = Instant::now();
    stop.send(()).unwrap();
    server.await.unwrap();
    let took = stopping.elapsed();
    assert!(
        took >= SHUTDOWN_GRACE && took < SHUTDOWN_GRACE + Duration::from_secs(1),
        "shutdown took {took:?}"
    );
    for mut c in [conn, slow] {
        let mut rest = Vec::new();
        let _ = c.read_to_end(&mut rest).await;
        assert!(
            !String::from_utf8_lossy(&rest).contains("too late"),
            "the connection was closed without an answer"
        );
    }
    // Nothing listens any more.
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test(start_paused = true)]
async fn shutdown_with_idle_connections_is_immediate() {
    let (addr, stop, server) = start(hello()).await;
    // A kept-alive connection that finished its request.
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(format!("GET /hello HTTP/1.1\r\nhost: {addr}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut buf = [0_u8; 512];
    let n = conn.read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    let stopping = Instant::now();
    stop.send(()).unwrap();
    server.await.unwrap();
    assert!(
        stopping.elapsed() < SHUTDOWN_GRACE,
        "{:?}",
        stopping.elapsed()
    );
}
