//! A TCP fault proxy: sits between a client and its server on loopback and cuts, blackholes or
//! delays the traffic on demand, so tests can show what a store client does when its network
//! fails — not just when its calls fail ([`fault`](crate::fault) covers that).
//!
//! * [`FaultProxy::start`] listens on `127.0.0.1:0` and forwards every connection to a target.
//! * [`ProxyMode`] says what happens to traffic; switch it at run time with
//!   [`cut`](FaultProxy::cut), [`blackhole`](FaultProxy::blackhole),
//!   [`delay`](FaultProxy::delay) and [`heal`](FaultProxy::heal).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> std::io::Result<()> {
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! use tokio::net::{TcpListener, TcpStream};
//! use leasehold_testkit::proxy::FaultProxy;
//!
//! // A server that answers every connection with "hi".
//! let server = TcpListener::bind("127.0.0.1:0").await?;
//! let target = server.local_addr()?;
//! tokio::spawn(async move {
//!     while let Ok((mut s, _)) = server.accept().await {
//!         let _ = s.write_all(b"hi").await;
//!     }
//! });
//!
//! let proxy = FaultProxy::start(target).await?;
//! let mut via_proxy = TcpStream::connect(proxy.addr()).await?;
//! let mut reply = [0u8; 2];
//! via_proxy.read_exact(&mut reply).await?;
//! assert_eq!(&reply, b"hi");
//!
//! proxy.cut().await; // existing connections are closed, new ones refused
//! assert!(TcpStream::connect(proxy.addr()).await.is_err());
//! proxy.heal().await;
//! assert!(TcpStream::connect(proxy.addr()).await.is_ok());
//! # Ok(()) }
//! ```

mod authority;
mod connection;
mod control;
mod listener;

pub use authority::{loopback_authority, via_proxy};
pub use control::{FaultProxy, ProxyMode};

#[cfg(test)]
mod tests;
