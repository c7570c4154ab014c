//! A crashed node's view of the store: from the crash on, none of its requests arrives.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use leasehold::LeaseStore;
use leasehold::store::{StoreAnswer, StoreCall, StoreError, StoreLayer, StoreResult, async_trait};

use crate::sim::outage::request_name;

/// Wraps the shared store for one node. Once [`crash`](Self::crash) was called, every call
/// the node makes is answered with a transient error before it reaches the store, reads
/// included: nothing of the node changes the store any more (no renewal, no release), as
/// when its process died. Its leases then end only by expiring.
pub(crate) struct CrashStore {
    inner: Arc<dyn LeaseStore>,
    crashed: AtomicBool,
}

impl CrashStore {
    pub(crate) fn new(inner: Arc<dyn LeaseStore>) -> Self {
        Self {
            inner,
            crashed: AtomicBool::new(false),
        }
    }

    /// From now on the node's requests no longer reach the store.
    pub(crate) fn crash(&self) {
        self.crashed.store(true, Ordering::SeqCst);
    }
}

#[async_trait]
impl StoreLayer for CrashStore {
    fn inner(&self) -> &dyn LeaseStore {
        &*self.inner
    }

    async fn around<T: Send>(&self, call: StoreCall, answer: StoreAnswer<'_, T>) -> StoreResult<T> {
        if self.crashed.load(Ordering::SeqCst) {
            return Err(StoreError::transient(format!(
                "simulated crash: the node's {} never reaches the store",
                request_name(call)
            )));
        }
        answer.await
    }

    fn describe(&self) -> String {
        format!("crashable({})", self.inner.describe())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use leasehold::store::{AcquireRequest, Acquisition, Token};
    use leasehold::{LockName, MemoryStore};

    use super::*;

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn after_the_crash_nothing_reaches_the_store() {
        let memory: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
        let store = CrashStore::new(memory.clone());
        let lock = LockName::new("job").unwrap_or_else(|e| panic!("{e}"));
        let req = AcquireRequest::new(lock.clone(), 1, "node-c", Token::random(), TICK_30);
        let Ok(Acquisition::Elected(lease)) = store.try_acquire(&req).await else {
            panic!("a free lock is granted before the crash");
        };
        store.crash();
        assert!(store.extend(&lease, TICK_30).await.is_err());
        assert!(store.release(&lease, Duration::ZERO).await.is_err());
        assert!(store.state(&lock, 1).await.is_err());
        let held = memory.state(&lock, 1).await.map(|s| s.holders.len());
        assert_eq!(
            held.ok(),
            Some(1),
            "the crashed node's lease stays until it expires"
        );
    }

    const TICK_30: Duration = Duration::from_secs(30);
}
