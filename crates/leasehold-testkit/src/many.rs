//! Many leases at once, for tests of what a store does with a process's whole set of leases
//! (a beat's renewals of ten thousand leases, say).

use std::sync::Arc;
use std::time::Duration;

use leasehold::store::{AcquireRequest, Acquisition, Token};
use leasehold::{Lease, LeaseStore, LockName};

/// How many tasks [`grant_many`] acquires with at once.
const TASKS: usize = 8;

/// Acquires `n` fresh locks named `<prefix>-0` to `<prefix>-<n-1>` on `store`, each for `ttl`, a
/// few at a time, and returns their leases (in no particular order).
///
/// # Panics
///
/// If a lock is not granted (the names must be fresh) or the store fails: it is a test helper.
///
/// # Cancel safety
///
/// Dropping it leaves the leases granted so far until they expire.
pub async fn grant_many(
    store: &Arc<dyn LeaseStore>,
    prefix: &str,
    n: usize,
    ttl: Duration,
) -> Vec<Lease> {
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..TASKS {
        let (store, prefix) = (Arc::clone(store), prefix.to_owned());
        tasks.spawn(async move {
            let mut leases = Vec::new();
            for i in (t..n).step_by(TASKS) {
                let lock = match LockName::new(format!("{prefix}-{i}")) {
                    Ok(lock) => lock,
                    Err(e) => panic!("grant_many: {e}"),
                };
                let req = AcquireRequest::new(lock, 1, "grant-many", Token::random(), ttl);
                match store.try_acquire(&req).await {
                    Ok(Acquisition::Elected(lease)) => leases.push(lease),
                    other => panic!("grant_many: a fresh lock must be granted, got {other:?}"),
                }
            }
            leases
        });
    }
    let mut leases = Vec::with_capacity(n);
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok(granted) => leases.extend(granted),
            Err(e) => panic!("grant_many: a task failed: {e}"),
        }
    }
    leases
}
