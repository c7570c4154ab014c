//! # leasehold-nats
//!
//! [`NatsStore`]: a [`leasehold::LeaseStore`] on a NATS JetStream KV bucket through async-nats
//! (nats-server 2.12 or later).
//!
//! * each slot is a KV key written by **compare-and-set** (`Nats-Expected-Last-Subject-Sequence`),
//!   held under a **session**: one record per client and lease length, with a **per-key TTL**
//!   (`Nats-TTL`, the lease rounded up to whole seconds), that the server removes when nobody
//!   renews it, and marks the removal so watchers see it;
//! * the **fence** is the stream sequence of the granting message, strictly increasing per
//!   bucket;
//! * extension renews the session (one write per renewal period and lease length, however many
//!   leases the client holds), release writes a delete marker conditioned on the sequence of
//!   the holder's own write, a forced release revokes the lease in its session record first;
//! * the once-per-period ledger is written with slot 0 in one **atomic batch**;
//! * release notifications come from one KV watch per store.
//!
//! Register [`NatsOpener`] to open `nats://` URLs from a
//! [`StoreRegistry`](leasehold::store::StoreRegistry).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use leasehold::{ElectionOptions, Elector};
//! use leasehold_nats::NatsStore;
//!
//! let store = Arc::new(NatsStore::connect("nats://127.0.0.1:4222/leasehold").await?);
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
//! See `docs/leasehold-nats.md`.

mod classify;
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
mod written;

pub use leasehold::store::MAX_TIMEOUT;
pub use link::BucketError;
pub use opener::NatsOpener;
pub use options::{DEFAULT_BUCKET, MAX_BUCKET_LEN, NatsOptionKey, NatsOptions, NatsOptionsError};
pub use store::NatsStore;

/// The manual page `docs/leasehold-nats.md`, compiled as doc tests so its code stays true.
#[cfg(doctest)]
#[doc = include_str!("../docs/leasehold-nats.md")]
pub struct ManualDoctests;
