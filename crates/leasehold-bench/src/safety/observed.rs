//! `SeenLocks`: remembers which locks were asked for, so the safety run can look at the store's
//! state of its (randomly named) lock afterwards.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use leasehold::store::AcquireRequest;
use leasehold::{
    LeaseStore, LockName,
    store::{ObservedStore, StoreObserver},
};

/// The lock names seen, shared by every wrapper of one run.
pub(crate) type Seen = Arc<Mutex<BTreeSet<LockName>>>;

/// Records the lock of each acquisition before it is sent (so one whose caller gave up before
/// the answer is still checked for leaks).
pub(crate) struct SeenLocks(Seen);

impl SeenLocks {
    /// `inner`, forwarding every call unchanged, with its acquisitions' locks recorded in `seen`.
    pub(crate) fn wrap(inner: Arc<dyn LeaseStore>, seen: &Seen) -> Arc<dyn LeaseStore> {
        Arc::new(ObservedStore::new(inner, Self(Arc::clone(seen))))
    }
}

impl StoreObserver for SeenLocks {
    fn acquiring(&self, req: &AcquireRequest) {
        let mut seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !seen.contains(&req.lock) {
            seen.insert(req.lock.clone());
        }
    }
}
