//! The proxy against a loopback echo server.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, timeout};

use super::{FaultProxy, ProxyMode};

async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .ok()
        .unwrap_or_else(|| panic!("bind"));
    let addr = listener.local_addr().ok().unwrap_or_else(|| panic!("addr"));
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n) = stream.read(&mut buf).await {
                    if n == 0 || stream.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

async fn proxy() -> FaultProxy {
    match FaultProxy::start(echo_server().await).await {
        Ok(p) => p,
        Err(e) => panic!("proxy: {e}"),
    }
}

async fn connect(proxy: &FaultProxy) -> TcpStream {
    match TcpStream::connect(proxy.addr()).await {
        Ok(s) => s,
        Err(e) => panic!("connect: {e}"),
    }
}

/// Sends `ping` and waits up to `within` for the echo.
async fn round_trip(stream: &mut TcpStream, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    stream.write_all(b"ping").await.ok()?;
    let mut buf = [0u8; 4];
    match timeout(within, stream.read_exact(&mut buf)).await {
        Ok(Ok(_)) if &buf == b"ping" => Some(started.elapsed()),
        _ => None,
    }
}

/// True if the peer closed the connection (EOF or reset) within `within`.
async fn closed(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 16];
    matches!(
        timeout(within, stream.read(&mut buf)).await,
        Ok(Ok(0) | Err(_))
    )
}

#[tokio::test]
async fn passes_and_delays_traffic() {
    let proxy = proxy().await;
    let mut stream = connect(&proxy).await;
    assert!(
        round_trip(&mut stream, Duration::from_secs(1))
            .await
            .is_some()
    );
    // A delay of 250 ms each way: a round trip of at least 500 ms, and one without the delay
    // well under it even on a loaded machine (a 30 ms delay's 60 ms bound was missed by a
    // healed round trip of 76 ms under load).
    proxy.delay(Duration::from_millis(250));
    let rtt = round_trip(&mut stream, Duration::from_secs(5)).await;
    assert!(
        rtt.is_some_and(|d| d >= Duration::from_millis(500)),
        "{rtt:?}"
    );
    proxy.heal().await;
    let rtt = round_trip(&mut stream, Duration::from_secs(5)).await;
    assert!(
        rtt.is_some_and(|d| d < Duration::from_millis(250)),
        "{rtt:?}"
    );
    assert_eq!((proxy.accepted(), proxy.open_connections()), (1, 1));
}

#[tokio::test]
async fn blackhole_keeps_connections_open_but_silent_and_heal_closes_them() {
    let proxy = proxy().await;
    let mut stream = connect(&proxy).await;
    proxy.blackhole();
    assert_eq!(proxy.mode(), ProxyMode::Blackhole);
    assert!(
        round_trip(&mut stream, Duration::from_millis(200))
            .await
            .is_none()
    );
    assert!(proxy.dropped_bytes() >= 4);
    let mut fresh = connect(&proxy).await;
    assert!(
        round_trip(&mut fresh, Duration::from_millis(100))
            .await
            .is_none()
    );
    assert_eq!(
        proxy.open_connections(),
        2,
        "blackholed connections stay open"
    );

    proxy.heal().await;
    assert!(
        closed(&mut stream, Duration::from_secs(1)).await,
        "lost bytes: closed on heal"
    );
    let mut again = connect(&proxy).await;
    assert!(
        round_trip(&mut again, Duration::from_secs(1))
            .await
            .is_some()
    );
}

#[tokio::test]
async fn cut_closes_and_refuses_until_healed() {
    let proxy = proxy().await;
    let mut stream = connect(&proxy).await;
    assert!(
        round_trip(&mut stream, Duration::from_secs(1))
            .await
            .is_some()
    );
    proxy.cut().await;
    assert_eq!(proxy.open_connections(), 0);
    assert!(closed(&mut stream, Duration::from_secs(1)).await);
    assert!(
        TcpStream::connect(proxy.addr()).await.is_err(),
        "refused while cut"
    );
    proxy.heal().await;
    let mut again = connect(&proxy).await;
    assert!(
        round_trip(&mut again, Duration::from_secs(1))
            .await
            .is_some()
    );
}
