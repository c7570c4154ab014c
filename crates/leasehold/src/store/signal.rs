//! Release signals: how a store wakes waiting contenders when a lock is released.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{Notify, watch};

use crate::name::LockName;
use crate::store::lease::{Holder, Release};
use crate::store::listener::Listener;

/// A subscription to release notifications for one lock.
///
/// A signal only wakes a waiter so it tries again; it never grants anything. Releases that happen
/// after [`LeaseStore::release_signal`](crate::LeaseStore::release_signal) returned are remembered,
/// so a release between a failed attempt and the wait is never missed.
///
/// A signal also says how far it reaches ([`SignalReach`]): the engine polls more densely
/// where releases by other clients go unseen, and takes turns between processes only where every
/// waiter is woken.
#[derive(Debug)]
pub struct ReleaseSignal {
    changes: watch::Receiver<u64>,
    reach: SignalReach,
}

/// Whose releases a [`ReleaseSignal`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignalReach {
    /// Only releases made through this store value (an in-process fan-out): a release by another
    /// process, or by another client of the same database, is found by polling.
    ThisClient,
    /// Releases by every client of the store, in any process (a server-side notification such
    /// as Redis pub/sub, PostgreSQL `LISTEN`, an etcd, ZooKeeper or NATS watch).
    EveryClient,
}

impl ReleaseSignal {
    /// The same signal, declared to report releases by every client of the store (see
    /// [`SignalReach::EveryClient`]) when `listening` — typically "the store's listener is
    /// running". A store passes `true` only when its notifications really cross processes; a
    /// signal from [`ReleaseNotifier::subscribe`] starts as [`SignalReach::ThisClient`], and
    /// `false` leaves it so.
    #[must_use]
    pub fn reaching_every_client_if(mut self, listening: bool) -> Self {
        if listening {
            self.reach = SignalReach::EveryClient;
        }
        self
    }

    /// Whose releases this signal reports.
    pub fn reach(&self) -> SignalReach {
        self.reach
    }

    /// Resolves at the next release seen since subscribing (or since the previous call). Never
    /// resolves if the store stops sending.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a release seen while no call was waiting is reported by the next call.
    pub async fn released(&mut self) {
        if self.changes.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// A per-lock fan-out of release notifications, for store implementations.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold::error::NameError> {
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
    /// Woken at each subscription (see [`ReleaseNotifier::subscribers`]).
    subscribed: Notify,
}

impl ReleaseNotifier {
    /// Subscribes to releases of `lock` in a store whose server notifies: starts the store's one
    /// `listener` (with `start`) if it is not running yet, and marks the signal as reaching every
    /// client once it runs ([`ReleaseSignal::reaching_every_client_if`]).
    ///
    /// ```
    /// use std::sync::Mutex;
    /// use leasehold::store::{Listener, LockName, ReleaseNotifier, SignalReach};
    ///
    /// let notifier = ReleaseNotifier::default();
    /// let listener: Mutex<Option<Listener>> = Mutex::new(None);
    /// let lock = LockName::new("report")?;
    /// // Outside a Tokio runtime no listener starts: the signal reaches this client only.
    /// let signal = notifier.subscribe_listening(&lock, &listener, || Listener::spawn(async {}));
    /// assert_eq!(signal.reach(), SignalReach::ThisClient);
    /// # Ok::<(), leasehold::error::NameError>(())
    /// ```
    pub fn subscribe_listening(
        &self,
        lock: &LockName,
        listener: &Mutex<Option<Listener>>,
        start: impl FnOnce() -> Option<Listener>,
    ) -> ReleaseSignal {
        let signal = self.subscribe(lock);
        let mut running = listener.lock().unwrap_or_else(|p| p.into_inner());
        if running.is_none() {
            *running = start();
        }
        // Server-side notifications wake waiters in every process, once the listener runs.
        signal.reaching_every_client_if(running.is_some())
    }

