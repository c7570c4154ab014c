//! # leasehold
//!
//! Distributed leader election with leases: run a job on exactly one node (or at most N), skip it
//! everywhere else — with fencing tokens, a reliable "lease lost" signal and cancellation safety.
//!
//! * [`Elector`] runs work under a lease, on one node or on up to N
//!   ([`max_leaders`](ElectionOptionsBuilder::max_leaders)): [`Elector::run_if_leader`] returns
//!   `Ok(None)` on contention, [`Elector::run`] tells elected, skipped and failed apart, and
//!   [`Elector::try_acquire`] hands out a [`LeaderGuard`].
//! * Every lease carries a random [`Token`] and a [`fence`](Lease::fence) that strictly increases
//!   per lock: hand it to the resource so it can reject writes from a stale holder.
//! * [`LeaderContext::lost`] (also on a [`LeaderGuard`]) resolves when the lease is lost or can
//!   no longer be proven. By default a watchdog renews the lease while the action runs
//!   (`auto_extend`) and the action is dropped at the loss (`cancel_on_lost`), before the store can
//!   grant the lock again: one holder at a time with no option set.
//! * Stores implement the small [`LeaseStore`] trait; [`MemoryStore`] is the in-process reference.
//!   Other crates add SQL, Redis and DynamoDB stores.
//! * [`Elector::lead`] keeps a stable leader (contend, lead until the action ends or the lease is
//!   lost, contend again); [`Elector::leadership`] streams leadership changes to any process.
//! * With the `macros` feature, `#[leasehold::leader_only(elector = …, lock = "…", lease =
//!   "30s")]` guards an `async fn` or method the way [`Elector::run_if_leader`] guards a closure,
//!   with the lock name and durations checked at compile time.
//! * [`Schedule`] runs periodic jobs once per period across replicas (period-aligned, checked by
//!   the store's period ledger); [`blocking::Elector`] serves synchronous code.
//! * [`shutdown_signal`] resolves on SIGINT or SIGTERM (what systemd, Kubernetes and docker
//!   send): the stop request to cancel a program's [`CancellationToken`] with.
//! * Every input has one documented limit in [`limits`] ([`MAX_SLOTS`], [`MAX_DURATION`],
//!   [`MAX_NODE_ID_LEN`], [`MAX_LOCK_NAME_LEN`]), refused beyond it with a typed [`LimitError`].
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
//! use std::{sync::Arc, time::Duration};
//! use leasehold::{ElectionOptions, Elector, MemoryStore};
//!
//! let options = ElectionOptions::builder()
//!     .wait(Duration::ZERO) // the default: skip at once when another node holds it
//!     .lease(Duration::from_secs(30)) // renewed every 10 s while the action runs
//!     .build()?;
//! let elector = Elector::with_options(Arc::new(MemoryStore::new()), options);
//!
//! match elector.run_if_leader("nightly-report", |ctx| async move { ctx.fence() }).await? {
//!     Some(fence) => println!("ran with fence {fence}"),
//!     None => println!("another node is running it"),
//! }
//! # Ok(()) }
//! ```

pub mod blocking;
mod cleanup;
mod elect;
mod error;
mod events;
pub mod fence;
mod hold;
mod let_go;
pub mod limits;
mod line;
mod macro_support;
mod metric_families;
pub mod metrics;
mod name;
mod options;
mod outcome;
mod schedule;
mod shutdown;
pub mod spans;
pub mod store;
mod tenant;

pub use cleanup::SETTLE_TIMEOUT;
pub use elect::elector::Elector;
pub use elect::guarded_stream::{GuardedStream, StreamEnd};
pub use elect::lead::{DEFAULT_LEADERSHIP_POLL, Leadership, LeadershipStream, TermEnd};
pub use error::{Error, ErrorKind, Result, StoreError};
pub use events::{EVENT_BUFFER, Event, LostReason};
pub use hold::guard::{LeaderContext, LeaderGuard};
pub use hold::held::HeldLease;
pub use leasehold_rules::{DurationError, LeaseError, MIN_AUTO_EXTEND_LEASE, parse_duration};
pub use let_go::LET_GO_PATIENCE;
pub use limits::{
    LimitError, MAX_DURATION, MAX_LIST_LOCKS, MAX_NODE_ID_LEN, MAX_RETRY_GROWTH, MAX_SLOTS,
    MIN_LEADERSHIP_POLL,
};
pub use name::{IntoLockName, LockName, MAX_LOCK_NAME_LEN, NameError};
pub use options::retry::RetryPolicy;
pub use options::{
    DEFAULT_ATTEMPT_TIMEOUT, DEFAULT_LEASE, ElectionOptions, ElectionOptionsBuilder, MIN_LEASE,
    MIN_RENEWAL_PERIOD, OptionsError, default_node_id, validate_node_id,
};
pub use outcome::{PeriodOutcome, RunOutcome};
pub use schedule::{
    DEFAULT_MAX_JITTER, Job, JobEvent, JobOutcome, MissedPeriods, Schedule, ScheduleHandle,
};
pub use shutdown::{ShutdownSignal, StopSignal, shutdown_signal};
pub use store::LeaseStore;
pub use store::lease::{Extension, Holder, Lease, LockState, Release, Token};
pub use store::memory::MemoryStore;
pub use store::observe::{ObservedStore, StoreObserver};
pub use store::period::{MIN_PERIOD, Period, PeriodError, PeriodRecord, format_utc};
pub use store::url::{MemoryOpener, OpenError, StoreRegistry, redact_url, redact_urls_in};
pub use tenant::{DEFAULT_TENANT_PREFIX, Tenant};

pub use tokio_util::sync::CancellationToken;

/// Guards an `async fn` with a lock: `#[leasehold::leader_only(elector = …, lock = "…")]` (the
/// `macros` feature). See the macro's documentation and the manual's section "Guarding a function
/// with an attribute".
#[cfg(feature = "macros")]
pub use leasehold_macros::leader_only;

/// Not public API: what the expansion of `#[leader_only]` calls at run time (its literals are
/// checked while it expands, by `leasehold-rules`). It changes with `leasehold-macros`, whose
/// version `leasehold` pins.
#[doc(hidden)]
pub mod __private {
    pub use crate::macro_support::{Overrides, configure};
}

/// The manual page `docs/leasehold.md`, compiled as doc tests so its code stays true.
#[cfg(doctest)]
#[doc = include_str!("../docs/leasehold.md")]
pub struct ManualDoctests;
