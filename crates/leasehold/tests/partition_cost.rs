//! What a settled partition set costs the store: per member and period, one read of the member
//! group and one renewal batch (on a store that renews in batches), whatever the number of
//! shards; no listing. Counted by a wrapper that forwards every call to the memory store.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use leasehold::partition::{Partition, PartitionSet};
use leasehold::store::{
    AcquireRequest, Acquisition, ClockSource, Extension, Holder, Lease, ListCursor, LockPage,
    LockState, PeriodRecord, PeriodStart, Release, ReleaseSignal, StoreResult, async_trait,
};
use leasehold::{ElectionOptions, Elector, LeaseStore, LockName, MemoryStore};
use tokio::time::sleep;

const LEASE: Duration = Duration::from_secs(3);
const PERIOD: Duration = Duration::from_secs(1);

/// The store calls one member made, by kind.
#[derive(Default)]
struct Calls {
    acquire: AtomicU64,
    extend: AtomicU64,
    batch: AtomicU64,
    release: AtomicU64,
    read: AtomicU64,
    list: AtomicU64,
    /// `state_many` calls (not in `take`).
    many: AtomicU64,
    /// The locks the last `state_many` asked for.
    asked: std::sync::Mutex<Vec<String>>,
}

impl Calls {
    fn take(&self) -> [u64; 6] {
        [
            &self.acquire,
            &self.extend,
            &self.batch,
            &self.release,
            &self.read,
            &self.list,
        ]
        .map(|c| c.swap(0, Ordering::SeqCst))
    }
}

struct Counting {
    inner: Arc<MemoryStore>,
    calls: Arc<Calls>,
    /// Claims to read in batches (as DynamoDB does), forwarding `state_many`.
    batch_reads: bool,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::SeqCst);
}

#[async_trait]
impl LeaseStore for Counting {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        bump(&self.calls.acquire);
        self.inner.try_acquire(req).await
    }
    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        bump(&self.calls.extend);
        self.inner.extend(lease, ttl).await
    }
    async fn extend_many(&self, leases: &[(Lease, Duration)]) -> Vec<StoreResult<Extension>> {
        bump(&self.calls.batch);
        self.inner.extend_many(leases).await
    }
    fn renews_in_batches(&self) -> bool {
        self.inner.renews_in_batches()
    }
    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        bump(&self.calls.release);
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
        bump(&self.calls.read);
        self.inner.state(lock, slots).await
    }
    async fn holders(&self, lock: &LockName) -> StoreResult<Vec<Holder>> {
        bump(&self.calls.read);
        self.inner.holders(lock).await
    }
    async fn list_locks(&self, after: Option<&ListCursor>) -> StoreResult<LockPage> {
        bump(&self.calls.list);
        self.inner.list_locks(after).await
    }
    async fn state_many(&self, locks: &[LockName], slots: u32) -> StoreResult<Vec<LockState>> {
        bump(&self.calls.many);
        *self.calls.asked.lock().unwrap() = locks.iter().map(|l| l.to_string()).collect();
        self.inner.state_many(locks, slots).await
    }
    fn reads_in_batches(&self) -> bool {
        self.batch_reads
    }
    fn release_signal(&self, lock: &LockName) -> Option<ReleaseSignal> {
        self.inner.release_signal(lock)
    }
    fn is_process_local(&self) -> bool {
        self.inner.is_process_local()
    }
    fn acquire_is_cancel_safe(&self) -> bool {
        self.inner.acquire_is_cancel_safe()
    }
    fn clock_source(&self) -> ClockSource {
        self.inner.clock_source()
    }
    fn describe(&self) -> String {
        "counting memory".to_owned()
    }
}

async fn members(shards: u32, n: usize) -> (Vec<Partition>, Vec<Arc<Calls>>) {
    members_on(shards, n, false).await
}

