//! Release signals: how a store wakes waiting contenders when a lock is released.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::watch;

use crate::name::LockName;

/// A subscription to release notifications for one lock.
///
/// A signal only wakes a waiter so it tries again; it never grants anything. Releases that happen
/// after [`LeaseStore::release_signal`](crate::LeaseStore::release_signal) returned are remembered,
/// so a release between a failed attempt and the wait is never missed.
#[derive(Debug)]
pub struct ReleaseSignal(watch::Receiver<u64>);

impl ReleaseSignal {
    /// Resolves at the next release seen since subscribing (or since the previous call). Never
    /// resolves if the store stops sending.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a release seen while no call was waiting is reported by the next call.
    pub async fn released(&mut self) {
        if self.0.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// A per-lock fan-out of release notifications, for store implementations.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold::NameError> {
/// use leasehold::{LockName};
/// use leasehold::store::{ReleaseNotifier};
/// let notifier = ReleaseNotifier::default();
/// let lock = LockName::new("job")?;
/// let mut signal = notifier.subscribe(&lock);
/// notifier.notify(&lock);
/// signal.released().await; // resolves at once
/// # Ok(()) }
/// ```
#[derive(Debug, Default)]
pub struct ReleaseNotifier {
    senders: Mutex<HashMap<LockName, watch::Sender<u64>, foldhash::fast::RandomState>>,
}

impl ReleaseNotifier {
    /// Subscribes to releases of `lock`.
    pub fn subscribe(&self, lock: &LockName) -> ReleaseSignal {
        let mut senders = self.senders.lock().unwrap_or_else(|p| p.into_inner());
        let sender = senders
            .entry(lock.clone())
            .or_insert_with(|| watch::channel(0).0);
        ReleaseSignal(sender.subscribe())
    }

    /// Wakes every subscriber of `lock`, and forgets the lock when nobody listens.
    pub fn notify(&self, lock: &LockName) {
        let mut senders = self.senders.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sender) = senders.get(lock) {
            if sender.receiver_count() == 0 {
                senders.remove(lock);
            } else {
                sender.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
    }

    /// True if anyone currently listens on `lock` (lets a store skip work such as a publish).
    pub fn has_subscribers(&self, lock: &LockName) -> bool {
        let senders = self.senders.lock().unwrap_or_else(|p| p.into_inner());
        senders.get(lock).is_some_and(|s| s.receiver_count() > 0)
    }
}
