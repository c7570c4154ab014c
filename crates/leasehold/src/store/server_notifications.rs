//! `ServerNotifications`: the release notifications of a store whose server reports releases
//! (an etcd watch, a NATS KV watch, a ZooKeeper persistent watch): whether they are on, the
//! notifier that wakes local waiters, and the one listener task that feeds it.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::name::LockName;

use super::lease::{Holder, Release};
use super::listener::Listener;
use super::signal::{ReleaseNotifier, ReleaseSignal};

/// A store's release notifications fed by one listener on its server, started by the first
/// subscription and stopped with the store. A store holds one and answers
/// [`LeaseStore::release_signal`](crate::LeaseStore::release_signal) with
/// [`signal`](Self::signal).
///
/// ```
/// use leasehold::store::{LockName, ServerNotifications, SignalReach};
///
/// let lock = LockName::new("report")?;
/// assert!(ServerNotifications::new(false).signal(&lock, |_notifier| async {}).is_none());
/// // Outside a Tokio runtime no listener starts: the signal reaches this client only.
/// let on = ServerNotifications::new(true);
/// let signal = on.signal(&lock, |_notifier| async {}).expect("notifications are on");
/// assert_eq!(signal.reach(), SignalReach::ThisClient);
/// # Ok::<(), leasehold::error::NameError>(())
/// ```
#[derive(Debug)]
pub struct ServerNotifications {
    on: bool,
    notifier: Arc<ReleaseNotifier>,
    listener: Mutex<Option<Listener>>,
}

impl ServerNotifications {
    /// Notifications that are `on` (the store's `notifications` option), with no listener yet.
    pub fn new(on: bool) -> Self {
        Self {
            on,
            notifier: Arc::new(ReleaseNotifier::default()),
            listener: Mutex::new(None),
        }
    }

    /// Wakes this client's waiters on `lock` (after a release this client made).
    pub fn notify(&self, lock: &LockName) {
        self.notifier.notify(lock);
    }

    /// Wakes this client's waiters on `lock` after its release answered `released` with
    /// `linger` (see [`ReleaseNotifier::after_release`]), and returns that answer.
    pub fn after_release(&self, lock: &LockName, linger: Duration, released: Release) -> Release {
        self.notifier.after_release(lock, linger, released)
    }

    /// Wakes this client's waiters on `lock` after its forced release freed `freed` (see
    /// [`ReleaseNotifier::after_forced_release`]), and returns `freed`.
    pub fn after_forced_release(&self, lock: &LockName, freed: Vec<Holder>) -> Vec<Holder> {
        self.notifier.after_forced_release(lock, freed)
    }

    /// `None` when notifications are off; otherwise a subscription to releases of `lock`,
    /// starting the listener (the future `listen` makes from the notifier it is to feed) if it
    /// is not running yet: see [`ReleaseNotifier::subscribe_listening`].
    pub fn signal<F>(
        &self,
        lock: &LockName,
        listen: impl FnOnce(Arc<ReleaseNotifier>) -> F,
    ) -> Option<ReleaseSignal>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        if !self.on {
            return None;
        }
        Some(self.notifier.subscribe_listening(lock, &self.listener, || {
            Listener::spawn(listen(Arc::clone(&self.notifier)))
        }))
    }
}
