//! # leasehold-etcd
//!
//! [`EtcdStore`]: a [`leasehold::LeaseStore`] on an etcd v3 cluster through etcd-client — the
//! first consensus-backed store: a lease survives the loss of a minority of members.
//!
//! * the slot keys a store acquires with one TTL are attached to one **etcd lease**, its
//!   session (server-side TTL: the requested lease rounded up to whole seconds), so etcd frees
//!   the locks when it runs out and renewing any number of leases is one keep-alive;
//! * acquisition is one transaction (*key absent → put it on the session*; a group reads its
//!   slots first);
//! * the **fence** is the key's `create_revision`, strictly increasing per `(lock, slot)`
//!   across the whole cluster, leader changes and member restarts;
//! * extension keeps the session alive (and checks the key is still on it), release deletes
//!   the key, both conditioned on the grant's revision;
//! * release notifications come from one etcd watch per store;
//! * every request has a deadline, and a request an endpoint refused (down, or cut off from the
//!   majority) is sent to another endpoint.
//!
//! Writes can be fenced in etcd itself, starting from the holder's context with
//! `EtcdStore::fenced(&ctx)`: its `txn` applies the application's transaction only while the
//! lease's key is still this holder's, and its `put` puts a key only if no higher fence put it
//! before; see the `fence` module. They are the crate's **`fence` feature**, on by default: an
//! application that needs only election sets `default-features = false` and compiles no fenced
//! write.
//!
//! Register [`EtcdOpener`] to open `etcd://` and `etcds://` URLs from a
//! [`StoreRegistry`](leasehold::store::StoreRegistry).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use leasehold::{ElectionOptions, Elector};
//! use leasehold_etcd::EtcdStore;
//!
//! let store = Arc::new(EtcdStore::connect("etcd://127.0.0.1:2379").await?);
//! let options = ElectionOptions::builder().auto_extend(true).build()?;
//! let elector = Elector::with_options(store, options);
//! elector
//!     .run_if_leader("nightly-report", |ctx| async move {
//!         // Hand ctx.fence() to the resource so it can reject a stale leader's writes.
//!         tracing::info!(fence = ctx.fence(), "leader");
//!     })
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! Building needs `protoc` (etcd-client compiles etcd's protobuf definitions): Debian's
//! `protobuf-compiler`, or set `PROTOC`. See `docs/leasehold-etcd.md`.

mod classify;
#[cfg(feature = "fence")]
pub mod fence;
mod keys;
mod link;
mod list;
mod opener;
mod options;
mod protocol;
mod record;
mod session;
mod store;
mod url;
mod watch;

pub use leasehold::store::MAX_TIMEOUT;
pub use opener::EtcdOpener;
pub use options::{DEFAULT_PREFIX, EtcdOptionKey, EtcdOptions, EtcdOptionsError, MAX_PREFIX_LEN};
pub use store::EtcdStore;

/// The manual page `docs/leasehold-etcd.md`, compiled as doc tests so its code stays true.
/// (Its fencing sections need the `fence` feature.)
#[cfg(all(doctest, feature = "fence"))]
#[doc = include_str!("../docs/leasehold-etcd.md")]
pub struct ManualDoctests;

/// The store authors' guide `docs/writing-a-store.md` (every store's rooms, with this crate as
/// the template), compiled as doc tests so its code stays true.
#[cfg(doctest)]
#[doc = include_str!("../docs/writing-a-store.md")]
pub struct WritingAStoreDoctests;