    /// Subscribes to releases of `lock`.
    pub fn subscribe(&self, lock: &LockName) -> ReleaseSignal {
        let mut senders = self.senders.lock().unwrap_or_else(|p| p.into_inner());
        let sender = senders
            .entry(lock.clone())
            .or_insert_with(|| watch::channel(0).0);
        let signal = ReleaseSignal {
            changes: sender.subscribe(),
            reach: SignalReach::ThisClient,
        };
        drop(senders);
        self.subscribed.notify_waiters();
        signal
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

    /// Wakes the subscribers of `lock` after this client's release of a lease of it answered
    /// `released` with `linger`, and returns that answer: only a release that freed the lock
    /// now (`Released` without a linger) wakes them, for a store whose server would not tell
    /// them (or not as soon). A lease that lingers is held until it ends, and a lease not held
    /// any more freed nothing.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold::error::NameError> {
    /// use std::time::Duration;
    /// use leasehold::store::{LockName, Release, ReleaseNotifier};
    ///
    /// let notifier = ReleaseNotifier::default();
    /// let lock = LockName::new("report")?;
    /// let mut signal = notifier.subscribe(&lock);
    /// let linger = Duration::from_secs(1);
    /// assert_eq!(notifier.after_release(&lock, linger, Release::Released), Release::Released);
    /// assert_eq!(notifier.after_release(&lock, Duration::ZERO, Release::NotHeld), Release::NotHeld);
    /// let woken = tokio::time::timeout(Duration::from_millis(10), signal.released()).await;
    /// assert!(woken.is_err(), "a lingering release, and one that freed nothing, wake nobody");
    /// notifier.after_release(&lock, Duration::ZERO, Release::Released);
    /// signal.released().await; // resolves at once
    /// # Ok(()) }
    /// ```
    pub fn after_release(&self, lock: &LockName, linger: Duration, released: Release) -> Release {
        if released == Release::Released && linger.is_zero() {
            self.notify(lock);
        }
        released
    }

    /// Wakes the subscribers of `lock` after this client's forced release of it freed `freed`
    /// (nobody when it freed nothing), and returns `freed`.
    pub fn after_forced_release(&self, lock: &LockName, freed: Vec<Holder>) -> Vec<Holder> {
        if !freed.is_empty() {
            self.notify(lock);
        }
        freed
    }

    /// Wakes every subscriber of every lock: for a change feed that does not say which lock
    /// changed (SQLite's `data_version`). A waiter woken without a release only tries again.
    pub fn notify_all(&self) {
        let mut senders = self.senders.lock().unwrap_or_else(|p| p.into_inner());
        senders.retain(|_, sender| {
            let listened = sender.receiver_count() > 0;
            if listened {
                sender.send_modify(|n| *n = n.wrapping_add(1));
            }
            listened
        });
    }

    /// True if anyone currently listens on any lock (lets a store's watcher pause while nobody
    /// waits).
    pub fn has_any_subscribers(&self) -> bool {
        let senders = self.senders.lock().unwrap_or_else(|p| p.into_inner());
        senders.values().any(|s| s.receiver_count() > 0)
    }

    /// Resolves once someone subscribes, at once if someone already listens.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only waits.
    pub async fn subscribers(&self) {
        loop {
            let mut subscribed = std::pin::pin!(self.subscribed.notified());
            subscribed.as_mut().enable();
            if self.has_any_subscribers() {
                return;
            }
            subscribed.await;
        }
    }

    /// True if anyone currently listens on `lock` (lets a store skip work such as a publish).
    pub fn has_subscribers(&self, lock: &LockName) -> bool {
        let senders = self.senders.lock().unwrap_or_else(|p| p.into_inner());
        senders.get(lock).is_some_and(|s| s.receiver_count() > 0)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn lock(name: &str) -> LockName {
        LockName::new(name).unwrap_or_else(|e| panic!("{e}"))
    }

    #[tokio::test]
    async fn notify_all_wakes_every_listened_lock_and_forgets_the_rest() {
        let notifier = ReleaseNotifier::default();
        let (mut a, mut b) = (
            notifier.subscribe(&lock("a")),
            notifier.subscribe(&lock("b")),
        );
        drop(notifier.subscribe(&lock("gone")));
        assert_eq!(a.reach(), SignalReach::ThisClient);
        assert_eq!(b.reach(), SignalReach::ThisClient);
        notifier.notify_all();
        a.released().await;
        b.released().await;
        assert!(!notifier.has_subscribers(&lock("gone")));
        let senders = notifier.senders.lock().unwrap_or_else(|p| p.into_inner());
        assert_eq!(senders.len(), 2, "the unlistened lock is forgotten");
    }

    #[tokio::test(start_paused = true)]
    async fn subscribers_waits_for_the_first_subscription() {
        let notifier = std::sync::Arc::new(ReleaseNotifier::default());
        assert!(!notifier.has_any_subscribers());
        let waiting = tokio::spawn({
            let notifier = std::sync::Arc::clone(&notifier);
            async move { notifier.subscribers().await }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!waiting.is_finished(), "nobody subscribed yet");
        let signal = notifier
            .subscribe(&lock("x"))
            .reaching_every_client_if(true);
        assert_eq!(signal.reach(), SignalReach::EveryClient);
        tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(notifier.has_any_subscribers());
        drop(signal);
        assert!(!notifier.has_any_subscribers());
    }
}
