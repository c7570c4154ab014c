//! Release signals in an order the seed chooses.
//!
//! The memory store wakes every waiting elector of a lock through one `tokio::sync::watch`
//! channel when the lock is released. Tokio spreads a watch channel's waiters over eight lists
//! chosen by its runtime's random generator (seeded from the OS unless tokio is built with
//! `tokio_unstable`), and wakes the lists in order: with several electors waiting (a group lock
//! with a slot freed), which of them the scheduler runs first, and so which one gets the slot,
//! changes from one process to the next.
//!
//! So the seeded run gives each elector a notifier of its own (one waiting task per lock and
//! elector: a channel with a single waiter wakes it, in no order to speak of), and when the store
//! releases a lock, the [`ReleaseHub`] notifies every elector's notifier, one after the other, in
//! an order drawn from the seed. The electors are woken in that order, and run in it.

use std::sync::Mutex;

use leasehold::LockName;
use leasehold::store::{ReleaseNotifier, ReleaseSignal};

use crate::sim::seeds::rng::SimRng;

/// Per-elector release notifiers, notified in a seeded order (see the module documentation).
#[derive(Debug)]
pub struct ReleaseHub {
    notifiers: Vec<ReleaseNotifier>,
    rng: Mutex<SimRng>,
}

impl ReleaseHub {
    /// A hub for `electors` electors, drawing its orders from `seed`.
    pub fn new(electors: usize, seed: u64) -> Self {
        Self {
            notifiers: (0..electors).map(|_| ReleaseNotifier::default()).collect(),
            rng: Mutex::new(SimRng::new(seed, u64::MAX)),
        }
    }

    /// A release signal of `lock` for elector `elector` (reaching every client, as the memory
    /// store's does); `None` for an elector the hub does not know.
    pub fn subscribe(&self, elector: usize, lock: &LockName) -> Option<ReleaseSignal> {
        let notifier = self.notifiers.get(elector)?;
        Some(notifier.subscribe(lock).reaching_every_client_if(true))
    }

    /// `lock` was released: wakes its waiters, elector by elector, in a seeded order.
    pub fn notify(&self, lock: &LockName) {
        let mut order: Vec<usize> = (0..self.notifiers.len()).collect();
        {
            let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
            for i in (1..order.len()).rev() {
                let j = usize::try_from(rng.below(i as u64 + 1)).unwrap_or(0);
                order.swap(i, j);
            }
        }
        for i in order {
            self.notifiers[i].notify(lock);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn every_elector_is_woken() {
        let lock = LockName::new("job").unwrap_or_else(|e| panic!("{e}"));
        let hub = ReleaseHub::new(3, 1);
        let mut signals: Vec<ReleaseSignal> =
            (0..3).filter_map(|e| hub.subscribe(e, &lock)).collect();
        assert_eq!(signals.len(), 3);
        assert!(hub.subscribe(3, &lock).is_none());
        hub.notify(&lock);
        for s in &mut signals {
            tokio::time::timeout(std::time::Duration::from_secs(1), s.released())
                .await
                .unwrap_or_else(|_| panic!("woken"));
        }
    }
}