/// `n` members of a set of `shards`, each on its own counting wrapper of one memory store;
/// with `batch_reads`, the wrappers read in batches and the electors are of the tenant `acme`.
async fn members_on(shards: u32, n: usize, batch_reads: bool) -> (Vec<Partition>, Vec<Arc<Calls>>) {
    let store = Arc::new(MemoryStore::new());
    let set = PartitionSet::builder("work", shards).build().unwrap();
    let (mut parts, mut calls) = (Vec::new(), Vec::new());
    for i in 0..n {
        let counted = Arc::new(Calls::default());
        let wrapped = Arc::new(Counting {
            inner: store.clone(),
            calls: counted.clone(),
            batch_reads,
        });
        let options = ElectionOptions::builder()
            .node_id(format!("node-{i}"))
            .lease(LEASE)
            .build()
            .unwrap();
        let mut elector = Elector::with_options(wrapped, options);
        if batch_reads {
            elector = elector.for_tenant("acme").unwrap();
        }
        parts.push(set.join(&elector).await.unwrap());
        calls.push(counted);
    }
    (parts, calls)
}

/// Each member's calls over `periods` periods of a settled set, per period.
async fn settled_cost(shards: u32, n: usize, periods: u32) -> Vec<[f64; 6]> {
    let (mut parts, calls) = members(shards, n).await;
    // Drain the events (so hand-overs need not wait for them) until the set settles.
    for _ in 0..20 {
        sleep(PERIOD).await;
        for p in &mut parts {
            while p.try_next().is_some() {}
        }
    }
    let owned: usize = parts.iter().map(|p| p.owned().len()).sum();
    assert_eq!(owned, shards as usize, "settled and covered");
    for c in &calls {
        c.take();
    }
    sleep(PERIOD * periods).await;
    let cost = calls
        .iter()
        .map(|c| c.take().map(|k| k as f64 / f64::from(periods)))
        .collect();
    for p in parts {
        p.leave().await.unwrap();
    }
    cost
}

#[tokio::test(start_paused = true)]
async fn a_settled_set_costs_one_read_and_one_renewal_batch_per_member_and_period() {
    for shards in [16, 1024] {
        for (member, [acquire, extend, batch, release, read, list]) in
            settled_cost(shards, 4, 30).await.into_iter().enumerate()
        {
            let at = format!("{shards} shards, member {member}");
            assert_eq!(
                (acquire, extend, release, list),
                (0.0, 0.0, 0.0, 0.0),
                "{at}"
            );
            assert!((0.9..=1.1).contains(&read), "{at}: {read} reads per period");
            assert!(
                (0.9..=1.1).contains(&batch),
                "{at}: {batch} renewal batches per period"
            );
        }
    }
}

/// While a set changes (members joining), a member reads the shards' owners: by listing the
/// store's locks on a store that lists, and with one `state_many` of the shard locks per reading
/// on a store that reads in batches (never a listing there: its cost would grow with every other
/// lock in the store), asking for exactly the set's shard locks in its elector's tenant. Both
/// settle with every shard owned, balanced.
#[tokio::test(start_paused = true)]
async fn a_store_that_reads_in_batches_is_read_by_shard_lock_not_listed() {
    for batch_reads in [false, true] {
        let (mut parts, calls) = members_on(16, 3, batch_reads).await;
        for _ in 0..20 {
            sleep(PERIOD).await;
            for p in &mut parts {
                while p.try_next().is_some() {}
            }
        }
        let owned: Vec<usize> = parts.iter().map(|p| p.owned().len()).collect();
        assert_eq!(
            owned.iter().sum::<usize>(),
            16,
            "{batch_reads}: covered: {owned:?}"
        );
        assert!(
            owned.iter().all(|&n| n == 5 || n == 6),
            "{batch_reads}: balanced: {owned:?}"
        );
        for (member, c) in calls.iter().enumerate() {
            let [.., list] = c.take();
            let many = c.many.swap(0, Ordering::SeqCst);
            if batch_reads {
                assert_eq!(
                    list, 0,
                    "member {member}: a store that reads in batches is not listed"
                );
                assert!(
                    many > 0,
                    "member {member}: read the shard locks with state_many"
                );
                let asked = c.asked.lock().unwrap().clone();
                let shards: Vec<String> = (0..16)
                    .map(|k| format!("tenant:acme:work.shard-{k}"))
                    .collect();
                assert_eq!(
                    asked, shards,
                    "member {member}: its tenant's shard locks, in order"
                );
            } else {
                assert!(list > 0, "member {member}: listed the store's locks");
                assert_eq!(
                    many, 0,
                    "member {member}: no state_many on a store that lists"
                );
            }
        }
        for p in parts {
            p.leave().await.unwrap();
        }
    }
}
