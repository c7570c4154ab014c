//! One proxied connection: two pumps (client → server, server → client) that obey the mode.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{Notify, mpsc};
use tokio::time::{Instant, sleep_until, timeout};
use tracing::debug;

use super::control::{ProxyMode, Shared};

/// How long connecting to the target may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const CHUNK: usize = 16 * 1024;

/// Whether a connection lost bytes (and must be closed when traffic flows again).
#[derive(Default)]
struct Poison {
    lost: AtomicBool,
    changed: Notify,
}

impl Poison {
    fn mark(&self) {
        if !self.lost.swap(true, Ordering::AcqRel) {
            self.changed.notify_waiters();
            self.changed.notify_one();
        }
    }
    fn is_set(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }
}

pub(super) async fn forward(shared: Arc<Shared>, client: TcpStream) {
    let _open = shared.opened();
    if *shared.mode.borrow() == ProxyMode::Cut {
        return;
    }
    let server = match timeout(CONNECT_TIMEOUT, TcpStream::connect(shared.target)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            debug!(target = %shared.target, error = %e, "proxy cannot reach its target");
            return;
        }
        Err(_) => return,
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let poison = Poison::default();
    tokio::select! {
        () = pump(&shared, &poison, client_read, server_write) => {}
        () = pump(&shared, &poison, server_read, client_write) => {}
        () = killed(&shared, &poison) => {}
        () = shared.shutdown.cancelled() => {}
    }
}

/// Resolves when the connection must close: the proxy is cut, or it lost bytes and traffic flows
/// again.
async fn killed(shared: &Shared, poison: &Poison) {
    let mut mode = shared.mode.subscribe();
    loop {
        let lost = poison.changed.notified();
        let current = *mode.borrow_and_update();
        if current == ProxyMode::Cut || (poison.is_set() && current.forwards()) {
            return;
        }
        tokio::select! {
            changed = mode.changed() => if changed.is_err() { return },
            () = lost => {}
        }
    }
}

/// Copies one direction, chunk by chunk, obeying the mode at the time each chunk arrives.
async fn pump(shared: &Shared, poison: &Poison, mut from: OwnedReadHalf, mut to: OwnedWriteHalf) {
    let (queue, mut due) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let mode = shared.mode.subscribe();
    let read = async move {
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let at = match *mode.borrow() {
                ProxyMode::Pass => Instant::now(),
                ProxyMode::Delay(latency) => Instant::now() + latency,
                ProxyMode::Blackhole | ProxyMode::Cut => {
                    shared.dropped_bytes.fetch_add(n as u64, Ordering::Relaxed);
                    poison.mark();
                    continue;
                }
            };
            if queue.send((at, buf[..n].to_vec())).is_err() {
                break;
            }
        }
        // Closing the queue lets the writer deliver what is left and stop.
        drop(queue);
    };
    let write = async move {
        while let Some((at, bytes)) = due.recv().await {
            sleep_until(at).await;
            if to.write_all(&bytes).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::pin!(read, write);
    // A failed write ends the direction at once; an ended read first lets the writer drain.
    tokio::select! {
        () = &mut write => return,
        () = &mut read => {}
    }
    write.await;
}
