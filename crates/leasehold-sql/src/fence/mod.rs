//! The fence wing (feature `fence`, on by default): writes that commit only while their writer
//! still holds the lock, by the rule of [`leasehold::fence`] ([`Admission`](leasehold::fence::Admission)),
//! checked in the database itself — so the rule also holds for writes from `psql`, `mysql` or
//! `sqlite3`. Every fenced write starts from the holder's
//! [`LeaderContext`](leasehold::LeaderContext), with a method named `fenced`:
//!
//! * [`SqlStore::fenced(&ctx)`](crate::SqlStore::fenced): a transaction in the lock's own
//!   database that commits only while the lease is held ([`LeaseTransaction`]).
//! * [`SqlFences::fenced(&ctx, &resource)`](SqlFences::fenced): a transaction under the
//!   holder's fence in the fence table (`leasehold_fences`) ([`FencedWrite`]);
//!   [`fenced_by_fence`](SqlFences::fenced_by_fence) takes a fence number instead. The same
//!   table is the store-backed [`FenceRegister`](leasehold::fence::FenceRegister), and
//!   [`SqlFences::protect_column`] puts its trigger on a fence column of your own table.
//! * [`FenceError`]: why a write was refused; [`is_stale_fence_error`] recognizes a guard
//!   trigger's refusal among `sqlx` errors.
//! * [`sinks`]: these writes as [`FencedSink`](leasehold::fence::FencedSink)s, for the
//!   paused-stale-holder scenario of `leasehold-testkit` and `leasehold-bench`.

mod error;
mod fences;
mod lease;
mod schema;
pub mod sinks;
pub(crate) mod tx;
mod write;

pub use error::{FenceError, MAX_SQL_FENCE, is_stale_fence_error};
pub use fences::SqlFences;
pub use lease::LeaseTransaction;
pub use write::FencedWrite;
