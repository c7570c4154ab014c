//! The leases an elector holds now: each lease cell enters its elector's register when granted
//! and leaves it when released (or dropped), so health checks can ask which leases this process
//! leads and when each was last renewed ([`Elector::held_leases`](crate::Elector::held_leases)).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::events::LostReason;
use crate::hold::state::CellState;
use crate::name::LockName;
use crate::store::lease::Lease;

/// A lease this process holds (its guard is not yet released), as last seen: a snapshot from
/// [`Elector::held_leases`](crate::Elector::held_leases).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
/// use std::sync::Arc;
/// use leasehold::{Elector, MemoryStore};
///
/// let elector = Elector::new(Arc::new(MemoryStore::new()));
/// let guard = elector.try_acquire("nightly").await?.elected().expect("free lock");
/// let held = elector.held_leases();
/// assert_eq!((held[0].lock.as_str(), held[0].fence), ("nightly", 1));
/// assert!(held[0].since_renewal() < held[0].renewed_for);
/// guard.release().await?;
/// assert!(elector.held_leases().is_empty());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeldLease {
    /// The lock (the full, namespaced name).
    pub lock: LockName,
    /// The slot.
    pub slot: u32,
    /// The fence.
    pub fence: u64,
    /// When the request of the last successful grant or renewal was sent (the monotonic clock):
    /// the lease is proven from this instant on.
    pub renewed_at: Instant,
    /// The lease that grant or renewal asked for.
    pub renewed_for: Duration,
    /// The conservative local deadline ([`LeaderContext::local_deadline`](crate::LeaderContext::local_deadline)).
    pub local_deadline: Instant,
    /// The store's expiry as last seen (the store's clock).
    pub expires_at: SystemTime,
    /// True from a [`RenewalFailing`](crate::Event::RenewalFailing) event until a renewal
    /// succeeds again.
    pub renewal_failing: bool,
    /// Why the lease was lost, if it was (also once its local deadline has passed); the guard
    /// still holds it until released.
    pub lost: Option<LostReason>,
}

impl HeldLease {
    /// The time since [`renewed_at`](Self::renewed_at).
    pub fn since_renewal(&self) -> Duration {
        Instant::now().saturating_duration_since(self.renewed_at)
    }
}

/// One cell in the register: its lease's identity and its shared state.
struct Entry {
    lock: LockName,
    slot: u32,
    fence: u64,
    state: Arc<Mutex<CellState>>,
}

#[derive(Default)]
struct Register {
    next: u64,
    /// By id; the snapshot sorts them (a hash map keeps entering and leaving cheap).
    entries: HashMap<u64, Entry, foldhash::fast::RandomState>,
}

/// The register of an elector, shared by its clones.
#[derive(Clone, Default)]
pub(crate) struct HeldLeases(Arc<Mutex<Register>>);

impl HeldLeases {
    fn register(&self) -> std::sync::MutexGuard<'_, Register> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Enters the cell of `lease`, whose state is `state`, until the returned place is left.
    pub(crate) fn enter(&self, lease: &Lease, state: Arc<Mutex<CellState>>) -> HeldPlace {
        let mut register = self.register();
        let id = register.next;
        register.next = register.next.wrapping_add(1);
        register.entries.insert(
            id,
            Entry {
                lock: lease.lock.clone(),
                slot: lease.slot,
                fence: lease.fence,
                state,
            },
        );
        HeldPlace {
            id,
            register: Arc::downgrade(&self.0),
            left: AtomicBool::new(false),
        }
    }

    /// True if a task of this elector holds a lease on `lock` (any slot).
    pub(crate) fn holds(&self, lock: &LockName) -> bool {
        self.register().entries.values().any(|e| e.lock == *lock)
    }

    /// The leases held now, by lock, slot and fence.
    pub(crate) fn snapshot(&self) -> Vec<HeldLease> {
        let now = Instant::now();
        let mut held: Vec<HeldLease> = self
            .register()
            .entries
            .values()
            .map(|e| {
                let st = e.state.lock().unwrap_or_else(|p| p.into_inner());
                let (renewed_at, renewed_for) = st.renewed;
                HeldLease {
                    lock: e.lock.clone(),
                    slot: e.slot,
                    fence: e.fence,
                    renewed_at,
                    renewed_for,
                    local_deadline: st.deadline,
                    expires_at: st.expires_at,
                    renewal_failing: st.at_risk,
                    lost: st
                        .lost
                        .or((now >= st.deadline).then_some(LostReason::DeadlinePassed)),
                }
            })
            .collect();
        held.sort_by(|a, b| (&a.lock, a.slot, a.fence).cmp(&(&b.lock, b.slot, b.fence)));
        held
    }
}

/// A cell's place in its elector's register; leaving (or dropping it) takes the cell out.
pub(crate) struct HeldPlace {
    id: u64,
    register: Weak<Mutex<Register>>,
    /// Set by the first `leave`, so that the drop after a release costs no lookup.
    left: AtomicBool,
}

impl HeldPlace {
    /// Takes the cell out of the register (again: nothing).
    pub(crate) fn leave(&self) {
        if self.left.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(register) = self.register.upgrade() {
            register
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entries
                .remove(&self.id);
        }
    }
}

impl Drop for HeldPlace {
    fn drop(&mut self) {
        self.leave();
    }
}
