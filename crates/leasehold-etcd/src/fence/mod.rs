//! Fences checked in etcd: the application's writes applied only while a lease is held, or only
//! while their fence is the highest.
//!
//! Every fenced write starts from the holder's context: [`EtcdStore::fenced`](crate::EtcdStore::fenced)
//! gives a [`FencedWriter`] ([`EtcdStore::fenced_by_claim`](crate::EtcdStore::fenced_by_claim) for a claim
//! given by hand), with two writes:
//!
//! * [`FencedWriter::txn`]: the application's transaction, nested in one etcd transaction
//!   conditioned on the lease's slot key still having the creation revision that is the holder's
//!   fence. Refused with [`FencedTxnError::LeaseLost`].
//! * [`FencedWriter::put`]: a put of the application's key conditioned on the highest fence kept
//!   beside it (`<prefix>/.fences/<key>`), by the one rule of [`leasehold::fence::Admission`].
//!   Refused with [`FencedPutError::Stale`], carrying [`leasehold::fence::StaleFence`].
//!
//! [`sinks`] has their [`FencedSink`](leasehold::fence::FencedSink) adapter. The whole module is
//! the crate's `fence` feature (on by default).

mod error;
mod put;
pub mod sinks;
mod txn;
mod writer;

pub use error::{FencedPutError, FencedTxnError, LeaseLost};
pub use txn::FencedTxnResponse;
pub use writer::FencedWriter;
