//! Fences enforced by the database: writes that commit only under a fence no lower than any
//! the resource accepted before, checked by a trigger in the database itself — so the rule
//! also holds for writes from `psql`, `mysql` or `sqlite3`.
//!
//! * [`SqlFences`]: the fence table (`leasehold_fences`), [`SqlFences::begin`] for a
//!   transaction under a fence ([`FencedWrite`]), the store-backed
//!   [`FenceRegister`](leasehold::fence::FenceRegister), and
//!   [`SqlFences::protect_column`] for a fence column of your own table.
//! * [`SqlStore::begin_fenced`](crate::SqlStore::begin_fenced): a transaction in the lock's
//!   own database that commits only while the lease is held ([`LeaseTransaction`]).
//! * [`FenceError`]: why a write was refused; [`is_stale_fence_error`] recognizes a guard
//!   trigger's refusal among `sqlx` errors.

mod error;
mod fences;
mod lease;
mod schema;
#[cfg(feature = "testkit")]
pub mod sinks;
pub(crate) mod tx;
mod write;

pub use error::{FenceError, MAX_SQL_FENCE, is_stale_fence_error};
pub use fences::SqlFences;
pub use lease::LeaseTransaction;
pub use write::FencedWrite;
