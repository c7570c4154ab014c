//! `FaultProxy` and `ProxyMode`: the proxy's handle and its run-time switches.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::listener::accept_loop;

/// What the proxy does with traffic.
///
/// ```
/// use std::time::Duration;
/// use leasehold_testkit::proxy::ProxyMode;
/// assert!(ProxyMode::Pass.forwards());
/// assert!(ProxyMode::Delay(Duration::from_millis(5)).forwards());
/// assert!(!ProxyMode::Blackhole.forwards() && !ProxyMode::Cut.forwards());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProxyMode {
    /// Forward everything as it comes.
    #[default]
    Pass,
    /// Forward everything, each chunk `Duration` later than it arrived, in both directions (a
    /// request–reply round trip gets twice the delay). Latency only: throughput is not limited.
    Delay(Duration),
    /// Accept connections and keep them open, but drop every byte in both directions — a network
    /// partition that neither side is told about. Connections that lost bytes are closed when the
    /// proxy heals (their streams can no longer be trusted); clients must reconnect.
    Blackhole,
    /// Close every connection and refuse new ones (the listening socket is closed) — the server
    /// is down or unreachable.
    Cut,
}

impl ProxyMode {
    /// True if bytes get through (possibly late).
    pub fn forwards(self) -> bool {
        matches!(self, Self::Pass | Self::Delay(_))
    }
}

/// State shared by the handle, the acceptor and the connections.
pub(super) struct Shared {
    pub(super) addr: SocketAddr,
    pub(super) target: SocketAddr,
    pub(super) mode: watch::Sender<ProxyMode>,
    pub(super) listening: watch::Sender<bool>,
    pub(super) open: watch::Sender<usize>,
    pub(super) accepted: AtomicU64,
    pub(super) dropped_bytes: AtomicU64,
    pub(super) shutdown: CancellationToken,
}

impl Shared {
    /// Counts a connection open until the returned guard drops.
    pub(super) fn opened(self: &Arc<Self>) -> OpenGuard {
        self.accepted.fetch_add(1, Ordering::Relaxed);
        self.open.send_modify(|n| *n += 1);
        OpenGuard(Arc::clone(self))
    }
}

pub(super) struct OpenGuard(Arc<Shared>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.open.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// A TCP proxy on `127.0.0.1` in front of one target, whose traffic can be cut, blackholed or
/// delayed at run time. Clones are handles to the same proxy; it stops (closing every
/// connection) when the last handle is dropped.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> std::io::Result<()> {
/// use std::time::Duration;
/// use leasehold_testkit::proxy::{FaultProxy, ProxyMode};
///
/// let target = tokio::net::TcpListener::bind("127.0.0.1:0").await?.local_addr()?;
/// let proxy = FaultProxy::start(target).await?;
/// let url = format!("redis://{}", proxy.addr()); // point the client under test here
/// proxy.delay(Duration::from_millis(20));
/// assert_eq!(proxy.mode(), ProxyMode::Delay(Duration::from_millis(20)));
/// proxy.blackhole();
/// proxy.heal().await;
/// assert_eq!(proxy.mode(), ProxyMode::Pass);
/// # let _ = url; Ok(()) }
/// ```
#[derive(Clone)]
pub struct FaultProxy {
    shared: Arc<Shared>,
    _owner: Arc<Owner>,
}

/// Stops the proxy when the last handle goes.
struct Owner(CancellationToken);

impl Drop for Owner {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl std::fmt::Debug for FaultProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultProxy")
            .field("addr", &self.shared.addr)
            .field("target", &self.shared.target)
            .field("mode", &self.mode())
            .field("open", &self.open_connections())
            .finish()
    }
}

impl FaultProxy {
    /// Starts a proxy on `127.0.0.1:0` forwarding to `target`, in [`ProxyMode::Pass`]. Needs a
    /// tokio runtime with I/O and time enabled.
    ///
    /// # Errors
    ///
    /// The I/O error of binding the local listener.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before it resolves leaves no proxy running.
    pub async fn start(target: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shutdown = CancellationToken::new();
        let shared = Arc::new(Shared {
            addr,
            target,
            mode: watch::channel(ProxyMode::Pass).0,
            listening: watch::channel(true).0,
            open: watch::channel(0).0,
            accepted: AtomicU64::new(0),
            dropped_bytes: AtomicU64::new(0),
            shutdown: shutdown.clone(),
        });
        tokio::spawn(accept_loop(Arc::clone(&shared), listener));
        Ok(Self {
            shared,
            _owner: Arc::new(Owner(shutdown)),
        })
    }

    /// The address clients should connect to.
    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// The server the proxy forwards to.
    pub fn target(&self) -> SocketAddr {
        self.shared.target
    }

    /// The current mode.
    pub fn mode(&self) -> ProxyMode {
        *self.shared.mode.borrow()
    }

    /// Closes every connection and refuses new ones; returns once the listening socket is closed
    /// and no connection is left.
    ///
    /// # Cancel safety
    ///
    /// The mode is switched at once; dropping the future only stops waiting for the connections to
    /// close.
    pub async fn cut(&self) {
        self.shared.mode.send_replace(ProxyMode::Cut);
        let mut listening = self.shared.listening.subscribe();
        let _ = listening.wait_for(|on| !on).await;
        let mut open = self.shared.open.subscribe();
        let _ = open.wait_for(|n| *n == 0).await;
    }

    /// Keeps connections (and accepts new ones) but drops every byte both ways.
    pub fn blackhole(&self) {
        self.shared.mode.send_replace(ProxyMode::Blackhole);
    }

    /// Delays every chunk by `latency` in each direction.
    pub fn delay(&self, latency: Duration) {
        self.shared.mode.send_replace(ProxyMode::Delay(latency));
    }

    /// Back to [`ProxyMode::Pass`]: returns once the proxy accepts connections again.
    /// Connections that lost bytes in a blackhole are closed.
    ///
    /// # Cancel safety
    ///
    /// The mode is switched at once; dropping the future only stops waiting for the listener.
    pub async fn heal(&self) {
        self.shared.mode.send_replace(ProxyMode::Pass);
        let mut listening = self.shared.listening.subscribe();
        let _ = listening.wait_for(|on| *on).await;
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::Relaxed)
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        *self.shared.open.borrow()
    }

    /// Bytes dropped by blackholes so far.
    pub fn dropped_bytes(&self) -> u64 {
        self.shared.dropped_bytes.load(Ordering::Relaxed)
    }
}
