//! # leasehold-dynamodb
//!
//! [`DynamoDbStore`]: a [`leasehold::LeaseStore`] on Amazon DynamoDB, for AWS workloads that want
//! region-local coordination without running another service. The application owns the
//! `aws_sdk_dynamodb::Client`; point it at an emulator (dynalite, moto) with an endpoint override.
//!
//! The table has one item per `(lock, slot)` with string partition key `lockName`:
//!
//! | attribute | meaning |
//! |---|---|
//! | `lockName` | `[PREFIX/]lock[#slot-N]`, see [`item_key`] |
//! | `owner`, `token` | the current holder (removed on release) |
//! | `auditOwner`, `nodeId` | the owner of the latest grant, and the node that wrote it |
//! | `acquiredAt`, `leaseExpiry` | epoch ms by the client clock; `leaseExpiry` is **the correctness boundary** |
//! | `ttl` | epoch s, `leaseExpiry` + TTL padding: DynamoDB TTL cleanup only |
//! | `fence` | strictly increasing per item; seeded from the clock (ms × 1000) when created |
//! | `session` | the session the lease is attached to, if any: it is then held until the later of `leaseExpiry` and the session's end |
//!
//! An elector's leases renew together: each lease joins a session of its store instance (in its
//! grant's write while the instance renews that session, else at its first extension), and from
//! then on one conditional `UpdateItem` of the session item
//! (`[PREFIX/]#session-ID`, see [`session_key`]) per beat keeps all of them alive, whatever
//! their number (see [`DynamoDbStore`] and the `protocol` module).
//!
//! Every change is one conditional `UpdateItem` ([`expressions`] lists them); conditional-check
//! failures are contention; throttling, server and network failures are transient errors, access
//! and validation failures permanent ones. DynamoDB conditions have no server clock, so expiry is
//! decided by client clocks with a [clock-skew tolerance](DynamoDbOptions::clock_skew_tolerance).
//!
//! The store measures its own requests ([`metrics`]): latency, throttles, conditional failures,
//! consumed capacity, the clock skew to DynamoDB, and (on request) the stale items in the table.
//!
//! The `fence` module makes the application's own writes refuse a holder whose lease has ended,
//! starting from the holder's context: a condition builder for `PutItem` / `UpdateItem` on any
//! table (`FenceCondition::of(&ctx)`), and `TransactWriteItems` conditioned on the lease item
//! (`store.fenced(&ctx)`). It is the crate's **`fence` feature**, on by default: an application
//! that needs only election sets `default-features = false` and compiles no fenced write.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use leasehold::Elector;
//! use leasehold_dynamodb::{DynamoDbOptions, DynamoDbStore};
//!
//! let config = aws_config::load_from_env().await;
//! let store = DynamoDbStore::new(aws_sdk_dynamodb::Client::new(&config), DynamoDbOptions::default())?;
//! let elector = Elector::new(Arc::new(store));
//! if let Some(fence) = elector.run_if_leader("export", |ctx| async move { ctx.fence() }).await? {
//!     tracing::info!(fence, "exported");
//! }
//! # Ok(()) }
//! ```

mod classify;
mod clock;
#[cfg(feature = "fence")]
pub mod fence;
mod keys;
mod link;
mod list;
pub mod metrics;
mod opener;
mod options;
mod protocol;
mod record;
mod refresh;
mod session;
mod store;
mod url;

pub use classify::classify_code;
pub use keys::{MAX_PREFIX_LEN, item_key, session_key};
pub use opener::DynamoDbOpener;
pub use options::{
    DEFAULT_ATTEMPT_TIMEOUT, DEFAULT_CLOCK_SKEW_TOLERANCE, DEFAULT_MAX_ATTEMPTS,
    DEFAULT_RETRY_DELAY, DEFAULT_STALE_REFRESH_INTERVAL, DEFAULT_STALE_REFRESH_PAGES,
    DEFAULT_TABLE, DEFAULT_TTL_PADDING, DynamoDbOptionKey, DynamoDbOptions, DynamoDbOptionsError,
    MAX_STALE_REFRESH_INTERVAL, MIN_STALE_REFRESH_INTERVAL,
};
pub use protocol::expressions;
pub use protocol::session::ATTACH_IN_FLIGHT;
pub use protocol::stale::{MAX_STALE_SCAN_PAGES, STALE_SCAN_PAGE_ITEMS, StaleCount};
pub use protocol::table::create_table;
pub use session::MAX_REVOKED;
pub use store::{DynamoDbStore, MAX_SLOTS};

/// Re-exported so applications can name the client types without a direct dependency.
pub use aws_sdk_dynamodb;

/// The manual page `docs/leasehold-dynamodb.md`, compiled as doc tests so its code stays true.
/// (Its fencing sections need the `fence` feature.)
#[cfg(all(doctest, feature = "fence"))]
#[doc = include_str!("../docs/leasehold-dynamodb.md")]
pub struct ManualDoctests;
