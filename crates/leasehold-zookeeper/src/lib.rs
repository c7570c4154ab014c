//! # leasehold-zookeeper
//!
//! [`ZooKeeperStore`]: a [`leasehold::LeaseStore`] on a ZooKeeper ensemble through
//! zookeeper-client — consensus-backed like etcd: a lease survives the loss of a minority of
//! servers.
//!
//! * a lease is a **persistent node** whose expiry the store enforces (`mtime + ttl`, the
//!   ensemble leader's clock), not an ephemeral node: a session's life is decided by the
//!   ensemble, not by the lease (see the manual's *Clocks* section);
//! * every change is a compare-and-swap on the node's data version; acquisition of a lock with
//!   a period writes the slot and the ledger in one `multi`;
//! * the **fence** is the slot node's `czxid` plus the data version of its grant, strictly
//!   increasing per `(lock, slot)`;
//! * release notifications come from one persistent recursive watch per store.
//!
//! Register [`ZooKeeperOpener`] to open `zk://` URLs from a
//! [`StoreRegistry`](leasehold::store::StoreRegistry).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use leasehold::{ElectionOptions, Elector};
//! use leasehold_zookeeper::ZooKeeperStore;
//!
//! let store = Arc::new(ZooKeeperStore::connect("zk://127.0.0.1:2181").await?);
//! let options = ElectionOptions::builder().auto_extend(true).build()?;
//! let elector = Elector::with_options(store, options);
//! elector
//!     .run_if_leader("nightly-report", |ctx| async move {
//!         tracing::info!(fence = ctx.fence(), "leader");
//!     })
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! See `docs/leasehold-zookeeper.md`.

mod classify;
mod clock;
mod keys;
mod link;
mod list;
mod opener;
mod options;
mod protocol;
mod record;
mod store;
mod url;
mod watch;

pub use leasehold::store::MAX_TIMEOUT;
pub use opener::ZooKeeperOpener;
pub use options::{
    DEFAULT_PREFIX, MAX_CLOCK_SKEW_TOLERANCE, MAX_PREFIX_LEN, ZooKeeperOptionKey, ZooKeeperOptions,
    ZooKeeperOptionsError,
};
pub use store::ZooKeeperStore;

/// The manual page `docs/leasehold-zookeeper.md`, compiled as doc tests so its code stays true.
#[cfg(doctest)]
#[doc = include_str!("../docs/leasehold-zookeeper.md")]
pub struct ManualDoctests;
