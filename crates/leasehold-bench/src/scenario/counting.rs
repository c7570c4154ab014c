//! `CountingStore`: counts the requests an elector sends to its store, client-side — the figure
//! of the session scenarios on stores without server statistics (memory, SQLite, DynamoDB
//! through dynalite, and NATS without a monitoring port except for hold-many's writes), and the
//! cross-check beside the server's own counters everywhere else.
//!
//! Every `LeaseStore` method that reaches the store counts as one request, and
//! [`extend_many`](LeaseStore::extend_many) counts as **one** (on a store that renews in
//! batches it is one statement or script; on the others its default issues one `extend` per
//! lease, which this wrapper does not see apart, so there it is one request per *call*, not per
//! lease: compare with the server figure).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use leasehold::LeaseStore;
use leasehold::store::{StoreAnswer, StoreCall, StoreError, StoreLayer, StoreResult, async_trait};

/// Requests counted, shared by every wrapper of one group of clients.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    /// Every request.
    pub(crate) all: AtomicU64,
    /// `try_acquire` calls (for waiters: their polls).
    pub(crate) acquires: AtomicU64,
    /// `extend` and `extend_many` calls.
    pub(crate) extends: AtomicU64,
}

impl Calls {
    pub(crate) fn all(&self) -> u64 {
        self.all.load(Ordering::Relaxed)
    }

    fn count(&self, kind: Option<&AtomicU64>) {
        self.all.fetch_add(1, Ordering::Relaxed);
        if let Some(k) = kind {
            k.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A store that forwards every call unchanged and counts it in [`Calls`].
pub(crate) struct CountingStore {
    inner: Arc<dyn LeaseStore>,
    calls: Arc<Calls>,
    /// When set and true, every call fails before it reaches the store (and is not counted):
    /// a process killed, as the store sees it.
    cut: Option<Arc<AtomicBool>>,
}

impl CountingStore {
    pub(crate) fn wrap(inner: Arc<dyn LeaseStore>, calls: &Arc<Calls>) -> Arc<dyn LeaseStore> {
        Arc::new(Self {
            inner,
            calls: Arc::clone(calls),
            cut: None,
        })
    }

    /// As [`wrap`](Self::wrap), and every call fails from the moment `cut` is set: a process
    /// killed, as the store sees it (nothing it sends arrives), while the store keeps renewing
    /// in batches where it can (the testkit's `FaultyStore` renews each lease alone).
    pub(crate) fn wrap_cuttable(
        inner: Arc<dyn LeaseStore>,
        calls: &Arc<Calls>,
        cut: &Arc<AtomicBool>,
    ) -> Arc<dyn LeaseStore> {
        Arc::new(Self {
            inner,
            calls: Arc::clone(calls),
            cut: Some(Arc::clone(cut)),
        })
    }
}

/// The error of a call on a client the bench cut off: as a transient network failure looks.
fn cut_off() -> StoreError {
    StoreError::transient("cut off: the bench killed this client")
}

#[async_trait]
impl StoreLayer for CountingStore {
    fn inner(&self) -> &dyn LeaseStore {
        &*self.inner
    }

    /// A call on a cut client fails uncounted; any other counts once (a batch too, however many
    /// leases or locks it carries).
    async fn around<T: Send>(&self, call: StoreCall, answer: StoreAnswer<'_, T>) -> StoreResult<T> {
        if self
            .cut
            .as_ref()
            .is_some_and(|cut| cut.load(Ordering::Relaxed))
        {
            return Err(cut_off());
        }
        self.calls.count(match call {
            StoreCall::TryAcquire => Some(&self.calls.acquires),
            StoreCall::Extend | StoreCall::ExtendMany => Some(&self.calls.extends),
            _ => None,
        });
        answer.await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use leasehold::{ElectionOptions, Elector, MemoryStore};

    use super::{Calls, CountingStore};

    #[tokio::test(flavor = "current_thread")]
    async fn a_batch_of_renewals_counts_once() -> Result<(), Box<dyn std::error::Error>> {
        let calls = Arc::new(Calls::default());
        let store = CountingStore::wrap(Arc::new(MemoryStore::new()), &calls);
        assert!(store.renews_in_batches());
        let options = ElectionOptions::builder()
            .lease(Duration::from_millis(600))
            .build()?;
        let elector = Elector::with_options(store, options);
        let mut guards = Vec::new();
        for i in 0..10 {
            guards.push(
                elector
                    .try_acquire(format!("count-{i}"))
                    .await?
                    .elected()
                    .ok_or("busy")?,
            );
        }
        assert_eq!(calls.all(), 10);
        // About three beats (lease / 3 = 200 ms): one request per beat, whatever the number
        // of leases.
        tokio::time::sleep(Duration::from_millis(700)).await;
        let renewals = calls.extends.load(std::sync::atomic::Ordering::Relaxed);
        assert!((2..=5).contains(&renewals), "{renewals} renewal requests");
        assert!(guards.iter().all(|g| !g.is_lost()));
        for g in guards {
            g.release().await?;
        }
        Ok(())
    }
}
