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
//! ## Cargo features
//!
//! * `bench-internals` (off): exports `HostClock`, the host clocks every SQLite statement of
//!   [`Statements`] takes after its own, for `leasehold-bench`'s raw floor, which runs the
//!   statements itself. Not part of the supported API: it may change in any release.

mod classify;
mod clock;
mod dialect;
mod listen;
mod opener;
mod options;
mod pool;
mod queries;
mod rows;
mod schema;
mod store;
mod table_name;
mod url;

#[cfg(feature = "bench-internals")]
pub use clock::HostClock;
pub use dialect::{
    Dialect, MYSQL_MAX_NAME_LEN, POSTGRES_MAX_NAME_LEN, SQLITE_MAX_NAME_LEN, Statements,
};
pub use opener::SqlOpener;
pub use options::{DEFAULT_TABLE, SqlOptions};
pub use pool::SqlPool;
pub use store::SqlStore;
pub use table_name::TableNameError;

/// The manual page `docs/leasehold-sql.md`, compiled as doc tests so its code stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/leasehold-sql.md")]
pub struct ManualDoctests;
