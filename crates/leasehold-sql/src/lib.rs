//! # leasehold-sql
//!
//! [`SqlStore`]: a [`leasehold::LeaseStore`] on SQLite, PostgreSQL and MySQL/MariaDB through
//! `sqlx`, with runtime queries only (no database is needed at build time).
//!
//! All three dialects share one table layout:
//!
//! | column | meaning |
//! |---|---|
//! | `lock_name`, `slot` | primary key; slot 0 for single-leader locks |
//! | `owner` | node id of the last holder |
//! | `token` | 32 hex digits proving ownership; `NULL` once released |
//! | `fence` | strictly increasing per row; never reset (rows are kept) |
//! | `acquired_at`, `expires_at` | epoch milliseconds by the database clock; `expires_at` is 0 once released |
//!
//! SQLite tables have two more columns, `boot_id` and `boot_expires_at`: SQLite's clock is the
//! wall clock of each process, so SQLite leases are also timed by the host's boot clock, which
//! every process shares and nothing steps (see [`SqlStore`] and the "Failure modes" section of
//! the crate's guide).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use leasehold::Elector;
//! use leasehold_sql::SqlStore;
//!
//! let elector = Elector::new(Arc::new(SqlStore::connect("sqlite:///tmp/leases.db").await?));
//! if let Some(fence) = elector.run_if_leader("migrate", |ctx| async move { ctx.fence() }).await? {
//!     tracing::info!(fence, "migrated");
//! }
//! # Ok(()) }
//! ```
//!
//! ## Fences enforced by the database
//!
//! A fence protects nothing until the resource checks it. Every fenced write starts from the
//! holder's [`LeaderContext`](leasehold::LeaderContext): [`SqlStore::fenced`] opens a
//! transaction in the lock's own database that commits only while the lease is still held;
//! [`SqlFences::fenced`] one whose first statement advances the resource's fence in a table
//! whose trigger refuses a lower one (also for writes from `psql`, `mysql` or `sqlite3`).
//! [`SqlFences`] also implements [`leasehold::fence::FenceRegister`] and protects fence
//! columns of your own tables. See the [`fence`] module and the guide's "Fencing your writes".
//!
//! ## Cargo features
//!
//! One feature per database driver, none on by default (like `sqlx`): enable the ones your URLs
//! use, so a build for one database compiles one driver.
//!
//! * `postgres`: PostgreSQL (`postgres://`, `postgresql://`).
//! * `mysql`: MySQL and MariaDB (`mysql://`, `mariadb://`).
//! * `sqlite`: SQLite (`sqlite:`), from the bundled sources (no system library needed).
//!
//! ```toml
//! leasehold-sql = { version = "0.1", features = ["postgres"] }
//! ```
//!
//! A URL whose driver is not compiled in is refused with [`leasehold::store::OpenError::Invalid`]
//! naming the feature to enable ("this build of leasehold-sql has no MySQL/MariaDB driver;
//! enable the `mysql` feature …"). [`SqlPool`] has a variant per enabled driver, so it is
//! `#[non_exhaustive]`.
//!
//! One more, **on** by default:
//!
//! * `fence`: the fenced-write wing — the [`fence`] module ([`SqlFences`],
//!   [`LeaseTransaction`], [`FencedWrite`], [`FenceError`], the adapters of `fence::sinks`
//!   implementing [`leasehold::fence::FencedSink`]), [`SqlStore::fenced`] and the fence table's
//!   statements ([`FenceStatements`], [`Dialect::fence_guard`]). Need only election? Build
//!   without it: `default-features = false`.
//!
//! ```toml
//! leasehold-sql = { version = "0.1", default-features = false, features = ["postgres"] }
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]
// Built without any driver there is no pool, so the code that runs statements is unreachable: it
// still compiles (every URL is then refused with the feature to enable), unused.
#![cfg_attr(
    not(any(feature = "sqlite", feature = "postgres", feature = "mysql")),
    allow(unused)
)]

mod classify;
#[cfg(feature = "sqlite")]
mod clock;
#[cfg(feature = "postgres")]
mod contended;
#[cfg(feature = "sqlite")]
mod data_version;
mod dialect;
mod feed;
#[cfg(feature = "fence")]
#[cfg_attr(docsrs, doc(cfg(feature = "fence")))]
pub mod fence;
mod hand_off;
mod list;
#[cfg(feature = "postgres")]
mod listen;
mod open;
mod opener;
mod options;
mod parts;
mod pool;
mod protocol;
#[cfg(feature = "mysql")]
mod refused;
mod rows;
mod schema;
mod store;
mod url;

#[cfg(feature = "sqlite")]
pub use clock::HostClock;
pub use dialect::{
    ColumnNameError, Dialect, HandOffStatements, MAX_LINE_BYTES, MYSQL_MAX_NAME_LEN,
    POSTGRES_MAX_NAME_LEN, SQLITE_MAX_NAME_LEN, Statements, TableNameError,
};
#[cfg(feature = "fence")]
pub use dialect::{
    DEFAULT_FENCE_TABLE, FenceStatements, POSTGRES_STALE_FENCE_SQLSTATE, STALE_FENCE_MESSAGE,
};
#[cfg(feature = "fence")]
pub use fence::{
    FenceError, FencedWrite, LeaseTransaction, MAX_SQL_FENCE, SqlFences, is_stale_fence_error,
};
pub use opener::SqlOpener;
pub use options::{DEFAULT_TABLE, SqlOptions};
pub use pool::SqlPool;
pub use store::SqlStore;

/// The manual page `docs/leasehold-sql.md`, compiled as doc tests so its code stays true.
#[cfg(all(doctest, feature = "fence"))]
#[doc = include_str!("../docs/leasehold-sql.md")]
pub struct ManualDoctests;
