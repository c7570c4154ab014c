//! Fences checked in etcd: the application's writes applied only while a lease is held, or only
//! while their fence is the highest.
//!
//! * [`EtcdStore::fenced_txn`](crate::EtcdStore::fenced_txn): the application's transaction,
//!   nested in one etcd transaction conditioned on the lease's slot key still having the
//!   creation revision that is the holder's fence. Refused with [`FencedTxnError::LeaseLost`].
//! * [`EtcdStore::fenced_put`](crate::EtcdStore::fenced_put): a put of the application's key
//!   conditioned on the highest fence kept beside it (`<prefix>/.fences/<key>`), by the one rule
//!   of [`leasehold::fence::Admission::decide`]. Refused with [`FencedPutError::Stale`],
//!   carrying [`leasehold::fence::StaleFence`].

mod error;
mod put;
#[cfg(feature = "testkit")]
pub mod sinks;
mod txn;

pub use error::{FencedPutError, FencedTxnError, LeaseLost};
pub use txn::FencedTxnResponse;
