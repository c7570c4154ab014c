//! # leasehold-redis
//!
//! [`RedisStore`]: a [`leasehold::LeaseStore`] on Redis (or Valkey) through redis-rs, with
//!
//! * one Lua script per operation (`EVALSHA`, loaded on `NOSCRIPT`), so acquire, extend and
//!   release are atomic single round trips;
//! * expiry decided by the **server clock** (`TIME`), never the client's;
//! * a **fence** minted in the acquire script that strictly increases per `(lock, slot)`, also
//!   when idle keys expire or the server restarts without persistence (fences never fall below
//!   the server clock in microseconds);
//! * a lock's keys under one hash tag, `<prefix>:{<lock>}`, so they share a cluster slot;
//! * release notifications over pub/sub — one subscriber connection per store — so a waiting
//!   contender takes over within about a round trip of a release;
//! * an auto-reconnecting connection with response timeouts, and errors classified as transient
//!   (connection, timeout, `LOADING`, `READONLY`, `TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN`, `BUSY`, …)
//!   or permanent (authentication, permissions, script errors, `WRONGTYPE`).
//!
//! Fences are checked where the data lives with `FencedKeys` ("write if the fence is current"
//! for your own keys, from the holder's context: `store.fenced_keys().fenced(&ctx)`) and
//! `RedisFences` (a store-backed [`FenceRegister`](leasehold::fence::FenceRegister)); see the
//! `fence` module. They are the crate's **`fence` feature**, on by default: an application that
//! needs only election sets `default-features = false` and compiles no fenced write.
//!
//! Register [`RedisOpener`] to open `redis://` and `rediss://` URLs from a
//! [`StoreRegistry`](leasehold::store::StoreRegistry).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use leasehold::{ElectionOptions, Elector};
//! use leasehold_redis::RedisStore;
//!
//! let store = Arc::new(RedisStore::connect("redis://127.0.0.1:6379").await?);
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
//! A single Redis node gives mutual exclusion within the lease and monotonic fences. Under
//! asynchronous replication a failover can lose a granted lease, so two holders can overlap;
//! fences still order them if the resource checks them. See `docs/leasehold-redis.md`.

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
mod store;
mod url;
mod watch;

#[cfg(feature = "fence")]
pub use fence::{FencedKeys, RedisFences};
pub use opener::RedisOpener;
pub use options::{
    DEFAULT_PREFIX, MAX_PREFIX_LEN, RedisOptionKey, RedisOptions, RedisOptionsError,
};
pub use protocol::{ScriptKind, Scripts};
pub use store::RedisStore;

/// The manual page `docs/leasehold-redis.md`, compiled as doc tests so its code stays true.
/// (Its fencing sections need the `fence` feature.)
#[cfg(all(doctest, feature = "fence"))]
#[doc = include_str!("../docs/leasehold-redis.md")]
pub struct ManualDoctests;
