//! A store may grant less than the lease asked for (etcd ends a lease attached to a session with
//! the session): the holder's local deadline and `lost()` then come with the shorter grant, not
//! with the lease asked for, so it stops before the store can hand the lock on.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use leasehold::store::{
    AcquireRequest, Acquisition, Extension, LockState, PeriodStart, Release, StoreResult,
};
use leasehold::{
    ElectionOptions, Elector, Holder, Lease, LeaseStore, LockName, MemoryStore, PeriodRecord,
};
use tokio::time::Instant;

/// A memory store whose grants last `part` of the lease asked for (it says so in
/// `expires_at`, and keeps its word: the grant really ends then).
struct Shortening {
    inner: MemoryStore,
    part: u32,
}

#[async_trait]
impl LeaseStore for Shortening {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        let mut short = req.clone();
        short.ttl = req.ttl / self.part;
        self.inner.try_acquire(&short).await
    }
    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.inner.extend(lease, ttl).await
    }
    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        self.inner.release(lease, linger).await
    }
    async fn start_period(&self, lease: &Lease) -> StoreResult<PeriodStart> {
        self.inner.start_period(lease).await
    }
    async fn period_record(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        self.inner.period_record(lock).await
    }
    async fn clear_period_ledger(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        self.inner.clear_period_ledger(lock).await
    }
    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        self.inner.state(lock, slots).await
    }
    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        self.inner.force_release(lock, slots).await
    }
    fn describe(&self) -> String {
        "memory, granting a third of each lease".to_owned()
    }
}

#[tokio::test(start_paused = true)]
async fn a_shorter_grant_brings_the_local_deadline_forward() {
    const LEASE: Duration = Duration::from_secs(30);
    let store = Arc::new(Shortening {
        inner: MemoryStore::new(),
        part: 3,
    });
    let options = ElectionOptions::builder()
        .lease(LEASE)
        .auto_extend(false)
        .build()
        .unwrap();
    let elector = Elector::with_options(store, options);
    let sent = Instant::now();
    let guard = elector
        .try_acquire("short-grant")
        .await
        .unwrap()
        .elected()
        .expect("a free lock is granted");
    let granted = guard
        .expires_at()
        .duration_since(guard.lease().acquired_at)
        .unwrap();
    assert_eq!(granted, LEASE / 3, "the store granted a third");
    assert!(
        guard.local_deadline() <= sent + LEASE / 3,
        "the local deadline must come with the grant ({:?} after sending), not with the lease asked for",
        guard.local_deadline() - sent
    );
    let lost_at = {
        guard.lost().await;
        Instant::now()
    };
    assert!(
        lost_at <= sent + LEASE / 3,
        "lost() must fire before the grant ends, fired {:?} after sending",
        lost_at - sent
    );
}
